"""A snapshot loads whole or not at all, on every path a user takes: a missing or unexpected weight is an error
naming the keys, never a warning followed by a model that tags with random weights."""

import json
import os

import pytest
import torch
from conftest import save_tiny_snapshot
from safetensors.torch import load_file, save_file
from transformers import AutoModel, AutoModelForTokenClassification, pipeline

from piiner.deid import Redactor
from piiner.deid.cli import main as redact_main
from piiner.evaluation.cli import main as evaluate_main
from piiner.export.cli import main as export_main
from piiner.hub.modeling_piiner import IncompleteCheckpointError, PiiNerForTokenClassification
from piiner.snapshot import SnapshotError


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory):
    root = tmp_path_factory.mktemp("snapshots")
    whole = save_tiny_snapshot(root / "whole")
    weights = load_file(whole / "model.safetensors")
    variants = {
        "missing": {k: v for k, v in weights.items() if not k.startswith("classifier.")},
        "unexpected": {**weights, "classifier.extra": torch.zeros(3)},
    }
    for name, state in variants.items():
        folder = root / name
        folder.mkdir()
        for item in whole.iterdir():
            if item.name != "model.safetensors":
                (folder / item.name).write_bytes(item.read_bytes())
        save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    return root


EXPECTED_KEY = {"missing": "classifier.weight", "unexpected": "classifier.extra"}


@pytest.mark.parametrize("broken", ["missing", "unexpected"])
def test_from_pretrained_refuses_an_incomplete_snapshot(snapshots, broken):
    with pytest.raises(IncompleteCheckpointError, match=EXPECTED_KEY[broken]):
        PiiNerForTokenClassification.from_pretrained(snapshots / broken)


@pytest.mark.parametrize("broken", ["missing", "unexpected"])
def test_remote_code_and_pipeline_refuse_an_incomplete_snapshot(snapshots, broken):
    with pytest.raises(LookupError, match=EXPECTED_KEY[broken]):
        AutoModelForTokenClassification.from_pretrained(snapshots / broken, trust_remote_code=True)
    with pytest.raises(LookupError, match=EXPECTED_KEY[broken]):
        pipeline("token-classification", model=str(snapshots / broken), trust_remote_code=True)


def test_redactor_refuses_an_incomplete_snapshot(snapshots):
    with pytest.raises(SnapshotError, match="classifier.weight"):
        Redactor.from_pretrained(str(snapshots / "missing"))


def test_command_lines_refuse_an_incomplete_snapshot_with_a_message(snapshots, tmp_path, capsys):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "1", "text": "call john", "spans": []}) + "\n")
    text = tmp_path / "in.txt"
    text.write_text("call john\n")
    model = str(snapshots / "missing")
    with pytest.raises(SystemExit) as exited:
        evaluate_main(["--model", model, "--data", str(gold)])
    assert "classifier.weight" in str(exited.value.code)
    assert export_main(["export", model, "--out", str(tmp_path / "onnx")]) == 2
    assert "classifier.weight" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        redact_main([str(text), "--model", model, "-o", str(tmp_path / "out.jsonl")])
    assert exited.value.code == 2 and "classifier.weight" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "onnx")


def test_a_whole_snapshot_still_loads_and_the_tagger_still_loads_as_its_backbone(snapshots):
    model, info = PiiNerForTokenClassification.from_pretrained(snapshots / "whole", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    backbone = AutoModel.from_pretrained(snapshots / "whole", trust_remote_code=True)
    assert torch.equal(backbone.char_cnn.embedding.weight, model.piiner.char_cnn.embedding.weight)


def test_a_new_head_is_built_explicitly(snapshots):
    """Another label set on purpose: `ignore_mismatched_sizes=True` is the explicit request for a new head."""
    id2label = {0: "O", 1: "B-EMAIL", 2: "I-EMAIL"}
    with pytest.raises(IncompleteCheckpointError, match="of another shape"):
        PiiNerForTokenClassification.from_pretrained(snapshots / "whole", id2label=id2label)
    model = PiiNerForTokenClassification.from_pretrained(snapshots / "whole", id2label=id2label,
                                                         ignore_mismatched_sizes=True)
    assert model.classifier.out_features == 3


def test_a_folder_of_weights_without_a_config_is_named_by_every_command(tmp_path, capsys):
    """piiner-serve and piiner-demo printed transformers' traceback ("Unrecognized model ... model_type")."""
    from piiner.demo import main as demo_main
    from piiner.serve.cli import main as serve_main

    model = tmp_path / "weights"
    model.mkdir()
    save_file({"w": torch.zeros(2)}, model / "model.safetensors", metadata={"format": "pt"})
    for config, named in ((None, f"no config.json in {model}"), ("{}", "model_type")):  # no model config in it
        if config:
            (model / "config.json").write_text(config)
        for command in (lambda: demo_main(["--model", str(model)]), lambda: serve_main(["--model", str(model)])):
            with pytest.raises(SystemExit) as exited:
                command()
            err = capsys.readouterr().err
            assert exited.value.code == 2 and named in err and "Traceback" not in err
