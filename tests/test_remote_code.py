"""A saved snapshot loads as remote code in a fresh process that cannot import this repo.

One subprocess per backbone does every check (Auto classes, tensors, outputs, a second load, re-save, a missing
weight) and prints a JSON report that the test asserts on, so the test stays a few seconds.
"""

import ast
import json
import os
import re
import subprocess
import sys

import pytest
import torch
from conftest import REPO_ROOT, build_tiny_tokenizer, env_without_this_repo, tiny_bert_config, tiny_deberta_config

from piiner.hub.configuration_piiner import MIN_TRANSFORMERS, PiiNerConfig
from piiner.hub.modeling_piiner import PiiNerForTokenClassification
from piiner.training.hub import code_files

CHECKS = r'''
import importlib.util, json, os, shutil, sys
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoConfig, AutoModel, AutoModelForTokenClassification, AutoTokenizer

snapshot, expected_path, scratch = sys.argv[1:4]
sys.modules["piiner"] = None  # the installed package is out of reach: the snapshot must carry all its code
report = {"repo_importable": any(importlib.util.find_spec(m) for m in ("modeling_piiner", "pii_schema"))}
expected = torch.load(expected_path)
inputs = expected["inputs"]
saved = load_file(os.path.join(snapshot, "model.safetensors"))


def loading_report(info):
    return {key: sorted(map(str, value)) for key, value in info.items() if value}


def unequal(state, reference, prefix=""):
    """Names whose tensor differs from the reference (or is absent from either side)."""
    names = set(state) | {k[len(prefix):] for k in reference if k.startswith(prefix)}
    return sorted(n for n in names if n not in state or prefix + n not in reference
                  or not torch.equal(state[n], reference[prefix + n]))


report["config_class"] = type(AutoConfig.from_pretrained(snapshot, trust_remote_code=True)).__name__
report["tokenizer_ids"] = AutoTokenizer.from_pretrained(snapshot, trust_remote_code=True)("call john").input_ids

model, info = AutoModelForTokenClassification.from_pretrained(
    snapshot, trust_remote_code=True, output_loading_info=True
)
model.eval()
report["tagger_class"] = type(model).__name__
report["tagger_loading"] = loading_report(info)
report["tagger_unequal"] = unequal(model.state_dict(), saved)
with torch.no_grad():
    out = model(**inputs, decode=True)
report["tagger_outputs_equal"] = {
    k: torch.equal(getattr(out, k), expected[k]) for k in ("logits", "decoded_tags", "tag_scores")
}

for attempt in ("first", "second"):  # a second load in one process once failed with AttributeError (#46661)
    backbone, info = AutoModel.from_pretrained(snapshot, trust_remote_code=True, output_loading_info=True)
    backbone.eval()
    report[f"backbone_{attempt}_class"] = type(backbone).__name__
    report[f"backbone_{attempt}_loading"] = loading_report(info)
    report[f"backbone_{attempt}_unequal"] = unequal(backbone.state_dict(), saved, prefix="piiner.")
    with torch.no_grad():
        fused = backbone(inputs["input_ids"], inputs["attention_mask"], char_ids=inputs["char_ids"]).last_hidden_state
    report[f"backbone_{attempt}_output_equal"] = torch.equal(fused, expected["fused"])

resaved = os.path.join(scratch, "resaved")
model.save_pretrained(resaved)
again, info = AutoModelForTokenClassification.from_pretrained(resaved, trust_remote_code=True, output_loading_info=True)
report["resaved_files"] = sorted(os.listdir(resaved))
report["resaved_loading"] = loading_report(info)
report["resaved_unequal"] = unequal(again.state_dict(), saved)

# A snapshot with one weight deleted: is it refused, or at least reported?
broken = os.path.join(scratch, "broken")
shutil.copytree(snapshot, broken)
save_file({k: v for k, v in saved.items() if k != "crf.transitions"}, os.path.join(broken, "model.safetensors"),
          metadata={"format": "pt"})
try:
    _, info = AutoModelForTokenClassification.from_pretrained(broken, trust_remote_code=True, output_loading_info=True)
    report["broken"] = {"raised": None, "missing": sorted(info["missing_keys"])}
except Exception as error:
    report["broken"] = {"raised": f"{type(error).__name__}: {error}"[:300], "missing": None}
print("REPORT " + json.dumps(report))
'''

SNAPSHOT_CODE = {
    "configuration_piiner.py", "modeling_piiner.py", "crf_piiner.py", "crf_numba.py", "char_cnn_numba.py",
    "pii_schema.py", "pipeline_piiner.py", "encoding_piiner.py", "decoding_piiner.py", "checksums.py",
    "recognizers_piiner.py",
}


def expected_code_files():
    """The Hub files a snapshot must carry."""
    return SNAPSHOT_CODE


def test_the_hub_folder_is_exactly_what_ships_with_the_weights():
    # piiner/hub is the model a user downloads: a file there that the model does not import would be a file the
    # Hub repo lacks, and a shipped file outside it would be a model that imports the package around it.
    hub = os.path.join(REPO_ROOT, "piiner", "hub")
    here = {name for name in os.listdir(hub) if name.endswith(".py") and name != "__init__.py"}
    assert here == {os.path.basename(path) for path in code_files()} == SNAPSHOT_CODE
    assert {os.path.dirname(path) for path in code_files()} == {hub}


