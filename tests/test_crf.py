"""The CRF against brute-force enumeration of every label path on small random cases."""

import itertools
import math

import numpy as np
import pytest
import torch

from piiner.hub.crf_numba import crf_decode_cpu, marginals_cpu, viterbi_cpu
from piiner.hub.pii_schema import LABELS

from piiner.hub.crf_piiner import (
    FORBIDDEN_SCORE,
    PiiNerCRF,
    bio_constraints,
    crf_backward,
    crf_log_partition_from_backward,
    crf_path_score,
    crf_partial_nll,
    crf_token_nll,
)

ID2LABEL = {0: "O", 1: "B-A", 2: "I-A", 3: "B-B", 4: "I-B"}
NUM_LABELS = len(ID2LABEL)
# Rows of different lengths, one starting late (a masked [CLS]), one with a hole, one with a single position,
# one empty.
MASK = torch.tensor(
    [
        [1, 1, 1, 1],
        [0, 1, 1, 0],
        [1, 0, 1, 1],
        [0, 0, 1, 0],
        [0, 0, 0, 0],
    ],
    dtype=torch.bool,
)


def random_crf(seed, constrained, scale=3.0):
    generator = torch.Generator().manual_seed(seed)
    emissions = torch.randn(MASK.shape[0], MASK.shape[1], NUM_LABELS, generator=generator) * scale
    start = torch.randn(NUM_LABELS, generator=generator)
    transitions = torch.randn(NUM_LABELS, NUM_LABELS, generator=generator)  # [to, from]
    end = torch.randn(NUM_LABELS, generator=generator)
    allowed, start_allowed = bio_constraints(ID2LABEL)
    if constrained:
        start = start.masked_fill(~start_allowed, FORBIDDEN_SCORE)
        transitions = transitions.masked_fill(~allowed, FORBIDDEN_SCORE)
    return emissions, start, transitions, end


def enumerate_paths(emissions, mask_row, start, transitions, end):
    """Every label path over the real positions of one row, with its score; forbidden paths left out."""
    positions = mask_row.nonzero().flatten().tolist()
    if not positions:
        return
    emissions, start, transitions, end = (x.tolist() for x in (emissions, start, transitions, end))
    for path in itertools.product(range(NUM_LABELS), repeat=len(positions)):
        score = start[path[0]] + end[path[-1]]
        score += sum(emissions[p][y] for p, y in zip(positions, path))
        score += sum(transitions[to][frm] for frm, to in zip(path, path[1:]))
        if score > FORBIDDEN_SCORE / 2:
            yield positions, path, score


def log_partition(emissions, mask, start, transitions, end):
    """log Z per row as the losses compute it: from the backward messages."""
    return crf_log_partition_from_backward(emissions, mask, start, crf_backward(emissions, mask, transitions, end))


def log_sum_exp(values):
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


