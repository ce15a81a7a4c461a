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
