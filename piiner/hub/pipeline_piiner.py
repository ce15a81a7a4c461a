"""The piiner token-classification pipeline: text in, whole PII entities with exact character offsets out.

Ships with the weights (named in the config's `custom_pipelines`), so

    pipeline("token-classification", model=DIR, trust_remote_code=True)

builds it for any saved piiner snapshot. Imports only torch, NumPy, transformers and its siblings.
"""

import importlib

import numpy as np
import torch
from transformers.pipelines.base import ChunkPipeline

from .crf_piiner import crf_positions
from .decoding_piiner import entities_from_windows, filter_results, result_filters
from .encoding_piiner import check_tokenizer_windows, encode_texts, length_order
from .recognizers_piiner import config_evidence


AGGREGATION_STRATEGIES = ("simple", "none")


class PiiNerTokenClassificationPipeline(ChunkPipeline):
    """Finds PII in English text with a piiner model.

    A text longer than one window is split into overlapping token windows; each token keeps the prediction of the
    window where it sits farthest from an edge, so an entity on a window boundary is reported once and whole.
    Labels come from `model.config.id2label` and tiers from `model.config.type_to_tier`, never from a global list,
    so a checkpoint with another label set decodes its own types.

    Call parameters (also accepted when building the pipeline):
        aggregation_strategy (`str`, defaults to `"simple"`): `"simple"` returns whole entities
            `{entity_group, type, tier, score, start, end, word}`; `"none"` returns one dict per token tagged other
            than "O", `{entity, type, tier, score, index, start, end, word}` (`entity` is the BIO label).
            In both, `text[start:end] == word`.
        min_score (`float` or `dict`, *optional*): drop results scored below it; a dict gives a threshold per tier
            (an int from 1 to 4) or per type (`{"PHONE": 0.7, 3: 0.5}`; a type's own threshold comes before its
            tier's; what it does not name keeps everything). The score of an entity is the lowest CRF marginal
            probability among its tokens, or its recognizer's score.
        ignore_labels (`list[str]`, *optional*): drop results of these types: `["PASSWORD", "LICENSE_PLATE"]` for
            text where the model finds those types in what is not (hashtags in tweets).
        recognizers (`list[dict]`, *optional*): patterns of the caller's own, each `{"type", "pattern", "score",
            "context", "validator", "context_required", "not_after", "tier"}` (`recognizers_piiner.user_recognizer`),
            added to those of `config.recognizers` and the built-in ones (SSN, card, IBAN, e-mail, IP, URL, phone,
            MAC). A match fixes the labels of its tokens before decoding: it is reported with its type, whole,
            whatever the model scored there. A type outside the model's labels is reported with its `tier` (default
            4).
        allow_list (`list[str]`, *optional*): texts never reported (added to `config.allow_list`).
        deny_list (`dict[str, list[str]]`, *optional*): words always reported as the type they are listed under
            (added to `config.deny_list`), as whole words in any case.
        max_length (`int`, *optional*): tokens per window, special tokens included (default: the least of the
            tokenizer's limit, the encoder's positions and 512).
        stride (`int`, *optional*): tokens shared by neighbouring windows (default: a quarter of `max_length`).
        batch_size (`int`, *optional*): windows per forward pass; windows of different texts share batches.

    Example:

    ```python
    >>> from transformers import pipeline
    >>> finder = pipeline("token-classification", model="path/to/piiner", trust_remote_code=True)
    >>> finder("Mail (John) at john@x.com.")  # doctest: +SKIP
    [{'entity_group': 'PERSON', 'type': 'PERSON', 'tier': 2, 'score': 0.98, 'start': 6, 'end': 10, 'word': 'John'},
     {'entity_group': 'EMAIL', 'type': 'EMAIL', 'tier': 2, 'score': 0.99, 'start': 15, 'end': 25,
      'word': 'john@x.com'}]
    ```
    """

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.model.eval()  # no dropout
        check_tokenizer_windows(self.tokenizer, self.model.config)

    @property
    def _evidence(self):
        # The saved recognizers and lists, compiled once per pipeline (and asked for by the base class's __init__,
        # which checks the call parameters given at construction).
        if "_saved_evidence" not in self.__dict__:
            self._saved_evidence = self._evidence_with()
        return self._saved_evidence

    def _evidence_with(self, recognizers=None, allow_list=None, deny_list=None):
        return config_evidence(self.model.config, recognizers, allow_list, deny_list)

    def _sanitize_parameters(self, aggregation_strategy=None, min_score=None, max_length=None, stride=None,
                             ignore_labels=None, recognizers=None, allow_list=None, deny_list=None):
        preprocess_params, postprocess_params = {}, {}
        evidence = self._evidence
        if recognizers is not None or allow_list is not None or deny_list is not None:
            evidence = postprocess_params["evidence"] = self._evidence_with(recognizers, allow_list, deny_list)
        if min_score is not None or ignore_labels is not None:
            postprocess_params["min_score"], postprocess_params["ignore_labels"] = result_filters(
                self.model.config.label2id, min_score, ignore_labels, {r.type for r in evidence.recognizers})
        if max_length is not None:
            preprocess_params["max_length"] = max_length
        if stride is not None:
            preprocess_params["stride"] = stride
        if aggregation_strategy is not None:
            strategy = str(getattr(aggregation_strategy, "value", aggregation_strategy)).lower()
            if strategy not in AGGREGATION_STRATEGIES:
                raise ValueError(
                    f"aggregation_strategy={aggregation_strategy!r} is not supported: use one of "
                    f"{AGGREGATION_STRATEGIES}"
                )
            postprocess_params["aggregation_strategy"] = strategy
        return preprocess_params, {}, postprocess_params

    def __call__(self, inputs, **kwargs):
        """Find PII in one text (returns a list of dicts) or in many: a list, tuple or NumPy array of texts and any
        sized sequence (a `datasets` column) give a list of lists, in input order, the texts run shortest first so
        that each batch holds texts of similar length; a torch `Dataset` (`KeyDataset`), a generator or any other
        iterator stream, as in the stock pipeline, and give an iterator of lists."""
        inputs = _as_pipeline_input(inputs)
        if not isinstance(inputs, list):
            return super().__call__(inputs, **kwargs)
        if not inputs:
            return []
        # Texts of similar length share a batch; answers in input order.
        order = length_order(inputs)
        results = [None] * len(inputs)
        for i, found in zip(order, super().__call__([inputs[i] for i in order], **kwargs)):
            results[i] = found
        return results

    def preprocess(self, text, max_length=None, stride=None):
        if not isinstance(text, str):
            raise TypeError(f"each input must be a str, got {type(text).__name__}")
        text = str(text)  # a str subclass (numpy.str_) as a plain str
        config = self.model.config
        encoding = encode_texts(self.tokenizer, [text], config, max_length=max_length, stride=stride)
        # Char ids travel as NumPy, which the stock collate passes through as a list rather than padding to one
        # shape: _forward pads them to the longest window and the widest word of its batch.
        char_ids = encoding["char_ids"].numpy()
        model_keys = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in encoding]
        num_windows = encoding["input_ids"].shape[0]
        for i in range(num_windows):
            window = {k: encoding[k][i : i + 1] for k in model_keys}
            window["char_ids"] = char_ids[i]
            window["offset_mapping"] = encoding["offset_mapping"][i : i + 1]
            window["text"] = text
            window["is_last"] = i == num_windows - 1
            yield window

    def _forward(self, model_inputs):
        text = model_inputs.pop("text")
        offsets = model_inputs.pop("offset_mapping")
        is_last = model_inputs.pop("is_last")
        input_ids = model_inputs["input_ids"]
        # Built here from NumPy, after the base class moved the tensors: onto the device of the token ids.
        model_inputs["char_ids"] = self._batch_char_ids(model_inputs["char_ids"], input_ids.shape[1]).to(
            input_ids.device)
        if self.model.training:
            raise ValueError(
                f"{type(self.model).__name__} is in training mode, where dropout makes its answers noise: put it in "
                "eval mode (model.eval()) before running the pipeline"
            )
        # No decode here: postprocess decodes each window once, under the recognizers' evidence and the type checks
        # (`decoding_piiner.checked_window`), from the emissions and the CRF positions.
        logits = self.model(**model_inputs)["logits"]
        return {"emissions": torch.log_softmax(logits.float(), dim=-1), "offset_mapping": offsets, "text": text,
                "crf_mask": crf_positions(model_inputs["attention_mask"], model_inputs["char_ids"]),
                "is_last": is_last}

    def _batch_char_ids(self, windows, seq_len):
        """(B, T, C) char ids from the windows' (T_i, C_i) arrays, placed as the collate placed their tokens."""
        if not isinstance(windows, list):  # batch_size 1: no collate
            windows = [windows]
        out = np.zeros((len(windows), seq_len, max(w.shape[1] for w in windows)), dtype=np.int64)
        left = self.tokenizer.padding_side == "left"
        for row, window in zip(out, windows):
            tokens, width = window.shape
            (row[seq_len - tokens :] if left else row[:tokens])[:, :width] = window
        return torch.from_numpy(out)

    def postprocess(self, all_outputs, aggregation_strategy="simple", min_score=None, ignore_labels=frozenset(),
                    evidence=None):
        text = all_outputs[0]["text"]
        windows = [(out["offset_mapping"][0], out["emissions"][0], out["crf_mask"][0]) for out in all_outputs]
        results = entities_from_windows(text, windows, self.model.config, self.model._transition_scores(),
                                        self._evidence if evidence is None else evidence, aggregation_strategy)
        return filter_results(results, min_score, ignore_labels)


