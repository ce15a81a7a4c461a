"""Span validation, overlap resolution and part merging of the unified record (data_prep.records)."""

import pytest

from piiner.data_prep.audit import Audit
from piiner.data_prep.dedup import deduplicate, normalize_text
from piiner.data_prep.records import check_record, clean_record
from piiner.data_prep.split import assign_splits, group_fraction


def raw(text, spans, source="src", split="train"):
    return {"id": "r1", "source": source, "text": text, "spans": spans, "group": "g1", "split": split}


def labeled(record):
    return [(record["text"][s["start"]:s["end"]], s["label"]) for s in record["spans"]]


def test_out_of_range_empty_and_bad_offsets_are_rejected_and_counted():
    audit = Audit()
    text = "Call 555-0100 now"
    good = {"start": 5, "end": 13, "label": "PHONE"}
    record = clean_record(raw(text, [good, {"start": 4, "end": 4, "label": "PHONE"}]), audit)
    assert labeled(record) == [("555-0100", "PHONE")]  # an empty span holds no value: only the span goes
    for bad in ({"start": 10, "end": 99, "label": "PHONE"}, {"start": -1, "end": 3, "label": "PHONE"},
                {"start": "x", "end": 3, "label": "PHONE"}):
        # A span that cannot be placed leaves its value unlabelled in the text: the whole record goes.
        assert clean_record(raw(text, [good, bad]), audit) is None
    assert audit.span_rejections["src"] == {"out_of_range": 2, "empty_span": 1, "bad_offset_type": 1}
    assert audit.record_rejections["src"] == {"span_out_of_range": 2, "span_bad_offset_type": 1}


def test_value_mismatch_repaired_when_unique_rejected_when_ambiguous():
    audit = Audit()
    text = "For my take on Mrs. Ayers, see Ayers2 and pw abc abc"
    repaired = {"start": 21, "end": 26, "label": "PERSON", "value": "Ayers,"}  # "Ayers," occurs once
    record = clean_record(raw(text, [repaired]), audit)
    assert labeled(record) == [("Mrs. Ayers", "PERSON")]  # the title joins the name, the comma goes
    assert audit.notes["src"]["repaired_offset"] == 1
    ambiguous = {"start": 0, "end": 3, "label": "PASSWORD", "value": "abc"}  # occurs twice: no guessing
    assert clean_record(raw(text, [repaired, ambiguous]), audit) is None
    assert audit.span_rejections["src"]["value_mismatch"] == 1
    assert audit.record_rejections["src"]["span_value_mismatch"] == 1


def test_whitespace_is_trimmed_and_counted():
    audit = Audit()
    record = clean_record(raw("Ask  John  today", [{"start": 4, "end": 11, "label": "PERSON"},
                                                    {"start": 3, "end": 5, "label": "AGE"}]), audit)
    assert labeled(record) == [("John", "PERSON")]
    assert audit.notes["src"]["trimmed_whitespace"] == 1
    assert audit.span_rejections["src"]["whitespace_span"] == 1


def test_sentence_punctuation_glued_to_a_name_is_trimmed_but_abbreviations_keep_their_period():
    # A tweet corpus's tokens keep the sentence's punctuation ("Ireland.", "Frank ."), and a label of it alone.
    audit = Audit()
    text = "in Ireland. with Frank . at #Gaza, (Dortmund) by Acme Inc. of the U . S . via Calif. and Steve &quot; . pw x1."
    names = ["Ireland.", "Frank .", "#Gaza,", "Dortmund)", "Acme Inc.", "U . S .", "Calif.", "Steve &quot;", " ."]
    spans = [{"start": text.index(n), "end": text.index(n) + len(n), "label": "ORGANIZATION"} for n in names]
    spans.append({"start": len(text) - 3, "end": len(text), "label": "PASSWORD"})  # not a name: "x1." stays whole
    record = clean_record(raw(text, spans), audit)
    assert labeled(record) == [("Ireland", "ORGANIZATION"), ("Frank", "ORGANIZATION"), ("#Gaza", "ORGANIZATION"),
                               ("Dortmund", "ORGANIZATION"), ("Acme Inc.", "ORGANIZATION"),
                               ("U . S .", "ORGANIZATION"), ("Calif.", "ORGANIZATION"),
                               ("Steve &quot;", "ORGANIZATION"), ("x1.", "PASSWORD")]
    assert audit.notes["src"]["trimmed_punctuation"] == 4
    assert audit.span_rejections["src"]["punctuation_span"] == 1


