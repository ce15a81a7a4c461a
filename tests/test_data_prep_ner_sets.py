"""The five human-labelled NER corpora (BTC, Wikigold, SEC filings, UNER English-EWT, GUM) on fixture files in their
exact shapes, and every local source's public-URL path, served from 127.0.0.1."""

import functools
import http.server
import os
import shutil
import threading

import pytest
from test_data_prep_sources import FIXTURES, load

from piiner.data_prep.audit import Audit
from piiner.data_prep.build import build
from piiner.data_prep.records import clean_record
from piiner.data_prep.sources import SOURCES, SourceUnavailable, iter_source
from piiner.data_prep.split import assign_splits


def test_btc_joins_mentions_into_handles_and_labels_links():
    records, audit = load("btc", "btc")
    assert records["Loving the view from Leeds today @jane_smith http://t.co/AbC123"] == [
        ("Leeds", "LOCATION"), ("jane_smith", "USERNAME"), ("http://t.co/AbC123", "URL")]
    # "@" tagged O is the word "at", not a handle.
    assert records["Meeting @ Acme Corp with Sam Lee @bob_99"] == [
        ("Acme Corp", "ORGANIZATION"), ("Sam Lee", "PERSON"), ("bob_99", "USERNAME")]
    # Section b's tokenizer cut every handle after its "@" (no whole "@name" in the file), tagged or not, and its
    # annotators tagged some names without their "@": every "@" + name there is a handle, as written.
    assert records["RT @Pixie_T: thanks @ffhelper and @guardian in Leeds"] == [
        ("Pixie_T", "USERNAME"), ("ffhelper", "USERNAME"), ("guardian", "USERNAME"), ("Leeds", "LOCATION")]
    assert audit.notes["btc"]["handle_as_username"] == 3 and audit.notes["btc"]["handle_joined"] == 1


def test_wikigold_io_tags_detokenized_text_and_documents():
    records, audit = load("wikigold", "wikigold")
    text = "The Mad Capsule Markets played in Tokyo (1999). John Smith, its singer, left."
    assert records[text] == [("The Mad Capsule Markets", "ORGANIZATION"), ("Tokyo", "LOCATION"),
                             ("John Smith", "PERSON")]
    assert records["Paris is big."] == [("Paris", "LOCATION")]
    assert audit.notes["wikigold"]["not_pii_label:MISC"] == 1
    raws = list(iter_source("wikigold", os.path.join(FIXTURES, "wikigold"), Audit()))
    assert len({r["group"] for r in raws}) == 3  # one group per article: the unit of the split


def test_sec_filings_role_words_are_not_persons_and_the_test_file_is_test():
    records, audit = load("sec_filings", "sec_filings")
    text = ("This AGREEMENT between ACME BANK and the Borrower, Jane Roe, of California. Signed by Richard G. "
            "Chleboski.")
    assert records[text][:3] == [("ACME BANK", "ORGANIZATION"), ("Jane Roe", "PERSON"), ("California", "LOCATION")]
    assert audit.notes["sec_filings"]["role_word_not_pii"] == 2  # "Borrower", and "Lender" in the test file
    # An initial's period, split off and tagged O by the corpus, joins the name instead of cutting it in two.
    assert records["This AGREEMENT between ACME BANK and the Borrower, Jane Roe, of California. Signed by Richard G. "
                   "Chleboski."][-1] == ("Richard G. Chleboski", "PERSON")
    splits = {r["text"]: r["source_split"] for r in iter_source("sec_filings", os.path.join(FIXTURES, "sec_filings"),
                                                                Audit())}
    assert splits["Lender shall pay."] == "test"


