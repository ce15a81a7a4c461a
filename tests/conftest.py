"""Shared fixtures: tiny random encoders and a WordPiece tokenizer built in memory, so the suite runs offline in
seconds. Real checkpoints are exercised only by tests marked ``slow``."""

import os
import string

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def env_without_this_repo(**extra):
    """os.environ for a subprocess that must not import this checkout's code: PYTHONPATH keeps only the entries
    that hold no `piiner` package (so `make test-floor`'s transformers overlay stays in force), plus `extra`."""
    kept = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and not os.path.exists(os.path.join(p, "piiner"))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(kept), **extra}

import pytest  # noqa: E402
import torch  # noqa: E402
from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors  # noqa: E402
from tokenizers.models import WordPiece  # noqa: E402
from transformers import BertConfig, DebertaV2Config, PreTrainedTokenizerFast  # noqa: E402

# The tiny models run hundreds of small ops; with two threads each op pays a thread hand-off that costs more than the
# op itself (the suite slows down badly on a busy machine), and results do not depend on it.
torch.set_num_threads(1)

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# Single letters and digits plus their continuation pieces: every ASCII word tokenizes without [UNK], so offsets
# are exercised on real multi-piece words; a few whole words keep sequences short.
TINY_VOCAB = (
    SPECIAL_TOKENS
    + list(string.ascii_lowercase)
    + ["##" + c for c in string.ascii_lowercase]
    + list(string.digits)
    + ["##" + c for c in string.digits]
    + list("@.-:()/,+#'")
    + ["john", "smith", "email", "ssn", "call", "me", "at", "is", "my", "the", "and"]
)
TINY_VOCAB_SIZE = 99
assert len(TINY_VOCAB) <= TINY_VOCAB_SIZE


def build_tiny_tokenizer():
    """An uncased BERT-style WordPiece tokenizer with offsets, built in memory (no files, no network)."""
    vocab = {tok: i for i, tok in enumerate(TINY_VOCAB)}
    tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=200))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True, clean_text=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=64,
    )


class OverflowStopsEarly:
    """A fast tokenizer with the defect of tokenizers 0.23.1 and 0.23.2 (huggingface/tokenizers#2091): a truncated
    text's overflow ends after its second window, the rest of the text never tokenized."""

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)

    def __call__(self, texts, **kwargs):
        encoding = self._tokenizer(texts, **kwargs)
        if kwargs.get("return_overflowing_tokens"):
            samples = encoding["overflow_to_sample_mapping"]
            keep = [w for w, sample in enumerate(samples) if samples[:w].count(sample) < 2]
            for key in encoding:
                encoding[key] = [encoding[key][w] for w in keep]
        return encoding


def tiny_bert_config(**overrides):
    kwargs = dict(
        vocab_size=TINY_VOCAB_SIZE, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=37, max_position_embeddings=128,
    )
    kwargs.update(overrides)
    return BertConfig(**kwargs)


def tiny_deberta_config(**overrides):
    kwargs = dict(
        vocab_size=TINY_VOCAB_SIZE, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=37, max_position_embeddings=128, relative_attention=True, position_buckets=16,
        pos_att_type=["p2c", "c2p"], position_biased_input=False, type_vocab_size=0,
    )
    kwargs.update(overrides)
    return DebertaV2Config(**kwargs)


@pytest.fixture(scope="session")
def tiny_tokenizer():
    return build_tiny_tokenizer()


@pytest.fixture(params=["bert", "deberta-v2"], scope="session")
def tiny_encoder_config(request):
    return tiny_bert_config() if request.param == "bert" else tiny_deberta_config()


def save_tiny_snapshot(path, seed=0, **config_overrides):
    """A tiny random piiner model and its tokenizer saved as a user's snapshot folder (weights, config, code)."""
    import torch

    from piiner.hub.configuration_piiner import PiiNerConfig
    from piiner.hub.modeling_piiner import PiiNerForTokenClassification

    torch.manual_seed(seed)
    PiiNerForTokenClassification(PiiNerConfig(encoder_config=tiny_bert_config(), **config_overrides)).save_pretrained(
        path)
    build_tiny_tokenizer().save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_snapshot(tmp_path_factory):
    """One tiny snapshot for every test that only reads it (copy it before changing anything in it)."""
    return save_tiny_snapshot(tmp_path_factory.mktemp("tiny_piiner"))