def test_a_name_ending_in_an_abbreviation_takes_its_period_and_an_initial_joins_the_rest_of_the_name():
    # The mirror of the trim: a tokenizer that split "Inc." into "Inc" "." left the period outside the span.
    audit = Audit()
    text = "Acme Inc. hired Edward D. Farr in Paris. Then LL Cool J. sang with Sean Penn."
    names = [("Acme Inc", "ORGANIZATION"), ("Edward D", "PERSON"), ("Farr", "PERSON"), ("Paris", "LOCATION"),
             ("LL Cool J", "PERSON"), ("Sean Penn", "PERSON")]
    spans = [{"start": text.index(n), "end": text.index(n) + len(n), "label": t} for n, t in names]
    record = clean_record(raw(text, spans), audit)
    # "Penn" abbreviates Pennsylvania, but is a name too: its "." ends the sentence.
    assert labeled(record) == [("Acme Inc.", "ORGANIZATION"), ("Edward D. Farr", "PERSON"), ("Paris", "LOCATION"),
                               ("LL Cool J.", "PERSON"), ("Sean Penn", "PERSON")]
    assert audit.notes["src"]["abbreviation_period_joined"] == 3


def test_overlap_keeps_longer_then_more_sensitive_and_counts():
    audit = Audit()
    text = "mail jo@example.com or 123456789"
    record = clean_record(raw(text, [
        {"start": 5, "end": 7, "label": "USERNAME"},
        {"start": 5, "end": 19, "label": "EMAIL"},
        {"start": 23, "end": 32, "label": "ACCOUNT_NUMBER"},
        {"start": 23, "end": 32, "label": "SSN"},
        {"start": 23, "end": 32, "label": "SSN"},
    ]), audit)
    assert labeled(record) == [("jo@example.com", "EMAIL"), ("123456789", "SSN")]
    assert audit.span_rejections["src"] == {"overlap_dropped": 2, "duplicate_span": 1}
    check_record(record)


def test_name_parts_merge_only_across_spaces():
    audit = Audit()
    text = "Jane Doe, Sam and Lee Wong"
    spans = [{"start": 0, "end": 4, "label": "PERSON"}, {"start": 5, "end": 8, "label": "PERSON"},
             {"start": 10, "end": 13, "label": "PERSON"}, {"start": 18, "end": 21, "label": "PERSON"},
             {"start": 22, "end": 26, "label": "PERSON"}]
    record = clean_record(raw(text, spans), audit)
    assert labeled(record) == [("Jane Doe", "PERSON"), ("Sam", "PERSON"), ("Lee Wong", "PERSON")]


def test_address_parts_merge_into_street_address_but_lone_city_stays_location():
    audit = Audit()
    text = "at 12 Baker Street, London W1U 6TY.\nShe moved to Paris, France."
    def at(value, label):
        return {"start": text.index(value), "end": text.index(value) + len(value), "label": label}
    record = clean_record(raw(text, [at("12", "STREET_ADDRESS"), at("Baker Street", "STREET_ADDRESS"),
                                     at("London", "LOCATION"), at("W1U 6TY", "STREET_ADDRESS"),
                                     at("Paris", "LOCATION"), at("France", "LOCATION")]), audit)
    assert labeled(record) == [("12 Baker Street, London W1U 6TY", "STREET_ADDRESS"), ("Paris", "LOCATION"),
                               ("France", "LOCATION")]


def test_address_parts_do_not_merge_across_words():
    text = "12 Baker Street to London"
    record = clean_record(raw(text, [{"start": 0, "end": 15, "label": "STREET_ADDRESS"},
                                     {"start": 19, "end": 25, "label": "LOCATION"}]), Audit())
    assert labeled(record) == [("12 Baker Street", "STREET_ADDRESS"), ("London", "LOCATION")]


def test_empty_text_record_rejected_and_noncanonical_label_is_an_adapter_bug():
    audit = Audit()
    assert clean_record(raw("   ", []), audit) is None
    assert audit.record_rejections["src"]["missing_or_empty_text"] == 1
    with pytest.raises(ValueError, match="non-canonical label 'EMAIL_ADDRESS'"):
        clean_record(raw("a@b.c", [{"start": 0, "end": 5, "label": "EMAIL_ADDRESS"}]), audit)


def test_check_record_catches_broken_invariants():
    good = {"id": "x", "text": "Hi Jo", "spans": [{"start": 3, "end": 5, "label": "PERSON"}]}
    check_record(good)
    for spans in ([{"start": 2, "end": 5, "label": "PERSON"}], [{"start": 3, "end": 9, "label": "PERSON"}],
                  [{"start": 3, "end": 5, "label": "NAME"}],
                  [{"start": 3, "end": 5, "label": "PERSON"}, {"start": 4, "end": 5, "label": "PERSON"}]):
        with pytest.raises(ValueError):
            check_record({**good, "spans": spans})
    check_record({**good, "not_pii_spans": [{"start": 0, "end": 2}]})
    for not_pii in ([{"start": 2, "end": 4}], [{"start": 0, "end": 9}]):
        with pytest.raises(ValueError, match="overlapping_spans|span_out_of_range"):
            check_record({**good, "not_pii_spans": not_pii})


