"""piiner model configuration."""

from huggingface_hub.dataclasses import strict
from transformers import AutoConfig, PreTrainedConfig
from transformers.utils.versions import require_version

from .pii_schema import CAPITALISED_TYPES, ID2LABEL, LABEL2ID, MULTILINE_TYPES, TIER_OF
from .recognizers_piiner import evidence_from

# The oldest transformers this code runs on (`make test-floor`); an older one fails here, by name, rather than deep
# inside a config or pipeline class.
MIN_TRANSFORMERS = "5.10"
require_version(f"transformers>={MIN_TRANSFORMERS}", f"piiner's model code needs transformers>={MIN_TRANSFORMERS}: "
                f"pip install -U 'transformers>={MIN_TRANSFORMERS}'")

FUSIONS = ("gate", "sum", "none")
PIPELINE_ENTRY = {
    "impl": "pipeline_piiner.PiiNerTokenClassificationPipeline",
    "pt": ["AutoModelForTokenClassification"],
    "type": "text",
}


@strict
class PiiNerConfig(PreTrainedConfig):
    r"""
    Configuration of a piiner tagger: a pretrained encoder, a character CNN over each token's source word, a
    per-token, per-dimension gate that fuses the two, and a BIO CRF over the label set.

    It holds architecture and label meaning only; learning rates, loss weights and paths are training arguments.

    Args:
        encoder_config (`dict` or `PreTrainedConfig`, defaults to a BERT config):
            Config of the encoder backbone, any `AutoModel` encoder (BERT, DeBERTa-v2/v3, RoBERTa, ...). Nesting it
            here lets the whole model be built offline from this one file; pretrained encoder weights are loaded
            once, by `PiiNerForTokenClassification.from_backbone`, never inside `__init__`.
        char_vocab_size (`int`, defaults to 512):
            Rows of the character embedding. Id 0 is padding; code points below `char_vocab_size - 64` keep their
            own row, every other code point is hashed into the last 64 rows, so any Unicode text maps to valid ids.
        char_embedding_dim (`int`, defaults to 50):
            Size of one character embedding.
        char_kernel_sizes (`list[int]`, defaults to `[3, 4, 5]`):
            Widths of the parallel Conv1d filters of the char CNN; their max-pooled outputs are concatenated.
        char_channels (`int`, defaults to 50):
            Output channels of each char CNN filter.
        max_word_chars (`int`, defaults to 128):
            Characters of a token's source word the char CNN sees. A longer word is seen through a window of this
            size centred on the token, so every token still reads its own characters.
        char_dropout (`float`, defaults to 0.1):
            Dropout on the char CNN features and on the projected char features before the gate.
        classifier_dropout (`float`, defaults to 0.1):
            Dropout on the fused states before the emission layer.
        type_to_tier (`dict[str, int]`):
            Sensitivity tier (1 = most sensitive) of each PII type named in `label2id`.
        fusion (`str`, defaults to `"gate"`):
            How char features meet the encoder states: `"gate"` (a per-token, per-dimension sigmoid gate), `"sum"`
            (added, no gate) or `"none"` (no char CNN at all). The last two exist for the ablation that shows what
            the char CNN and the gate earn.
        multiline_types (`list[str]`, defaults to `["STREET_ADDRESS"]` where it is a label type):
            The types an entity may keep across a line break or a tab. An entity of any other type ends at one, and
            a token after it tagged I- starts a new entity: the encoder's tokenizer reads both as a space, so without
            this the model runs a name on the last line of a heading, or a form field's value, into the next one.
            No entity keeps across a blank line (the end of a paragraph or a message).
        capitalised_types (`list[str]`, defaults to `["PERSON", "LOCATION", "ORGANIZATION"]` where label types):
            The types whose entities carry a capital letter wherever the text is written in mixed case. In a
            paragraph with both upper- and lower-case letters, an entity of one of these types with no capital
            ("basketball" in "We watched basketball") fails its check, as an IP address Python cannot parse does,
            and its window is decoded again without that type; one that begins or ends with words in lower case
            only ("central Arizona", "Weehawken docks") is decoded again without the type on those words. A
            paragraph written all in lower case (chat) or all in upper case is left alone. An empty list turns the
            check off.
        line_break_marker (`str`, *optional*):
            One character the encoder's tokenizer reads in place of each line break. Tokenizers drop "\n" as
            whitespace, so without it the encoder cannot tell "Ann Lee\n\nBob called" from "Ann Lee Bob called".
            The marker's token has no characters of its own (its char ids are empty), so it stays outside the CRF
            chain: labels and entities are read as before. `piiner-train` sets "¶" for a new model; None (the
            default, and every model saved before the field existed) leaves line breaks invisible.
        recognizers (`list[dict]`, *optional*):
            Pattern recognizers saved with the model, each `{"type", "pattern", "score", "context", "validator",
            "context_required", "not_after", "tier"}` (see `recognizers_piiner.user_recognizer`). Their matches fix
            the labels of their tokens before decoding, as the built-in ones do. A type outside the labels is
            reported with its tier.
        allow_list (`list[str]`, *optional*): texts never reported as PII.
        deny_list (`dict[str, list[str]]`, *optional*): words always reported as the type they are listed under.
        builtin_recognizers (`bool`, defaults to `True`): use the built-in recognizers (SSN, card, IBAN, e-mail, IP,
            URL, phone, MAC); `False` leaves the model and the saved recognizers alone.
        use_crf (`bool`, defaults to `True`):
            Decode with the BIO CRF (Viterbi, marginals); `False` takes each token's most likely label from a
            softmax over the emissions (an "I-" that may not stand is read as "B-"): the ablation without the CRF.

    Example:

    ```python
    >>> from transformers import BertConfig
    >>> from piiner.hub.configuration_piiner import PiiNerConfig
    >>> from piiner.hub.modeling_piiner import PiiNerForTokenClassification

    >>> config = PiiNerConfig(encoder_config=BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
    ...                                                 intermediate_size=37, vocab_size=99))
    >>> model = PiiNerForTokenClassification(config)
    >>> len(config.id2label), config.type_to_tier["SSN"]
    (83, 1)
    ```"""

    model_type = "piiner"
    # The plain class-to-key map every transformers 5 release reads; the encoder config is built here, in
    # __post_init__, so no newer spec class is needed (see the pyproject's transformers floor).
    sub_configs = {"encoder_config": AutoConfig}

    encoder_config: dict | PreTrainedConfig | None = None
    char_vocab_size: int = 512
    char_embedding_dim: int = 50
    char_kernel_sizes: list[int] | tuple[int, ...] = (3, 4, 5)
    char_channels: int = 50
    max_word_chars: int = 128
    char_dropout: float | int = 0.1
    classifier_dropout: float | int = 0.1
    type_to_tier: dict | None = None
    fusion: str = "gate"
    use_crf: bool = True
    multiline_types: list[str] | tuple[str, ...] | None = None
    capitalised_types: list[str] | tuple[str, ...] | None = None
    line_break_marker: str | None = None
    initializer_range: float = 0.02
    recognizers: list[dict] | None = None
    allow_list: list[str] | None = None
    deny_list: dict | None = None
    builtin_recognizers: bool = True

    def __post_init__(self, **kwargs):
        # id2label / label2id are config fields in transformers 5, so they arrive as attributes, not kwargs.
        if self.id2label is None and self.label2id is None and kwargs.get("num_labels") is None:
            self.id2label, self.label2id = dict(ID2LABEL), dict(LABEL2ID)
        # The custom pipeline ships in pipeline_piiner.py; naming it here makes pipeline("token-classification",
        # model=DIR, trust_remote_code=True) build it for any saved snapshot, and "ner" (the stock alias) too.
        kwargs.setdefault("custom_pipelines", {task: dict(PIPELINE_ENTRY) for task in ("token-classification", "ner")})
        # A config object passed in is kept, not copied (`from_backbone` shares it with the loaded encoder), and
        # transformers sets this config's attention implementation, None here, on every sub-config: the caller's
        # encoder config would lose its own, and a model already built on it would silently fall back to eager
        # attention, which is much slower. It is put back.
        given = self.encoder_config if isinstance(self.encoder_config, PreTrainedConfig) else None
        if given is None:
            encoder = dict(self.encoder_config or {})
            self.encoder_config = AutoConfig.for_model(encoder.pop("model_type", "bert"), **encoder)
        attention = given._attn_implementation_internal if given is not None else None
        super().__post_init__(**kwargs)
        if given is not None and self._attn_implementation is None:
            given._attn_implementation_internal = attention
        if self.label2id is None:
            self.label2id = {label: i for i, label in self.id2label.items()}
        self.char_kernel_sizes = list(self.char_kernel_sizes)
        if self.type_to_tier is None:
            self.type_to_tier = dict(TIER_OF)
        label_types = {lab.split("-", 1)[1] for lab in self.label2id if lab != "O"}
        missing = sorted(label_types - set(self.type_to_tier))
        if missing:
            raise ValueError(f"type_to_tier has no tier for the label types {missing}")
        for field, default in (("multiline_types", MULTILINE_TYPES), ("capitalised_types", CAPITALISED_TYPES)):
            given = getattr(self, field)
            given = [t for t in default if t in label_types] if given is None else list(given)
            unknown = sorted(set(given) - label_types)
            if unknown:
                raise ValueError(f"{field} names types that are not label types: {unknown}")
            setattr(self, field, given)
        if self.line_break_marker is not None and (not isinstance(self.line_break_marker, str)
                                                   or len(self.line_break_marker) != 1
                                                   or self.line_break_marker.isspace()):
            raise ValueError(f"line_break_marker must be one character that is not whitespace (offsets into the "
                             f"text stay exact), got {self.line_break_marker!r}")
        # A bad saved recognizer or list fails here, naming it, not at the first text.
        evidence_from(self.recognizers, self.allow_list, self.deny_list, known_types=tuple(self.type_to_tier))
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion={self.fusion!r} is not one of {FUSIONS}")
        if self.max_word_chars < max(self.char_kernel_sizes):
            raise ValueError(
                f"max_word_chars={self.max_word_chars} is shorter than the widest char kernel "
                f"({max(self.char_kernel_sizes)})"
            )


__all__ = ["PiiNerConfig"]
