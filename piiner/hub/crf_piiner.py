"""A linear-chain CRF over BIO labels: the parameters, and the log-space algorithms that use them.

Kept in small separate pieces: `PiiNerCRF` holds the parameters and the BIO constraint; `crf_path_score`,
`crf_backward` (and log Z from its messages), `crf_token_nll` and `crf_partial_nll` are plain functions of tensors,
each vectorised over the batch, for training. Inference (Viterbi and marginals) is `crf_numba`. The losses run one
sequential pass (the backward algorithm) per call: on a GPU a pass is hundreds of small kernel launches, so the
number of passes, not the arithmetic, sets a training step's time.

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


def crf_positions(
    attention_mask: torch.Tensor,
    char_ids: torch.LongTensor | None = None,
    special_tokens_mask: torch.Tensor | None = None,
    labels: torch.LongTensor | None = None,
) -> torch.BoolTensor:
    """
    The positions the CRF runs over: inside the attention mask, and a real text token, which is a token with
    characters when `char_ids` is given (special tokens have none), else a token not flagged by
    `special_tokens_mask`; with `labels`, positions labelled -100 are skipped too.
    """
    mask = attention_mask.bool()
    if char_ids is not None:
        mask = mask & (char_ids != 0).any(-1)
    elif special_tokens_mask is not None:
        mask = mask & ~special_tokens_mask.bool()
    if labels is not None:
        mask = mask & (labels != -100)
    return mask


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
        # Repairing "I-X" into "B-X" never changes whether the next label may follow (the same labels may follow
        # both), so every position is judged against the original label before it, all at once.
        safe = tags.clamp(min=0)  # -100 off the mask
        previous, has_previous = previous_real_labels(safe, mask)
        ok = torch.where(has_previous, self.allowed[safe, previous], self.start_allowed[safe])
        return torch.where(mask & ~ok, self.begin_of[safe], tags)


def previous_real_labels(tags: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """
    For each position, the label at the latest real position before it, and whether there is one.

    Args:
        tags (`torch.LongTensor` of shape `(batch, seq_len)`): label ids (negative ids are read as 0).
        mask (`torch.BoolTensor` of shape `(batch, seq_len)`): the real positions.

    Returns:
        `(labels, has_previous)`, both (batch, seq_len); labels are 0 where there is no previous real position.
    """
    index = previous_real_index(mask)
    labels = tags.clamp(min=0).gather(1, index.clamp(min=0))
    return torch.where(index >= 0, labels, torch.zeros_like(labels)), index >= 0


def previous_real_index(mask: torch.Tensor) -> torch.Tensor:
    """(batch, seq_len) index of the latest real position strictly before each position, -1 where there is none."""
    batch, seq_len = mask.shape
    positions = torch.arange(seq_len, device=mask.device).expand(batch, seq_len)
    latest = torch.where(mask, positions, -1).cummax(dim=1).values  # latest real position at or before t
    return torch.cat([latest.new_full((batch, 1), -1), latest[:, :-1]], dim=1)


class _TransitionSums:
    """
    The log-sum-exp over transitions that the backward algorithm repeats at every position, exact and cheap for a
    constrained label set.

    A dense logsumexp over (batch, to, from) costs far more on CPU than a matrix product, but a product in
    linear space is only safe when each sum contains its largest term: a `from` label whose few allowed
    successors all lie far below the best label would underflow to log(0). So the labels are split by the
    constraint:

    - dense rows: `to` labels every label may move to ("O", "B-X"). Their sums are matrix products of
      max-shifted messages; the best of them is among every label's terms, so nothing underflows.
    - sparse rows: `to` labels with forbidden predecessors ("I-X"). Each label's few allowed successors among
      them are gathered and summed with an exact logsumexp.

    Exact for any transition scores whose spread within a row or column stays below ~80 nats (float32 range);
    beyond that a sum is floored at the smallest normal float rather than producing -inf and NaN gradients.
    """

    def __init__(self, transitions: torch.Tensor):
        allowed = transitions > FORBIDDEN_SCORE / 2  # [to, from]
        dense = allowed.all(dim=1)
        self.dense_rows = dense.nonzero().flatten()
        self.sparse_rows = (~dense).nonzero().flatten()
        dense_scores = transitions[self.dense_rows]  # (dense, from)
        self.column_shift = dense_scores.max(dim=0).values if len(self.dense_rows) else None
        self.backward_factors = (dense_scores - self.column_shift).exp() if len(self.dense_rows) else None
        sparse_allowed = allowed[self.sparse_rows]  # (sparse, from)
        # Allowed sparse successors of each label, padded with label 0 at a forbidden score.
        self.successors, self.successor_scores = _padded_neighbours(sparse_allowed.T, transitions[self.sparse_rows].T)
        self.successors = self.sparse_rows[self.successors] if len(self.sparse_rows) else self.successors

    def backward_step(self, incoming: torch.Tensor) -> torch.Tensor:
        """(batch, to) -> (batch, from): log sum_to exp(transitions[to, from] + incoming[to])."""
        parts = []
        if len(self.dense_rows):
            parts.append(_shifted_log_matmul(incoming[:, self.dense_rows], self.backward_factors) + self.column_shift)
        if self.successors.shape[-1]:
            parts.append(torch.logsumexp(incoming[:, self.successors] + self.successor_scores, dim=-1))
        return parts[0] if len(parts) == 1 else torch.logaddexp(*parts)


def _padded_neighbours(allowed: torch.Tensor, scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For each row of `allowed` (rows, n): the allowed column indices and their scores, padded to the widest row
    with index 0 at `FORBIDDEN_SCORE` (exp of which is exactly 0, so padding adds nothing)."""
    width = int(allowed.sum(dim=1).max()) if allowed.numel() else 0
    # A stable sort puts each row's allowed columns first, in order.
    columns = (~allowed).int().argsort(dim=1, stable=True)[:, :width]
    valid = allowed.gather(1, columns)
    padded_scores = scores.gather(1, columns).masked_fill(~valid, FORBIDDEN_SCORE)
    return columns.masked_fill(~valid, 0), padded_scores


