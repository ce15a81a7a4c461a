"""piiner: a pretrained encoder, a character CNN over each token's source word, a gated fusion of the two, and
a BIO-constrained CRF on top.

Which positions the CRF runs over (the same rule in training and inference, see `crf_positions`): tokens inside
the attention mask that have characters, i.e. real text tokens; special tokens ([CLS], [SEP], padding) carry no
characters and are outside the chain. Without `char_ids`, a `special_tokens_mask` gives the same set. With labels,
positions labelled -100 are skipped as well.
"""

import inspect
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from transformers import AutoModel, PreTrainedModel
from transformers import initialization as init
from transformers.modeling_outputs import BaseModelOutput
from transformers.utils import ModelOutput

from .char_cnn_numba import char_features_cpu
from .configuration_piiner import PiiNerConfig
from .crf_numba import crf_decode_cpu
from .crf_piiner import (
    PiiNerCRF,
    allowed_only,
    crf_positions,
    bio_constraints,
    begin_of,
    crf_backward,
    crf_log_partition_from_backward,
    crf_path_score,
    token_nll_terms,
)
from .pipeline_piiner import PiiNerTokenClassificationPipeline  # noqa: F401  (imported so save_pretrained copies it)


# Keys a tokenizer or the windowing code puts next to the model inputs; they describe the text, not the model
# input, so forward accepts and ignores them. Any other unknown keyword is an error.
TEXT_METADATA_KEYS = frozenset({"offset_mapping", "overflow_to_sample_mapping", "length", "word_ids", "sample_id"})

# save_pretrained writes only the saved class into auto_map; a snapshot of the tagger should also load as the
# fused-states backbone with AutoModel, so every model of this family carries the whole map.
AUTO_MAP = {
    "AutoConfig": "configuration_piiner.PiiNerConfig",
    "AutoModel": "modeling_piiner.PiiNerModel",
    "AutoModelForTokenClassification": "modeling_piiner.PiiNerForTokenClassification",
}


