"""``piiner-data build`` end to end on fixtures and a small synthetic config."""

import json
import os

import datasets
import pytest

from piiner.data_prep.cli import main
from piiner.data_prep.dedup import normalize_text
from piiner.data_prep.records import check_record

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "data_prep")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    rc = main(["build", "--sources", "synthetic,presidio,wnut17,nemotron,gretel_masking", "--out", str(out),
               "--from-dir", f"presidio={FIXTURES}/presidio", "--from-dir", f"wnut17={FIXTURES}/wnut17",
               "--from-dir", f"nemotron={FIXTURES}/nemotron", "--from-dir", f"gretel_masking={FIXTURES}/gretel_masking.jsonl",
               "--synthetic-per-type", "6", "--seed", "1"])
    assert rc == 0
    return out


def test_writes_dataset_dict_audit_and_per_source_test_files(built):
    ds = datasets.load_from_disk(str(built))
    assert set(ds) == {"train", "validation", "test"}
    assert set(ds["train"].column_names) == {"id", "source", "text", "spans", "group"}
    assert ds["train"].features["spans"].feature["start"].dtype == "int32"
    for name in ("audit.md", "audit.png", "audit.json"):
        assert os.path.getsize(built / name) > 0
    audit_md = (built / "audit.md").read_text()
    assert "imbalance ratio" in audit_md and "| presidio | decision | repaired_offset | 1 |" in audit_md
    assert "| nemotron | span rejected | value_mismatch | 1 |" in audit_md
    for source in ("synthetic", "presidio", "wnut17", "nemotron", "gretel_masking"):
        lines = (built / f"test_{source}.jsonl").read_text().splitlines()
        expected = sum(1 for r in ds["test"] if r["source"] == source)
        assert len(lines) == expected
        for line in lines:
            assert set(json.loads(line)) == {"id", "source", "text", "spans"}
    assert (built / "test_nemotron.jsonl").read_text().count("\n") == 1  # the Nemotron test file's one row


def test_every_record_valid_and_nothing_leaks_across_splits(built):
    ds = datasets.load_from_disk(str(built))
    seen_text, seen_group = {}, {}
    for split in ds:
        for record in ds[split]:
            check_record(record)
            key = normalize_text(record["text"])
            assert seen_text.setdefault(key, split) == split, record["text"]
            parts = record["group"].split("+") if record["source"] == "synthetic" else [record["group"]]
            for part in parts:
                assert seen_group.setdefault((record["source"], part), split) == split, part
    assert len(seen_text) == sum(len(ds[s]) for s in ds)  # deduplicated within splits too


def test_same_seed_same_corpus(built, tmp_path):
    out = tmp_path / "again"
    assert main(["build", "--sources", "synthetic", "--out", str(out), "--synthetic-per-type", "6", "--seed", "1"]) == 0
    again = datasets.load_from_disk(str(out))["train"]
    first = datasets.load_from_disk(str(built))["train"].filter(lambda r: r["source"] == "synthetic")
    assert again["text"] == first["text"] and again["spans"] == first["spans"]


def test_cli_errors_name_the_problem(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert main(["build", "--sources", "nemotron", "--out", str(tmp_path / "x")]) == 2
    assert "--from-dir nemotron=PATH" in capsys.readouterr().err
    assert main(["build", "--sources", "synthetic", "--out", str(tmp_path / "y"), "--from-dir", "wnut17=/tmp"]) == 2
    assert "not in --sources" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["build", "--sources", "synthetic,unknown_corpus", "--out", str(tmp_path / "z")])
    assert "unknown source(s) unknown_corpus" in capsys.readouterr().err
