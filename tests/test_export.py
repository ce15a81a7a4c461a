"""ONNX export, int8 quantisation and the onnxruntime entity finder, on a tiny random tagger.

The graph is exported once per module (the export traces the model, a few seconds); every test reads it."""

from collections import Counter

import numpy as np
import pytest
import torch
from conftest import OverflowStopsEarly, build_tiny_tokenizer, tiny_bert_config, tiny_deberta_config
from transformers import pipeline

from piiner.export.onnx_export import PiiNerExportWrapper, export_onnx, graph_inputs
from piiner.export.onnx_runtime import OnnxPiiNer
from piiner.export.quantize import quantize_int8
from piiner.hub.configuration_piiner import PiiNerConfig
from piiner.hub.crf_numba import crf_decode_cpu
from piiner.hub.modeling_piiner import PiiNerForTokenClassification
from piiner.hub.pii_schema import LABELS, PII_TYPES
from piiner.hub.encoding_piiner import WindowCoverageError, encode_texts


TEXTS = [
    "Call John Smith at 555-123-4567 or email john@x.com, SSN 123-45-6789.",
    "hi",
    "(John) paid with 4111 1111 1111 1111 on 2024-01-02",
    # Longer than the tiny tokenizer's 64-token window: windows are merged.
    "my ssn is 123 45 6789 and the email is a.b@c.de, call me at +1 (555) 010-9999. " * 4,
]


def tiny_tagger(encoder_config, seed=0):
    torch.manual_seed(seed)
    model = PiiNerForTokenClassification(PiiNerConfig(encoder_config=encoder_config)).eval()
    with torch.no_grad():
        # Random emissions this sharp make the CRF tag a mix of labels, so entity comparisons are not all-"O".
        model.classifier.weight.mul_(50)
        model.crf.transitions.normal_()
    return model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    model = tiny_tagger(tiny_bert_config())
    tokenizer = build_tiny_tokenizer()
    root = tmp_path_factory.mktemp("export")
    model_dir, onnx_dir = root / "model", root / "onnx"
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    export_onnx(model, onnx_dir, tokenizer=tokenizer)
    return model, tokenizer, model_dir, onnx_dir




def emissions_of(model, batch):
    """The PyTorch model's log-softmax emissions (the CRF's input)."""
    hidden = model.piiner(batch["input_ids"], batch["attention_mask"], char_ids=batch["char_ids"]).last_hidden_state
    return torch.log_softmax(model.classifier(hidden).float(), dim=-1)


def test_graph_inputs_list_each_distinct_word_once():
    char_ids = torch.tensor([[[0, 0], [5, 6], [5, 6], [7, 0]], [[0, 0], [7, 0], [0, 0], [0, 0]]])
    input_ids, mask, words, index = graph_inputs(torch.ones(2, 4), torch.ones(2, 4), char_ids)
    assert len(words) == 2 and index.tolist()[0][0] == -1 and index[0, 1] == index[0, 2] != index[0, 3]
    assert (words[index[char_ids.numpy().any(-1)]] == char_ids.numpy()[char_ids.numpy().any(-1)]).all()
    assert index[1].tolist() == [-1, index[0, 3], -1, -1]
    # No word at all: one empty row, every token outside.
    _, _, words, index = graph_inputs(torch.ones(1, 2), torch.ones(1, 2), torch.zeros(1, 2, 3, dtype=torch.long))
    assert words.shape == (1, 3) and (index == -1).all()