def _as_pipeline_input(inputs):
    """What the base pipeline iterates: a str; a list of str (from a list, tuple, NumPy array or other sized
    sequence); a torch Dataset or generator as they are; any other iterable wrapped in a generator."""
    import types

    if _is_torch_dataset(inputs) or isinstance(inputs, types.GeneratorType):
        return inputs  # streamed by the base class; each item is checked in preprocess
    if hasattr(inputs, "tolist"):  # NumPy arrays and scalars
        inputs = inputs.tolist()
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, (bytes, bytearray, dict)) or not hasattr(inputs, "__iter__"):
        raise TypeError(f"inputs must be a str or texts (a list, a dataset column, an iterator), got "
                        f"{type(inputs).__name__}")
    if not hasattr(inputs, "__len__"):
        return (text for text in inputs)
    texts = list(inputs)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"inputs[{i}] must be a str, got {type(text).__name__}")
    return [str(text) for text in texts]


def _is_torch_dataset(inputs):
    return isinstance(inputs, torch.utils.data.Dataset)


def _register_for_loaded_models():
    """`pipeline("token-classification" or "ner", model=<a loaded piiner model>, tokenizer=...)` builds this pipeline.

    transformers reads `custom_pipelines` only from a config it loads itself, so for a model object it would build
    the stock pipeline, which calls the model without char ids and gets other entities, silently. The registry's
    token-classification entry is replaced by a subclass of the stock pipeline that hands piiner models to this one;
    any other model gets the stock pipeline's behaviour unchanged. A registry entry someone else replaced is left."""
    from transformers.pipelines import PIPELINE_REGISTRY, TokenClassificationPipeline

    entry = PIPELINE_REGISTRY.supported_tasks.get("token-classification")
    # Recent releases name the class by its dotted path (imported on use), earlier ones hold the class itself.
    impl = entry and entry["impl"]
    if isinstance(impl, str):
        module, name = impl.rsplit(".", 1)
        impl = getattr(importlib.import_module(module), name)
    if impl is not TokenClassificationPipeline:
        return

    class TokenClassificationPipelineOrPiiNer(TokenClassificationPipeline):
        def __new__(cls, *args, **kwargs):
            model = kwargs.get("model", args[0] if args else None)
            if getattr(getattr(model, "config", None), "model_type", None) == "piiner":
                return PiiNerTokenClassificationPipeline(*args, **kwargs)
            return super().__new__(cls)

    entry["impl"] = TokenClassificationPipelineOrPiiNer


_register_for_loaded_models()


__all__ = ["PiiNerTokenClassificationPipeline"]