@dataclass
class PiiNerTokenClassifierOutput(ModelOutput):
    r"""
    Output of [`PiiNerForTokenClassification`].

    Args:
        loss (`torch.FloatTensor` of shape `()`, returned when `labels` is given):
            CRF negative log-likelihood, weighted and averaged over the sequences that have CRF positions.
        logits (`torch.FloatTensor` of shape `(batch_size, sequence_length, num_labels)`):
            The CRF's emission scores, in training and eval alike. Their per-token argmax is not the model's
            answer: the CRF's is `decoded_tags`.
        decoded_tags (`torch.LongTensor` of shape `(batch_size, sequence_length)`, returned with `decode=True`):
            The Viterbi path; -100 at positions outside the CRF (special tokens, padding).
        tag_scores (`torch.FloatTensor` of shape `(batch_size, sequence_length)`, returned with `decode=True`):
            CRF marginal probability of the decoded tag, a confidence in [0, 1]; 0 outside the CRF.
        hidden_states, attentions: the encoder's, when asked for.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    decoded_tags: torch.LongTensor | None = None
    tag_scores: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class PiiNerCharCNN(nn.Module):
    """
    Character CNN over the source word of each token: embedding, one Conv1d per kernel width, ReLU, max-pool over
    the word's own windows, concatenation, dropout.

    Padding never changes a result: pad characters are zeroed, and the max-pool only reads windows that start
    inside the word (a word shorter than a kernel is read through its first window). That is what lets `forward`
    cut the work without changing any output: each distinct word of the batch (the sub-tokens of one word, and
    every repeat of "the" or a name) is encoded once, and short words are convolved at their own width rather than
    at the width of the batch's longest word (one URL would otherwise widen every row). `encode` is the
    computation itself, static in shape, which is what the ONNX export traces.

    The convolutions run as a lookup. A window's pre-activation is the bias plus, for each offset j in the window,
    the offset-j weights applied to that character's embedding; every kernel reads a window of the widest kernel's
    size, its weights zero beyond its own width. So each distinct character of the batch is multiplied by the
    weights once (a table of `widest x characters` rows) and a window sums `widest` rows of it
    (`embedding_bag`): a gather where a convolution multiplied every character of every window again. Same sums
    in another order (float rounding apart); `test_modeling.py` checks it against a Conv1d per kernel.

    In eval mode without gradients on the CPU (the pipeline's case) `forward` runs the same sums as one compiled loop
    (`char_cnn_numba`) over a table of the whole character vocabulary made once per set of weights: as torch ops a
    call is some seventy small operations whose fixed costs, at batch 1, outweigh the arithmetic.
    """

    # Words up to this many characters (most of them) are convolved together at this width at most.
    short_word_chars = 16

    def __init__(self, config: PiiNerConfig):
        super().__init__()
        self.embedding = nn.Embedding(config.char_vocab_size, config.char_embedding_dim, padding_idx=0)
        self.convs = nn.ModuleList(
            nn.Conv1d(config.char_embedding_dim, config.char_channels, kernel_size=k) for k in config.char_kernel_sizes
        )
        self.dropout = nn.Dropout(config.char_dropout)
        self.kernel_sizes = list(config.char_kernel_sizes)
        self.output_dim = config.char_channels * len(self.kernel_sizes)
        # The kernel width of each output channel, in output order (a list: a tensor made here would be a meta
        # tensor when from_pretrained builds the model).
        self._channel_kernels = [k for k in self.kernel_sizes for _ in range(config.char_channels)]

    def forward(self, word_chars: torch.LongTensor) -> torch.Tensor:
        """
        Args:
            word_chars (`torch.LongTensor` of shape `(num_words, num_chars)`): char ids of the words, 0-padded.

        Returns:
            `torch.Tensor` of shape `(num_words, output_dim)`.
        """
        if self._inference_on_cpu(word_chars):
            return char_features_cpu(word_chars, *self._inference_table())
        words, inverse = distinct_rows(word_chars)
        lengths = (words != 0).sum(-1)
        # The batch's characters renumbered 0.. in sorted order, the table as small as the batch's alphabet; a
        # column of padding makes sure 0 is among them, so padding stays 0.
        alphabet, renumbered = torch.unique(nn.functional.pad(words, (0, 1)), return_inverse=True)
        words = renumbered[:, :-1]
        table = self._window_table(alphabet)
        short = lengths <= self.short_word_chars
        if bool(short.all()) or not bool(short.any()):
            features = self._lookup(self._trimmed(words, lengths), table)
        else:
            short_features = self._lookup(self._trimmed(words[short], lengths[short]), table)
            long_features = self._lookup(self._trimmed(words[~short], lengths[~short]), table)
            # The dtype the lookup gave (bf16 under autocast), not the parameters' own.
            features = short_features.new_empty(words.shape[0], self.output_dim)
            features[short], features[~short] = short_features, long_features
        return self.dropout(features[inverse])

    def _inference_on_cpu(self, word_chars: torch.Tensor) -> bool:
        """Whether `forward` runs the compiled loop of `char_cnn_numba`: eval mode without gradients on the CPU, and
        not inside a trace or a compile, which must see torch ops."""
        return (not self.training and not torch.is_grad_enabled() and word_chars.device.type == "cpu"
                and not torch.jit.is_tracing() and not torch.compiler.is_compiling()
                and not torch.is_autocast_enabled("cpu"))

    def _inference_table(self) -> tuple:
        """The window table of the whole character vocabulary as NumPy `(table, bias, kernel widths)`, made once
        per set of weights: keyed by each parameter's storage and version, so a weight changed in place (a load, an
        optimizer step) makes a new one."""
        key = tuple((id(p), p.data_ptr(), p._version, p.dtype) for p in self.parameters())
        cached = self.__dict__.get("_cached_inference_table")
        if cached is None or cached[0] != key:
            vocabulary = torch.arange(self.embedding.num_embeddings, device=self.embedding.weight.device)
            table, bias, letters = self._window_table(vocabulary)
            table = table.float().reshape(max(self.kernel_sizes), letters, -1).numpy()
            cached = (key, (table, bias.float().numpy(), np.array(self.kernel_sizes, dtype=np.int64)))
            self.__dict__["_cached_inference_table"] = cached
        return cached[1]

    def encode(self, words: torch.LongTensor, alphabet: torch.LongTensor | None = None) -> torch.Tensor:
        """
        The features of each row of `words`, without dropout: the computation itself, static in shape (what the
        ONNX export traces).

        Args:
            words (`torch.LongTensor` of shape `(num_words, num_chars)`): 0-padded rows at least as wide as the
                narrowest kernel; char ids, or with `alphabet` positions in it.
            alphabet (`torch.LongTensor`, *optional*): the char ids the rows use, sorted, 0 first; the whole
                vocabulary when not given.
        """
        if alphabet is None:
            alphabet = torch.arange(self.embedding.num_embeddings, device=words.device)
        return self._lookup(words, self._window_table(alphabet))

    def _window_table(self, alphabet: torch.LongTensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        """`(table, bias, len(alphabet))`: row `j * len(alphabet) + c` of the table is what character `alphabet[c]`
        at offset j of a window adds to every channel (0 for padding); bias is every channel's bias."""
        widest = max(self.kernel_sizes)
        # (channels, embedding_dim, widest): each kernel's weights, zero after its own width.
        weight = torch.cat([nn.functional.pad(conv.weight, (0, widest - conv.kernel_size[0])) for conv in self.convs])
        embedded = self.embedding(alphabet) * (alphabet != 0).unsqueeze(-1)  # (len(alphabet), embedding_dim)
        products = embedded @ weight.permute(1, 2, 0).reshape(weight.shape[1], -1)  # (len(alphabet), widest * channels)
        table = products.view(len(alphabet), widest, -1).transpose(0, 1).reshape(widest * len(alphabet), -1)
        return table, torch.cat([conv.bias for conv in self.convs]), len(alphabet)

    def _lookup(self, words: torch.LongTensor, window_table: tuple[torch.Tensor, torch.Tensor, int]) -> torch.Tensor:
        """`encode` with its table made (`_window_table`): `forward` makes it once for its groups of words."""
        table, bias, letters = window_table
        widest, narrowest = max(self.kernel_sizes), min(self.kernel_sizes)
        lengths = (words != 0).sum(-1)
        # Zeros on the right for the last windows of the narrower kernels inside the widest kernel's window.
        windows = nn.functional.pad(words, (0, widest - narrowest)).unfold(1, widest, 1)  # (words, starts, widest)
        count, starts = windows.shape[:2]
        rows = windows + torch.arange(widest, device=words.device) * letters
        summed = nn.functional.embedding_bag(rows.reshape(count * starts, widest), table, mode="sum")
        features = torch.relu(summed + bias.to(summed.dtype)).view(count, starts, -1)  # (words, starts, channels)
        # A window is read when it starts inside the word (a word shorter than a kernel: its first window only).
        kernel = torch.tensor(self._channel_kernels, device=words.device)
        last_start = (lengths.unsqueeze(1) - kernel + 1).clamp(min=1)  # (words, channels): windows before this
        readable = torch.arange(starts, device=words.device).view(1, -1, 1) < last_start.unsqueeze(1)
        # Features are >= 0 after ReLU, so zeroing the unreadable windows leaves the max of the readable ones.
        return (features * readable).amax(dim=1)

    def _trimmed(self, words: torch.LongTensor, lengths: torch.LongTensor) -> torch.LongTensor:
        """The rows cut to their longest word, but never below the widest kernel: the columns after are padding."""
        width = max(int(lengths.max()) if lengths.numel() else 0, max(self.kernel_sizes))
        trimmed = words[:, :width]
        return nn.functional.pad(trimmed, (0, width - trimmed.shape[1]))


