"""Export a piiner tagger to ONNX with torch.onnx (the dynamo exporter), with its CRF.

The graph takes `input_ids`, `attention_mask`, `word_chars` (the batch's distinct words) and `word_index` (each
token's word, -1 for none; `graph_inputs` makes both from the model's `char_ids`), with dynamic batch, sequence,
word-count and word-length axes, and returns `emissions` (log-softmax emission scores), `crf_mask` (the CRF
positions) and the constrained CRF scores `crf_start`, `crf_transitions` (`[to, from]`), `crf_end`. The runtime
(`export.onnx_runtime`) decodes them with `decoding_piiner.entities_from_windows`, the very function the PyTorch
pipeline runs (a decode inside the graph as `Scan` loops cost more than the int8 encoder: onnxruntime runs a `Scan`
body node by node).

`PiiNerForTokenClassification.forward` itself does not export: the char CNN runs only on the tokens that have
characters (boolean indexing, a data-dependent shape), groups and trims the words, and the CRF loops in Python over
the sequence. `PiiNerExportWrapper` computes the same function with the same weights in a static shape: the char
CNN's own `encode` over every distinct word at the padded width (the words are grouped outside the graph, by
`graph_inputs`; tokens without characters are discarded by a `where`). Everything the export needs from the model is
read from its modules, so a retrained or resized model exports without change here.
"""

import json
from pathlib import Path

import torch
from torch import nn

from piiner.hub.modeling_piiner import PiiNerForTokenClassification, distinct_rows


INPUT_NAMES = ("input_ids", "attention_mask", "word_chars", "word_index")
CRF_OUTPUT_NAMES = ("emissions", "crf_mask", "crf_start", "crf_transitions", "crf_end")  # the default
ONNX_FILE = "model.onnx"
# Written next to the graph: how it was exported (input and output names, opset), for people and tools.
EXPORT_INFO_FILE = "onnx_export.json"
# Model metadata: "none" on the graphs exported here, "dynamic" on their `export.quantize` copies (activations
# quantised at run time), so `OnnxPiiNer` knows how to batch a graph without reading it a second time.
ACTIVATION_QUANTIZATION_KEY = "piiner.activation_quantization"
# Opset 20 has a Gelu operator: the encoder's GELU exports as one node instead of Div, Erf, Add and two Muls, which
# onnxruntime does not fuse (`benchmarks/bench_onnx_session.py --graphs A,B` compares two exports).
DEFAULT_OPSET = 20


class PiiNerExportWrapper(nn.Module):
    """
    An export-friendly forward of a [`PiiNerForTokenClassification`] in eval mode (dropout off), sharing its
    weights. Token type ids are not an input: piiner encodes single texts, whose token types are all 0, which is
    what the encoder assumes when none are given.
    """

    def __init__(self, model: PiiNerForTokenClassification):
        super().__init__()
        self.model = model.eval()
        self.output_names = CRF_OUTPUT_NAMES

    def forward(self, input_ids, attention_mask, word_chars, word_index):
        """`word_chars` (words, num_chars): the distinct words of the batch; `word_index` (batch, seq_len): each
        token's row in it, -1 for tokens without characters (see `graph_inputs`)."""
        piiner = self.model.piiner
        hidden = piiner.encoder(input_ids=input_ids, attention_mask=attention_mask, return_dict=True).last_hidden_state
        batch, seq_len = word_index.shape
        # Padded by the widest kernel: `encode` takes rows at least as wide as a kernel, and padding changes nothing.
        word_chars = nn.functional.pad(word_chars, (0, max(piiner.char_cnn.kernel_sizes)))
        word_features = piiner.char_cnn.encode(word_chars).to(hidden.dtype)
        fused = piiner.fusion(
            word_features[word_index.clamp(min=0).reshape(-1)], hidden.reshape(batch * seq_len, -1)
        ).reshape(hidden.shape)
        # The CRF positions of `crf_positions`: inside the attention mask and with characters.
        mask = (word_index >= 0) & attention_mask.bool()
        hidden = torch.where(mask.unsqueeze(-1), fused, hidden)
        emissions = torch.log_softmax(self.model.classifier(hidden).float(), dim=-1)
        start, transitions, end = self.model.crf.constrained_transitions()
        return emissions, mask, start, transitions, end