@pytest.mark.parametrize("width", [1, 2, 12])
def test_the_traced_char_encoding_matches_the_char_cnn_at_any_padded_width(width):
    """The export traces `encode` on the words as `graph_inputs` gives them (distinct, untrimmed, as narrow as one
    character): the features are the model's."""
    model = tiny_tagger(tiny_bert_config())
    cnn = model.piiner.char_cnn.eval()
    # Words shorter than the widest kernel, exactly as wide, and longer; padded wider than any of them.
    words = torch.zeros(4, width, dtype=torch.long)
    for row, length in enumerate([1, 5, 9, 3]):
        length = min(length, width)
        words[row, :length] = torch.arange(length) + 40 + row
    padded = torch.nn.functional.pad(words, (0, max(cnn.kernel_sizes)))  # as the export wrapper pads them
    with torch.no_grad():
        torch.testing.assert_close(cnn.encode(padded), cnn(words))


def test_wrapper_equals_model(exported):
    model, tokenizer, _, _ = exported
    batch = encode_texts(tokenizer, TEXTS[:3], model.config)
    inputs = [torch.from_numpy(a) for a in graph_inputs(batch["input_ids"], batch["attention_mask"], batch["char_ids"])]
    with torch.no_grad():
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], char_ids=batch["char_ids"],
                    decode=True)
        emissions, mask, start, transitions, end = PiiNerExportWrapper(model)(*inputs)
    torch.testing.assert_close(emissions, emissions_of(model, batch))
    assert torch.equal(mask, out.decoded_tags != -100)
    for got, expected in zip((start, transitions, end), model.crf.constrained_transitions()):
        assert torch.equal(got, expected)


def test_onnx_outputs_equal_pytorch_on_new_shapes(exported):
    model, tokenizer, _, onnx_dir = exported
    finder = OnnxPiiNer(onnx_dir)
    # Three rows of different lengths, none of the trace's sizes: batch, sequence and char axes are dynamic.
    batch = encode_texts(tokenizer, TEXTS[:3], model.config)
    got = finder.run(batch["input_ids"], batch["attention_mask"], batch["char_ids"])
    with torch.no_grad():
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], char_ids=batch["char_ids"],
                    decode=True)
        emissions = emissions_of(model, batch)
    torch.testing.assert_close(torch.from_numpy(got["emissions"]), emissions, atol=1e-4, rtol=1e-5)
    assert torch.equal(torch.from_numpy(got["crf_mask"]), out.decoded_tags != -100)
    tags, scores = decoded(got)
    assert torch.equal(torch.from_numpy(tags), out.decoded_tags)
    torch.testing.assert_close(torch.from_numpy(scores).float(), out.tag_scores, atol=1e-4, rtol=1e-4)
    assert (out.decoded_tags[:, 0] == -100).all()  # [CLS] stays outside the CRF in the graph too


def decoded(graph_outputs):
    """The Viterbi tags and their marginals of a graph call's emissions and CRF scores (`OnnxPiiNer.run`)."""
    mask = graph_outputs["crf_mask"]
    tags, marginals = crf_decode_cpu(graph_outputs["emissions"], mask, *graph_outputs["crf"])
    return tags, np.take_along_axis(marginals, np.maximum(tags, 0)[..., None], axis=-1)[..., 0] * mask


def entity_keys(entities):
    return [(e["start"], e["end"], e["type"], e["tier"], e["word"]) for e in entities]


def test_onnx_entities_equal_pipeline(exported):
    _, _, model_dir, onnx_dir = exported
    finder = pipeline("token-classification", model=str(model_dir), trust_remote_code=True)
    expected = finder(TEXTS)
    got = OnnxPiiNer(onnx_dir)(TEXTS, batch_size=2)
    assert sum(len(e) for e in expected) > 0
    for exp, out in zip(expected, got):
        assert entity_keys(out) == entity_keys(exp)
        assert [e["score"] for e in out] == pytest.approx([e["score"] for e in exp], abs=1e-3)
    # A single text gives a flat list, as the pipeline does.
    assert entity_keys(OnnxPiiNer(onnx_dir)(TEXTS[0])) == entity_keys(expected[0])


