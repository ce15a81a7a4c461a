"""A linear-chain CRF over BIO labels: the parameters, and the log-space algorithms that use them.

Kept in small separate pieces: `PiiNerCRF` holds the parameters and the BIO constraint; `crf_log_partition`
(forward algorithm), `crf_path_score`, `crf_backward`, `crf_marginals`, `crf_token_nll` and `viterbi_decode` are
plain functions of tensors, each vectorised over the batch.

Conventions used everywhere in this file:

- `transitions[to, from]` is the score of moving from label `from` at one position to label `to` at the next.
- `mask` (batch, seq_len) marks the positions the CRF runs over. It may start late (a leading [CLS] is simply
  masked) and may have holes: masked positions are skipped and the chain connects the real positions on either
  side of them, so no sorting by length and no left-packing is needed. A row with no real position has a
  log-partition and path score of 0.
- Everything is computed in float32, whatever the dtype of the emissions.
"""

import torch
from torch import nn


# Score of a forbidden transition. Finite on purpose: -inf makes logsumexp gradients NaN when a whole row is
# forbidden, while exp(-1e4) is exactly 0 in float32 so no forbidden path ever carries probability.
FORBIDDEN_SCORE = -10000.0


def bio_constraints(id2label: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """
    Builds the BIO rules from a label map.

    Args:
        id2label (`dict[int, str]`): label names by id, "O" or "B-TYPE" / "I-TYPE".

    Returns:
        `tuple(torch.BoolTensor, torch.BoolTensor)`: `allowed[to, from]` (num_labels, num_labels), true where
        label `to` may follow label `from`, and `start_allowed` (num_labels,), true where a label may open a
        sequence. "I-X" may only follow "B-X" or "I-X" and never opens a sequence; everything else is free.
    """
    num_labels = len(id2label)
    names = [id2label[i] for i in range(num_labels)]
    allowed = torch.ones(num_labels, num_labels, dtype=torch.bool)
    start_allowed = torch.ones(num_labels, dtype=torch.bool)
    for to, name in enumerate(names):
        if name.startswith("I-"):
            start_allowed[to] = False
            allowed[to] = torch.tensor([prev in (f"B-{name[2:]}", name) for prev in names])
    return allowed, start_allowed


def begin_of(id2label: dict) -> torch.Tensor:
    """Maps each label id to the id of its "B-" form when it is an "I-" label, to itself otherwise."""
    label2id = {name: i for i, name in id2label.items()}
    return torch.tensor(
        [label2id.get("B-" + id2label[i][2:], i) if id2label[i].startswith("I-") else i for i in range(len(id2label))]
    )


class PiiNerCRF(nn.Module):
    """
    Parameters of the CRF: start, end and transition scores, plus the BIO constraint as non-trainable masks.

    Forbidden moves are not learnable: `constrained_transitions()` overwrites them with `FORBIDDEN_SCORE`, so
    they receive no gradient and can never be decoded, however training goes.

    Args:
        id2label (`dict[int, str]`): label names by id (the model config's `id2label`).
    """

    def __init__(self, id2label: dict):
        super().__init__()
        self.num_labels = len(id2label)
        self.start_transitions = nn.Parameter(torch.zeros(self.num_labels))
        self.end_transitions = nn.Parameter(torch.zeros(self.num_labels))
        self.transitions = nn.Parameter(torch.zeros(self.num_labels, self.num_labels))  # [to, from]
        allowed, start_allowed = bio_constraints(id2label)
        # Derived from the config on every build, so they are not saved with the weights.
        self.register_buffer("allowed", allowed, persistent=False)
        self.register_buffer("start_allowed", start_allowed, persistent=False)
        self.register_buffer("begin_of", begin_of(id2label), persistent=False)

    def constrained_transitions(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Returns float32 `(start, transitions[to, from], end)` with the forbidden entries set to `FORBIDDEN_SCORE`."""
        start = self.start_transitions.float().masked_fill(~self.start_allowed, FORBIDDEN_SCORE)
        transitions = self.transitions.float().masked_fill(~self.allowed, FORBIDDEN_SCORE)
        return start, transitions, self.end_transitions.float()

    def repair_tags(self, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """
        Turns every "I-X" that may not stand where it is (first real position, or after a label other than
        "B-X"/"I-X") into "B-X". Such labels come from windows cut inside an entity or from sloppy sources; scored
        as they are, they would give an infinite loss.
        """
        tags = tags.clone()
        prev = torch.zeros_like(tags[:, 0])
        started = torch.zeros_like(mask[:, 0])
        for t in range(tags.shape[1]):
            tag = tags[:, t]
            ok = torch.where(started, self.allowed[tag, prev], self.start_allowed[tag])
            tag = torch.where(mask[:, t] & ~ok, self.begin_of[tag], tag)
            tags[:, t] = torch.where(mask[:, t], tag, tags[:, t])
            prev = torch.where(mask[:, t], tag, prev)
            started = started | mask[:, t]
        return tags


def crf_log_partition(
    emissions: torch.Tensor, mask: torch.Tensor, start: torch.Tensor, transitions: torch.Tensor, end: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """
    Forward algorithm in log space.

    Args:
        emissions (`torch.Tensor` of shape `(batch, seq_len, num_labels)`): per-position label scores.
        mask (`torch.BoolTensor` of shape `(batch, seq_len)`): positions the CRF runs over.
        start, transitions, end: float32 scores, `transitions[to, from]`.

    Returns:
        `(log_partition, alphas)`: log Z per row (batch,), and the forward messages (batch, seq_len, num_labels):
        at a real position, the log-sum of the scores of every prefix path ending there in each label, emission
        included. Rows without a real position get log Z = 0.
    """
    emissions = emissions.float()
    batch, seq_len, num_labels = emissions.shape
    exp_transitions, shift = _exp_transitions(transitions)
    alpha = emissions.new_zeros(batch, num_labels)
    started = torch.zeros(batch, dtype=torch.bool, device=emissions.device)
    alphas = []
    for t in range(seq_len):
        # log sum_from exp(alpha[from] + transitions[to, from]), as a matrix product in shifted linear space.
        step = _log_matmul(alpha, exp_transitions.T) + shift
        new = torch.where(started.unsqueeze(-1), step, start.unsqueeze(0)) + emissions[:, t]
        alpha = torch.where(mask[:, t].unsqueeze(-1), new, alpha)
        started = started | mask[:, t]
        alphas.append(alpha)
    log_z = torch.logsumexp(alpha + end.unsqueeze(0), dim=-1)
    return torch.where(started, log_z, torch.zeros_like(log_z)), torch.stack(alphas, dim=1)


def _exp_transitions(transitions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """exp(transitions - max), and the max: forbidden entries become exactly 0, the largest entry 1."""
    shift = transitions.max()
    return (transitions - shift).exp(), shift


def _log_matmul(log_vectors: torch.Tensor, matrix: torch.Tensor) -> torch.Tensor:
    """
    log(exp(log_vectors) @ matrix) for (batch, n) log-space vectors and a non-negative (n, m) matrix.

    A dense logsumexp over (batch, to, from) costs 10x more on CPU than this product. Each row is shifted by its
    max, so its largest term is 1 and nothing overflows. A sum can only underflow when every label feeding an
    entry is more than ~87 nats (float32) below the row's best; such an entry is floored at the smallest normal
    float instead of becoming log(0) = -inf, which would give NaN gradients. Its true mass is below e^-87 of
    the total, so log Z is unchanged at float32 precision.
    """
    row_max = log_vectors.max(dim=-1, keepdim=True).values
    summed = (log_vectors - row_max).exp() @ matrix
    return summed.clamp(min=torch.finfo(summed.dtype).tiny).log() + row_max


def crf_backward(
    emissions: torch.Tensor, mask: torch.Tensor, transitions: torch.Tensor, end: torch.Tensor
) -> torch.Tensor:
    """
    Backward algorithm in log space: (batch, seq_len, num_labels) messages, at a real position the log-sum of the
    scores of every suffix path after it given its label (its own emission excluded, the end score included).
    """
    emissions = emissions.float()
    batch, seq_len, num_labels = emissions.shape
    exp_transitions, shift = _exp_transitions(transitions)
    incoming = emissions.new_zeros(batch, num_labels)  # beta + emission of the next real position
    has_next = torch.zeros(batch, dtype=torch.bool, device=emissions.device)
    betas = [None] * seq_len
    beta = end.unsqueeze(0).expand(batch, num_labels)
    for t in reversed(range(seq_len)):
        # transitions[to, from]: here `from` is this position and `to` the next one, so sum over `to`.
        step = _log_matmul(incoming, exp_transitions) + shift
        new = torch.where(has_next.unsqueeze(-1), step, end.unsqueeze(0).expand(batch, num_labels))
        beta = torch.where(mask[:, t].unsqueeze(-1), new, beta)
        incoming = torch.where(mask[:, t].unsqueeze(-1), beta + emissions[:, t], incoming)
        has_next = has_next | mask[:, t]
        betas[t] = beta
    return torch.stack(betas, dim=1)


def crf_path_score(
    emissions: torch.Tensor,
    tags: torch.Tensor,
    mask: torch.Tensor,
    start: torch.Tensor,
    transitions: torch.Tensor,
    end: torch.Tensor,
) -> torch.Tensor:
    """Score of the label path `tags` (batch, seq_len) over the real positions: start + emissions + transitions + end."""
    return _path_terms(emissions, tags, mask, start, transitions)[0].sum(-1) + _last_end_score(tags, mask, end)


def _path_terms(emissions, tags, mask, start, transitions):
    """Per-position local scores of a path (start or incoming transition, plus emission; 0 off the mask), and the
    previous real label of each position (the position's own label where there is none)."""
    emissions = emissions.float()
    emitted = emissions.gather(-1, tags.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    prev = torch.zeros_like(tags[:, 0])
    started = torch.zeros_like(mask[:, 0])
    terms, prevs = [], []
    for t in range(tags.shape[1]):
        tag = tags[:, t].clamp(min=0)
        local = torch.where(started, transitions[tag, prev], start[tag]) + emitted[:, t]
        terms.append(torch.where(mask[:, t], local, torch.zeros_like(local)))
        prevs.append(torch.where(started, prev, tag))
        prev = torch.where(mask[:, t], tag, prev)
        started = started | mask[:, t]
    return torch.stack(terms, dim=1), torch.stack(prevs, dim=1)


def _last_end_score(tags, mask, end):
    """End score of the label at each row's last real position (0 for a row without one)."""
    positions = torch.arange(mask.shape[1], device=mask.device)
    last = torch.where(mask, positions, -1).max(dim=1).values
    last_tag = tags.clamp(min=0).gather(1, last.clamp(min=0).unsqueeze(1)).squeeze(1)
    return torch.where(last >= 0, end[last_tag], torch.zeros_like(end[last_tag]))


def crf_token_nll(
    emissions: torch.Tensor,
    tags: torch.Tensor,
    mask: torch.Tensor,
    start: torch.Tensor,
    transitions: torch.Tensor,
    end: torch.Tensor,
) -> torch.Tensor:
    """
    The negative log-likelihood of `tags`, split exactly over the real positions by the chain rule:
    `-log p(y) = sum_k -log p(y_k | y_{k-1}, x)`, with `log p(y_k | y_{k-1}, x) = transitions[y_k, y_{k-1}] +
    emission_k[y_k] + beta_k[y_k] - beta_{k-1}[y_{k-1}]` (and `start[y_1] + emission_1[y_1] + beta_1[y_1] - log Z` at
    the first position). Each term is >= 0 and their row sum is `log Z - path score`; weighting the terms weights
    the tokens.

    Returns:
        `torch.Tensor` of shape `(batch, seq_len)`: the per-position terms, 0 off the mask.
    """
    log_z, _ = crf_log_partition(emissions, mask, start, transitions, end)
    betas = crf_backward(emissions, mask, transitions, end)
    local, prev = _path_terms(emissions, tags, mask, start, transitions)
    safe_tags = tags.clamp(min=0)
    beta_here = betas.gather(-1, safe_tags.unsqueeze(-1)).squeeze(-1)
    # At the first real position the conditional is normalised by log Z, elsewhere by the previous real
    # position's backward message at its gold label.
    first = mask & (mask.long().cumsum(dim=1) == 1)
    beta_prev = torch.where(first, log_z.unsqueeze(1), _previous_real_beta(betas, prev, mask))
    terms = -(local + beta_here - beta_prev)
    return torch.where(mask, terms, torch.zeros_like(terms))


def _previous_real_beta(betas, prev, mask):
    """For each position, the backward message of the previous real position at label `prev` (its gold label)."""
    batch, seq_len, _ = betas.shape
    positions = torch.arange(seq_len, device=mask.device).expand(batch, seq_len)
    marked = torch.where(mask, positions, -1)
    # Index of the latest real position strictly before t: running max of the marked indices, shifted by one.
    running = marked.cummax(dim=1).values
    before = torch.cat([running.new_full((batch, 1), -1), running[:, :-1]], dim=1).clamp(min=0)
    beta_at_before = betas.gather(1, before.unsqueeze(-1).expand(-1, -1, betas.shape[-1]))
    return beta_at_before.gather(-1, prev.unsqueeze(-1)).squeeze(-1)


def crf_marginals(
    emissions: torch.Tensor, mask: torch.Tensor, start: torch.Tensor, transitions: torch.Tensor, end: torch.Tensor
) -> torch.Tensor:
    """Per-position label probabilities p(y_t = label | x) from forward-backward: (batch, seq_len, num_labels),
    each real position sums to 1; rows off the mask are 0."""
    log_z, alphas = crf_log_partition(emissions, mask, start, transitions, end)
    betas = crf_backward(emissions, mask, transitions, end)
    marginals = (alphas + betas - log_z[:, None, None]).exp()
    return marginals * mask.unsqueeze(-1)


def viterbi_decode(
    emissions: torch.Tensor, mask: torch.Tensor, start: torch.Tensor, transitions: torch.Tensor, end: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """
    Best label path per row.

    Returns:
        `(tags, scores)`: the path (batch, seq_len), -100 off the mask, and its score (batch,), 0 for a row
        without a real position.
    """
    emissions = emissions.float()
    batch, seq_len, num_labels = emissions.shape
    identity = torch.arange(num_labels, device=emissions.device).expand(batch, num_labels)
    score = emissions.new_zeros(batch, num_labels)
    started = torch.zeros(batch, dtype=torch.bool, device=emissions.device)
    backpointers = []
    for t in range(seq_len):
        best, best_from = (score.unsqueeze(1) + transitions.unsqueeze(0)).max(dim=-1)  # over `from`
        new = torch.where(started.unsqueeze(-1), best, start.unsqueeze(0)) + emissions[:, t]
        real = mask[:, t].unsqueeze(-1)
        score = torch.where(real, new, score)
        # Skipped and first positions point every label to itself, so backtracking walks straight through them.
        backpointers.append(torch.where(real & started.unsqueeze(-1), best_from, identity))
        started = started | mask[:, t]
    final = score + end.unsqueeze(0)
    best_score, current = final.max(dim=-1)
    tags = []
    for t in reversed(range(seq_len)):
        tags.append(current)
        current = backpointers[t].gather(1, current.unsqueeze(1)).squeeze(1)
    tags = torch.stack(tags[::-1], dim=1)
    tags = torch.where(mask, tags, torch.full_like(tags, -100))
    return tags, torch.where(started, best_score, torch.zeros_like(best_score))