def distinct_rows(rows: torch.LongTensor) -> tuple[torch.LongTensor, torch.LongTensor]:
    """
    The distinct rows of a 2-D integer tensor and the index of each row among them (`distinct[inverse]` equals
    `rows`), in the order of first appearance. Rows are grouped by a 64-bit hash (one sort of n numbers, where
    `torch.unique(dim=0)` sorts whole rows) and the grouping is checked exactly: on a hash collision
    every row is kept as it is, so the result is always exact.
    """
    count, width = rows.shape
    positions = torch.arange(count, device=rows.device)
    if count < 2:
        return rows, positions
    multipliers = torch.randint(1, 2**62, (width,), generator=torch.Generator().manual_seed(width)).to(rows.device)
    hashes = (rows * multipliers).sum(-1)
    _, group = torch.unique(hashes, return_inverse=True)
    first = torch.full((int(group.max()) + 1,), count, device=rows.device).scatter_reduce(0, group, positions, "amin")
    order = first.argsort()  # groups in order of first appearance
    rank = torch.empty_like(order)
    rank[order] = torch.arange(len(order), device=rows.device)
    distinct, inverse = rows[first[order]], rank[group]
    if not torch.equal(distinct[inverse], rows):  # a hash collision: no grouping
        return rows, positions
    return distinct, inverse


