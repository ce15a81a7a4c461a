"""End to end with a tiny random piiner snapshot: Redactor.from_pretrained builds the real pipeline offline from
safetensors, and the redaction invariants hold on whatever (random) entities it finds in arbitrary Unicode."""

import json

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import piiner.deid.cli as cli
from conftest import tiny_bert_config
from piiner.deid import Redactor
from test_deid_redact import MESSY_CHARS
from piiner.hub.configuration_piiner import PiiNerConfig
from piiner.hub.modeling_piiner import PiiNerForTokenClassification
from piiner.snapshot import SnapshotError


@pytest.fixture(scope="module")
def snapshot(tiny_snapshot):
    return tiny_snapshot


@pytest.fixture(scope="module")
def redactor(snapshot):
    return Redactor.from_pretrained(snapshot, mode="surrogate", key="k", batch_size=4)


def test_weights_load_only_from_safetensors(snapshot, tmp_path):
    assert (snapshot / "model.safetensors").exists() and not list(snapshot.glob("*.bin"))
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    for f in snapshot.iterdir():
        if f.suffix != ".safetensors":
            (pickled / f.name).write_bytes(f.read_bytes())
    torch.save(PiiNerForTokenClassification(PiiNerConfig(encoder_config=tiny_bert_config())).state_dict(),
               pickled / "pytorch_model.bin")
    with pytest.raises(SnapshotError, match="only from safetensors"):
        Redactor.from_pretrained(pickled)


def check_invariants(result):
    text, new, ents = result.text, result.redacted_text, result.entities
    kept_old, kept_new, cursor_old, cursor_new = [], [], 0, 0
    for a, b in zip(ents, ents[1:]):
        assert a["end"] <= b["start"]
    for e in ents:
        assert text[e["start"]:e["end"]] == e["word"] and new[e["new_start"]:e["new_end"]] == e["replacement"]
        assert e["replacement"].casefold() != e["word"].casefold()
        kept_old.append(text[cursor_old:e["start"]])
        kept_new.append(new[cursor_new:e["new_start"]])
        cursor_old, cursor_new = e["end"], e["new_end"]
    assert kept_old + [text[cursor_old:]] == kept_new + [new[cursor_new:]]


def test_messy_texts_through_the_real_pipeline(redactor):
    texts = ["Call John Smith at 555-0100, ssn 123-45-6789.", "\ud800 lone \udfff surrogates", "NUL\x00 and \x07\x1b",
             "", "  \n\t ", "emoji 🙂 and 中文 text", "x" * 300 + " john@x.com"]
    results = redactor(texts)
    assert len(results) == len(texts)
    for result in results:
        check_invariants(result)
    assert results[3].entities == [] and results[4].redacted_text == "  \n\t "
    assert any(r.entities for r in results)  # a random model tags plenty; otherwise this test proves nothing


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(MESSY_CHARS, max_size=40))
def test_property_real_pipeline_keeps_offsets_and_non_entity_text(redactor, text):
    check_invariants(redactor(text))


def test_cli_with_model(snapshot, tmp_path, capsys):
    path = tmp_path / "in.txt"
    path.write_bytes(b"call john smith at 555 0100\n\xff\nhello\n")
    code = cli.main(["--model", str(snapshot), "--no-progress", "--detect-only", "--format", "lines", str(path)])
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 1 and len(out) == 3 and out[1]["line"] == 2
    for record in (out[0], out[2]):
        for e in record["entities"]:
            assert record["text"][e["start"]:e["end"]] == e["word"]


def test_a_recognizers_file_reaches_the_model_in_the_cli_the_service_and_corpus_jobs(snapshot, tmp_path, capsys):
    from fastapi.testclient import TestClient

    from piiner.corpus import RedactorSpec, redact_corpus
    from piiner.serve.cli import build_app, parser as serve_parser

    rules = tmp_path / "rules.yaml"
    rules.write_text("recognizers:\n  - {type: CASE_ID, pattern: 'CASE-\\d{4}', tier: 2}\n")
    # A second file adds to the first, as a shared rules file and the lists drawn from one's own labels do.
    lists = tmp_path / "lists.yaml"
    lists.write_text("deny_list: {ORGANIZATION: [Acme Corp]}\n")
    text = tmp_path / "in.txt"
    text.write_text("see CASE-1234 from Acme Corp\n")
    out = tmp_path / "out.txt"
    assert cli.main(["--model", str(snapshot), "--no-progress", "--recognizers", str(rules), "--recognizers",
                     str(lists), str(text), "-o", str(tmp_path / "out.jsonl"), "--text-output", str(out)]) == 0
    redacted = out.read_text()  # the random model tags the other words as it likes
    assert "[CASE_ID]" in redacted and "[ORGANIZATION]" in redacted and "CASE-1234" not in redacted

    app = build_app(serve_parser().parse_args(["--model", str(snapshot), "--recognizers", str(rules)]))
    with TestClient(app) as client:
        found = client.post("/v1/detect", json={"text": "see CASE-1234"}).json()["entities"]
    assert [(e["type"], e["word"]) for e in found if e["type"] == "CASE_ID"] == [("CASE_ID", "CASE-1234")]

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.jsonl").write_text(json.dumps({"text": "see CASE-1234"}) + "\n")
    spec = RedactorSpec(model=str(snapshot), evidence=json.dumps({"recognizers": [
        {"type": "CASE_ID", "pattern": r"CASE-\d{4}", "tier": 2}]}))
    redact_corpus(corpus, tmp_path / "job", spec)
    assert "[CASE_ID]" in json.loads((tmp_path / "job" / "part-00000.jsonl").read_text())["redacted_text"]

    bad = tmp_path / "bad.yaml"
    bad.write_text("recognizers:\n  - {type: CASE_ID, pattern: '(unclosed'}\n")
    with pytest.raises(SystemExit):
        cli.main(["--model", str(snapshot), "--recognizers", str(bad), str(text)])
    assert "recognizers file" in capsys.readouterr().err
