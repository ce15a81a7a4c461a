"""Streaming: output keeps pace with input (flat memory by construction), order is kept, and a detector that fails
on one record costs that record only."""

import io
import json

import pytest

from piiner.deid import Redactor
from piiner.baselines.regex import RegexDetector
from piiner.deid.streaming import StreamFailure, redact_stream


class CountingInput:
    """An endless-looking line source that records how many lines have been pulled."""

    def __init__(self, lines):
        self.lines, self.pulled = lines, 0

    def __iter__(self):
        for line in self.lines:
            self.pulled += 1
            yield line


class RecordingOutput(io.BytesIO):
    def __init__(self, source):
        super().__init__()
        self.source, self.lag = source, []

    def write(self, data):
        self.lag.append(self.source.pulled - (self.getvalue().count(b"\n") + 1))
        return super().write(data)


def test_output_never_lags_input_by_more_than_a_batch():
    source = CountingInput([f"line {i} mail u{i}@x.com\n".encode() for i in range(1000)])
    out = RecordingOutput(source)
    summary = redact_stream(source, out, Redactor(RegexDetector()), fmt="lines", batch_size=8)
    assert summary.records == 1000 and summary.entities == 1000
    assert max(out.lag) <= 8
    lines = out.getvalue().decode().splitlines()
    assert json.loads(lines[999])["redacted_text"] == "line 999 mail [EMAIL]"


def test_a_text_the_detector_fails_on_costs_only_its_line():
    def detector(texts):
        if any("boom" in t for t in texts):
            raise RuntimeError("tokenizer exploded")
        return RegexDetector()(texts)

    lines = [b"a@b.com\n", b"boom\n", b"c@d.com\n"]
    errors = []
    out = io.BytesIO()
    summary = redact_stream(iter(lines), out, Redactor(detector), fmt="lines", batch_size=8,
                            on_error=lambda line, message: errors.append((line, message)))
    records = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [r.get("redacted_text") for r in records] == ["[EMAIL]", None, "[EMAIL]"]
    assert errors == [(2, "detector failed: RuntimeError: tokenizer exploded")] and summary.failed == 1


def test_a_detector_that_always_fails_stops_the_run():
    def detector(texts):
        raise RuntimeError("model is broken")

    with pytest.raises(StreamFailure, match="in a row.*model is broken"):
        redact_stream(iter([b"text\n"] * 50), io.BytesIO(), Redactor(detector), fmt="lines")


def test_unicode_line_breaks_and_lone_surrogates_stay_inside_one_output_line():
    lines = ["a\u2028b\x85c a@b.com\n".encode(), json.dumps({"text": "x \ud800 a@b.com"}).encode() + b"\n"]
    for fmt, line in (("lines", lines[0]), ("jsonl", lines[1])):
        out = io.BytesIO()
        redact_stream(iter([line]), out, Redactor(RegexDetector()), fmt=fmt, detect_only=True)
        text = out.getvalue().decode("utf-8")
        assert len(text.splitlines()) == 1
        record = json.loads(text)
        assert record["text"][record["entities"][0]["start"]:record["entities"][0]["end"]] == "a@b.com"


@pytest.mark.parametrize("name, fmt, expected, failed", [
    ("notes.txt", "text", [{"redacted_text": "", "entities": []}], 0),  # a document with nothing in it
    ("records.json", "json", [{"line": 1, "error": "not valid JSON (Expecting value: line 1 column 1 (char 0)); skipped"}], 1),
    ("records.jsonl", "jsonl", [], 0),  # no lines, no records
])
def test_an_empty_file_is_read_as_the_format_its_name_says(tmp_path, name, fmt, expected, failed):
    """An empty .txt file was reported as zero JSONL lines, and an empty .json file passed as valid."""
    path = tmp_path / name
    path.write_bytes(b"")
    out = io.BytesIO()
    with open(path, "rb") as stream:
        summary = redact_stream(stream, out, Redactor(RegexDetector()), path=str(path))
    assert summary.fmt == fmt and summary.failed == failed
    assert [json.loads(x) for x in out.getvalue().splitlines()] == expected


BOM = b"\xef\xbb\xbf"  # what Notepad and Excel put before UTF-8 text


@pytest.mark.parametrize("name, content", [
    ("records.jsonl", BOM + b'{"text": "mail ann@x.org"}\r\n{"text": "call 212-555-0147"}\r\n'),
    ("records.json", BOM + b'[{"text": "mail ann@x.org"}, {"text": "call 212-555-0147"}]'),
    ("-", BOM + b'{"text": "mail ann@x.org"}\n{"text": "call 212-555-0147"}\n'),  # standard input: format sniffed
])
def test_a_byte_order_mark_before_json_input_costs_no_record(tmp_path, name, content):
    """The first JSONL record failed as "not valid JSON", and JSONL on standard input was taken for one text."""
    out = io.BytesIO()
    summary = redact_stream(iter(content.splitlines(keepends=True)) if name == "-" else io.BytesIO(content), out,
                            Redactor(RegexDetector()), path=name)
    assert summary.fmt == ("json" if name.endswith(".json") else "jsonl") and summary.failed == 0
    assert [json.loads(x)["redacted_text"] for x in out.getvalue().splitlines()] == ["mail [EMAIL]", "call [PHONE]"]
