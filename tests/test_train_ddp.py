"""Two real DDP ranks on CPU (gloo) through `accelerate launch` compute the same losses as one process."""

import json
import os
import re
import socket
import subprocess
import sys

import pytest
from conftest import REPO_ROOT
from test_train import train_argv, write_run_inputs

from piiner.training.train import main


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def step_losses(output_dir):
    with open(os.path.join(output_dir, "trainer_state.json")) as f:
        history = json.load(f)["log_history"]
    return {h["step"]: h["loss"] for h in history if "loss" in h}


def launch_two_ranks(argv):
    """`piiner-train ARGV` as two DDP ranks on CPU; the finished process, or a failure showing where the ranks got."""
    accelerate = os.path.join(os.path.dirname(sys.executable), "accelerate")
    command = [accelerate, "launch", "--config_file", os.path.join(REPO_ROOT, "accelerate_configs", "cpu_ddp.yaml"),
               "--main_process_port", str(free_port()), "-m", "piiner.training.train", *argv]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    try:
        result = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as hung:  # show where the ranks got to, not only the command line
        output = (hung.stdout or b"").decode(errors="replace")[-3000:] + (hung.stderr or b"").decode(errors="replace")
        pytest.fail(f"two-rank run still running after {hung.timeout} s; its output ends:\n{output[-6000:]}")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return result


def test_two_rank_ddp_matches_one_process_on_the_same_global_batch(tmp_path):
    backbone, data = write_run_inputs(str(tmp_path))
    # No dropout anywhere (the backbone is saved without it), so both runs are deterministic functions of the data.
    common = ("--char_dropout", "0", "--classifier_dropout", "0", "--eval_strategy", "no", "--save_strategy", "no",
              "--test_split", "none", "--max_steps", "4")
    single = str(tmp_path / "single")
    main(train_argv(backbone, data, single, *common, "--per_device_train_batch_size", "4"))

    ddp = str(tmp_path / "ddp")
    result = launch_two_ranks(train_argv(backbone, data, ddp, *common, "--per_device_train_batch_size", "2"))

    # Two processes, each logging its rank: one run of two ranks, not one process twice.
    ranks = sorted(set(re.findall(r"process (\d) of 2 \(pid (\d+)\)", result.stdout)))
    assert [rank for rank, _ in ranks] == ["0", "1"] and ranks[0][1] != ranks[1][1], result.stdout[-3000:]

    expected, got = step_losses(single), step_losses(ddp)
    assert sorted(got) == sorted(expected) == [1, 2, 3, 4]
    for step in expected:
        assert got[step] == pytest.approx(expected[step], rel=1e-4), step


def test_adapting_on_two_ranks_scores_before_and_after_and_finishes(tmp_path):
    """Scoring the adapted model after training predicted on the first rank only, while a distributed predict waits
    for every rank: the run hung."""
    from conftest import save_tiny_snapshot

    backbone, data = write_run_inputs(str(tmp_path))
    base = save_tiny_snapshot(tmp_path / "base")
    out = str(tmp_path / "run")
    launch_two_ranks(train_argv(backbone, data, out, "--test_split", "test", "--max_steps", "2", "--eval_strategy",
                                "no", "--save_strategy", "no", "--per_device_train_batch_size", "2",
                                "--init_from_checkpoint", str(base)))
    with open(os.path.join(out, "adaptation.json")) as f:
        assert [row["set"] for row in json.load(f)] == [f"{data} test"]
