"""The eval-mode CRF decode of `crf_piiner` written with `torch.scan`, so it exports to ONNX as two `Scan` loops over
a dynamic sequence length instead of Python loops that the exporter would unroll to the example's length.

The forward scan runs Viterbi's max-product and the forward algorithm side by side; the reverse scan traces the
Viterbi path back and runs the backward algorithm. The forward and backward sums are matrix products in probability
space (`_log_matmul`): onnxruntime's ReduceLogSumExp over a (batch, labels, labels) tensor made the decode 5 to 13
times slower, more than the encoder itself at batch 32.

Each recurrence mirrors its `crf_piiner` counterpart step for step (`viterbi_decode`, `crf_log_partition`,
`crf_backward`: same masking rules, same `started` flag, same identity back-pointers on skipped positions) and must
give the same tags, and the same scores up to float rounding; the tests compare them on batches with holes in the
mask and rows of different lengths. Conventions are those of `crf_piiner`: `transitions[to, from]`, `mask`
(batch, seq_len) marks the positions the CRF runs over, float32 throughout.
"""

import torch
from torch._higher_order_ops.scan import scan


def _log_matmul(messages, weights):
    """log(exp(messages) @ weights) for (batch, labels) log-messages: the log-sum-exp over the previous (or next)
    label as one matrix product instead of a reduction over a (batch, labels, labels) tensor, which onnxruntime
    computes slowly. Forbidden moves weigh exp(-1e4) = 0, so they still carry no probability."""
    peak = messages.amax(dim=-1, keepdim=True).clamp(min=-1e30)
    return torch.log(torch.exp(messages - peak) @ weights) + peak


def scan_decode(emissions, mask, start, transitions, end):
    """
    Viterbi tags and their CRF marginal probabilities, as `PiiNerForTokenClassification` gives them in eval mode.

    Args:
        emissions (`torch.Tensor` of shape `(batch, seq_len, num_labels)`): log-softmax emission scores.
        mask (`torch.BoolTensor` of shape `(batch, seq_len)`): the CRF positions.
        start, transitions, end: the constrained float32 CRF scores (`PiiNerCRF.constrained_transitions()`).

    Returns:
        `(decoded_tags, tag_scores)`, both (batch, seq_len): -100 and 0 off the mask.
    """
    emissions = emissions.float()
    batch, _, num_labels = emissions.shape
    identity = torch.arange(num_labels, device=emissions.device).unsqueeze(0).expand(batch, num_labels)
    end_row = end.unsqueeze(0).expand(batch, num_labels)
    forward_weights, backward_weights = transitions.t().exp(), transitions.exp()

    def forward_step(carry, step_inputs):
        score, alpha, started = carry
        to_from = transitions.unsqueeze(0)  # (1, to, from); unsqueezed here: a size-1 closure confuses scan tracing
        emission, real = step_inputs
        real_row, started_row = real.unsqueeze(-1), started.unsqueeze(-1)
        # Viterbi: best previous label for every label (max over `from`).
        best, best_from = (score.unsqueeze(1) + to_from).max(dim=-1)
        new_score = torch.where(started_row, best, start.unsqueeze(0)) + emission
        # Skipped and first positions point every label to itself, so the trace walks straight through them.
        backpointer = torch.where(real_row & started_row, best_from, identity)
        # Forward algorithm: the same recurrence with log-sum-exp in place of max, taken as a matrix product.
        summed = _log_matmul(alpha, forward_weights)
        new_alpha = torch.where(started_row, summed, start.unsqueeze(0)) + emission
        score = torch.where(real_row, new_score, score)
        alpha = torch.where(real_row, new_alpha, alpha)
        return (score, alpha, started | real), (backpointer, alpha.clone())

    zeros = emissions.new_zeros(batch, num_labels)
    no_position = torch.zeros_like(mask[:, 0])
    steps = (emissions.transpose(0, 1), mask.transpose(0, 1))
    (score, alpha, started), (backpointers, alphas) = scan(forward_step, (zeros, zeros.clone(), no_position), steps)
    log_z = torch.logsumexp(alpha + end_row, dim=-1)
    log_z = torch.where(started, log_z, torch.zeros_like(log_z))
    last_tag = (score + end_row).argmax(dim=-1)

    def reverse_step(carry, step_inputs):
        current, incoming, beta, has_next = carry
        to_from = transitions.unsqueeze(0)
        emission, real, backpointer = step_inputs
        real_row = real.unsqueeze(-1)
        # Backward algorithm: `from` is this position, `to` the next one, so the sum runs over the `to` axis.
        summed = _log_matmul(incoming, backward_weights)
        new_beta = torch.where(has_next.unsqueeze(-1), summed, end_row)
        beta = torch.where(real_row, new_beta, beta)
        incoming = torch.where(real_row, beta + emission, incoming)
        previous = backpointer.gather(1, current.unsqueeze(1)).squeeze(1)
        return (previous, incoming, beta, has_next | real), (current.clone(), beta.clone())

    init = (last_tag, zeros.clone(), end_row.clone(), no_position.clone())
    _, (tags, betas) = scan(reverse_step, init, (*steps, backpointers), reverse=True)
    tags, alphas, betas = tags.transpose(0, 1), alphas.transpose(0, 1), betas.transpose(0, 1)
    tags = torch.where(mask, tags, torch.full_like(tags, -100))
    marginals = (alphas + betas - log_z[:, None, None]).exp() * mask.unsqueeze(-1)
    scores = marginals.gather(-1, tags.clamp(min=0).unsqueeze(-1)).squeeze(-1) * mask
    return tags, scores