def test_onnx_filters_equal_the_pipeline_filters(exported):
    _, _, model_dir, onnx_dir = exported
    finder = pipeline("token-classification", model=str(model_dir), trust_remote_code=True)
    onnx = OnnxPiiNer(onnx_dir)
    found = [e for entities in finder(TEXTS) for e in entities]
    dropped = sorted({e["type"] for e in found})[:1]
    threshold = sorted(e["score"] for e in found)[len(found) // 2]
    # a tier the random model finds (the recognizers' e-mails, tier 2, all score 1.0)
    tier = Counter(e["tier"] for e in found if e["source"] == "model").most_common(1)[0][0]
    for filters in ({"ignore_labels": dropped}, {"min_score": threshold}, {"min_score": {tier: threshold}}):
        expected = finder(TEXTS, **filters)
        assert sum(map(len, expected)) < len(found)  # each filter drops something here
        assert [entity_keys(e) for e in onnx(TEXTS, batch_size=2, **filters)] == [entity_keys(e) for e in expected]
    with pytest.raises(ValueError, match=r"ignore_labels names \['PERSN'\]"):
        onnx(TEXTS, ignore_labels=["PERSN"])


def test_int8_graph_finds_valid_spans(exported):
    model, tokenizer, _, onnx_dir = exported
    int8_path = quantize_int8(onnx_dir)
    assert int8_path.stat().st_size < (onnx_dir / "model.onnx").stat().st_size
    finder = OnnxPiiNer(onnx_dir, onnx_file=int8_path.name)
    results = finder(TEXTS)
    assert sum(len(r) for r in results) > 0
    for text, entities in zip(TEXTS, results):
        for e in entities:
            assert 0 <= e["start"] < e["end"] <= len(text) and text[e["start"] : e["end"]] == e["word"]
            assert e["type"] in PII_TYPES and e["tier"] == model.config.type_to_tier[e["type"]]
            assert 0.0 <= e["score"] <= 1.0 + 1e-6
    batch = encode_texts(tokenizer, TEXTS[:2], model.config)
    tags, _ = decoded(finder.run(batch["input_ids"], batch["attention_mask"], batch["char_ids"]))
    # The CRF decode is still constrained: no "I-X" after anything but "B-X"/"I-X".
    for row in tags.tolist():
        real = [LABELS[t] for t in row if t != -100]
        for prev, cur in zip(["O"] + real, real):
            assert not cur.startswith("I-") or prev[2:] == cur[2:]


def test_runtime_rejects_a_folder_without_a_graph(tmp_path):
    with pytest.raises(FileNotFoundError, match="no ONNX graph"):
        OnnxPiiNer(tmp_path)


def test_runtime_refuses_a_tokenizer_that_cuts_windows_short_when_loaded(exported):
    _, tokenizer, _, onnx_dir = exported
    with pytest.raises(WindowCoverageError, match="tokenizers#2091"):
        OnnxPiiNer(onnx_dir, tokenizer=OverflowStopsEarly(tokenizer))


def test_export_rejects_other_models(tmp_path):
    with pytest.raises(TypeError, match="PiiNerForTokenClassification"):
        export_onnx(torch.nn.Linear(2, 2), tmp_path)


@pytest.mark.slow
def test_deberta_encoder_exports(tmp_path):
    model = tiny_tagger(tiny_deberta_config())
    tokenizer = build_tiny_tokenizer()
    export_onnx(model, tmp_path, tokenizer=tokenizer)  # verifies against PyTorch on the trace inputs
    batch = encode_texts(tokenizer, TEXTS[:3], model.config)
    got = OnnxPiiNer(tmp_path).run(batch["input_ids"], batch["attention_mask"], batch["char_ids"])
    with torch.no_grad():
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], char_ids=batch["char_ids"],
                    decode=True)
    assert torch.equal(torch.from_numpy(decoded(got)[0]), out.decoded_tags)