class PiiNerGatedFusion(nn.Module):
    """
    Per-token, per-dimension gate between char features and encoder states:
    `c' = dropout(relu(W_c c))`, `g = sigmoid(W_g [c'; h])`, `out = g * c' + (1 - g) * h`; with
    `config.fusion == "sum"` (the ablation) no gate: `out = h + c'`.
    """

    def __init__(self, config: PiiNerConfig, char_dim: int):
        super().__init__()
        hidden_size = config.encoder_config.hidden_size
        self.char_projection = nn.Linear(char_dim, hidden_size)
        self.gate = nn.Linear(2 * hidden_size, hidden_size) if config.fusion == "gate" else None
        self.dropout = nn.Dropout(config.char_dropout)

    def forward(self, char_features: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        projected = self.dropout(torch.relu(self.char_projection(char_features)))
        if self.gate is None:
            return hidden + projected
        gate = torch.sigmoid(self.gate(torch.cat([projected, hidden], dim=-1)))
        return gate * projected + (1 - gate) * hidden


class IncompleteCheckpointError(LookupError):
    """A snapshot whose weights do not match the model: some are missing, unexpected or of another shape.

    A `LookupError`, not an `OSError`/`ValueError`, so `pipeline(...)` does not swallow it while trying other
    model classes; its message names the keys."""


class PiiNerPreTrainedModel(PreTrainedModel):
    config_class = PiiNerConfig
    base_model_prefix = "piiner"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_flash_attn = True

    def __init__(self, config: PiiNerConfig, *inputs, **kwargs):
        super().__init__(config, *inputs, **kwargs)
        # Entries already there (e.g. "user/repo--modeling_piiner.PiiNerModel" after a Hub load) win.
        config.auto_map = {**AUTO_MAP, **(getattr(config, "auto_map", None) or {})}

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        """The stock `from_pretrained`, loading whole or not at all: any missing, unexpected or mis-shaped weight
        raises `IncompleteCheckpointError` naming the keys, where transformers would log a warning and leave those
        weights random (a random CRF tags "John" as an insurance number). Shape mismatches are let through only
        when `ignore_mismatched_sizes=True` asks for a new head explicitly; a fresh model around a pretrained
        encoder is `PiiNerForTokenClassification.from_backbone`."""
        wants_info = kwargs.pop("output_loading_info", False)
        new_head = kwargs.pop("ignore_mismatched_sizes", False)
        # Mismatches are always let through to here, so that the error below names them.
        model, info = super().from_pretrained(
            pretrained_model_name_or_path, *args, output_loading_info=True, ignore_mismatched_sizes=True, **kwargs
        )
        problems = {
            "missing": sorted(info.get("missing_keys") or ()),
            "unexpected": sorted(info.get("unexpected_keys") or ()),
        }
        if not new_head:
            problems["of another shape"] = sorted(str(key[0]) for key in info.get("mismatched_keys") or ())
        problems = {what: keys for what, keys in problems.items() if keys}
        if problems:
            listed = "; ".join(f"{what}: {', '.join(keys[:12])}{' ...' if len(keys) > 12 else ''} ({len(keys)})"
                               for what, keys in problems.items())
            raise IncompleteCheckpointError(
                f"{pretrained_model_name_or_path} is not a complete {cls.__name__} snapshot ({listed}). Refusing to "
                "run with weights left at random; re-save the model, or build a new one with from_backbone."
            )
        return (model, info) if wants_info else model

    def _init_weights(self, module: nn.Module):
        """Initialises this repo's own modules; the encoder is a `PreTrainedModel` and runs its own init.

        Only `transformers.initialization` functions are used: they skip tensors already loaded by
        `from_pretrained`, so a checkpoint's weights are never overwritten."""
        std = self.config.initializer_range
        if isinstance(module, PiiNerCRF):
            for param in (module.start_transitions, module.end_transitions, module.transitions):
                init.normal_(param, mean=0.0, std=std)
            allowed, start_allowed = bio_constraints(self.config.id2label)
            init.copy_(module.allowed, allowed)
            init.copy_(module.start_allowed, start_allowed)
            init.copy_(module.begin_of, begin_of(self.config.id2label))
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, (nn.Linear, nn.Conv1d)):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)