# Scale 60 keeps each position's emissions within the probability-space pass's range; 300 and 3000 make the
# emissions' favourite labels break BIO (I-X after O) by hundreds of nats, where a probability-space pass underflows
# and the rows run in log space.
@pytest.mark.parametrize("constrained, scale", [(True, 3.0), (False, 3.0), (True, 60.0), (True, 300.0), (True, 3000.0)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_partition_viterbi_and_marginals_equal_brute_force(seed, constrained, scale):
    emissions, start, transitions, end = random_crf(seed, constrained, scale)
    log_z = log_partition(emissions, MASK, start, transitions, end)
    tags, best_scores = (torch.from_numpy(x) for x in viterbi_cpu(emissions, MASK, start, transitions, end))
    marginals = torch.from_numpy(marginals_cpu(emissions, MASK, start, transitions, end))
    for row in range(MASK.shape[0]):
        paths = list(enumerate_paths(emissions[row], MASK[row], start, transitions, end))
        if not MASK[row].any():
            assert log_z[row] == 0 and best_scores[row] == 0
            assert (tags[row] == -100).all() and marginals[row].sum() == 0
            continue
        expected_log_z = log_sum_exp([score for _, _, score in paths])
        if scale <= 300:  # float32 log Z of scores in the tens of thousands is not exact to 1e-4
            assert log_z[row].item() == pytest.approx(expected_log_z, abs=1e-4, rel=1e-6)
        positions, best_path, best = max(paths, key=lambda item: item[2])
        assert tags[row, positions].tolist() == list(best_path)
        assert (tags[row, ~MASK[row]] == -100).all()
        assert best_scores[row].item() == pytest.approx(best, abs=1e-4, rel=1e-6)
        expected = torch.zeros(MASK.shape[1], NUM_LABELS, dtype=torch.float64)
        for _, path, score in paths:
            for position, label in zip(positions, path):
                expected[position, label] += math.exp(score - expected_log_z)
        torch.testing.assert_close(marginals[row], expected, atol=1e-5, rtol=1e-4)
        assert marginals[row, positions].sum(-1).tolist() == pytest.approx([1.0] * len(positions), abs=1e-4)


@pytest.mark.parametrize("scale", [0.01, 1.0, 8.0, 400.0])
def test_decode_equals_brute_force_on_the_full_label_set(scale):
    """The 83 labels of the schema with their BIO constraints, three real positions (571,787 paths), rows with a
    masked [CLS] and a hole; at scale 0.01 the emissions barely tell labels apart (a random head: every label is a
    near source at each step), at scale 400 the marginals run in log space."""
    labels = {i: name for i, name in enumerate(LABELS)}
    crf = PiiNerCRF(labels)
    generator = torch.Generator().manual_seed(int(scale))
    with torch.no_grad():
        crf.transitions.normal_(generator=generator)
        crf.start_transitions.normal_(generator=generator)
        crf.end_transitions.normal_(generator=generator)
    emissions = torch.log_softmax(torch.randn(2, 5, len(LABELS), generator=generator) * scale, dim=-1)
    mask = torch.tensor([[0, 1, 1, 1, 0], [1, 0, 1, 0, 1]], dtype=torch.bool)
    start, transitions, end = (x.detach().double() for x in crf.constrained_transitions())
    tags, marginals = crf_decode_cpu(emissions, mask, *crf.constrained_transitions())
    for row in range(2):
        positions = mask[row].nonzero().flatten().tolist()
        e = emissions[row, positions].double()
        # score[a, b, c] of the path a, b, c: every path at once.
        # transitions[to, from]: T.T[a, b] scores a -> b.
        score = (start[:, None, None] + e[0][:, None, None] + transitions.T[:, :, None] + e[1][None, :, None]
                 + transitions.T[None, :, :] + e[2][None, None, :] + end[None, None, :])
        best = np.unravel_index(int(score.argmax()), score.shape)
        assert tags[row, positions].tolist() == list(best) and (tags[row][~mask[row].numpy()] == -100).all()
        probabilities = torch.softmax(score.flatten(), 0).reshape(score.shape)
        expected = torch.stack([probabilities.sum((1, 2)), probabilities.sum((0, 2)), probabilities.sum((0, 1))])
        np.testing.assert_allclose(marginals[row, positions], expected.numpy(), atol=1e-6)
    assert (tags[mask.numpy()] > 0).any() or scale <= 1.0


def test_compiled_decode_follows_new_transition_scores_in_place():
    """The compiled decode keeps what it derives from the transition scores between calls: a model whose scores
    change (training, an edit in place) must be decoded with the new ones, not the ones of its last call."""
    emissions, start, transitions, end = random_crf(0, constrained=True)
    for step in range(3):
        with torch.no_grad():
            transitions.add_(torch.randn(transitions.shape, generator=torch.Generator().manual_seed(step)) * 4)
            transitions.masked_fill_(~bio_constraints(ID2LABEL)[0], FORBIDDEN_SCORE)
        tags, marginals = crf_decode_cpu(emissions, MASK, start, transitions, end)
        for row in range(MASK.shape[0] - 1):  # the last row has no position
            paths = list(enumerate_paths(emissions[row], MASK[row], start, transitions, end))
            positions, best_path, _ = max(paths, key=lambda item: item[2])
            assert tags[row, positions].tolist() == list(best_path)
            log_z = log_sum_exp([score for _, _, score in paths])
            first = sum(math.exp(score - log_z) for _, path, score in paths if path[0] == best_path[0])
            assert marginals[row, positions[0], best_path[0]] == pytest.approx(first, abs=1e-6)


def test_path_score_and_token_nll_split_exactly():
    emissions, start, transitions, end = random_crf(3, constrained=True)
    tags = torch.tensor([[1, 2, 2, 0], [0, 3, 4, 0], [0, 0, 1, 2], [0, 0, 3, 0], [0, 0, 0, 0]])
    score = crf_path_score(emissions, tags, MASK, start, transitions, end)
    log_z = log_partition(emissions, MASK, start, transitions, end)
    terms = crf_token_nll(emissions, tags, MASK, start, transitions, end)
    for row in range(MASK.shape[0]):
        positions = MASK[row].nonzero().flatten().tolist()
        expected = [s for pos, path, s in enumerate_paths(emissions[row], MASK[row], start, transitions, end)
                    if list(path) == tags[row, positions].tolist()] if positions else [0.0]
        assert score[row].item() == pytest.approx(expected[0], abs=1e-4)
    # Each term is -log of a conditional probability: >= 0, zero off the mask, and they sum to the NLL.
    assert (terms >= -1e-5).all() and (terms[~MASK] == 0).all()
    torch.testing.assert_close(terms.sum(-1), log_z - score, atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_partial_nll_sums_over_every_path_through_the_allowed_labels(seed):
    """-log of the total probability of the paths consistent with a partial annotation, against enumeration; with
    one label allowed per position it is the ordinary NLL."""
    emissions, start, transitions, end = random_crf(seed, constrained=True)
    generator = torch.Generator().manual_seed(seed)
    allowed = torch.rand(*MASK.shape, NUM_LABELS, generator=generator) < 0.5
    allowed[..., 0] = True  # every position may at least be "O"
    nll = crf_partial_nll(emissions, allowed, MASK, start, transitions, end)
    log_z = log_partition(emissions, MASK, start, transitions, end)
    for row in range(MASK.shape[0]):
        paths = list(enumerate_paths(emissions[row], MASK[row], start, transitions, end))
        if not paths:
            assert nll[row] == 0
            continue
        consistent = [score for positions, path, score in paths
                      if all(allowed[row, p, y] for p, y in zip(positions, path))]
        assert nll[row].item() == pytest.approx(log_z[row].item() - log_sum_exp(consistent), abs=1e-4)
    tags = torch.tensor([[1, 2, 2, 0], [0, 3, 4, 0], [0, 0, 1, 2], [0, 0, 3, 0], [0, 0, 0, 0]])
    one_label = torch.nn.functional.one_hot(tags, NUM_LABELS).bool()
    full = log_z - crf_path_score(emissions, tags, MASK, start, transitions, end)
    torch.testing.assert_close(crf_partial_nll(emissions, one_label, MASK, start, transitions, end), full,
                               atol=1e-4, rtol=1e-5)


def test_constraints_follow_bio():
    allowed, start_allowed = bio_constraints(ID2LABEL)
    # allowed[to, from]: I-A only after B-A or I-A; never first.
    assert allowed[2].tolist() == [False, True, True, False, False]
    assert allowed[4].tolist() == [False, False, False, True, True]
    assert allowed[[0, 1, 3]].all()
    assert start_allowed.tolist() == [True, True, False, True, False]


def test_decoding_never_returns_a_forbidden_path_even_when_emissions_push_for_it():
    crf = PiiNerCRF(ID2LABEL)
    emissions = torch.full((1, 4, NUM_LABELS), -5.0)
    emissions[0, :, 2] = 5.0  # every position screams I-A
    mask = torch.ones(1, 4, dtype=torch.bool)
    tags, marginals = crf_decode_cpu(emissions, mask, *crf.constrained_transitions())
    assert tags[0].tolist() == [1, 2, 2, 2]
    assert marginals[0, 0, 2] == 0  # "I-A" can never open the sequence


def test_repair_tags_turns_stray_inside_labels_into_begin_labels():
    crf = PiiNerCRF(ID2LABEL)
    mask = torch.tensor([[0, 1, 1, 1, 1, 1, 0]], dtype=torch.bool)
    # Masked [CLS], then I-A first, I-A after B-A (kept), I-B after I-A, O, I-B after O; label on [SEP] untouched.
    tags = torch.tensor([[0, 2, 2, 4, 0, 4, 4]])
    assert crf.repair_tags(tags, mask).tolist() == [[0, 1, 2, 3, 0, 3, 4]]


def test_constrained_transitions_give_forbidden_moves_no_gradient():
    crf = PiiNerCRF(ID2LABEL)
    emissions = torch.randn(2, 4, NUM_LABELS)
    log_z = log_partition(emissions, MASK[:2], *crf.constrained_transitions())
    log_z.sum().backward()
    allowed, start_allowed = bio_constraints(ID2LABEL)
    assert (crf.transitions.grad[~allowed] == 0).all() and (crf.transitions.grad[allowed] != 0).any()
    assert (crf.start_transitions.grad[~start_allowed] == 0).all()


def test_extreme_emissions_keep_log_partition_and_gradients_finite():
    crf = PiiNerCRF(ID2LABEL)
    emissions = (torch.randn(5, 4, NUM_LABELS, generator=torch.Generator().manual_seed(4)) * 1000).requires_grad_()
    tags = torch.tensor([[1, 2, 2, 0]] * 5)
    start, transitions, end = crf.constrained_transitions()
    log_z = log_partition(emissions, MASK, start, transitions, end)
    nll = log_z - crf_path_score(emissions, tags, MASK, start, transitions, end)
    (nll.sum() + crf_token_nll(emissions, tags, MASK, start, transitions, end).sum()).backward()
    assert torch.isfinite(nll).all() and (nll >= -1e-3).all()
    assert torch.isfinite(emissions.grad).all() and torch.isfinite(crf.transitions.grad).all()
