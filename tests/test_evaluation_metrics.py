"""Strict span metrics on hand-computed cases."""

import pytest

from piiner.evaluation.metrics import (
    RELAXED_SCHEMES, bootstrap_f1, redaction_coverage, relaxed_matches, span_metrics)


def test_perfect_match_with_tuples_and_dicts_mixed():
    gold = [[(0, 5, "PERSON"), {"start": 10, "end": 20, "label": "EMAIL"}]]
    pred = [[{"start": 0, "end": 5, "type": "PERSON"}, (10, 20, "EMAIL")]]
    m = span_metrics(gold, pred)
    assert m["overall"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "f2": 1.0, "tp": 2, "fp": 0, "fn": 0,
                            "support": 2}


def test_off_by_one_boundary_is_both_fp_and_fn():
    m = span_metrics([[(0, 5, "PERSON")]], [[(0, 6, "PERSON")]])
    o = m["overall"]
    assert (o["tp"], o["fp"], o["fn"]) == (0, 1, 1)
    assert o["precision"] == o["recall"] == o["f1"] == 0.0


def test_type_mismatch_counts_against_both_types():
    m = span_metrics([[(3, 9, "SSN")]], [[(3, 9, "PHONE")]])
    assert (m["per_type"]["SSN"]["fn"], m["per_type"]["SSN"]["fp"]) == (1, 0)
    assert (m["per_type"]["PHONE"]["fp"], m["per_type"]["PHONE"]["fn"]) == (1, 0)
    assert m["per_tier"][1]["recall"] == 0.0 and m["per_tier"][1]["meets_target"] is False
    assert m["per_tier"][2]["precision"] == 0.0 and m["per_tier"][2]["support"] == 0
    assert m["per_tier"][2]["meets_target"] is None


def test_duplicate_prediction_is_one_tp_and_one_fp():
    m = span_metrics([[(0, 4, "DATE")]], [[(0, 4, "DATE"), (0, 4, "DATE")]])
    o = m["overall"]
    assert (o["tp"], o["fp"], o["fn"]) == (1, 1, 0)
    assert o["precision"] == 0.5 and o["recall"] == 1.0


def test_hand_computed_micro_averages_and_f2():
    # text 0: 2 gold, 1 right + 1 wrong pred; text 1: 1 gold, missed; text 2: no gold, 1 spurious pred.
    gold = [[(0, 4, "PERSON"), (10, 21, "SSN")], [(5, 9, "PERSON")], []]
    pred = [[(0, 4, "PERSON"), (10, 20, "SSN")], [], [(1, 2, "PIN")]]
    m = span_metrics(gold, pred)
    o = m["overall"]
    assert (o["tp"], o["fp"], o["fn"], o["support"]) == (1, 2, 2, 3)
    p, r = 1 / 3, 1 / 3
    assert o["precision"] == pytest.approx(p) and o["recall"] == pytest.approx(r)
    assert o["f1"] == pytest.approx(1 / 3) and o["f2"] == pytest.approx(5 * p * r / (4 * p + r))
    person = m["per_type"]["PERSON"]
    assert (person["tp"], person["fn"], person["precision"], person["recall"]) == (1, 1, 1.0, 0.5)
    assert person["f2"] == pytest.approx(5 * 0.5 / (4 + 0.5))
    assert m["per_tier"][2]["recall"] == 0.5 and m["per_tier"][2]["target"] == 0.95
    assert m["per_tier"][4]["fp"] == 1 and m["per_tier"][4]["support"] == 0
    # Schema order: SSN (tier 1) before PERSON (tier 2) before PIN (tier 4).
    assert list(m["per_type"]) == ["SSN", "PERSON", "PIN"]