def _wants_dict(return_dict: bool | None, config: PiiNerConfig) -> bool:
    return config.return_dict if return_dict is None else return_dict


class PiiNerModel(PiiNerPreTrainedModel):
    """
    The encoder with its char CNN and gated fusion; `last_hidden_state` is the fused states. Tokens without
    characters (special tokens, padding, or no `char_ids` at all) keep the encoder's states.
    """

    # A tagger snapshot also loads as this backbone (AutoModel): its head weights are expected to be left out.
    _keys_to_ignore_on_load_unexpected = [r"^classifier\.", r"^crf\."]

    def __init__(self, config: PiiNerConfig):
        super().__init__(config)
        self.encoder = AutoModel.from_config(config.encoder_config)
        # A pooler is never used here; left in, its parameters would get no gradient (DDP errors, and the
        # "every parameter trains" checks fail). Encoders with one (BERT, RoBERTa) return None pooled output.
        if getattr(self.encoder, "pooler", None) is not None:
            self.encoder.pooler = None
        # fusion "none" (the ablation) builds no char CNN: the encoder states are the output.
        self.char_cnn = PiiNerCharCNN(config) if config.fusion != "none" else None
        self.fusion = PiiNerGatedFusion(config, self.char_cnn.output_dim) if self.char_cnn is not None else None
        encoder_inputs = inspect.signature(self.encoder.forward).parameters
        # DeBERTa-v2/v3 checkpoints have type_vocab_size=0: feeding them token_type_ids would index an empty table.
        self._use_token_type_ids = "token_type_ids" in encoder_inputs and (
            getattr(config.encoder_config, "type_vocab_size", 0) or 0
        ) > 0
        self.post_init()

    def get_input_embeddings(self) -> nn.Module:
        return self.encoder.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module):
        self.encoder.set_input_embeddings(value)

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        char_ids: torch.LongTensor | None = None,
        output_hidden_states: bool | None = None,
        output_attentions: bool | None = None,
        return_dict: bool | None = None,
    ) -> BaseModelOutput:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(batch_size, sequence_length)`): token ids.
            attention_mask (`torch.Tensor` of shape `(batch_size, sequence_length)`, *optional*): 1 for tokens.
            token_type_ids (`torch.LongTensor`, *optional*): passed on only to encoders that have token types.
            char_ids (`torch.LongTensor` of shape `(batch_size, sequence_length, num_chars)`, *optional*):
                char ids of each token's source word (see `encoding_piiner.token_char_ids`), 0 = padding.
        """
        self._check_inputs(input_ids, char_ids)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        encoder_kwargs = {"input_ids": input_ids, "attention_mask": attention_mask, "return_dict": True}
        if token_type_ids is not None and self._use_token_type_ids:
            encoder_kwargs["token_type_ids"] = token_type_ids
        if output_hidden_states:
            encoder_kwargs["output_hidden_states"] = True
        if output_attentions:
            encoder_kwargs["output_attentions"] = True
        encoded = self.encoder(**encoder_kwargs)
        hidden = encoded.last_hidden_state
        if char_ids is not None and self.char_cnn is not None:
            # The tokens with characters, found once: their rows of the flattened batch.
            rows = ((char_ids != 0).any(-1) & attention_mask.bool()).flatten().nonzero().squeeze(-1)
            if len(rows):
                flat = hidden.flatten(0, 1)
                char_features = self.char_cnn(char_ids.flatten(0, 1).index_select(0, rows))
                fused = self.fusion(char_features.to(hidden.dtype), flat.index_select(0, rows))
                hidden = flat.index_copy(0, rows, fused).view_as(hidden)
        output = BaseModelOutput(
            last_hidden_state=hidden, hidden_states=encoded.hidden_states, attentions=encoded.attentions
        )
        return output if _wants_dict(return_dict, self.config) else output.to_tuple()

    def _check_inputs(self, input_ids: torch.Tensor, char_ids: torch.Tensor | None):
        if input_ids is None or input_ids.dim() != 2:
            raise ValueError(f"input_ids must be a (batch, seq_len) tensor, got {getattr(input_ids, 'shape', None)}")
        if char_ids is None:
            return
        if char_ids.dim() != 3 or char_ids.shape[:2] != input_ids.shape:
            raise ValueError(
                f"char_ids must have shape (batch, seq_len, num_chars) = {tuple(input_ids.shape)} + (num_chars,), "
                f"got {tuple(char_ids.shape)}"
            )
        if char_ids.numel() and (char_ids.min() < 0 or char_ids.max() >= self.config.char_vocab_size):
            raise ValueError(
                f"char_ids must lie in [0, {self.config.char_vocab_size}) (char_vocab_size), got values in "
                f"[{int(char_ids.min())}, {int(char_ids.max())}]; encode characters with encoding_piiner.encode_char"
            )


class PiiNerForTokenClassification(PiiNerPreTrainedModel):
    """
    [`PiiNerModel`] with a dropout + linear emission layer and a BIO-constrained CRF.

    Emissions are log-softmax normalised before the CRF: a per-position constant does not change the CRF's
    distribution, and it keeps the log-space sums far from overflow. The CRF runs in float32 even under autocast.
    """

    # The loss is a CRF likelihood averaged over sequences; it takes no `num_items_in_batch` from the Trainer.
    accepts_loss_kwargs = False

    def __init__(self, config: PiiNerConfig):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.piiner = PiiNerModel(config)
        self.dropout = nn.Dropout(config.classifier_dropout)
        self.classifier = nn.Linear(config.encoder_config.hidden_size, config.num_labels)
        self.crf = PiiNerCRF(config.id2label)
        if not config.use_crf:  # the ablation: the transition scores stay at zero, untrained
            self.crf.requires_grad_(False)
        self.post_init()
        # post_init gathered the backbone's permission to skip a tagger's head weights; the tagger needs every one.
        self._keys_to_ignore_on_load_unexpected = set()

    @classmethod
    def from_backbone(cls, name_or_path: str, **config_overrides) -> "PiiNerForTokenClassification":
        """
        A fresh piiner model around a pretrained encoder (a Hub id or a local folder), whose weights are loaded
        once; char CNN, fusion, emissions and CRF start from random. `config_overrides` go to `PiiNerConfig`.
        """
        encoder = AutoModel.from_pretrained(name_or_path)
        config = PiiNerConfig(encoder_config=encoder.config, **config_overrides)
        model = cls(config)
        if getattr(encoder, "pooler", None) is not None:
            encoder.pooler = None
        model.piiner.encoder = encoder
        return model

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        char_ids: torch.LongTensor | None = None,
        labels: torch.LongTensor | None = None,
        label_weights: torch.Tensor | None = None,
        unannotated_labels: torch.Tensor | None = None,
        not_pii_mask: torch.Tensor | None = None,
        unjudged_mask: torch.Tensor | None = None,
        special_tokens_mask: torch.Tensor | None = None,
        decode: bool = False,
        output_hidden_states: bool | None = None,
        output_attentions: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> PiiNerTokenClassifierOutput:
        r"""
        Args:
            input_ids, attention_mask, token_type_ids, char_ids: as in [`PiiNerModel.forward`].
            labels (`torch.LongTensor` of shape `(batch_size, sequence_length)`, *optional*):
                BIO label ids; -100 on positions without a label (special tokens, padding). An "I-X" that may not
                stand where it is (first labelled position, or after anything but "B-X"/"I-X", e.g. at a window
                cut) is scored as "B-X".
            label_weights (`torch.Tensor` of shape `(batch_size,)` or `(batch_size, sequence_length)`, *optional*):
                Per-sequence weights multiply the sequence's NLL. Per-token weights multiply that token's term of
                the exact chain-rule split of the NLL, `-log p(y_t | y_prev, x)` (see `crf_token_nll`), so equal
                token weights w give w times the sequence NLL.
            unannotated_labels (`torch.BoolTensor` of shape `(batch_size, num_labels)`, *optional*):
                Per sequence, the labels its annotators never used (a corpus labelled for names only: every
                B-/I- label of the other types). A position labelled "O" in such a sequence may carry any of them,
                and the loss sums over every path through those labels (`crf_partial_nll`) instead of calling them
                negatives. Rows with no True entry are scored as fully labelled.
            not_pii_mask (`torch.Tensor` of shape `(batch_size, sequence_length)`, *optional*):
                Positions inside a stretch the annotators labelled as an entity of no PII type (a product, the title
                of a show): there "O" is a negative for every type, `unannotated_labels` notwithstanding.
            unjudged_mask (`torch.Tensor` of shape `(batch_size, sequence_length)`, *optional*):
                Positions whose label is unknown (a mention the schema may or may not count, such as a bare year):
                the loss sums over every label there, so they teach nothing either way.
            special_tokens_mask (`torch.Tensor`, *optional*): marks special tokens when `char_ids` is not given.
            decode (`bool`, defaults to `False`): also run the CRF's Viterbi decode and marginals and return
                `decoded_tags` and `tag_scores` (the pipeline and evaluation ask for them; training does not).

        Returns:
            [`PiiNerTokenClassifierOutput`]: the loss is the mean over sequences with at least one CRF position.
        """
        unknown = set(kwargs) - TEXT_METADATA_KEYS
        if unknown:
            raise TypeError(f"PiiNerForTokenClassification.forward() got unexpected arguments {sorted(unknown)}")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        outputs = self.piiner(
            input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            char_ids=char_ids,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
            return_dict=True,
        )
        logits = self.classifier(self.dropout(outputs.last_hidden_state))
        loss = decoded_tags = tag_scores = None
        # Without labels or a decode the logits are the answer (the pipeline decodes them itself).
        if labels is not None or decode:
            # The CRF always runs in float32: log-sum-exp over 83 labels and hundreds of steps loses too much in 16
            # bits.
            with torch.autocast(device_type=logits.device.type, enabled=False):
                emissions = torch.log_softmax(logits.float(), dim=-1)
                start, transitions, end = self._transition_scores()
                mask = crf_positions(attention_mask, char_ids, special_tokens_mask)
                if labels is not None:
                    loss = self._loss(emissions, labels, mask, label_weights, unannotated_labels, not_pii_mask,
                                      unjudged_mask, start, transitions, end)
                if decode:
                    decoded_tags, marginals = self._decode(emissions, mask, start, transitions, end)
                    tag_scores = marginals.gather(-1, decoded_tags.clamp(min=0).unsqueeze(-1)).squeeze(-1) * mask
        output = PiiNerTokenClassifierOutput(
            loss=loss,
            logits=logits,
            decoded_tags=decoded_tags,
            tag_scores=tag_scores,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
        )
        return output if _wants_dict(return_dict, self.config) else output.to_tuple()

    def _loss(self, emissions, labels, crf_mask, label_weights, unannotated_labels, not_pii_mask, unjudged_mask,
              start, transitions, end):
        """Weighted CRF NLL averaged over the rows with at least one labelled CRF position; a row with
        `unannotated_labels` or an `unjudged_mask` position gets the partial-annotation NLL (`crf_partial_nll`)
        weighted by its mean token weight, its "O" positions open to those labels except where `not_pii_mask` is set,
        its unjudged positions open to every label."""
        if labels.shape != emissions.shape[:2]:
            raise ValueError(f"labels must have shape {tuple(emissions.shape[:2])}, got {tuple(labels.shape)}")
        labelled = labels != -100
        if bool((labelled & ~crf_mask).any()):
            raise ValueError(
                "labels given on positions outside the CRF (special tokens, padding, or tokens without char_ids); "
                "label those positions -100"
            )
        if bool(((labels < 0) | (labels >= self.num_labels))[labelled].any()):
            raise ValueError(
                f"labels must be -100 or a label id in [0, {self.num_labels}), got "
                f"{labels[labelled & ((labels < 0) | (labels >= self.num_labels))].unique().tolist()}"
            )
        mask = crf_mask & labelled
        tags = self.crf.repair_tags(labels.clamp(min=0), mask)
        if label_weights is None:
            label_weights = emissions.new_ones(labels.shape[:1])
        if label_weights.shape not in (labels.shape[:1], labels.shape):
            raise ValueError(
                f"label_weights must have shape (batch,) = {tuple(labels.shape[:1])} or (batch, seq_len) = "
                f"{tuple(labels.shape)}, got {tuple(label_weights.shape)}"
            )
        if not bool(torch.isfinite(label_weights).all()) or bool((label_weights < 0).any()):
            raise ValueError("label_weights must be finite and >= 0")
        label_weights = label_weights.float()
        if unannotated_labels is None:
            unannotated_labels = torch.zeros(labels.shape[0], self.num_labels, dtype=torch.bool, device=labels.device)
        elif unannotated_labels.shape != (labels.shape[0], self.num_labels):
            raise ValueError(f"unannotated_labels must have shape (batch, num_labels) = "
                             f"{(labels.shape[0], self.num_labels)}, got {tuple(unannotated_labels.shape)}")
        masks = {"not_pii_mask": not_pii_mask, "unjudged_mask": unjudged_mask}
        for name, given in masks.items():
            if given is None:
                masks[name] = torch.zeros_like(mask)
            elif given.shape != labels.shape:
                raise ValueError(f"{name} must have shape {tuple(labels.shape)}, got {tuple(given.shape)}")
        not_pii_mask, unjudged_mask = masks["not_pii_mask"].bool(), masks["unjudged_mask"].bool() & mask
        unannotated_labels = unannotated_labels.bool()
        partial = unannotated_labels.any(-1) | unjudged_mask.any(-1)
        full = ~partial
        e_full, t_full, m_full, w_full = emissions[full], tags[full], mask[full], label_weights[full]
        e_part, t_part, m_part, w_part = emissions[partial], tags[partial], mask[partial], label_weights[partial]
        outside = (t_part == self.config.label2id.get("O", 0)) & ~not_pii_mask[partial]
        allowed = (nn.functional.one_hot(t_part, self.num_labels).bool()
                   | (outside.unsqueeze(-1) & unannotated_labels[partial].unsqueeze(1))
                   | unjudged_mask[partial].unsqueeze(-1))
        # One backward pass for the whole batch: the fully labelled rows, the partial rows and the partial rows
        # open to their allowed labels, stacked (a pass is a sequential loop, the step's cost on a GPU).
        rows = torch.cat([e_full, e_part, allowed_only(e_part, allowed)])
        row_mask = torch.cat([m_full, m_part, m_part])
        betas = crf_backward(rows, row_mask, transitions, end)
        log_z_full, log_z_part, log_z_allowed = crf_log_partition_from_backward(rows, row_mask, start, betas).split(
            [len(e_full), len(e_part), len(e_part)])
        nll = emissions.new_zeros(labels.shape[0])
        if w_full.dim() == 2:
            terms = token_nll_terms(e_full, t_full, m_full, start, transitions, log_z_full, betas[:len(e_full)])
            nll[full] = (terms * w_full).sum(-1)
        else:
            nll[full] = (log_z_full - crf_path_score(e_full, t_full, m_full, start, transitions, end)) * w_full
        if w_part.dim() == 2:  # a partial row's weight: the mean weight of its labelled tokens
            w_part = (w_part * m_part).sum(-1) / m_part.sum(-1).clamp(min=1)
        nll[partial] = (log_z_part - log_z_allowed) * w_part
        has_positions = mask.any(-1)
        return nll[has_positions].sum() / has_positions.sum().clamp(min=1)

    def _transition_scores(self):
        """The CRF's constrained (start, transitions, end); for `use_crf=False` all zero and unconstrained, which
        makes the same likelihood, Viterbi and marginals those of independent per-token softmaxes."""
        if self.config.use_crf:
            return self.crf.constrained_transitions()
        return tuple(torch.zeros_like(p, dtype=torch.float32) for p in (
            self.crf.start_transitions, self.crf.transitions, self.crf.end_transitions))

    @staticmethod
    @torch.compiler.disable
    def _decode(emissions, mask, start, transitions, end) -> tuple[torch.Tensor, torch.Tensor]:
        """Viterbi tags and CRF marginals, by the compiled loops of `crf_numba` on the CPU wherever the emissions
        are (a torch loop pays a fixed cost per op at each of hundreds of positions: benchmarks/bench_crf_decode.py),
        returned on the emissions' device. Nothing is differentiated through a decode."""
        decoded_tags, marginals = crf_decode_cpu(emissions, mask, start, transitions, end)
        device = emissions.device
        return torch.from_numpy(decoded_tags).to(device), torch.from_numpy(marginals).to(device, torch.float32)


PiiNerConfig.register_for_auto_class()
PiiNerModel.register_for_auto_class("AutoModel")
PiiNerForTokenClassification.register_for_auto_class("AutoModelForTokenClassification")

__all__ = [
    "IncompleteCheckpointError",
    "PiiNerCharCNN",
    "PiiNerForTokenClassification",
    "PiiNerGatedFusion",
    "PiiNerModel",
    "PiiNerPreTrainedModel",
    "PiiNerTokenClassifierOutput",
    "crf_positions",
]
