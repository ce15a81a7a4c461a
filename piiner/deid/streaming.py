"""Line-by-line redaction of text and JSONL streams with flat memory: bytes are read one line at a time, decoded
per line (so invalid UTF-8 costs one line, reported with its number, not the file), redacted a few lines per
detector call, and written as one JSON line per input record, in input order.

Output records:

- detection only: the input fields, the text under its field name, and ``entities`` (with ``word``);
- redaction: the input fields WITHOUT the text field, ``redacted_text``, and ``entities`` (offsets in both texts
  and the replacement, but never the original ``word``: the output carries no detected value);
- a line that fails: ``{"line": N, "error": "..."}``, so output line N still belongs to input record N.

Plain-text input is one record per line (the newline is not part of the text, a blank line is an empty record);
in JSONL input blank lines are skipped and every other line must be a JSON object holding the text field.
"""

import dataclasses
import json
import os
from collections import Counter

from tqdm import tqdm

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
ENTITY_FIELDS_DETECT = ("type", "tier", "score", "start", "end", "word")
ENTITY_FIELDS_REDACT = ("type", "tier", "score", "start", "end", "new_start", "new_end", "replacement")
MAX_CONSECUTIVE_DETECTOR_FAILURES = 20


@dataclasses.dataclass
class StreamSummary:
    lines: int = 0
    records: int = 0
    failed: int = 0
    blank_skipped: int = 0
    entities: int = 0
    dropped: Counter = dataclasses.field(default_factory=Counter)
    overwritten_fields: Counter = dataclasses.field(default_factory=Counter)

    def describe(self):
        parts = [f"{self.records} records written from {self.lines} lines, {self.entities} entities"]
        if self.failed:
            parts.append(f"{self.failed} line(s) FAILED (see the messages above)")
        if self.blank_skipped:
            parts.append(f"{self.blank_skipped} blank JSONL lines skipped")
        if self.dropped:
            parts.append("entities not redacted: " + ", ".join(f"{k} {v}" for k, v in sorted(self.dropped.items())))
        if self.overwritten_fields:
            parts.append("input fields replaced by output fields: "
                         + ", ".join(f"{k} {v}" for k, v in sorted(self.overwritten_fields.items())))
        return "; ".join(parts)


@dataclasses.dataclass
class Record:
    line: int
    text: "str | None" = None
    fields: dict = dataclasses.field(default_factory=dict)
    error: "str | None" = None


class StreamFailure(RuntimeError):
    pass


def sniff_format(path, first_line):
    """"jsonl" or "text": by file suffix, else by whether the first line is a JSON object."""
    if path and path != "-" and path.lower().endswith(JSONL_SUFFIXES):
        return "jsonl"
    if path and path.lower().endswith(".txt"):
        return "text"
    try:
        return "jsonl" if isinstance(json.loads(first_line), dict) else "text"
    except (ValueError, UnicodeDecodeError):
        return "text"


def parse_line(raw, line_no, fmt, text_field):
    """A Record for one raw input line (bytes, newline included or not)."""
    raw = raw[:-1] if raw.endswith(b"\n") else raw
    raw = raw[:-1] if raw.endswith(b"\r") else raw
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return Record(line_no, error=f"invalid UTF-8 at byte {err.start} of the line ({err.reason}); line skipped")
    if fmt == "text":
        return Record(line_no, text=decoded)
    if not decoded.strip():
        return None
    try:
        obj = json.loads(decoded)
    except ValueError as err:
        return Record(line_no, error=f"not valid JSON ({err}); line skipped")
    if not isinstance(obj, dict):
        return Record(line_no, error=f"a JSONL line must be an object, got {type(obj).__name__}; line skipped")
    if text_field not in obj:
        return Record(line_no, error=f"no {text_field!r} field (use --text-field); line skipped")
    text = obj[text_field]
    if not isinstance(text, str):
        return Record(line_no, error=f"field {text_field!r} must be a string, got {type(text).__name__}; line skipped")
    return Record(line_no, text=text, fields=obj)