def _bags_of_one_size(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                      per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    """The ONNX of `embedding_bag(rows, table, mode="sum")` on a 2-D `rows`, whose bags are its rows, all of one size:
    a Gather and a sum over each row. The char CNN's lookup is the graph's only embedding_bag; the exporter's own
    translation handles bags of any sizes with a Loop that onnxruntime runs bag by bag (three times the time of
    the whole graph at batch 1). The other three outputs are unused placeholders."""
    from onnxscript import opset20 as op

    rows = op.Gather(weight, indices)
    shape = op.Concat(op.Shape(offsets), op.Constant(value_ints=[-1]), op.Shape(weight, start=1, end=2), axis=0)
    return op.ReduceSum(op.Reshape(rows, shape), op.Constant(value_ints=[1]), keepdims=0), offsets, offsets, offsets


# The lookup's embedding_bag as it reaches the exporter, before and after torch's decompositions.
EMBEDDING_BAG_OPS = (torch.ops.aten.embedding_bag.padding_idx, torch.ops.aten._embedding_bag_forward_only.default)


def graph_inputs(input_ids, attention_mask, char_ids) -> tuple:
    """
    The graph's inputs from the model's: `char_ids` (batch, seq_len, num_chars) becomes `word_chars`, the distinct
    words of the batch (sub-tokens of a word, and every repeat of a word, share one row, so the char CNN runs once
    per word as in the PyTorch model), and `word_index` (batch, seq_len), each token's row, -1 for tokens without
    characters. Tensors or arrays in, int64 NumPy arrays out.
    """
    import numpy as np

    def as_array(value):
        return np.ascontiguousarray(value.numpy() if hasattr(value, "numpy") else np.asarray(value), dtype=np.int64)

    input_ids, attention_mask, char_ids = as_array(input_ids), as_array(attention_mask), as_array(char_ids)
    batch, seq_len, num_chars = char_ids.shape
    has_chars = (char_ids != 0).any(-1)
    word_index = np.full((batch, seq_len), -1, dtype=np.int64)
    rows = char_ids[has_chars]
    if not len(rows):  # no word at all: one empty row keeps every shape valid
        return input_ids, attention_mask, np.zeros((1, max(num_chars, 1)), dtype=np.int64), word_index
    words, inverse = distinct_rows(torch.from_numpy(rows))  # the model's own grouping
    word_index[has_chars] = inverse.numpy()
    return input_ids, attention_mask, words.numpy(), word_index


def example_inputs(config, batch: int = 2, seq_len: int = 7, num_chars: int = 9) -> tuple[torch.Tensor, ...]:
    """Inputs to trace the export with. The sizes differ from each other and from 0 and 1, which the exporter
    would specialise; the second row is shorter, so padding is traced too, and two tokens share a word."""
    vocab_size = config.encoder_config.vocab_size
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(low=1, high=vocab_size, size=(batch, seq_len), generator=generator)
    attention_mask = torch.ones(batch, seq_len, dtype=torch.long)
    attention_mask[1, seq_len - 2 :] = 0
    char_ids = torch.randint(1, config.char_vocab_size, (batch, seq_len, num_chars), generator=generator)
    char_ids[:, :, num_chars - 3 :] = 0
    char_ids[:, 0] = 0  # a [CLS]: no characters, outside the CRF
    char_ids[1, seq_len - 2 :] = 0
    char_ids[0, 2] = char_ids[0, 1]  # two sub-tokens of one word
    return tuple(torch.from_numpy(a) for a in graph_inputs(input_ids, attention_mask, char_ids))


def dynamic_dims(config) -> tuple:
    """The dynamic axes: batch, sequence (up to the encoder's position table, which BERT-like encoders check while
    tracing), distinct words and characters per word."""
    max_positions = getattr(config.encoder_config, "max_position_embeddings", None)
    seq_len = torch.export.Dim("seq_len", max=max_positions) if max_positions else torch.export.Dim("seq_len")
    return torch.export.Dim("batch"), seq_len, torch.export.Dim("words"), torch.export.Dim("num_chars")


def export_onnx(
    model: PiiNerForTokenClassification,
    output_dir: str | Path,
    tokenizer=None,
    opset_version: int = DEFAULT_OPSET,
    verify: bool = True,
) -> Path:
    """
    Export `model` to `output_dir/model.onnx`, with the model's config (and `tokenizer`, when given) saved beside it
    so that `export.onnx_runtime.OnnxPiiNer(output_dir)` has everything it needs.

    Args:
        model: a `PiiNerForTokenClassification` (its weights are read, not changed; it is put in eval mode).
        output_dir: folder to write; created if missing.
        tokenizer: the model's fast tokenizer, saved next to the graph.
        opset_version: ONNX opset of the graph.
        verify: run the exported graph once in onnxruntime on the trace inputs and compare with PyTorch.

    Returns:
        The path of the `.onnx` file.
    """
    if not isinstance(model, PiiNerForTokenClassification):
        # Checked by class name too: a model loaded as remote code is a different class object with the same name.
        if type(model).__name__ != "PiiNerForTokenClassification":
            raise TypeError(f"export_onnx exports a PiiNerForTokenClassification, got {type(model).__name__}")
    if model.config.fusion != "gate" or not model.config.use_crf:
        raise ValueError(f"export_onnx exports the gated char CNN with its CRF; this model is an ablation variant "
                         f"(fusion={model.config.fusion!r}, use_crf={model.config.use_crf})")
    if not hasattr(model.piiner.char_cnn, "encode"):
        # The graph traces the model's own char CNN, so the model's code must have the traceable part.
        raise ValueError(
            "this model was saved with code older than the exporter (its PiiNerCharCNN has no `encode`, which the "
            "export traces); save it again with this version of piiner, weights unchanged: python -c \"from "
            "piiner.hub.modeling_piiner import PiiNerForTokenClassification as M; "
            "M.from_pretrained('MODEL').save_pretrained('MODEL')\"")
    output_dir = check_export_folder(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    # Eager attention: the SDPA path exports as softmax followed by an IsNaN/Where pass over every (heads, seq,
    # seq) score tensor, which onnxruntime runs as two more full passes per layer.
    attention = model.piiner.encoder.config._attn_implementation
    model.piiner.encoder.set_attn_implementation("eager")
    try:
        return _export(model, output_dir, tokenizer, opset_version, verify)
    finally:
        model.piiner.encoder.set_attn_implementation(attention)


def check_export_folder(output_dir) -> Path:
    """`output_dir` as a Path, if it is new, empty or an earlier export's (it holds its `EXPORT_INFO_FILE`). The
    export writes config.json, the tokenizer's files and the graph there, over any files of the same name, so a
    folder of other files (the model folder itself, say) is refused."""
    output_dir = Path(output_dir)
    if output_dir.is_dir() and not (output_dir / EXPORT_INFO_FILE).is_file():
        found = sorted(p.name for p in output_dir.iterdir())
        if found:
            listed = ", ".join(found[:5]) + (" ..." if len(found) > 5 else "")
            raise FileExistsError(
                f"{output_dir} holds files no ONNX export wrote ({listed}): the export writes config.json, the "
                f"tokenizer's files and {ONNX_FILE} there, over any of the same name; give a new or empty folder (the "
                "default is the model's onnx/ subfolder)")
    return output_dir


def _export(model, output_dir, tokenizer, opset_version, verify) -> Path:
    onnx_path = output_dir / ONNX_FILE
    wrapper = PiiNerExportWrapper(model).requires_grad_(False).eval()  # torch warns of a module left training
    inputs = example_inputs(model.config)
    batch, seq_len, words, num_chars = dynamic_dims(model.config)
    dynamic_shapes = ({0: batch, 1: seq_len}, {0: batch, 1: seq_len}, {0: words, 1: num_chars}, {0: batch, 1: seq_len})
    with torch.no_grad():
        program = torch.onnx.export(
            wrapper,
            inputs,
            dynamo=True,
            dynamic_shapes=dynamic_shapes,
            input_names=list(INPUT_NAMES),
            output_names=list(wrapper.output_names),
            opset_version=opset_version,
            custom_translation_table={target: _bags_of_one_size for target in EMBEDDING_BAG_OPS},
            verbose=False,
        )
    # One file: the models this repo exports are far below protobuf's 2 GB limit, and one file is what
    # quantize_dynamic and most deployment tools expect.
    program.model.metadata_props[ACTIVATION_QUANTIZATION_KEY] = "none"
    program.save(str(onnx_path), external_data=False)
    model.config.save_pretrained(output_dir)
    if tokenizer is not None:
        tokenizer.save_pretrained(output_dir)
    info = {"onnx_file": ONNX_FILE, "inputs": list(INPUT_NAMES), "outputs": list(wrapper.output_names),
            "opset": opset_version}
    (output_dir / EXPORT_INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")
    if verify:
        verify_export(wrapper, onnx_path, inputs)
    return onnx_path


def verify_export(wrapper: nn.Module, onnx_path: str | Path, inputs, atol: float = 1e-4) -> None:
    """Run the graph in onnxruntime and raise if its emissions, tags or scores differ from PyTorch's."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    feeds = {name: tensor.numpy() for name, tensor in zip(INPUT_NAMES, inputs)}
    names = list(wrapper.output_names)
    got = session.run(names, feeds)
    with torch.no_grad():
        expected = [t.numpy() for t in wrapper(*inputs)]
    for name, exp, out in zip(names, expected, got):
        if exp.shape != out.shape:
            raise RuntimeError(f"exported graph gives {name} of shape {out.shape}, PyTorch {exp.shape}")
        if name in ("decoded_tags", "crf_mask"):
            mismatch = exp != out
        else:
            # Forbidden labels sit near -1e4 in log space: compare relative there.
            mismatch = abs(exp - out) > atol + 1e-5 * abs(exp)
        if mismatch.any():
            raise RuntimeError(f"exported graph disagrees with PyTorch on {name} at {int(mismatch.sum())} entries")