def test_names_cut_at_an_initial_or_an_abbreviation_by_the_corpus_tokenizer_are_whole():
    # CoNLL tokenizers split the period off "P." and "Inc."; the corpora then end the name before it, start a
    # new sentence after it ("Edward D ." / "Farr"), or leave the surname untagged ("James P . Walker").
    records, audit = load("sec_filings", "sec_filings")
    text = "Acme Solar, INC., a company (the Company). By: James P. Walker Title: Vice President"
    assert records[text] == [("Acme Solar, INC.", "ORGANIZATION"), ("James P. Walker", "PERSON")]
    assert audit.notes["sec_filings"]["surname_after_initial"] == 1
    records, _ = load("wikigold", "wikigold")
    assert records["Engineer Edward D. Farr built it."] == [("Edward D. Farr", "PERSON")]


def test_an_email_cut_by_the_corpus_tokenizer_is_one_email_not_a_name_and_a_place():
    # SEC filings write "DFischer @ goldhillcapital . com", the local part tagged a person, the domain a place.
    records, audit = load("sec_filings", "sec_filings")
    assert records["Email: DFischer@goldhillcapital.com"] == [("DFischer@goldhillcapital.com", "EMAIL")]
    assert audit.notes["sec_filings"]["email_joined"] == 1


def test_uner_offsets_come_from_the_original_sentence_and_unlabelled_types_are_recorded():
    records, _ = load("uner_ewt", "uner_ewt")
    text = "I met Ann in New York, didn't I? Email me at ann@x.org."
    assert records[text] == [("Ann", "PERSON"), ("New York", "LOCATION")]
    raw = next(iter_source("uner_ewt", os.path.join(FIXTURES, "uner_ewt"), Audit()))
    # The email is there, unlabelled: the annotators labelled persons, places and organizations only.
    assert raw["labelled_types"] == ("PERSON", "LOCATION", "ORGANIZATION")


def test_a_sentence_without_its_text_is_rebuilt_as_people_write_it(tmp_path):
    # A copy whose "# text =" lines are gone (or do not match the tokens): the text comes from the tokens, written
    # the way the token-only corpora are, not with a space before every mark and inside "did n't".
    with open(os.path.join(FIXTURES, "uner_ewt", "en_ewt-ud-dev.iob2"), encoding="utf-8") as f:
        lines = [line for line in f if not line.startswith("# text =")]
    (tmp_path / "uner_ewt").mkdir()
    (tmp_path / "uner_ewt" / "en_ewt-ud-dev.iob2").write_text("".join(lines), encoding="utf-8")
    records, audit = load("uner_ewt", str(tmp_path / "uner_ewt"))
    assert records["I met Ann in New York, didn't I? Email me at ann@x.org."] == [
        ("Ann", "PERSON"), ("New York", "LOCATION")]
    assert audit.notes["uner_ewt"]["text_rebuilt_from_tokens"] == 2


def test_gum_keeps_named_mentions_and_calendar_dates():
    records, audit = load("gum", "gum")
    text = ("Dr. Ann Lee visited the University of Leeds on 3 March 1999 and he liked it. The morning was cold. "
            "Acme Bank and Leeds Hospital merged. The Dutch agreed.")
    assert records[text] == [("Dr. Ann Lee", "PERSON"), ("University of Leeds", "ORGANIZATION"),
                             ("3 March 1999", "DATE"), ("Acme Bank", "ORGANIZATION"), ("Leeds Hospital", "ORGANIZATION")]
    assert audit.notes["gum"]["time_mention_as_DATE"] == 1  # "The morning" is a time, not a date
    assert audit.notes["gum"]["coordination_left_to_its_parts"] == 1  # not one organization "Acme ... Hospital"
    assert audit.notes["gum"]["group_of_people_not_a_person"] == 1  # "The Dutch"



def test_a_gum_time_mention_that_is_not_a_calendar_date_is_left_unjudged():
    """GUM marks "The morning" (and bare years) as time mentions: the schema's DATE may or may not hold them, so the
    record neither teaches nor judges them ("O" there would be evidence against DATE that the gold does not give)."""
    audit = Audit()
    records = [clean_record(raw, audit) for raw in assign_splits(list(
        iter_source("gum", os.path.join(FIXTURES, "gum"), audit)))]
    unjudged = {r["text"][u["start"]:u["end"]] for r in records for u in r["unjudged_spans"]}
    assert unjudged == {"The morning"}
    assert audit.notes["gum"]["time_mention_unjudged"] == 1


