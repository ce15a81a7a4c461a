"""Each adapter on fixture files written in the exact Hub / file shapes (tests/fixtures/data_prep)."""

import json
import os

import pytest

from piiner.data_prep.audit import Audit
from piiner.data_prep.records import check_record, clean_record
from piiner.data_prep.sources import SourceUnavailable, iter_source
from piiner.data_prep.sources.conll import join_tokens
from piiner.data_prep.sources.gretel import find_occurrences
from piiner.data_prep.sources.loading import parse_list, read_local
from piiner.data_prep.split import assign_splits

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "data_prep")


def load(name, path):
    """{text: [(surface, label), ...]} and the audit for one source read from a fixture."""
    audit = Audit()
    out = {}
    for raw in assign_splits(list(iter_source(name, os.path.join(FIXTURES, path), audit))):
        record = clean_record(raw, audit)
        if record is not None:
            check_record(record)
            out[record["text"]] = [(record["text"][s["start"]:s["end"]], s["label"]) for s in record["spans"]]
    return out, audit


def test_ai4privacy_400k_merges_names_and_address_and_counts_every_defect():
    records, audit = load("ai4privacy", "ai4privacy_400k.jsonl")
    assert records["My name is Jane Doe and I live at 12 Baker Street, London W1U 6TY."] == [
        ("Jane Doe", "PERSON"), ("12 Baker Street, London W1U 6TY", "STREET_ADDRESS")]
    assert records["Call 555-0100 or email jo@example.com before 10:30."] == [
        ("555-0100", "PHONE"), ("jo@example.com", "EMAIL")]
    # A span that cannot be placed takes its record with it: kept, the record would teach that the value is not PII.
    assert not any(text.startswith("Ask John about it") for text in records)
    assert not any(text.startswith("Je m'appelle") for text in records)
    assert audit.span_rejections["ai4privacy"] == {"overlap_dropped": 1, "out_of_range": 1}
    # A label its map does not know takes its record with it: kept, its text would teach that the value is no PII.
    assert not any(text.startswith("Password secret99") for text in records)
    assert audit.record_rejections["ai4privacy"] == {"unknown_label:FAVOURITECOLOR": 1, "span_out_of_range": 1}
    notes = audit.notes["ai4privacy"]
    assert notes["skipped_non_english_row"] == 1
    assert notes["not_pii_label:TIME"] == 1
    assert notes["trimmed_whitespace"] == 1


def test_ai4privacy_300k_and_open_500k_shapes():
    records, audit = load("ai4privacy_300k", "ai4privacy_300k.jsonl")
    assert records["Dear Anna Maria Schmidt, your passport X1234567 expires on 2026-01-01."] == [
        ("Anna Maria Schmidt", "PERSON"), ("X1234567", "PASSPORT_NUMBER"), ("2026-01-01", "DATE")]
    assert records["Mr. Tom Hardy logged in from 10.0.0.12 as thardy."] == [
        ("Mr. Tom Hardy", "PERSON"), ("10.0.0.12", "IP_ADDRESS"), ("thardy", "USERNAME")]  # titles join names
    assert audit.notes["ai4privacy_300k"]["skipped_non_english_row"] == 1
    records, audit = load("ai4privacy_500k", "ai4privacy_500k.jsonl")
    assert records == {"Ms. Olivia Brown, 34, lives at 221 Elm Street, Springfield.": [
        ("Ms. Olivia Brown", "PERSON"), ("34", "AGE"), ("221 Elm Street, Springfield", "STREET_ADDRESS")]}
    assert audit.notes["ai4privacy_500k"]["not_pii_label:TITLE"] == 1


