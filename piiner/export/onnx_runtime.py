"""Run an exported piiner graph with onnxruntime: text in, the same entities as the PyTorch pipeline out.

The text side is shared with the pipeline, not re-implemented: `encoding_piiner.encode_texts` makes the windows
and char ids; the graph gives emissions and CRF scores, which `decoding_piiner.entities_from_windows` decodes and
turns into entities, as it does the PyTorch model's in the pipeline.
Only the encoder call differs, so the two paths disagree only where float rounding flips a tag.

Usage:

```python
>>> from export.onnx_runtime import OnnxPiiNer
>>> finder = OnnxPiiNer("runs/quickstart/onnx", onnx_file="model.int8.onnx")  # doctest: +SKIP
>>> finder("Mail John at john@x.com.")  # doctest: +SKIP
[{'entity_group': 'PERSON', 'type': 'PERSON', 'tier': 2, 'score': 0.98, 'start': 5, 'end': 9, 'word': 'John'}, ...]
```
"""

from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import onnx
import onnxruntime
import torch

from piiner.export.onnx_export import (
    ACTIVATION_QUANTIZATION_KEY,
    CRF_OUTPUT_NAMES,
    INPUT_NAMES,
    ONNX_FILE,
    graph_inputs,
)
from piiner.hub.configuration_piiner import PiiNerConfig
from piiner.hub.decoding_piiner import entities_from_windows, filter_results, result_filters
from piiner.hub.recognizers_piiner import config_evidence
from piiner.hub.encoding_piiner import check_tokenizer_windows, encode_texts, length_order, trim_char_ids

# onnxruntime's graph optimisations that make this graph slower on the CPU: SkipLayerNormFusion's fused kernel is
# slower here than the Add + LayerNormalization it replaces (`benchmarks/bench_onnx_session.py` times both).
DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]


def cpu_session(onnx_path, num_threads=None, disabled_optimizers=DISABLED_OPTIMIZERS, profile=False):
    """An onnxruntime CPU session on `onnx_path` with `num_threads` intra-op threads (default: onnxruntime's, one
    per core) and the given graph optimisations turned off (default: `DISABLED_OPTIMIZERS`)."""
    options = onnxruntime.SessionOptions()
    if num_threads:
        options.intra_op_num_threads = num_threads
    options.enable_profiling = profile
    return onnxruntime.InferenceSession(
        str(onnx_path), options, providers=["CPUExecutionProvider"], disabled_optimizers=list(disabled_optimizers)
    )


@contextmanager
def torch_single_threaded():
    """
    torch's intra-op threads set to 1 for the block, then restored. The text side (`encode_texts`, `graph_inputs`)
    runs a few small torch ops per call; with two or more threads each one wakes torch's OpenMP pool, whose threads
    then spin on the cores onnxruntime's pool is about to use (`benchmarks/bench_onnx_session.py`). torch's setting
    is process-wide, so another thread using torch meanwhile also runs on one.
    """
    threads = torch.get_num_threads()
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def quantizes_activations(session, onnx_path) -> bool:
    """Whether the graph quantises activations at run time (`quantize_dynamic`'s DynamicQuantizeLinear or fused
    DynamicQuantizeMatMul): then one scale covers all the windows of a call. The graphs of `export` say which in
    their metadata; any other graph is read again to look at its nodes (about as long as creating the session)."""
    marked = session.get_modelmeta().custom_metadata_map.get(ACTIVATION_QUANTIZATION_KEY)
    if marked is not None:
        return marked == "dynamic"
    graph = onnx.load(str(onnx_path), load_external_data=False).graph
    return any(node.op_type in ("DynamicQuantizeLinear", "DynamicQuantizeMatMul") for node in graph.node)


