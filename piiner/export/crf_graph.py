"""The eval-mode CRF decode of `crf_piiner` written with `torch.scan`, so it exports to ONNX as two `Scan` loops over
a dynamic sequence length instead of Python loops that the exporter would unroll to the example's length.

The forward scan runs Viterbi's max-product and the forward algorithm side by side; the reverse scan traces the
Viterbi path back and runs the backward algorithm. Each recurrence is the one of `crf_piiner` (`viterbi_decode`,
`crf_log_partition`, `crf_backward`, `crf_marginals`: same masking rules, same `started` flag, same back-tracking
rule) and the per-step sums are `crf_piiner`'s own `_TransitionSums`, built once outside the traced code: matrix
products for the labels every label may move to, exact gathered log-sum-exps for the constrained "I-" labels. That
also keeps the graph fast: onnxruntime's ReduceLogSumExp over a (batch, labels, labels) tensor made the decode 5 to
13 times slower than the encoder's share at batch 32. Tags are identical to PyTorch's and scores agree to float
rounding; the tests compare them on batches with holes in the mask and rows of different lengths.

Conventions are those of `crf_piiner`: `transitions[to, from]`, `mask` (batch, seq_len) marks the positions the CRF
runs over, float32 throughout.
"""

import torch
from torch._higher_order_ops.scan import scan

from piiner.crf_piiner import _shifted_log_matmul, _TransitionSums


class GraphTransitionSums(_TransitionSums):
    """
    `crf_piiner._TransitionSums` with its gathers written as `index_select`: the same values, but each gather
    exports as one ONNX Gather instead of GatherND between Transposes, which halves the nodes onnxruntime runs at
    every step of the Scan (the per-node cost is most of the decode at batch 1).
    """

    @staticmethod
    def _gather(messages, index):
        """messages[:, index] for an index table of any shape."""
        return messages.index_select(1, index.reshape(-1)).reshape(messages.shape[0], *index.shape)

    def forward_step(self, alpha):
        dense = _shifted_log_matmul(alpha, self.forward_factors) + self.row_shift
        sparse = torch.logsumexp(self._gather(alpha, self.predecessors) + self.predecessor_scores, dim=-1)
        return self._gather(torch.cat([dense, sparse], dim=-1), self.order)

    def max_step(self, score):
        dense = (score.unsqueeze(1) + self.dense_scores.unsqueeze(0)).amax(dim=-1)
        sparse = (self._gather(score, self.predecessors) + self.predecessor_scores).amax(dim=-1)
        return self._gather(torch.cat([dense, sparse], dim=-1), self.order)

    def backward_step(self, incoming):
        dense = _shifted_log_matmul(self._gather(incoming, self.dense_rows), self.backward_factors) + self.column_shift
        sparse = torch.logsumexp(self._gather(incoming, self.successors) + self.successor_scores, dim=-1)
        return torch.logaddexp(dense, sparse)


def transition_sums(transitions: torch.Tensor) -> _TransitionSums:
    """The CRF's per-step sums for fixed (constrained) transitions, from concrete values: its index tables depend on
    which moves are allowed, so they are built before tracing and enter the graph as constants. Falls back to
    `_TransitionSums` itself for a label set without both dense and constrained labels (no BIO "I-" labels)."""
    sums = GraphTransitionSums(transitions.detach())
    if not (len(sums.dense_rows) and sums.predecessors.shape[-1] and sums.successors.shape[-1]):
        return _TransitionSums(transitions.detach())
    return sums


def scan_decode(emissions, mask, start, transitions, end, sums: _TransitionSums | None = None):
    """
    Viterbi tags and their CRF marginal probabilities, as `PiiNerForTokenClassification` gives them in eval mode.

    Args:
        emissions (`torch.Tensor` of shape `(batch, seq_len, num_labels)`): log-softmax emission scores.
        mask (`torch.BoolTensor` of shape `(batch, seq_len)`): the CRF positions.
        start, transitions, end: the constrained float32 CRF scores (`PiiNerCRF.constrained_transitions()`).
        sums: `transition_sums(transitions)`, required when tracing (built here otherwise).

    Returns:
        `(decoded_tags, tag_scores)`, both (batch, seq_len): -100 and 0 off the mask.
    """
    if sums is None:
        sums = transition_sums(transitions)
    emissions = emissions.float()
    batch, _, num_labels = emissions.shape
    end_row = end.unsqueeze(0).expand(batch, num_labels)

    def forward_step(carry, step_inputs):
        score, alpha, started = carry
        emission, real = step_inputs
        real_row, started_row = real.unsqueeze(-1), started.unsqueeze(-1)
        new_score = torch.where(started_row, sums.max_step(score), start.unsqueeze(0)) + emission
        new_alpha = torch.where(started_row, sums.forward_step(alpha), start.unsqueeze(0)) + emission
        # The score before this position and whether it follows a real position: what back-tracking needs.
        kept = (score.clone(), real & started)
        score = torch.where(real_row, new_score, score)
        alpha = torch.where(real_row, new_alpha, alpha)
        return (score, alpha, started | real), (*kept, alpha.clone())

    zeros = emissions.new_zeros(batch, num_labels)
    no_position = torch.zeros_like(mask[:, 0])
    steps = (emissions.transpose(0, 1), mask.transpose(0, 1))
    (score, alpha, started), (previous_scores, follows, alphas) = scan(
        forward_step, (zeros, zeros.clone(), no_position), steps
    )
    log_z = torch.logsumexp(alpha + end_row, dim=-1)
    log_z = torch.where(started, log_z, torch.zeros_like(log_z))
    last_tag = (score + end_row).argmax(dim=-1)

    def reverse_step(carry, step_inputs):
        current, incoming, beta, has_next = carry
        emission, real, previous_score, follows_real = step_inputs
        real_row = real.unsqueeze(-1)
        new_beta = torch.where(has_next.unsqueeze(-1), sums.backward_step(incoming), end_row)
        beta = torch.where(real_row, new_beta, beta)
        incoming = torch.where(real_row, beta + emission, incoming)
        # transitions[current, from]: the scores of moving into this position's label.
        best_from = (previous_score + transitions.index_select(0, current)).argmax(dim=-1)
        previous = torch.where(follows_real, best_from, current)
        return (previous, incoming, beta, has_next | real), (current.clone(), beta.clone())

    init = (last_tag, zeros.clone(), end_row.clone(), no_position.clone())
    _, (tags, betas) = scan(reverse_step, init, (*steps, previous_scores, follows), reverse=True)
    tags, alphas, betas = tags.transpose(0, 1), alphas.transpose(0, 1), betas.transpose(0, 1)
    tags = torch.where(mask, tags, torch.full_like(tags, -100))
    # Clamped at log 1 as in crf_marginals: float32 rounding can put a sure label a hair above it.
    marginals = (alphas + betas - log_z[:, None, None]).clamp(max=0).exp()
    scores = marginals.gather(-1, tags.clamp(min=0).unsqueeze(-1)).squeeze(-1) * mask
    return tags, scores
