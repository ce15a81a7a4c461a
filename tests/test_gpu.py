"""What only a CUDA device can check: decoding there (the torch CRF loop) against the CPU's compiled loops, bf16
training, and the single-GPU launch config. Marked `gpu`, deselected by default and skipped without CUDA: run
`pytest -m gpu` on a machine with a GPU."""

import json
import math
import os
import subprocess
import sys
import warnings

import pytest
import torch
from conftest import REPO_ROOT, build_tiny_tokenizer, tiny_bert_config
from test_modeling import make_model, perturbed
from test_train import train_argv, write_run_inputs
from transformers import pipeline

from piiner.hub.encoding_piiner import encode_texts
from piiner.training.trainer import first_non_finite

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

TEXTS = ["call john smith at 555-010-4477", "my ssn is 123-45-6789 and email john@x.com",
         "the extraordinarilylongusername wrote at 3:14"]


def tiny_model():
    """A tiny random tagger moved away from its initial values, so its tags are not all one label."""
    return perturbed(make_model(tiny_bert_config())).eval()


def encoded(model, texts):
    batch = encode_texts(build_tiny_tokenizer(), texts, model.config)
    return {k: batch[k] for k in ("input_ids", "attention_mask", "char_ids")}


def test_cuda_decoding_equals_the_cpu_decoding():
    model = tiny_model()
    inputs = encoded(model, TEXTS)
    with torch.no_grad():
        on_cpu = model(**inputs, decode=True)
        on_gpu = model.cuda()(**{k: v.cuda() for k, v in inputs.items()}, decode=True)
    torch.testing.assert_close(on_gpu.logits.cpu(), on_cpu.logits, rtol=1e-4, atol=1e-4)
    assert torch.equal(on_gpu.decoded_tags.cpu(), on_cpu.decoded_tags)
    torch.testing.assert_close(on_gpu.tag_scores.cpu(), on_cpu.tag_scores, rtol=1e-4, atol=1e-4)


def test_bf16_training_steps_on_cuda_stay_finite():
    model = tiny_model().cuda().train()
    inputs = {k: v.cuda() for k, v in encoded(model, TEXTS).items()}
    # "O" on every word token; -100 on special tokens and padding, which the CRF does not read.
    labels = torch.where(inputs["char_ids"].any(-1) & inputs["attention_mask"].bool(), 0, -100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(3):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(**inputs, labels=labels).loss
        assert loss.dtype == torch.float32 and torch.isfinite(loss)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def test_the_non_finite_check_reads_the_device_once_a_step():
    """The guard runs after every backward: with all gradients finite it may wait for the GPU once, not once per
    parameter group (here one group per tensor, the worst case)."""
    model = tiny_model().cuda().train()
    inputs = {k: v.cuda() for k, v in encoded(model, TEXTS).items()}
    labels = torch.where(inputs["char_ids"].any(-1) & inputs["attention_mask"].bool(), 0, -100)
    model(**inputs, labels=labels).loss.backward()
    groups = [{"params": [p], "names": [n], "component": n.split(".")[0]} for n, p in model.named_parameters()]
    optimizer = torch.optim.AdamW(groups)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert first_non_finite(optimizer, "grad") is None
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert len([w for w in caught if "synchroniz" in str(w.message)]) == 1


def test_pipeline_on_cuda_finds_the_cpu_entities(tmp_path):
    tiny_model().save_pretrained(tmp_path)
    build_tiny_tokenizer().save_pretrained(tmp_path)
    found = {}
    for device in ("cpu", "cuda:0"):
        finder = pipeline("token-classification", model=str(tmp_path), trust_remote_code=True, device=device)
        found[device] = [[(e["type"], e["start"], e["end"]) for e in doc] for doc in finder(TEXTS, batch_size=2)]
    assert any(found["cpu"]) and found["cuda:0"] == found["cpu"]


@pytest.mark.parametrize("precision", [[], ["--bf16", "true"]], ids=["fp32", "bf16"])
def test_single_gpu_launch_config_trains_and_saves(tmp_path, precision):
    backbone, data = write_run_inputs(str(tmp_path))
    out = str(tmp_path / "run")
    command = [os.path.join(os.path.dirname(sys.executable), "accelerate"), "launch", "--config_file",
               os.path.join(REPO_ROOT, "accelerate_configs", "single_gpu.yaml"), "-m", "piiner.training.train",
               *train_argv(backbone, data, out, "--use_cpu", "false", "--test_split", "none", *precision)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    result = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    with open(os.path.join(out, "trainer_state.json")) as f:
        losses = [h["loss"] for h in json.load(f)["log_history"] if "loss" in h]
    assert losses and all(math.isfinite(loss) for loss in losses)
    assert os.path.isfile(os.path.join(out, "model.safetensors"))