def test_spans_labelled_as_no_pii_type_become_not_pii_spans_unless_they_cover_pii():
    audit = Audit()
    text = "Ann watched Toy Story on 12 Main St"
    record = clean_record(raw(text, [{"start": 0, "end": 3, "label": "PERSON"}, {"start": 12, "end": 21, "label": "O"},
                                     {"start": 25, "end": 35, "label": "STREET_ADDRESS"},
                                     {"start": 25, "end": 27, "label": "O"}, {"start": 30, "end": 99, "label": "O"}]),
                          audit)
    assert labeled(record) == [("Ann", "PERSON"), ("12 Main St", "STREET_ADDRESS")]
    assert [text[s["start"]:s["end"]] for s in record["not_pii_spans"]] == ["Toy Story"]
    assert audit.span_rejections["src"] == {"not_pii_span_over_pii": 1, "out_of_range": 1}
    assert "src" not in audit.record_rejections  # a lost negative loses no PII: the record stays
    check_record(record)


def test_unjudged_spans_are_kept_apart_joined_when_nested_and_dropped_over_a_judged_span():
    audit = Audit()
    text = "In 2005, on 3 March 2005, Ann left that morning"
    record = clean_record(raw(text, [{"start": 3, "end": 7, "label": "DATE", "unjudged": True},
                                     {"start": 12, "end": 24, "label": "DATE"},
                                     {"start": 20, "end": 24, "label": "DATE", "unjudged": True},  # inside the date
                                     {"start": 26, "end": 29, "label": "PERSON"},
                                     {"start": 35, "end": 47, "label": "DATE", "unjudged": True},
                                     {"start": 40, "end": 47, "label": "DATE", "unjudged": True}]), audit)
    assert labeled(record) == [("3 March 2005", "DATE"), ("Ann", "PERSON")]
    assert [text[s["start"]:s["end"]] for s in record["unjudged_spans"]] == ["2005", "that morning"]
    assert audit.notes["src"] == {"unjudged_span_inside_judged": 1} and "src" not in audit.span_rejections
    check_record(record)
    with pytest.raises(ValueError, match="overlapping_spans"):
        check_record({**record, "unjudged_spans": [{"start": 26, "end": 29}]})


def test_dedup_keeps_the_held_out_copy_and_counts():
    audit = Audit()
    records = [
        {"id": "a", "source": "s", "text": "Call me  at 555", "spans": [], "group": "1", "split": "train"},
        {"id": "b", "source": "s", "text": "call me at 555", "spans": [], "group": "2", "split": "test"},
        {"id": "c", "source": "s", "text": "call me at 555", "spans": [], "group": "3", "split": "validation"},
        {"id": "d", "source": "s", "text": "call me at 556", "spans": [], "group": "4", "split": "train"},
    ]
    kept = deduplicate(records, audit)
    assert sorted(r["id"] for r in kept) == ["b", "d"]
    assert audit.notes["s"] == {"dropped_exact_duplicate_across_splits": 1,
                                "dropped_normalized_duplicate_across_splits": 1}
    assert normalize_text("  A\tB\n c ") == "a b c"


def test_split_follows_group_and_source_splits():
    rows = [{"group": f"doc{i % 50}", "source_split": "train"} for i in range(500)]
    rows += [{"group": "held", "source_split": "test"}]
    assign_splits(rows)
    by_group = {}
    for r in rows:
        assert by_group.setdefault(r["group"], r["split"]) == r["split"]
    assert rows[-1]["split"] == "test"
    assert {r["split"] for r in rows[:-1]} == {"train", "validation"}  # a source test split exists: no hashing into test
    only_train = assign_splits([{"group": f"g{i}", "source_split": "train"} for i in range(300)])
    assert {r["split"] for r in only_train} == {"train", "validation", "test"}
    assert 0 <= group_fraction("x") < 1 and group_fraction("x") == group_fraction("x")


def test_a_title_joins_its_name_in_upper_and_lower_case_text_too():
    # Nursing notes write "DR RUSSO" and "dr. lindquist": one convention in a corpus whatever its case, or a model
    # is taught both and strict scores count the same name as a miss and a false positive.
    text = ("DR RUSSO saw him; dr. lindquist and Dr. Billy agreed. I miss Anna, thank the Lord Jesus. MRS. ADAMS came."
            " Per dr.ayoub and DR.GOLINI, Drs Ferullo and Saeed came.")
    names = ["RUSSO", "lindquist", "Billy", "Anna", "Jesus", "ADAMS", "ayoub", "GOLINI", "Ferullo", "Saeed"]
    spans = [{"start": text.index(n), "end": text.index(n) + len(n), "label": "PERSON"} for n in names]
    record = clean_record(raw(text, spans), Audit())
    # A lower-case word that is also a verb or a noun ("miss", "lord") is not taken for a title; a title's "." may
    # run on into the name ("dr.ayoub"), and "Drs" is a title too.
    assert labeled(record) == [("DR RUSSO", "PERSON"), ("dr. lindquist", "PERSON"), ("Dr. Billy", "PERSON"),
                               ("Anna", "PERSON"), ("Lord Jesus", "PERSON"), ("MRS. ADAMS", "PERSON"),
                               ("dr.ayoub", "PERSON"), ("DR.GOLINI", "PERSON"), ("Drs Ferullo", "PERSON"),
                               ("Saeed", "PERSON")]
