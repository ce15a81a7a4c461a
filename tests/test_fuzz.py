"""Random bytes and random JSON through the redaction command line and data_prep: no traceback, and every input
record is accounted for, in the output or in a counted reject with its reason."""

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from piiner.data_prep.build import build
from piiner.deid.cli import main as redact

SETTINGS = settings(max_examples=int(os.environ.get("PIINER_FUZZ_EXAMPLES", 40)), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
# Rows that look like records often enough to reach the deeper checks: a text, spans of every shape.
spans = st.lists(st.fixed_dictionaries({"start": st.integers(-3, 40) | st.text(max_size=3),
                                        "end": st.integers(-3, 40) | st.none(),
                                        "label": st.sampled_from(["email", "first_name", "ssn", "nope", ""]) |
                                        st.integers()}), max_size=3)
record_like = st.fixed_dictionaries({"text": st.text(max_size=40) | json_values},
                                    optional={"uid": json_values, "spans": spans.map(repr) | spans | json_values,
                                              "language": st.sampled_from(["en", "fr", ""]) | json_values})
json_rows = st.lists(record_like | json_values, max_size=8)


def _records_out(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@SETTINGS
@given(data=st.binary(max_size=300), fmt=st.sampled_from(["lines", "jsonl", "json", "text", "auto"]))
def test_redact_accounts_for_every_record_of_random_bytes(tmp_path, data, fmt):
    source, out = tmp_path / "in.bin", tmp_path / "out.jsonl"
    source.write_bytes(data)
    code = redact([str(source), "--detector", "regex", "--format", fmt, "-o", str(out), "--no-progress"])
    assert code in (0, 1)
    records = _records_out(out) if out.exists() else []
    lines = data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n")
    if fmt == "lines":
        assert len(records) == len(lines) or (not data and not records)
    elif fmt == "jsonl":
        assert len(records) == sum(1 for line in lines if line.strip() and _decodes(line))
        assert sum("error" in r for r in records) >= (code == 1)
    elif fmt == "text":
        assert len(records) == 1  # the whole input is one document, an empty one included
    assert (code == 1) == any("error" in r for r in records)


def _decodes(line):
    try:
        return bool(line.decode("utf-8").strip())
    except UnicodeDecodeError:
        return True  # an undecodable line is a record that failed, still one output line


@SETTINGS
@given(rows=json_rows)
def test_redact_accounts_for_every_element_of_a_random_json_array(tmp_path, rows):
    source, out = tmp_path / "in.json", tmp_path / "out.jsonl"
    source.write_text(json.dumps(rows), encoding="utf-8")
    code = redact([str(source), "--detector", "regex", "-o", str(out), "--no-progress"])
    records = _records_out(out)
    assert len(records) == len(rows) and code in (0, 1)
    for i, record in enumerate(records, start=1):
        assert ("redacted_text" in record) != ("error" in record)
        assert "error" not in record or record["line"] == i


@settings(max_examples=int(os.environ.get("PIINER_FUZZ_EXAMPLES", 25)), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=json_rows, junk=st.lists(st.binary(max_size=30), max_size=3))
def test_data_prep_accounts_for_every_random_row(tmp_path_factory, rows, junk):
    """A Nemotron-shaped JSONL of random rows and junk lines: the build finishes, and every non-blank line is in
    the corpus, a counted rejected record, or a counted decision (non-English, duplicate)."""
    tmp_path = tmp_path_factory.mktemp("fuzz")
    folder = tmp_path / "nemotron"
    folder.mkdir()
    lines = [json.dumps(row).encode() for row in rows] + [b for b in junk if b.strip()]
    (folder / "train.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out"
    try:
        built = build(str(out), sources=["nemotron"], from_dirs={"nemotron": str(folder)}, verbose=False)
    except ValueError as error:  # nothing usable at all is a clear error, not a crash
        assert "no record" in str(error)
        return
    audit = json.loads((out / "audit.json").read_text())
    kept = sum(len(built[split]) for split in built)
    rejected = sum(audit["record_rejections"].get("nemotron", {}).values())
    decided = sum(n for what, n in audit["notes"].get("nemotron", {}).items() if what.startswith(("dropped_",
                                                                                                  "skipped_")))
    non_blank = sum(1 for line in (folder / "train.jsonl").read_bytes().split(b"\n") if line.strip())
    assert kept + rejected + decided == non_blank


@pytest.mark.parametrize("rows", [[], [5, "x"]])
def test_data_prep_with_no_usable_row_says_so(tmp_path, rows):
    folder = tmp_path / "nemotron"
    folder.mkdir()
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match="no record"):
        build(str(tmp_path / "out"), sources=["nemotron"], from_dirs={"nemotron": str(folder)}, verbose=False)


def _kept_where_it_was(text, redacted, entities):
    """Every character outside the entities stands in the redacted text where the entities' shifts put it."""
    cursor, shift = 0, 0
    for e in sorted(entities, key=lambda e: e["start"]):
        assert redacted[cursor + shift:e["start"] + shift] == text[cursor:e["start"]]
        shift = e["new_end"] - e["end"]
        cursor = e["end"]
    assert redacted[cursor + shift:] == text[cursor:]


# Text with the shapes the recognizers and the regex detector look for, and the characters that have broken services
# (lone surrogates, emoji, line separators, NUL).
fuzz_text = st.text(alphabet=st.sampled_from(list("ab @.-:/0123456789\n\r\t😀\u2028\x00é")) | st.characters(),
                    max_size=60)


@SETTINGS
@given(text=fuzz_text, endpoint=st.sampled_from(["detect", "redact"]))
def test_the_service_gives_back_any_text_with_every_non_pii_character_where_it_was(service_client, text, endpoint):
    response = service_client.post(f"/v1/{endpoint}", content=json.dumps({"text": text}),
                                   headers={"content-type": "application/json"})
    assert response.status_code in (200, 422), response.text
    if response.status_code == 200 and endpoint == "redact":
        result = response.json()
        _kept_where_it_was(text, result["redacted_text"], result["entities"])
    elif response.status_code == 200:
        assert all(text[e["start"]:e["end"]] == e["word"] for e in response.json()["entities"])


@pytest.fixture(scope="module")
def service_client():
    from fastapi.testclient import TestClient

    from piiner.baselines.regex import RegexDetector
    from piiner.serve.app import create_app

    with TestClient(create_app(RegexDetector(), "regex")) as client:
        yield client


@SETTINGS
@given(lines=st.lists(st.tuples(fuzz_text.filter(lambda t: "\n" not in t and "\r" not in t),
                                 st.sampled_from(["\n", "\r\n", ""])), max_size=5))
def test_lines_format_round_trips_every_line_and_ending(tmp_path, lines):
    lines = [(text, ending or "\n") for text, ending in lines[:-1]] + lines[-1:]  # only the last may lack one
    lines = [line for line in lines if line != ("", "")]  # nothing at all after the last ending is no line
    raw = "".join(text + ending for text, ending in lines).encode("utf-8", "surrogatepass")
    source, records, text_out = tmp_path / "in.txt", tmp_path / "out.jsonl", tmp_path / "out.txt"
    source.write_bytes(raw)
    redact([str(source), "--detector", "regex", "--format", "lines", "-o", str(records), "--text-output",
            str(text_out), "--no-progress"])
    outputs = [json.loads(line) for line in records.read_text().splitlines()]
    written = text_out.read_bytes().decode("utf-8", "surrogatepass")
    assert len(outputs) == len(lines)
    pieces = written.splitlines(keepends=True) if "\u2028" not in written and "\x85" not in written else None
    for (text, ending), out in zip(lines, outputs):
        if "error" in out:  # a line that is no valid UTF-8 (a lone surrogate) is a counted reject
            continue
        _kept_where_it_was(text, out["redacted_text"], out["entities"])
    if pieces is not None and all("error" not in o for o in outputs):
        assert written == "".join(o["redacted_text"] + e for o, (_, e) in zip(outputs, lines))