def redact_stream(in_stream, out_stream, redactor, fmt="auto", text_field="text", detect_only=False, batch_size=8,
                  path=None, progress=False, on_error=None):
    """Redact (or only detect in) every record of a binary input stream, writing JSONL bytes to ``out_stream``.
    ``on_error(line, message)`` is called for each failed line. Returns a StreamSummary."""
    summary = StreamSummary()
    total = os.fstat(in_stream.fileno()).st_size if progress and path not in (None, "-") else None
    bar = tqdm(total=total, unit="B", unit_scale=True, disable=not progress, desc="redact", leave=False)
    pending = []
    state = {"consecutive_failures": 0}
    try:
        lines = iter(in_stream)
        first = next(lines, None)
        if first is None:
            return summary
        if fmt == "auto":
            fmt = sniff_format(path, first.strip())
        for line_no, raw in enumerate(_chain(first, lines), start=1):
            summary.lines += 1
            bar.update(len(raw))
            record = parse_line(raw, line_no, fmt, text_field)
            if record is None:
                summary.blank_skipped += 1
                continue
            pending.append(record)
            if len(pending) >= batch_size:
                _flush(pending, out_stream, redactor, text_field, detect_only, summary, on_error, state)
                pending = []
        _flush(pending, out_stream, redactor, text_field, detect_only, summary, on_error, state)
    finally:
        bar.close()
    return summary


def _chain(first, rest):
    yield first
    yield from rest


def _flush(records, out_stream, redactor, text_field, detect_only, summary, on_error, state):
    good = [r for r in records if r.error is None]
    results = _run(redactor, good, detect_only, state)
    for record in records:
        result = results.get(record.line)
        if record.error is not None or isinstance(result, str):
            message = record.error or result
            summary.failed += 1
            if on_error:
                on_error(record.line, message)
            out = {"line": record.line, "error": message}
        else:
            out = _output_record(record, result, text_field, detect_only, summary)
        summary.records += 1
        out_stream.write(_dumps(out) + b"\n")
    out_stream.flush()


def _run(redactor, records, detect_only, state):
    """{line: RedactionResult or error message}. A failing batch is retried one record at a time, so one text the
    detector cannot handle costs only its own line (reported, counted, exit status 1); a detector that fails on
    every record stops the run instead of writing a file of errors."""
    if not records:
        return {}
    call = redactor.detect if detect_only else redactor.redact
    try:
        results = call([r.text for r in records])
    except Exception as err:  # noqa: BLE001 - reported per line and counted, never skipped silently
        if len(records) > 1:
            out = {}
            for record in records:
                out.update(_run(redactor, [record], detect_only, state))
            return out
        state["consecutive_failures"] += 1
        if state["consecutive_failures"] >= MAX_CONSECUTIVE_DETECTOR_FAILURES:
            raise StreamFailure(f"the detector failed on {MAX_CONSECUTIVE_DETECTOR_FAILURES} records in a row; "
                                f"last error: {type(err).__name__}: {err}") from err
        return {records[0].line: f"detector failed: {type(err).__name__}: {err}"}
    state["consecutive_failures"] = 0
    return {r.line: res for r, res in zip(records, results)}


def _output_record(record, result, text_field, detect_only, summary):
    out = dict(record.fields)
    if detect_only:
        out[text_field] = record.text
        fields = ENTITY_FIELDS_DETECT
    else:
        out.pop(text_field, None)
        fields = ENTITY_FIELDS_REDACT
    own = {"entities"} | ({text_field} if detect_only else {"redacted_text"})
    summary.overwritten_fields.update(k for k in own if k in record.fields and k != text_field)
    if not detect_only:
        out["redacted_text"] = result.redacted_text
    out["entities"] = [{k: (round(e[k], 4) if k == "score" else e[k]) for k in fields} for e in result.entities]
    summary.entities += len(result.entities)
    summary.dropped.update(result.dropped)
    return out


# Line breaks to str.splitlines() though not to JSON: escaped, so every reader sees one record per line.
UNICODE_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _dumps(obj):
    text = json.dumps(obj, ensure_ascii=False).translate(UNICODE_LINE_BREAKS)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (from JSON escapes in the input) only survive as \\u escapes
        return json.dumps(obj, ensure_ascii=True).encode("ascii")
