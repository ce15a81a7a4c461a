"""The hand-written identifier sets: the gold JSONL piiner-evaluate scores is what the marked-up text says, and every
marked identifier of a validated type is a valid one (a typo in a card number would score as a miss of the model)."""

import importlib.util
import json
import os

import pytest

from piiner.hub.recognizers_piiner import VALIDATORS

HERE = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "identifiers")
CHECK = {"SSN": "ssn", "CREDIT_CARD": "luhn", "IBAN": "iban", "EMAIL": "email", "IP_ADDRESS": "ip", "PHONE": "phone"}


def load_build():
    spec = importlib.util.spec_from_file_location("identifier_build", os.path.join(HERE, "build.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["written", "held_out"])
def test_the_gold_jsonl_is_built_from_the_text_and_its_identifiers_are_valid(name):
    build = load_build()
    with open(os.path.join(HERE, f"{name}.txt"), encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    with open(os.path.join(HERE, f"{name}.jsonl"), encoding="utf-8") as f:
        saved = [json.loads(line) for line in f]
    assert saved == [build.record(f"{name}-{i}", line) for i, line in enumerate(lines, 1)]
    for record in saved:
        for span in record["spans"]:
            value = record["text"][span["start"]:span["end"]]
            if span["label"] in CHECK:
                assert VALIDATORS[CHECK[span["label"]]](value), (record["id"], value)