def test_types_restriction_filters_gold_and_pred_and_lists_every_type():
    gold = [[(0, 4, "PERSON"), (5, 9, "USERNAME")]]
    pred = [[(0, 4, "PERSON"), (10, 14, "URL")]]
    m = span_metrics(gold, pred, types=["PERSON", "LOCATION", "ORGANIZATION"])
    assert (m["overall"]["tp"], m["overall"]["fp"], m["overall"]["fn"]) == (1, 0, 0)
    assert list(m["per_type"]) == ["PERSON", "LOCATION", "ORGANIZATION"]
    assert m["per_type"]["LOCATION"]["support"] == 0 and m["per_type"]["LOCATION"]["f1"] == 0.0


def test_meets_target_uses_the_tier_recall_target():
    gold = [[(i * 10, i * 10 + 5, "SSN")] for i in range(50)]
    pred = [g if i else [] for i, g in enumerate(gold)]  # 49 / 50 = 0.98
    assert span_metrics(gold, pred)["per_tier"][1]["meets_target"] is True
    pred[1] = []
    assert span_metrics(gold, pred)["per_tier"][1]["meets_target"] is False


def test_empty_input_gives_zeros_not_errors():
    m = span_metrics([], [])
    assert m["overall"]["f1"] == 0.0 and m["overall"]["support"] == 0 and m["per_type"] == {}


@pytest.mark.parametrize(
    "bad, message",
    [
        ((5, 5, "SSN"), "start < end"),
        ((-1, 3, "SSN"), "start < end"),
        ((0, 3.0, "SSN"), "must be ints"),
        ({"start": 0, "end": 3}, "type keys"),
        ((0, 3), "expected a"),
        ((0, 3, ""), "non-empty"),
    ],
)
def test_bad_spans_raise_naming_the_problem(bad, message):
    with pytest.raises(ValueError, match=message):
        span_metrics([[bad]], [[]])


def test_misaligned_lists_raise():
    with pytest.raises(ValueError, match="aligned"):
        span_metrics([[], []], [[]])


def test_relaxed_matches_say_where_the_strict_misses_go():
    gold = [[(0, 10, "ORGANIZATION"), (20, 30, "LOCATION")], [(0, 5, "PERSON")]]
    pred = [[(0, 12, "ORGANIZATION"), (20, 30, "ORGANIZATION")], [(40, 45, "PERSON")]]
    relaxed = relaxed_matches(gold, pred)
    assert set(relaxed) == set(RELAXED_SCHEMES)
    strict = relaxed["strict"]
    assert (strict["correct"], strict["incorrect"], strict["missed"], strict["spurious"]) == (0, 2, 1, 1)
    assert span_metrics(gold, pred)["overall"]["tp"] == 0
    assert relaxed["ent_type"]["correct"] == 1  # the organization, one boundary off
    assert relaxed["exact"]["correct"] == 1  # the place typed as an organization
    assert relaxed["partial"]["correct"] == 1 and relaxed["partial"]["partial"] == 1


def test_relaxed_matches_read_end_offsets_as_exclusive_and_keep_only_scored_types():
    # Touching spans share no character: no overlap, under any scheme.
    touching = relaxed_matches([[(0, 5, "PERSON")]], [[(5, 10, "PERSON")]])
    assert touching["ent_type"]["correct"] == 0 and touching["ent_type"]["missed"] == 1
    only_people = relaxed_matches([[(0, 5, "PERSON"), (10, 20, "EMAIL")]], [[(0, 5, "PERSON")]], types={"PERSON"})
    assert only_people["strict"]["correct"] == 1 and only_people["strict"]["missed"] == 0
    assert relaxed_matches([[]], [[]]) == {}