def same_entities(got, expected, tolerance=1e-5):
    """The same entities (type, span, text) with scores equal up to float rounding (matrix products of other
    shapes sum in another order)."""
    def spans(found):
        return [[{k: v for k, v in e.items() if k != "score"} for e in entities] for entities in found]

    def scores(found):
        return [e["score"] for entities in found for e in entities]

    return spans(got) == spans(expected) and scores(got) == pytest.approx(scores(expected), abs=tolerance)


def test_onnx_list_runs_shortest_first_and_answers_in_input_order(exported, monkeypatch):
    """As the pipeline does: texts of similar length are encoded together (a batch is padded to its longest)."""
    _, _, _, onnx_dir = exported
    finder = OnnxPiiNer(onnx_dir)
    alone = [entity_keys(finder(text)) for text in TEXTS]
    batches, find = [], finder._find
    monkeypatch.setattr(finder, "_find", lambda texts, *args: batches.append(texts) or find(texts, *args))
    assert [entity_keys(e) for e in finder(TEXTS, batch_size=2)] == alone
    assert [text for batch in batches for text in batch] == sorted(TEXTS, key=len)


def test_int8_graph_runs_one_unpadded_window_per_call_so_batching_cannot_change_entities(exported):
    _, _, _, onnx_dir = exported
    quantize_int8(onnx_dir)
    shapes = {}
    for name, options in (("fp32", {}), ("int8", {"onnx_file": "model.int8.onnx"}),
                          ("int8 batched", {"onnx_file": "model.int8.onnx", "batch_quantized": True})):
        finder = OnnxPiiNer(onnx_dir, **options)
        calls, run = [], finder.run
        finder.run = lambda ids, mask, chars, run=run, calls=calls: calls.append(mask.clone()) or run(ids, mask, chars)
        batched = finder(TEXTS, batch_size=8)
        shapes[name] = [tuple(mask.shape) for mask in calls]
        if name == "int8":
            assert all(bool(mask.all()) for mask in calls), "an int8 call saw padding"
        alone = [finder(text) for text in TEXTS]
        # Batched int8 windows share activation scales: the very thing one window per call avoids.
        assert same_entities(batched, alone) is (name != "int8 batched"), name
    windows = sum(shape[0] for shape in shapes["fp32"])
    assert len(shapes["fp32"]) == 1 and len(shapes["int8 batched"]) == 1
    assert [shape[0] for shape in shapes["int8"]] == [1] * windows
    # One text is longer than the tiny tokenizer's window: a short text's window had padding in the batched call.
    assert len({shape[1] for shape in shapes["int8"]}) > 1


def test_activation_quantization_is_read_from_the_metadata_and_from_the_nodes_alike(exported, tmp_path):
    import onnx

    from piiner.export.onnx_runtime import cpu_session, quantizes_activations

    _, _, _, onnx_dir = exported
    quantize_int8(onnx_dir)
    for name, quantized in (("model.onnx", False), ("model.int8.onnx", True)):
        path = onnx_dir / name
        assert quantizes_activations(cpu_session(path), path) is quantized, name
        unmarked = onnx.load(str(path))  # as a graph exported or quantised by other tools
        del unmarked.metadata_props[:]
        onnx.save(unmarked, str(tmp_path / name))
        session = cpu_session(tmp_path / name)
        assert not session.get_modelmeta().custom_metadata_map
        assert quantizes_activations(session, tmp_path / name) is quantized, name


def test_batch_check_command_reports_texts_whose_entities_depend_on_the_batch(exported, tmp_path, capsys):
    import json

    from piiner.export.cli import main

    _, _, _, onnx_dir = exported
    quantize_int8(onnx_dir)
    data = tmp_path / "texts.jsonl"
    data.write_text("".join(json.dumps({"text": text, "spans": []}) + "\n" for text in TEXTS))
    common = ["batch-check", str(onnx_dir), "--file", "model.int8.onnx", "--data", str(data), "--batch-size", "8"]
    assert main(common) == 0
    assert capsys.readouterr().out.startswith(f"{len(TEXTS)}/{len(TEXTS)} texts with the same entities at batch 8")
    assert main([*common, "--batch-quantized"]) == 1
    out = capsys.readouterr().out
    assert int(out.split("/")[0]) < len(TEXTS) and ": batched [" in out