def test_nemotron_python_repr_spans_and_split_from_file_names():
    audit = Audit()
    raws = assign_splits(list(iter_source("nemotron", os.path.join(FIXTURES, "nemotron"), audit)))
    assert {r["id"]: r["split"] for r in raws}["nemotron-n3"] == "test"
    records, audit = load("nemotron", "nemotron")
    assert records["Patient Maria Garcia (MRN 00482913), SSN 512-44-1234, api key sk_live_abc."] == [
        ("Maria Garcia", "PERSON"), ("00482913", "MEDICAL_RECORD"), ("512-44-1234", "SSN")]
    assert "Contact bob@corp.io; favourite food: pizza." not in records  # its label favourite_food is unknown
    assert audit.record_rejections["nemotron"] == {"unknown_label:favourite_food": 1}
    assert audit.notes["nemotron"]["not_pii_label:api_key"] == 1


def test_gretel_finance_json_string_spans_without_values():
    records, audit = load("gretel_finance", "gretel_finance.jsonl")
    text = "Transfer from IBAN DE44500105175407324931 (BIC DEUTDEFF) approved by Karen Smith on 2023-04-01."
    assert records[text] == [("DE44500105175407324931", "IBAN"), ("DEUTDEFF", "SWIFT_CODE"),
                             ("Karen Smith", "PERSON"), ("2023-04-01", "DATE")]
    assert "Card security code 123 for account 998877." not in records  # its out-of-range span
    assert audit.span_rejections["gretel_finance"] == {"out_of_range": 1}
    assert audit.record_rejections["gretel_finance"] == {"span_out_of_range": 1}
    assert audit.notes["gretel_finance"]["skipped_non_english_row"] == 1


def test_gretel_masking_labels_every_word_bounded_occurrence():
    records, audit = load("gretel_masking", "gretel_masking.jsonl")
    text = "Maria Lopez (MRN-4471) was seen today. Maria's record MRN-4471 was updated. Annual review due."
    assert records[text] == [("Maria Lopez", "PERSON"), ("MRN-4471", "MEDICAL_RECORD"), ("Maria", "PERSON"),
                             ("MRN-4471", "MEDICAL_RECORD")]
    assert audit.span_rejections["gretel_masking"]["entity_not_found_in_text"] == 2  # "Ann" in "Annual", "Dr. Who"
    assert audit.notes["gretel_masking"]["extra_occurrences_labeled"] == 2
    assert records["Device A1:B2:C3:D4:E5:F6 belongs to the lab."] == [("A1:B2:C3:D4:E5:F6", "DEVICE_ID")]
    assert find_occurrences("Ann, Anna and Ann.", "Ann") == [0, 14]


def test_presidio_wrong_offset_repaired_groups_by_template_and_address_merge():
    audit = Audit()
    raws = list(iter_source("presidio", os.path.join(FIXTURES, "presidio"), audit))
    groups = {r["text"]: r["group"] for r in raws}
    assert groups["What is the limit for Card 4454794511390933?"] == groups["What is the limit for card 5474123209470398?"]
    records, audit = load("presidio", "presidio")
    assert records["For my take on Mrs. Ayers, see the list."] == [("Mrs. Ayers", "PERSON")]
    assert audit.notes["presidio"]["repaired_offset"] == 1
    assert records["john had given shamhan his address: 46 velky pruhon 426, opocnice"] == [
        ("john", "PERSON"), ("shamhan", "PERSON"), ("46 velky pruhon 426, opocnice", "STREET_ADDRESS")]
    assert records["I live in Sydney"] == [("Sydney", "LOCATION")]
    # presidio has no date-of-birth type; the words before a date decide, and only the birth date moves
    assert sorted(records["I was born on 2/8/1935, and I married on 3/4/2001."]) == [
        ("2/8/1935", "DATE_OF_BIRTH"), ("3/4/2001", "DATE")]
    assert audit.notes["presidio"]["context_labeled_DATE_OF_BIRTH"] == 1