class OnnxPiiNer:
    """
    Entity finder over an exported graph (`export.onnx_export.export_onnx`, optionally quantised by
    `export.quantize.quantize_int8`).

    Args:
        model_dir: the export folder: the graph, `config.json` and the tokenizer files.
        onnx_file (`str`, defaults to `"model.onnx"`): the graph inside `model_dir` (e.g. `"model.int8.onnx"`).
        tokenizer: a fast tokenizer to use instead of the one saved in `model_dir`.
        num_threads (`int`, *optional*): onnxruntime intra-op threads (default: onnxruntime's, one per core).
        batch_quantized (`bool`, defaults to `False`): run an int8 graph on `batch_size` windows per call too.

    A graph that quantises activations at run time (`model.int8.onnx`) runs one window per call, without padding:
    its activation scales are taken over everything in the call, so windows batched together change each other's
    entities (`piiner-export batch-check --batch-quantized`: 13 of 320 quickstart test texts). One window per call
    is also faster on texts of ~1,200 characters and more, and slower on short ones (~200 characters: 138 against
    201 texts/s, `benchmarks/bench_inference.py --systems onnx-int8,onnx-int8-batched --batches 32`);
    `batch_quantized=True` trades the independence for that speed. A float graph runs `batch_size` windows per call.
    """

    def __init__(
        self,
        model_dir,
        onnx_file: str = ONNX_FILE,
        tokenizer=None,
        num_threads: int | None = None,
        batch_quantized: bool = False,
    ):
        model_dir = Path(model_dir)
        onnx_path = model_dir / onnx_file
        if not onnx_path.is_file():
            raise FileNotFoundError(f"no ONNX graph at {onnx_path}: export one with piiner-export first")
        self.config = PiiNerConfig.from_pretrained(model_dir)
        if tokenizer is None:
            from transformers import AutoTokenizer

            # The config is passed so AutoTokenizer does not resolve the remote-code config again (and ask to trust it).
            tokenizer = AutoTokenizer.from_pretrained(model_dir, config=self.config)
        check_tokenizer_windows(tokenizer, self.config)
        self.tokenizer = tokenizer
        self.session = cpu_session(onnx_path, num_threads)
        inputs = [i.name for i in self.session.get_inputs()]
        outputs = [o.name for o in self.session.get_outputs()]
        if inputs != list(INPUT_NAMES) or not set(CRF_OUTPUT_NAMES) <= set(outputs):
            raise ValueError(
                f"{onnx_path} is not a piiner export: inputs {inputs} (expected {list(INPUT_NAMES)}), outputs "
                f"{outputs} (expected {list(CRF_OUTPUT_NAMES)})"
            )
        self.output_names = list(CRF_OUTPUT_NAMES)
        self.one_window_per_call = quantizes_activations(self.session, onnx_path) and not batch_quantized
        self.evidence = config_evidence(self.config)

    def run(self, input_ids, attention_mask, char_ids) -> dict:
        """One graph call on already-encoded windows (tensors or arrays, the model's inputs); returns `emissions`,
        `crf_mask` and `crf` (the constrained start, transitions and end) as arrays, what `entities_from_windows`
        decodes."""
        feeds = dict(zip(INPUT_NAMES, graph_inputs(input_ids, attention_mask, char_ids)))
        out = dict(zip(self.output_names, self.session.run(self.output_names, feeds)))
        crf = (out.pop("crf_start"), out.pop("crf_transitions"), out.pop("crf_end"))
        return {**out, "crf": crf}

    def __call__(self, texts, batch_size: int = 32, max_length: int | None = None, stride: int | None = None,
                 min_score=None, ignore_labels=None):
        """
        Find PII in one text (returns a list of entity dicts) or in a list of texts (returns a list of lists, in
        input order; the texts run shortest first), the pipeline's `aggregation_strategy="simple"` output.

        Args:
            batch_size: texts encoded together, and windows per call of a float graph.
            max_length, stride: the windowing of `encoding_piiner.encode_texts` (defaults as the pipeline's).
            min_score, ignore_labels: the pipeline's filters (a float or a dict tier -> float; a list of types).
        """
        min_score, ignore_labels = result_filters(self.config.label2id, min_score, ignore_labels)
        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        # Shortest first, as the pipeline runs a list (`length_order`). Answers in input order.
        order = length_order(texts)
        results = [None] * len(texts)
        with torch_single_threaded():
            for first in range(0, len(texts), batch_size):
                batch = order[first : first + batch_size]
                found = self._find([texts[i] for i in batch], batch_size, max_length, stride)
                for i, entities in zip(batch, found):
                    results[i] = filter_results(entities, min_score, ignore_labels)
        return results[0] if single else results

    def _find(self, texts, batch_size, max_length, stride):
        encoding = encode_texts(self.tokenizer, texts, self.config, max_length=max_length, stride=stride)
        windows_of = defaultdict(list)
        crf = None
        samples = encoding["overflow_to_sample_mapping"].tolist()
        per_call = 1 if self.one_window_per_call else batch_size
        for first in range(0, len(samples), per_call):
            rows, cols = slice(first, first + per_call), slice(None)
            if per_call == 1:  # without the padding the window got from the longest window encoded with it
                real = encoding["attention_mask"][first].nonzero()
                cols = slice(int(real[0]), int(real[-1]) + 1)
            char_ids = trim_char_ids(encoding["char_ids"][rows, cols], min_chars=max(self.config.char_kernel_sizes))
            out = self.run(encoding["input_ids"][rows, cols], encoding["attention_mask"][rows, cols], char_ids)
            for i, sample in enumerate(samples[rows]):
                offsets = encoding["offset_mapping"][first + i, cols]
                windows_of[sample].append((offsets, out["emissions"][i], out["crf_mask"][i]))
                crf = out["crf"]
        return [entities_from_windows(text, windows_of[sample], self.config, crf, self.evidence)
                for sample, text in enumerate(texts)]