def test_finder_runs_the_text_side_on_one_torch_thread_and_restores_the_setting(exported, monkeypatch):
    _, _, _, onnx_dir = exported
    finder = OnnxPiiNer(onnx_dir)
    seen = []
    run = finder.run
    monkeypatch.setattr(finder, "run", lambda *args: seen.append(torch.get_num_threads()) or run(*args))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        finder(TEXTS)
        assert seen and set(seen) == {1}
        assert torch.get_num_threads() == 2
        with pytest.raises(TypeError):
            finder([TEXTS[0], 3])  # an error inside still restores torch's setting
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("argv, named", [
    (["predict", "{tmp}/missing", "--data", "{tmp}/texts.jsonl", "--out", "{tmp}/p.jsonl"], "no ONNX graph at {tmp}/missing"),
    (["predict", "{onnx}", "--data", "{tmp}/absent.jsonl", "--out", "{tmp}/p.jsonl"], "{tmp}/absent.jsonl"),
    (["batch-check", "{onnx}", "--file", "model.fp16.onnx", "--data", "{tmp}/texts.jsonl"], "model.fp16.onnx"),
    # the predictions were written over the texts they came from
    (["predict", "{onnx}", "--data", "{tmp}/texts.jsonl", "--out", "{tmp}/texts.jsonl"],
     "--out {tmp}/texts.jsonl is also --data {tmp}/texts.jsonl"),
])
def test_commands_name_a_missing_graph_or_data_without_a_traceback(exported, tmp_path, capsys, argv, named):
    from piiner.export.cli import main

    _, _, _, onnx_dir = exported
    (tmp_path / "texts.jsonl").write_text('{"text": "call 555-0100", "spans": []}\n')
    fill = {"tmp": str(tmp_path), "onnx": str(onnx_dir)}
    assert main([a.format(**fill) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("piiner-export: error: ") and named.format(**fill) in err and "Traceback" not in err
    assert (tmp_path / "texts.jsonl").read_text() == '{"text": "call 555-0100", "spans": []}\n'


def test_export_into_a_folder_of_other_files_is_refused_and_leaves_them_as_they_were(exported, tmp_path, capsys):
    """The export writes config.json, the tokenizer's files and model.onnx: into a folder of someone else's files
    (the model folder itself, say) it wrote over theirs."""
    model, tokenizer, model_dir, onnx_dir = exported
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.json").write_text('{"mine": true}')
    with pytest.raises(FileExistsError, match="no ONNX export wrote.*config.json"):
        export_onnx(model, mine, tokenizer=tokenizer)
    assert [p.name for p in mine.iterdir()] == ["config.json"]
    assert (mine / "config.json").read_text() == '{"mine": true}'
    from piiner.export.cli import main as export_main

    before = sorted((p.name, p.stat().st_mtime_ns) for p in model_dir.iterdir())
    assert export_main(["export", str(model_dir), "--out", str(model_dir)]) == 2
    assert "no ONNX export wrote" in capsys.readouterr().err
    assert sorted((p.name, p.stat().st_mtime_ns) for p in model_dir.iterdir()) == before
    export_onnx(model, onnx_dir, tokenizer=tokenizer)  # an earlier export's folder is written again


def test_a_model_saved_with_code_older_than_the_exporter_is_refused_with_the_fix(tmp_path, monkeypatch):
    from piiner.hub.modeling_piiner import PiiNerCharCNN

    model = tiny_tagger(tiny_bert_config())
    monkeypatch.delattr(PiiNerCharCNN, "encode")  # as the class of a snapshot saved before it existed
    with pytest.raises(ValueError, match=r"older than the exporter.*save_pretrained"):
        export_onnx(model, tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()