def fixed_inputs():
    generator = torch.Generator().manual_seed(7)
    input_ids = torch.randint(5, 99, (2, 8), generator=generator)
    attention_mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3])
    char_ids = torch.randint(1, 512, (2, 8, 6), generator=generator)
    char_ids[:, 0] = 0
    char_ids[0, 7] = 0
    char_ids[1, 4:] = 0
    return {"input_ids": input_ids, "attention_mask": attention_mask, "char_ids": char_ids}


@pytest.mark.parametrize("encoder_config", [tiny_bert_config(), tiny_deberta_config()], ids=["bert", "deberta-v2"])
def test_snapshot_loads_as_remote_code_in_a_fresh_process(tmp_path, encoder_config):
    torch.manual_seed(0)
    model = PiiNerForTokenClassification(PiiNerConfig(encoder_config=encoder_config))
    with torch.no_grad():  # move every weight off its initial value: a re-initialised load cannot pass
        for param in model.parameters():
            param.add_(torch.randn_like(param))
    model.eval()
    snapshot = tmp_path / "snapshot"
    model.save_pretrained(snapshot)
    build_tiny_tokenizer().save_pretrained(snapshot)
    inputs = fixed_inputs()
    with torch.no_grad():
        out = model(**inputs, decode=True)
        fused = model.piiner(**inputs).last_hidden_state
    expected = {"inputs": inputs, "logits": out.logits, "decoded_tags": out.decoded_tags,
                "tag_scores": out.tag_scores, "fused": fused}
    torch.save(expected, tmp_path / "expected.pt")

    files = set(os.listdir(snapshot))
    assert expected_code_files() <= files and "model.safetensors" in files
    auto_map = json.loads((snapshot / "config.json").read_text())["auto_map"]
    assert auto_map == {
        "AutoConfig": "configuration_piiner.PiiNerConfig",
        "AutoModel": "modeling_piiner.PiiNerModel",
        "AutoModelForTokenClassification": "modeling_piiner.PiiNerForTokenClassification",
    }

    (tmp_path / "checks.py").write_text(CHECKS)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # Same thread count as this process (conftest uses one): a different split of the reductions changes the last bit.
    env = env_without_this_repo(HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(tmp_path / "modules"),
                                TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS=str(torch.get_num_threads()))
    result = subprocess.run(
        [sys.executable, str(tmp_path / "checks.py"), str(snapshot), str(tmp_path / "expected.pt"), str(elsewhere)],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300,
    )
    report_lines = [line for line in result.stdout.splitlines() if line.startswith("REPORT ")]
    assert result.returncode == 0 and report_lines, result.stderr[-3000:]
    report = json.loads(report_lines[-1][len("REPORT "):])

    assert report["repo_importable"] is False
    assert report["config_class"] == "PiiNerConfig" and report["tokenizer_ids"][0] == 2  # [CLS]
    assert report["tagger_class"] == "PiiNerForTokenClassification"
    assert report["tagger_loading"] == {} and report["tagger_unequal"] == []
    assert report["tagger_outputs_equal"] == {"logits": True, "decoded_tags": True, "tag_scores": True}
    for attempt in ("first", "second"):
        assert report[f"backbone_{attempt}_class"] == "PiiNerModel"
        assert report[f"backbone_{attempt}_loading"] == {} and report[f"backbone_{attempt}_unequal"] == []
        assert report[f"backbone_{attempt}_output_equal"] is True
    assert expected_code_files() <= set(report["resaved_files"])
    assert report["resaved_loading"] == {} and report["resaved_unequal"] == []
    # A deleted weight is refused, by name, from the snapshot's own code as well.
    assert report["broken"]["raised"].startswith("IncompleteCheckpointError") and report["broken"]["missing"] is None
    assert "missing: crf.transitions" in report["broken"]["raised"]


def _transformers_names_used(path):
    """(module, name) for each `from transformers... import name` and each `transformers.<...>.name` attribute."""
    tree = ast.parse(open(path).read())
    used = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "transformers":
            used += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Attribute):
            root = node
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id == "transformers":
                used.append(("transformers", node.attr))
    return used


def test_hub_files_use_no_private_transformers_name():
    """The Hub files run on whatever transformers a user has (>= the floor): a private name (`_resolve_impl`) can
    vanish or change in any release, and the user meets it as an ImportError from a file they did not write."""
    private = [(os.path.basename(path), module, name) for path in code_files()
               for module, name in _transformers_names_used(path) if name.startswith("_")]
    assert private == []


def test_the_transformers_floor_is_one_number():
    """The version the model code checks at import, the package's requirement and the stack `make test-floor` runs
    the suite on name the same release line."""
    pyproject = open(os.path.join(REPO_ROOT, "pyproject.toml")).read()
    assert re.findall(r'"transformers>=([^,"]+)', pyproject) == [MIN_TRANSFORMERS]
    floor = open(os.path.join(REPO_ROOT, "requirements-floor.txt")).read()
    pinned = re.search(r"^transformers==(\S+)$", floor, re.M).group(1)
    assert pinned.split(".")[:2] == MIN_TRANSFORMERS.split(".")