def _shifted_log_matmul(log_vectors: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
    """log(exp(log_vectors) @ factors) for (batch, n) log-space vectors and non-negative factors (n, m), each row
    shifted by its max so its largest term is 1."""
    row_max = log_vectors.max(dim=-1, keepdim=True).values
    summed = (log_vectors - row_max).exp() @ factors
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
    sums = _TransitionSums(transitions)
    incoming = emissions.new_zeros(batch, num_labels)  # beta + emission of the next real position
    has_next = torch.zeros(batch, dtype=torch.bool, device=emissions.device)
    betas = [None] * seq_len
    beta = end.unsqueeze(0).expand(batch, num_labels)
    for t in reversed(range(seq_len)):
        step = sums.backward_step(incoming)
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
    """Score of the label path `tags` (batch, seq_len) over the real positions: start, emissions, transitions, end."""
    return _path_terms(emissions, tags, mask, start, transitions)[0].sum(-1) + _last_end_score(tags, mask, end)


def _path_terms(emissions, tags, mask, start, transitions):
    """Per-position local scores of a path (start or incoming transition, plus emission; 0 off the mask), and the
    previous real label of each position (0 where there is none)."""
    tags = tags.clamp(min=0)
    emitted = emissions.float().gather(-1, tags.unsqueeze(-1)).squeeze(-1)
    previous, has_previous = previous_real_labels(tags, mask)
    local = torch.where(has_previous, transitions[tags, previous], start[tags]) + emitted
    return torch.where(mask, local, torch.zeros_like(local)), previous


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
    the tokens. One backward pass gives both the messages and log Z (`crf_log_partition_from_backward`).

    Returns:
        `torch.Tensor` of shape `(batch, seq_len)`: the per-position terms, 0 off the mask.
    """
    betas = crf_backward(emissions, mask, transitions, end)
    log_z = crf_log_partition_from_backward(emissions, mask, start, betas)
    return token_nll_terms(emissions, tags, mask, start, transitions, log_z, betas)


def crf_log_partition_from_backward(
    emissions: torch.Tensor, mask: torch.Tensor, start: torch.Tensor, betas: torch.Tensor
) -> torch.Tensor:
    """log Z per row from `crf_backward`'s messages: `log sum_y exp(start[y] + emission[y] + beta[y])` at the row's
    first real position (0 for a row without one). The backward messages give log Z too, so a loss needs no forward
    pass."""
    index = mask.int().argmax(dim=1).view(-1, 1, 1).expand(-1, 1, betas.shape[-1])  # the first real position
    at_first = (emissions.float().gather(1, index) + betas.gather(1, index)).squeeze(1)
    log_z = torch.logsumexp(at_first + start.unsqueeze(0), dim=-1)
    return torch.where(mask.any(dim=1), log_z, torch.zeros_like(log_z))


def token_nll_terms(emissions, tags, mask, start, transitions, log_z, betas) -> torch.Tensor:
    """`crf_token_nll`'s per-position terms from a row's log Z and backward messages."""
    local, prev = _path_terms(emissions, tags, mask, start, transitions)
    safe_tags = tags.clamp(min=0)
    beta_here = betas.gather(-1, safe_tags.unsqueeze(-1)).squeeze(-1)
    # At the first real position the conditional is normalised by log Z, elsewhere by the previous real
    # position's backward message at its gold label.
    index = previous_real_index(mask)
    beta_before = betas.gather(1, index.clamp(min=0).unsqueeze(-1).expand(-1, -1, betas.shape[-1]))
    beta_prev = torch.where(index >= 0, beta_before.gather(-1, prev.unsqueeze(-1)).squeeze(-1), log_z.unsqueeze(1))
    terms = -(local + beta_here - beta_prev)
    return torch.where(mask, terms, torch.zeros_like(terms))


def crf_partial_nll(
    emissions: torch.Tensor,
    allowed: torch.Tensor,
    mask: torch.Tensor,
    start: torch.Tensor,
    transitions: torch.Tensor,
    end: torch.Tensor,
) -> torch.Tensor:
    """
    Negative log-likelihood of a partial annotation: `-log p(y in Y | x) = log Z - log sum_{y in Y} exp(score(y))`,
    where Y is every label path whose label at each real position is one `allowed` there. A fully labelled
    sequence (one label allowed per position) gives the usual NLL; a position whose label is unknown (a date in a
    corpus that labelled only names) lets the loss sum over every label it may be, instead of calling it "O".

    Args:
        allowed (`torch.BoolTensor` of shape `(batch, seq_len, num_labels)`): the labels consistent with the
            annotation at each position; at least one per real position.

    Returns:
        `torch.Tensor` of shape `(batch,)`, >= 0 (0 for a row without a real position).
    """
    # Both normalisers in one backward pass over the rows stacked twice (one sequential loop, not two).
    rows, row_mask = torch.cat([emissions.float(), allowed_only(emissions, allowed)]), torch.cat([mask, mask])
    betas = crf_backward(rows, row_mask, transitions, end)
    log_z, log_z_allowed = crf_log_partition_from_backward(rows, row_mask, start, betas).chunk(2)
    return log_z - log_z_allowed


def allowed_only(emissions: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """The emissions with every label not `allowed` at a position scored forbidden: their log Z sums over the
    paths consistent with a partial annotation."""
    return emissions.float().masked_fill(~allowed, FORBIDDEN_SCORE)
