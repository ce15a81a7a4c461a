"""The redaction API with fake detectors: modes, offsets, filters, overlap defence, bad input, messy text."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from piiner.deid import Redactor, redact
from piiner.deid.redact import merge_overlaps
from piiner.hub.pii_schema import PII_TYPES, TIER_OF


def ent(pii_type, start, end, score=0.9, **extra):
    return {"type": pii_type, "tier": TIER_OF[pii_type], "score": score, "start": start, "end": end, **extra}


def pattern_detector(patterns):
    """A detector finding fixed regexes: {"EMAIL": r"...", ...}."""
    def detect(texts):
        assert isinstance(texts, list) and all(isinstance(t, str) for t in texts)
        return [[ent(t, m.start(), m.end()) for t, p in patterns.items() for m in re.finditer(p, text)]
                for text in texts]
    return detect


DETECT = pattern_detector({"EMAIL": r"\S+@\S+\.com", "SSN": r"\d{3}-\d{2}-\d{4}", "PERSON": r"John Smith",
                           "DATE": r"\d{4}-\d\d-\d\d"})
TEXT = "John Smith (SSN 123-45-6789) wrote to john@x.com on 2021-03-05."


def check_offsets(result):
    for e in result.entities:
        assert result.text[e["start"]:e["end"]] == e["word"]
        assert result.redacted_text[e["new_start"]:e["new_end"]] == e["replacement"]


def outside(text, spans):
    """The characters of ``text`` outside ``spans``, as a list of the pieces between them."""
    pieces, cursor = [], 0
    for start, end in sorted(spans):
        pieces.append(text[cursor:start])
        cursor = end
    return pieces + [text[cursor:]]


@pytest.mark.parametrize("mode", ["placeholder", "mask", "hash", "surrogate"])
def test_each_mode_replaces_every_entity_and_keeps_the_rest(mode):
    result = redact(TEXT, DETECT, mode=mode, key="k")
    assert [e["type"] for e in result.entities] == ["PERSON", "SSN", "EMAIL", "DATE"]
    check_offsets(result)
    assert outside(result.text, [(e["start"], e["end"]) for e in result.entities]) == outside(
        result.redacted_text, [(e["new_start"], e["new_end"]) for e in result.entities])
    for e in result.entities:
        assert e["word"] not in result.redacted_text


def test_mode_formats():
    placeholder = redact(TEXT, DETECT).redacted_text
    assert placeholder == "[PERSON] (SSN [SSN]) wrote to [EMAIL] on [DATE]."
    assert redact(TEXT, DETECT, mode="mask").redacted_text == "********** (SSN ***********) wrote to ********** on **********."
    hashed = redact(TEXT, DETECT, mode="hash", key="k").redacted_text
    assert re.fullmatch(r"\[PERSON:[0-9a-f]{8}\] \(SSN \[SSN:[0-9a-f]{8}\]\) wrote to \[EMAIL:[0-9a-f]{8}\] on "
                        r"\[DATE:[0-9a-f]{8}\]\.", hashed)
    surrogate = redact(TEXT, DETECT, mode="surrogate", key="k")
    assert re.fullmatch(r"\d{3}-\d{2}-\d{4}", surrogate.entities[1]["replacement"])


def test_hash_and_surrogate_are_consistent_within_and_across_documents_given_a_key():
    texts = ["ssn 123-45-6789 and again 123-45-6789", "other doc: 123-45-6789"]
    for mode in ("hash", "surrogate"):
        first = redact(texts, DETECT, mode=mode, key="secret")
        second = redact(texts, DETECT, mode=mode, key="secret")
        other_key = redact(texts, DETECT, mode=mode, key="another")
        replacements = [e["replacement"] for r in first for e in r.entities]
        assert len(set(replacements)) == 1
        assert replacements == [e["replacement"] for r in second for e in r.entities]
        assert replacements[0] != other_key[0].entities[0]["replacement"]


def test_without_a_key_one_redactor_is_consistent_but_two_are_not():
    a = Redactor(DETECT, mode="hash")
    b = Redactor(DETECT, mode="hash")
    assert a("123-45-6789").redacted_text == a("x 123-45-6789").entities[0]["replacement"]
    assert a("123-45-6789").redacted_text != b("123-45-6789").redacted_text
    assert a.key_is_ephemeral


def test_type_filter_min_tier_and_thresholds():
    only_ssn = redact(TEXT, DETECT, types=["SSN"])
    assert [e["type"] for e in only_ssn.entities] == ["SSN"] and "John Smith" in only_ssn.redacted_text
    assert only_ssn.dropped["type_not_selected"] == 3
    # min_tier=2 keeps the MORE sensitive tiers 1 and 2 and leaves the tier-3 DATE in clear.
    tier2 = redact(TEXT, DETECT, min_tier=2)
    assert {e["tier"] for e in tier2.entities} == {1, 2} and "2021-03-05" in tier2.redacted_text
    assert redact(TEXT, DETECT, min_tier=1).entities[0]["type"] == "SSN"
    strict = redact(TEXT, DETECT, tier_thresholds={2: 0.95})  # the fake scores are 0.9
    assert [e["type"] for e in strict.entities] == ["SSN", "DATE"] and strict.dropped["below_tier_threshold"] == 2


def test_list_in_list_out_str_in_single_result_out():
    assert isinstance(redact(TEXT, DETECT).redacted_text, str)
    out = redact([TEXT, "", TEXT], DETECT)
    assert [r.redacted_text for r in out][1] == "" and out[0].redacted_text == out[2].redacted_text


@pytest.mark.parametrize(
    "bad, message",
    [(None, "None"), (b"bytes", "bytes"), (42, "int"), (3.5, "float"), ([["nested"]], r"texts\[0\].*nested"),
     (["ok", None], r"texts\[1\]"), (["ok", b"x"], r"texts\[1\].*bytes"), ({"text": "x"}, "dict")],
)
def test_bad_input_is_a_type_error_naming_the_problem_before_the_detector_runs(bad, message):
    def detector(texts):
        raise AssertionError("the detector must not be called on bad input")
    with pytest.raises(TypeError, match=message):
        redact(bad, detector)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [(dict(mode="blackout"), ValueError, "mode"), (dict(types=["EMAIL", "SHOE_SIZE"]), ValueError, "SHOE_SIZE"),
     (dict(min_tier=0), ValueError, "min_tier"), (dict(min_tier=5), ValueError, "min_tier"),
     (dict(tier_thresholds={2: 1.5}), ValueError, "tier_thresholds"), (dict(tier_thresholds={7: 0.5}), ValueError, "tier"),
     (dict(key=123), TypeError, "key"), (dict(key=""), ValueError, "key")],
)
def test_bad_settings_name_the_setting(kwargs, error, message):
    with pytest.raises(error, match=message):
        redact(TEXT, DETECT, **kwargs)


def test_detector_returning_the_wrong_shape_is_an_error_naming_the_detector():
    with pytest.raises(ValueError, match="detector returned 1 results for 2 texts"):
        redact(["a b", "c d"], lambda texts: [[]])
    with pytest.raises(ValueError, match="detector"):
        redact("a b", lambda texts: None)


@pytest.mark.parametrize("text", ["", " ", "\n\t  \r\n", "\u3000\u2003"])
def test_empty_and_whitespace_text_has_no_entities_and_is_unchanged(text):
    def detector(texts):
        raise AssertionError("nothing to detect in whitespace")
    result = redact(text, detector)
    assert result.entities == [] and result.redacted_text == text


def test_lone_surrogates_are_hidden_from_the_detector_without_moving_offsets():
    seen = []

    def detector(texts):
        seen.extend(texts)
        for t in texts:
            t.encode("utf-8")  # what a tokenizer does first: fails on a lone surrogate
        return DETECT(texts)

    text = "\ud800 call John Smith \udfff ssn 123-45-6789\x00\x07 end"
    result = redact(text, detector)
    assert len(seen[0]) == len(text)
    check_offsets(result)
    assert result.redacted_text == "\ud800 call [PERSON] \udfff ssn [SSN]\x00\x07 end"


def test_a_one_megabyte_line_is_processed():
    text = ("filler text 123-45-6789 " * 45000)[:1_000_000]
    result = redact(text, DETECT, mode="mask")
    assert len(result.redacted_text) == len(text) and "123-45-6789" not in result.redacted_text
    assert len(result.entities) == text.count("123-45-6789")


def test_invalid_detector_spans_are_dropped_and_counted_and_whitespace_trimmed():
    def detector(texts):
        return [[ent("EMAIL", -1, 3), ent("EMAIL", 5, 100), ent("EMAIL", 4, 4), {"start": 0, "end": 2},
                 ent("PERSON", 0, 6), ent("SSN", 6, 8)]]
    result = redact("  Bob   ", detector)
    assert [(e["start"], e["end"], e["word"]) for e in result.entities] == [(2, 5, "Bob")]
    assert result.dropped == {"offsets_out_of_range": 3, "missing_type": 1, "whitespace_only_span": 1}


def test_overlapping_spans_merge_into_their_union_typed_by_the_most_sensitive_member():
    text = "card 4111-1111-1111-1111 end"
    spans = [ent("PHONE", 5, 17, score=0.99), ent("CREDIT_CARD", 10, 24, score=0.6), ent("DATE", 20, 24)]
    for order in (spans, spans[::-1], [spans[1], spans[2], spans[0]]):
        result = redact(text, lambda texts, order=order: [list(order)])
        assert [(e["type"], e["start"], e["end"]) for e in result.entities] == [("CREDIT_CARD", 5, 24)]
        assert result.redacted_text == "card [CREDIT_CARD] end"
        assert result.dropped["merged_into_overlapping_entity"] == 2


def test_touching_spans_are_not_merged():
    merged = merge_overlaps([ent("PERSON", 0, 4, word="John"), ent("PERSON", 4, 9, word="Smith")], "JohnSmith")
    assert [(e["start"], e["end"]) for e in merged] == [(0, 4), (4, 9)]


# -- property: arbitrary Unicode text, arbitrary (overlapping, out-of-order, out-of-range) detector spans --------

# Any code point, lone surrogates included, with the awkward ones (surrogates, NUL, controls, line breaks) and
# PII-ish ASCII drawn often.
MESSY_CHARS = st.one_of(st.characters(exclude_categories=()),
                        st.sampled_from(["\ud800", "\udfff", "\x00", "\x07", "\u2028", " ", "\n", "\t", "@", ".",
                                         "-", "1", "9", "a", "Z", "é", "🙂"]))


@st.composite
def text_and_spans(draw):
    text = draw(st.text(MESSY_CHARS, max_size=60))
    n = len(text)
    spans = draw(st.lists(
        st.tuples(st.integers(-2, n + 2), st.integers(-2, n + 2), st.sampled_from(PII_TYPES),
                  st.floats(0, 1, allow_nan=False)),
        max_size=8))
    return text, spans


CURRENT_SPANS = []  # set per example: the Redactors (and their surrogate generators) are built once


def _spans_detector(texts):
    return [[ent(t, s, e, score=p) for s, e, t, p in CURRENT_SPANS] for _ in texts]


PROPERTY_REDACTORS = {mode: Redactor(_spans_detector, mode=mode, key="property")
                      for mode in ("placeholder", "mask", "hash", "surrogate")}


@settings(max_examples=80, deadline=None)
@given(case=text_and_spans(), mode=st.sampled_from(sorted(PROPERTY_REDACTORS)))
def test_property_offsets_exact_no_overlap_and_non_entity_text_untouched(case, mode):
    text, CURRENT_SPANS[:] = case
    result = PROPERTY_REDACTORS[mode](text)
    check_offsets(result)
    ordered = result.entities
    assert all(a["end"] <= b["start"] for a, b in zip(ordered, ordered[1:]))
    assert all(a["new_end"] <= b["new_start"] for a, b in zip(ordered, ordered[1:]))
    assert outside(text, [(e["start"], e["end"]) for e in ordered]) == outside(
        result.redacted_text, [(e["new_start"], e["new_end"]) for e in ordered])
    if mode == "surrogate":
        assert all(e["replacement"] != e["word"] for e in ordered)


def test_detector_scalars_of_numpy_and_torch_are_accepted_and_a_bad_score_is_counted():
    import numpy as np
    import torch

    def detector(texts):
        return [[{"type": "SSN", "start": np.int64(4), "end": torch.tensor(15), "score": np.float32(0.25)},
                 {"type": "EMAIL", "start": 16, "end": 17, "score": "high"}]]
    result = redact("ssn 123-45-6789 x", detector, tier_thresholds={1: 0.2})
    assert result.redacted_text == "ssn [SSN] x" and result.entities[0]["tier"] == 1
    assert result.entities[0]["score"] == pytest.approx(0.25) and result.dropped == {"invalid_score": 1}