def test_wnut17_rebuilds_text_maps_classes_and_labels_handles_and_urls():
    records, audit = load("wnut17", "wnut17")
    assert records["@paulwalk It's the Empire State Building."] == [
        ("paulwalk", "USERNAME"), ("Empire State Building", "LOCATION")]
    assert records["Lindsay Lohan loves iPhone http://bit.ly/aKe1HL"] == [
        ("Lindsay Lohan", "PERSON"), ("http://bit.ly/aKe1HL", "URL")]
    assert records["Working at Google with @jane_doe: email me@x.com"] == [
        ("Google", "ORGANIZATION"), ("jane_doe", "USERNAME"), ("me@x.com", "EMAIL")]
    assert records["Go Knicks! www.nba.com"] == [("Knicks", "ORGANIZATION"), ("www.nba.com", "URL")]
    notes = audit.notes["wnut17"]
    assert notes["regex_labeled_USERNAME"] == 2 and notes["regex_labeled_URL"] == 2
    assert notes["not_pii_label:product"] == 1
    # A type name with a hyphen is a tag like any other, not a malformed row.
    assert records["Watching Toy Story with Tom Hanks"] == [("Tom Hanks", "PERSON")]
    assert notes["not_pii_label:creative-work"] == 1
    assert "wnut17" not in audit.malformed and "wnut17" not in audit.record_rejections
    # Products and creative works are labelled, and labelled as no PII type: kept as negatives for every type.
    audit = Audit()
    raws = assign_splits(list(iter_source("wnut17", os.path.join(FIXTURES, "wnut17"), audit)))
    cleaned = [clean_record(raw, audit) for raw in raws]
    not_pii = {r["text"]: [r["text"][s["start"]:s["end"]] for s in r["not_pii_spans"]] for r in cleaned}
    assert not_pii["Lindsay Lohan loves iPhone http://bit.ly/aKe1HL"] == ["iPhone"]
    assert not_pii["Watching Toy Story with Tom Hanks"] == ["Toy Story"]
    assert not_pii["Go Knicks! www.nba.com"] == []
    audit = Audit()
    raws = assign_splits(list(iter_source("wnut17", os.path.join(FIXTURES, "wnut17"), audit)))
    dev = ("Go Knicks", "Didn't")
    assert [r["split"] for r in raws if r["text"].startswith(dev)] == ["test", "test"]
    assert {r["split"] for r in raws if not r["text"].startswith(dev)} <= {"train", "validation"}


def test_tweets_read_as_people_write_them_not_as_their_tokenizer_cut_them():
    # The WNUT-17 dev file cuts words at the apostrophe ("Is n ' t", "I ' m": a quarter of its tweets) and both sets
    # space every mark ("Knicks !", "( says CNN )"); a user's text has none of that, and the model reads the text.
    records, _ = load("wnut17", "wnut17")
    assert records["Didn't Zac Efron's fans say \"I'm out\"?"] == [("Zac Efron", "PERSON")]
    records, _ = load("btc", "btc")
    # Letters with periods are one word again, and a link keeps the sentence's period outside its span.
    assert records["Rubin \"Hurricane\" Carter isn't in the U.S. (says CNN): http://t.co/Xy12."] == [
        ('Rubin "Hurricane" Carter', "PERSON"), ("U.S.", "LOCATION"), ("CNN", "ORGANIZATION"),
        ("http://t.co/Xy12", "URL")]
    # Numbers, times and domains are one word again too.
    assert records["Acme sales up 4.4% to $50,000 at 10:39, see acme.com"] == [("Acme", "ORGANIZATION")]


@pytest.mark.parametrize("tokens, text", [
    ("the Cats ' first game", "the Cats' first game"),  # a lone apostrophe after a plural: its possessive
    ("program ' Fat Chance ' is", "program 'Fat Chance' is"),  # two of them quote what is between
    ('Agreement . " " Servicer " shall', 'Agreement." "Servicer" shall'),  # a quote before a quote closes
    ("on September 1 , 1862 at 7 : 06 : 08pm", "on September 1, 1862 at 7:06:08pm"),  # a year is no thousands
])
def test_detokenized_text_keeps_every_token_at_its_offset(tokens, text):
    words = tokens.split()
    rebuilt, starts = join_tokens(words)
    assert rebuilt == text
    assert [rebuilt[start:start + len(word)] for word, start in zip(words, starts)] == words


