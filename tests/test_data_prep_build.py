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
    assert set(ds["train"].column_names) == {"id", "source", "text", "spans", "group", "labelled_types", "not_pii_spans",
                                             "unjudged_spans"}
    assert ds["train"].features["spans"].feature["start"].dtype == "int32"
    for name in ("audit.md", "audit.png", "audit.json"):
        assert os.path.getsize(built / name) > 0
    audit_md = (built / "audit.md").read_text()
    assert "imbalance ratio" in audit_md and "| presidio | decision | repaired_offset | 1 |" in audit_md
    assert "| nemotron | record rejected | unknown_label:favourite_food | 1 |" in audit_md  # its record goes whole
    for source in ("synthetic", "presidio", "wnut17", "nemotron", "gretel_masking"):
        lines = (built / f"test_{source}.jsonl").read_text().splitlines()
        expected = sum(1 for r in ds["test"] if r["source"] == source)
        assert len(lines) == expected
        for line in lines:
            assert set(json.loads(line)) == {"id", "source", "text", "spans", "labelled_types", "not_pii_spans",
                                             "unjudged_spans"}
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
    again = {r["id"]: r for r in datasets.load_from_disk(str(out))["train"]}
    first = datasets.load_from_disk(str(built))["train"].filter(lambda r: r["source"] == "synthetic")
    # A record is the same whatever else is built, unless it was set into a real text of another source.
    same = [r for r in first if r["labelled_types"] is None and r["id"] in again]
    assert len(same) > 0.7 * len(first)
    assert all(r["text"] == again[r["id"]]["text"] and r["spans"] == again[r["id"]]["spans"] for r in same)
    assert any(r["labelled_types"] is not None for r in first)  # some synthetic PII sits in real sentences


def test_cli_errors_name_the_problem(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert main(["build", "--sources", "nemotron", "--out", str(tmp_path / "x")]) == 2
    assert "--from-dir nemotron=PATH" in capsys.readouterr().err
    assert main(["build", "--sources", "synthetic", "--out", str(tmp_path / "y"), "--from-dir", "wnut17=/tmp"]) == 2
    assert "not in --sources" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["build", "--sources", "synthetic,unknown_corpus", "--out", str(tmp_path / "z")])
    assert "unknown source(s) unknown_corpus" in capsys.readouterr().err
    # two folders for one source: one of them would be ignored without a word
    with pytest.raises(SystemExit):
        main(["build", "--sources", "wnut17", "--out", str(tmp_path / "w"), "--from-dir", f"wnut17={FIXTURES}/wnut17",
              "--from-dir", f"wnut17={FIXTURES}/wnut17"])
    assert "--from-dir names 'wnut17' twice" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()


def test_a_copy_with_a_rejected_span_never_wins_deduplication(tmp_path):
    """The test-split copy of a text lost its span (off its text): it is dropped, counted, and the correctly
    labelled train copy is kept, where it used to lose to the held-out copy and sit in test labelled 'no PII'."""
    from piiner.data_prep.audit import Audit
    from piiner.data_prep.dedup import deduplicate
    from piiner.data_prep.records import clean_record

    text = "Reach Ana at ana@x.org"
    good = {"id": "a", "source": "s", "text": text, "group": "g1", "split": "train",
            "spans": [{"start": 13, "end": 22, "label": "EMAIL"}]}
    broken = {**good, "id": "b", "group": "g2", "split": "test",
              "spans": [{"start": 13, "end": 40, "label": "EMAIL"}]}
    audit = Audit()
    cleaned = [r for r in (clean_record(broken, audit), clean_record(good, audit)) if r is not None]
    kept = deduplicate(cleaned, audit)
    assert [(r["id"], r["split"], r["spans"]) for r in kept] == [("a", "train", good["spans"])]
    assert audit.record_rejections["s"] == {"span_out_of_range": 1}


def test_a_malformed_row_is_counted_with_its_file_and_line_and_the_rest_kept(tmp_path):
    folder = tmp_path / "nemotron"
    folder.mkdir()
    row = {"uid": "n1", "text": "Mail bob@corp.io now", "spans": "[{'start': 5, 'end': 16, 'label': 'email'}]"}
    (folder / "train.jsonl").write_text(json.dumps(row) + "\n{not json\n" + json.dumps({**row, "uid": "n2",
                                        "text": "Mail amy@corp.io now"}) + "\n")
    out = tmp_path / "out"
    assert main(["build", "--sources", "nemotron", "--out", str(out), "--from-dir", f"nemotron={folder}"]) == 0
    audit = json.loads((out / "audit.json").read_text())
    assert audit["record_rejections"]["nemotron"] == {"malformed_row": 1}
    assert audit["malformed_rows"]["nemotron"] == [f"{folder / 'train.jsonl'}:2: not valid JSON (Expecting property "
                                                   "name enclosed in double quotes)"]
    built = datasets.load_from_disk(str(out))
    assert sum(len(built[s]) for s in built) == 2
    assert "train.jsonl:2" in (out / "audit.md").read_text()


def test_out_deletes_only_what_a_build_wrote(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my own file")
    with pytest.raises(ValueError, match="not empty and was not written by piiner-data build"):
        from piiner.data_prep.build import build

        build(str(mine), sources=["synthetic"], synthetic_per_type=1, verbose=False)
    assert sorted(os.listdir(mine)) == ["notes.txt"]

    out = tmp_path / "corpus"
    fixtures = ["--from-dir", f"wnut17={FIXTURES}/wnut17"]
    assert main(["build", "--sources", "synthetic,wnut17", "--out", str(out), "--synthetic-per-type", "1",
                 *fixtures]) == 0
    assert (out / "test_wnut17.jsonl").exists()
    # A rebuild with fewer sources replaces the old build whole, the old source's test file included.
    assert main(["build", "--sources", "synthetic", "--out", str(out), "--synthetic-per-type", "1"]) == 0
    assert not (out / "test_wnut17.jsonl").exists() and (out / "test_synthetic.jsonl").exists()