def test_bootstrap_interval_is_the_range_of_every_redraw_of_three_documents():
    """Brute force: three documents give 27 equally likely redraws; with a 3.7% chance each, the 95% interval runs
    from the lowest F1 of any redraw to the highest."""
    import itertools

    gold = [[(0, 4, "PERSON")], [(0, 4, "PERSON"), (5, 9, "LOCATION")], [(0, 3, "PERSON")], [(0, 2, "DATE")]]
    pred = [[(0, 4, "PERSON")], [(0, 4, "PERSON"), (5, 8, "LOCATION")], [], [(0, 2, "DATE"), (3, 5, "DATE")]]
    groups = ["a", "b", "b", "c"]  # the second and third texts are one document
    per_doc = {}
    for g, gold_spans, pred_spans in zip(groups, gold, pred):
        m = span_metrics([gold_spans], [pred_spans])["overall"]
        per_doc[g] = [x + y for x, y in zip(per_doc.get(g, [0, 0, 0]), (m["tp"], m["fp"], m["fn"]))]
    f1s = []
    for draw in itertools.product("abc", repeat=3):
        tp, fp, fn = (sum(per_doc[d][k] for d in draw) for k in range(3))
        f1s.append(2 * tp / (2 * tp + fp + fn))
    result = bootstrap_f1(gold, [pred], groups, resamples=20_000)
    assert result["documents"] == 3 and result["f1"][0] == pytest.approx([min(f1s), max(f1s)])
    assert result["f1"][0][0] <= span_metrics(gold, pred)["overall"]["f1"] <= result["f1"][0][1]
    # Read as four independent texts, the second and third are drawn apart: another interval.
    assert bootstrap_f1(gold, [pred], resamples=20_000)["documents"] == 4


def test_bootstrap_difference_is_paired_and_nothing_is_claimed_from_one_document():
    gold = [[(0, 4, "PERSON")] for _ in range(30)]
    half = [[(0, 4, "PERSON")] if i % 2 else [] for i in range(30)]
    better = [[(0, 4, "PERSON")] if i % 2 or i % 3 == 0 else [] for i in range(30)]  # the same hits, and more
    result = bootstrap_f1(gold, [half, half, better])
    assert result["f1_minus_first"][0] is None and result["f1_minus_first"][1] == [0.0, 0.0]
    assert result["f1_minus_first"][2][0] > 0  # better on the same draws, every time
    assert result["f1"][0][0] < 2 / 3 < result["f1"][0][1]
    one = bootstrap_f1(gold, [half], groups=["doc"] * 30)
    assert one["documents"] == 1 and one["f1"] == [None]
    with pytest.raises(ValueError, match="as many"):
        bootstrap_f1(gold, [half[:29]])


def test_redaction_coverage_counts_characters_hidden_by_any_prediction_and_ignores_whitespace():
    text = "Call New York office, ask Ann Lee."
    new_york, ann_lee = (text.index("New York"), text.index("New York") + 8), (text.index("Ann Lee"), len(text) - 1)
    gold = [[(*new_york, "LOCATION"), (*ann_lee, "PERSON"), (0, 4, "DATE")]]
    # "New" and "York" found apart (hidden whole: the gap is a space); "Ann" alone (3 of 6 characters)
    pred = [[(new_york[0], new_york[0] + 3, "LOCATION"), (new_york[0] + 4, new_york[1], "NATIONALITY"),
             (ann_lee[0], ann_lee[0] + 3, "PERSON")]]
    c = redaction_coverage([text], gold, pred, types=["PERSON", "LOCATION"])
    assert (c["gold_spans"], c["hidden_spans"], c["gold_chars"], c["hidden_chars"]) == (2, 1, 13, 10)
    assert c["redacted_chars"] == 10 and c["text_chars"] == len(text.replace(" ", ""))
    assert redaction_coverage([text], gold, pred)["gold_spans"] == 3  # every type when none is named
    empty = redaction_coverage([""], [[]], [[]])
    assert empty["span_recall"] is None and empty["redacted_share"] is None


def test_redaction_coverage_refuses_unaligned_lists():
    with pytest.raises(ValueError, match="1 texts, 2 gold and 1 predicted span lists"):
        redaction_coverage(["a"], [[], []], [[]])