def test_gum_names_are_cut_at_their_head_as_flat_ner_corpora_write_them():
    records, audit = load("gum", "gum")
    text = ("She moved to Cambridge, Massachusetts, where she studied. The Libertarian Party's nominee for Leeds met "
            "author Ann Lee at the National Library of Wales.")
    # Not "Cambridge, Massachusetts, where she studied" nor a PERSON "Party's nominee for Leeds" (its head is
    # "nominee"); "National" belongs to the name though UD tags it ADJ, "author" does not.
    assert records[text] == [("Cambridge", "LOCATION"), ("Massachusetts", "LOCATION"),
                             ("Libertarian Party", "ORGANIZATION"), ("Leeds", "LOCATION"), ("Ann Lee", "PERSON"),
                             ("National Library of Wales", "ORGANIZATION")]
    assert audit.notes["gum"]["mention_not_headed_by_a_name"] == 1
    assert audit.notes["gum"]["mention_cut_to_its_name"] == 2  # the relative clause; "author"

def test_a_gum_title_of_office_is_not_a_persons_name():
    records, audit = load("gum", "gum")
    # "The Governor of Virginia" names an office (its head is "Governor"); the place inside it is still a place,
    # and a title before a name stays with the name, as in the rest of GUM.
    assert records["The Governor of Virginia met Governor Chris Gregoire."] == [
        ("Virginia", "LOCATION"), ("Governor Chris Gregoire", "PERSON")]
    assert audit.notes["gum"]["title_not_a_name"] == 1


# -- the path a user has: public files by URL ----------------------------------------------------------------------

@pytest.fixture
def mirror(tmp_path):
    """A local http.server holding every local source's fixture at its public URL's path, like a mirror."""
    root = tmp_path / "mirror"
    folders = {"btc": "btc", "wikigold": "wikigold", "sec_filings": "sec_filings", "uner_ewt": "uner_ewt",
               "gum": "gum", "wnut17": "wnut17", "presidio": "presidio"}
    for name, folder in folders.items():
        for relative, url in SOURCES[name].urls.items():
            local = os.path.join(FIXTURES, folder, relative)
            target = root / url.split("://", 1)[1]
            target.parent.mkdir(parents=True, exist_ok=True)
            if os.path.exists(local):
                shutil.copy(local, target)
            elif name != "gum":  # the fixtures hold some files of a source; GUM's missing ones stay missing
                target.write_text("")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_without_the_shared_folder_each_source_is_fetched_from_its_public_url(tmp_path, monkeypatch, mirror):
    monkeypatch.setenv("PIINER_SHARED_DATA", str(tmp_path / "no-shared-data"))
    monkeypatch.setenv("PIINER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIINER_DATA_MIRROR", mirror)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    for name in ("btc", "wikigold", "sec_filings", "uner_ewt", "wnut17", "presidio"):
        audit = Audit()
        assert list(iter_source(name, None, audit)), name
        assert os.listdir(tmp_path / "cache" / name)
    # GUM's fixture has one of its documents: the others 404, and the message says how to get round it.
    with pytest.raises(SourceUnavailable, match="could not download .*GUM_.*--from-dir gum=PATH"):
        list(iter_source("gum", None, Audit()))
    # A second build reads the cache, offline.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    built = build(str(tmp_path / "out"), sources=["wikigold", "presidio"], verbose=False)
    assert {r["source"] for split in built for r in built[split]} == {"wikigold", "presidio"}


def test_offline_without_the_shared_folder_names_both_ways_out(tmp_path, monkeypatch):
    monkeypatch.setenv("PIINER_SHARED_DATA", str(tmp_path / "no-shared-data"))
    monkeypatch.setenv("PIINER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SourceUnavailable) as error:
        list(iter_source("presidio", None, Audit()))
    message = str(error.value)
    assert "--from-dir presidio=PATH" in message and "network is off" in message
    assert "presidio-research" in message  # where the offline copy goes