def test_local_formats_parquet_arrow_and_save_to_disk_read_alike(tmp_path):
    import datasets

    rows = read_local(os.path.join(FIXTURES, "ai4privacy_400k.jsonl"))["train"]
    ds = datasets.Dataset.from_list(rows)
    ds.to_parquet(str(tmp_path / "train.parquet"))
    datasets.DatasetDict({"train": ds, "validation": ds.select([0])}).save_to_disk(str(tmp_path / "saved"))
    via_parquet = read_local(str(tmp_path / "train.parquet"))
    via_saved = read_local(str(tmp_path / "saved"))
    assert [r["source_text"] for r in via_parquet["train"]] == [r["source_text"] for r in rows]
    assert len(via_saved["validation"]) == 1
    records, _ = load("ai4privacy", str(tmp_path / "train.parquet"))
    assert records["Card 4111 1111 1111 1111 belongs to Sam Lee."] == [
        ("4111 1111 1111 1111", "CREDIT_CARD"), ("Sam Lee", "PERSON")]


def test_offline_hub_source_without_local_copy_names_the_flag(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(SourceUnavailable, match="--from-dir nemotron=PATH"):
        list(iter_source("nemotron", None, Audit()))
    with pytest.raises(SourceUnavailable, match="does not exist"):
        list(iter_source("gretel_masking", "/nonexistent/folder", Audit()))


def test_parse_list_accepts_lists_json_and_python_repr():
    value = [{"start": 0, "end": 1, "label": "x"}]
    assert parse_list(value) == value
    assert parse_list(json.dumps(value)) == value
    assert parse_list(repr(value)) == value
    assert parse_list("") == [] and parse_list(None) == []
    with pytest.raises(ValueError):
        parse_list("[{'start': 0,")


def test_hub_path_goes_through_load_dataset(monkeypatch):
    import datasets

    rows = read_local(os.path.join(FIXTURES, "gretel_masking.jsonl"))["train"]
    calls = []

    def fake_load_dataset(hub_id, *args, **kwargs):
        calls.append(hub_id)
        return datasets.DatasetDict({"train": datasets.Dataset.from_list(rows), "test": datasets.Dataset.from_list(rows[1:])})

    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    raws = assign_splits(list(iter_source("gretel_masking", None, Audit())))
    assert calls == ["gretelai/gretel-pii-masking-en-v1"]
    assert [r["split"] for r in raws if r["source_split"] == "test"] == ["test"]

    def failing_load_dataset(hub_id, *args, **kwargs):
        raise ConnectionError("no route to host")

    monkeypatch.setattr(datasets, "load_dataset", failing_load_dataset)
    with pytest.raises(SourceUnavailable, match="no route to host.*--from-dir gretel_masking=PATH"):
        list(iter_source("gretel_masking", None, Audit()))


def test_unparseable_span_strings_reject_the_record(tmp_path):
    path = tmp_path / "nemo.jsonl"
    path.write_text(json.dumps({"uid": "x", "text": "Hi Bob", "spans": "[{'start': 3, 'end':"}) + "\n")
    audit = Audit()
    assert list(iter_source("nemotron", str(path), audit)) == []
    assert audit.record_rejections["nemotron"] == {"unparseable_spans": 1}


def test_local_files_written_with_a_byte_order_mark_lose_no_row(tmp_path):
    """The first row of a JSONL file (or a whole JSON file) behind a UTF-8 byte order mark was "not valid JSON"."""
    rows = [{"text": f"row {i}", "spans": []} for i in range(3)]
    (tmp_path / "train.jsonl").write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r) + "\n" for r in rows).encode())
    (tmp_path / "test.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(rows, indent=1).encode())
    problems = []
    read = read_local(str(tmp_path), problems)
    assert read == {"train": rows, "test": rows} and problems == []
