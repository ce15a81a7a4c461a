"""piiner-evaluate --model on a tiny random piiner snapshot: the pipeline path runs end to end."""

import json
import os

import pytest
from conftest import REPO_ROOT

import piiner.evaluation.cli as evaluate_model
from piiner.evaluation.predict import predict_spans


@pytest.fixture(scope="module")
def snapshot(tiny_snapshot):
    return str(tiny_snapshot)


GOLD = [
    {"id": "0", "text": "call me at 555-0100, john", "spans": [{"start": 11, "end": 19, "label": "PHONE"}]},
    {"id": "1", "text": "   ", "spans": []},
    {"id": "2", "text": "my ssn is 078-05-1120 " * 4, "spans": [{"start": 10, "end": 21, "label": "SSN"}]},
]


def test_model_run_writes_a_valid_report(snapshot, tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in GOLD))
    out = tmp_path / "report.json"
    evaluate_model.run(["--model", snapshot, "--data", str(gold), "--batch-size", "2", "--out", str(out)])
    report = json.loads(out.read_text())
    o = report["overall"]
    assert o["support"] == 2 and o["tp"] + o["fn"] == 2 and 0.0 <= o["f1"] <= 1.0
    assert set(report["per_tier"]) == {"1", "2", "3", "4"}
    assert report["meta"]["model"] == snapshot and report["meta"]["n_texts"] == 3
    assert report["throughput"]["n_texts"] == 3 and report["throughput"]["texts_per_s"] > 0


def test_a_report_scored_from_a_models_saved_predictions_names_the_model(snapshot, tmp_path):
    """The halves of an out-of-source run and a rescore are scored from the model's saved predictions: their report
    names the model that made them, as the run that saved them did, for itself and for a model compared from a file."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in GOLD))
    saved = tmp_path / "pred.jsonl"
    evaluate_model.run(["--model", snapshot, "--data", str(gold), "--save-predictions", str(saved)])
    again = evaluate_model.run(["--predictions", str(saved), "--data", str(gold), "--compare", f"old={saved}"])
    assert again["meta"]["model"] == snapshot and again["meta"]["predictions"] == str(saved)
    assert again["compare"]["old"]["model"] == snapshot
    assert again["overall"] == again["compare"]["old"]["overall"] and again["meta"]["backstop"] is None
    backed = tmp_path / "backed.jsonl"
    evaluate_model.run(["--model", snapshot, "--data", str(gold), "--backstop", "regex", "--save-predictions",
                        str(backed)])
    later = evaluate_model.run(["--predictions", str(backed), "--data", str(gold)])
    assert (later["meta"]["model"], later["meta"]["backstop"]) == (snapshot, "regex")  # not the model's alone


def test_predict_spans_gives_exact_offsets_inside_each_text(snapshot):
    texts = [r["text"] for r in GOLD]
    preds = predict_spans(snapshot, texts, batch_size=2)
    assert len(preds) == 3 and preds[1] == []
    for text, spans in zip(texts, preds):
        for s in spans:
            assert 0 <= s["start"] < s["end"] <= len(text) and 0.0 <= s["score"] <= 1.0


def test_missing_model_folder_is_named(tmp_path):
    with pytest.raises(SystemExit, match="model folder not found"):
        evaluate_model.run(["--model", str(tmp_path / "nope"), "--data", str(tmp_path / "x.jsonl")])


def test_a_source_scored_in_a_model_folder_keeps_its_predictions_there_and_out_of_a_push(snapshot, tmp_path):
    """`make reference` scores each source into the model folder: the predictions go to _predictions/, where a
    later run is compared with them, and a push to the Hub leaves them out (they hold the corpus's texts)."""
    import shutil

    from out_of_source import evaluate_source
    from piiner.training.hub import upload_plan

    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(dict(r, source="web")) + "\n" for r in GOLD))
    folder = tmp_path / "model"
    shutil.copytree(snapshot, folder)
    report = evaluate_source(str(folder), str(gold), "web", str(folder / "eval_web.json"), baselines=())
    saved = [json.loads(line) for line in (folder / "_predictions" / "web.jsonl").read_text().splitlines()]
    assert [row["id"] for row in saved] == ["0", "1", "2"] and report["interval"]["documents"] == 3
    again = evaluate_model.run(["--predictions", str(folder / "_predictions" / "web.jsonl"), "--data", str(gold)])
    assert again["overall"] == report["overall"]
    pushed = dict(upload_plan(folder))
    assert "eval_web.json" in pushed and not any(path.startswith("_predictions") for path in pushed)


def test_a_recognizers_file_is_scored_with_the_model_and_named_in_the_report(snapshot, tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "0", "text": "seen on 7/22 by staff",
                                "spans": [{"start": 8, "end": 12, "label": "DATE"}]}) + "\n")
    rules = os.path.join(REPO_ROOT, "configs", "recognizers", "clinical.yaml")
    report = evaluate_model.run(["--model", snapshot, "--data", str(gold), "--types", "DATE", "--recognizers", rules,
                                 "--save-predictions", str(tmp_path / "pred.jsonl")])
    assert report["overall"]["recall"] == 1.0 and report["meta"]["recognizers"] == rules
    again = evaluate_model.run(["--predictions", str(tmp_path / "pred.jsonl"), "--data", str(gold)])
    assert again["meta"]["recognizers"] == rules
