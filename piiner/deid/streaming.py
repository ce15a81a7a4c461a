"""Redaction of text, JSONL and JSON input, written as one JSON line per input record, in input order.

Input formats (``fmt``):

- ``jsonl``: one JSON object per line holding the text field; blank lines are skipped. Streams with flat memory:
  bytes are read a line at a time, decoded per line (invalid UTF-8 costs one line, reported with its number),
  redacted a few lines per detector call.
- ``json``: a JSON array of such objects (or of plain strings), or one object; read whole.
- ``text``: the whole input is ONE document, so a value on the line after its label ("Password:" then the password)
  is seen in context; read whole.
- ``lines``: one record per line (the line ending is not part of the text, a blank line is an empty record); streams.
  The redacted text keeps each line's own ending ("\r\n" stays "\r\n", a last line without one gets none).
- ``auto``: by suffix (.jsonl/.ndjson, .json, .txt), else JSONL when the first line is a JSON object, else text.

A UTF-8 byte order mark (which Notepad and Excel write first) is dropped before JSON, where it cannot be content;
``text`` and ``lines`` keep every character, so offsets count it.

Output records:

- detection only: the input fields, the text under its field name, and ``entities`` (with ``word``);
- redaction: the input fields WITHOUT the text field, ``redacted_text``, and ``entities`` (offsets in both texts
  and the replacement, but never the original ``word``: the output carries no detected value);
- a record that fails: ``{"line": N, "error": "..."}``, where N is the input line (``jsonl``, ``lines``), the
  element of the array (``json``, from 1) or 1 (``text``), so every input record is in the output exactly once.
"""

import dataclasses
import json
import os
from collections import Counter

from tqdm import tqdm

FORMATS = ("auto", "jsonl", "json", "text", "lines")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
ENTITY_FIELDS_DETECT = ("type", "tier", "score", "start", "end", "word")
ENTITY_FIELDS_REDACT = ("type", "tier", "score", "start", "end", "new_start", "new_end", "replacement")
MAX_CONSECUTIVE_DETECTOR_FAILURES = 20
BOM = "\ufeff"  # the UTF-8 byte order mark, decoded


@dataclasses.dataclass
class StreamSummary:
    """What a run read and wrote. ``lines`` counts input units: lines (``jsonl``, ``lines``), array elements
    (``json``) or the one document (``text``)."""

    fmt: str = "jsonl"
    lines: int = 0
    records: int = 0
    failed: int = 0
    blank_skipped: int = 0
    entities: int = 0
    dropped: Counter = dataclasses.field(default_factory=Counter)
    overwritten_fields: Counter = dataclasses.field(default_factory=Counter)
    failures: Counter = dataclasses.field(default_factory=Counter)  # failed records by reason

    def describe(self):
        unit = {"json": "array elements", "text": "document"}.get(self.fmt, "lines")
        parts = [f"{self.records} records written from {self.lines} {unit} ({self.fmt}), {self.entities} entities"]
        if self.failed:
            reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.failures.items()))
            parts.append(f"{self.failed} record(s) FAILED ({reasons}; see the messages above)")
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
    reason: "str | None" = None  # the kind of failure, counted in the summary ("invalid UTF-8", ...)
    ending: str = "\n"  # the line ending the record had in its input (`lines`), written back after its text


class StreamFailure(RuntimeError):
    pass


def sniff_format(path, first_line):
    """The format of ``auto`` input: by file suffix, else JSONL when the first line is a JSON object, else text."""
    suffix = os.path.splitext(path or "")[1].lower() if path and path != "-" else ""
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix == ".json":
        return "json"
    if suffix == ".txt":
        return "text"
    try:
        return "jsonl" if isinstance(json.loads(first_line), dict) else "text"
    except (ValueError, UnicodeDecodeError):
        return "text"


def _decode(raw, line_no, what):
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as err:
        return None, Record(line_no, error=f"invalid UTF-8 at byte {err.start} of the {what} ({err.reason}); skipped",
                            reason="invalid UTF-8")


def object_record(obj, line_no, text_field):
    """A Record for one parsed JSON value: an object holding the text field (or, in a JSON array, a string)."""
    if isinstance(obj, str):
        return Record(line_no, text=obj)
    if not isinstance(obj, dict):
        return Record(line_no, error=f"a record must be an object holding the text (in a JSON array also a "
                                     f"string), got {type(obj).__name__}; skipped", reason="not an object")
    if text_field not in obj:
        return Record(line_no, fields=obj, error=f"no {text_field!r} field (use --text-field); skipped",
                      reason="no text field")
    text = obj[text_field]
    if not isinstance(text, str):
        return Record(line_no, fields=obj, error=f"field {text_field!r} must be a string, got {type(text).__name__}; "
                      "skipped", reason="text is not a string")
    return Record(line_no, text=text, fields=obj)


def parse_line(raw, line_no, fmt, text_field):
    """A Record for one raw input line (bytes, newline included or not) of ``jsonl`` or ``lines`` input; None for
    a blank JSONL line."""
    body = raw.removesuffix(b"\n")
    body = body.removesuffix(b"\r")
    ending = raw[len(body):].decode("ascii")
    decoded, failed = _decode(body, line_no, "line")
    if failed:
        failed.ending = ending
        return failed
    if fmt == "lines":
        return Record(line_no, text=decoded, ending=ending)
    if not decoded.strip():
        return None
    try:
        obj = json.loads(decoded.removeprefix(BOM))
    except ValueError as err:
        return Record(line_no, error=f"not valid JSON ({err}); skipped", reason="not valid JSON")
    if isinstance(obj, str):  # a JSONL line is an object; a bare string is the wrong shape, not a text
        return Record(line_no, error="a JSONL line must be an object, got str; skipped", reason="not an object")
    return object_record(obj, line_no, text_field)


def whole_input_records(content, fmt, text_field):
    """Records of ``json`` or ``text`` input read whole (bytes)."""
    decoded, failed = _decode(content, 1, "input")
    if failed:
        return [failed]
    if fmt == "text":
        return [Record(1, text=decoded)]
    try:
        data = json.loads(decoded.removeprefix(BOM))
    except ValueError as err:
        return [Record(1, error=f"not valid JSON ({err}); skipped", reason="not valid JSON")]
    if isinstance(data, list):
        return [object_record(obj, i, text_field) for i, obj in enumerate(data, start=1)]
    return [object_record(data, 1, text_field)]


def redact_stream(in_stream, out_stream, redactor, fmt="auto", text_field="text", detect_only=False, batch_size=8,
                  path=None, progress=False, on_error=None, text_out=None):
    """Redact (or only detect in) every record of a binary input stream, writing JSONL bytes to ``out_stream`` and,
    when ``text_out`` is given, the redacted text to it (a document as it is, ``lines`` one per line).
    ``on_error(line, message)`` is called for each failed record. Returns a StreamSummary."""
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    summary = StreamSummary()
    total = os.fstat(in_stream.fileno()).st_size if progress and path not in (None, "-") else None
    bar = tqdm(total=total, unit="B", unit_scale=True, disable=not progress, desc="redact", leave=False)
    pending = []
    sink = _Sink(out_stream, text_out, redactor, text_field, detect_only, summary, on_error)
    try:
        lines = iter(in_stream)
        first = next(lines, None)
        if fmt == "auto":
            fmt = sniff_format(path, (first or b"").strip())
        summary.fmt = fmt
        if fmt in ("json", "text"):  # read whole: an empty .txt is one empty document, an empty .json invalid JSON
            content = (first or b"") + in_stream.read()
            bar.update(len(content))
            records = whole_input_records(content, fmt, text_field)
            summary.lines = len(records)
            for start in range(0, len(records), batch_size):
                sink.flush(records[start:start + batch_size], fmt)
            return summary
        if first is None:
            return summary
        for line_no, raw in enumerate(_chain(first, lines), start=1):
            summary.lines += 1
            bar.update(len(raw))
            record = parse_line(raw, line_no, fmt, text_field)
            if record is None:
                summary.blank_skipped += 1
                continue
            pending.append(record)
            if len(pending) >= batch_size:
                sink.flush(pending, fmt)
                pending = []
        sink.flush(pending, fmt)
    finally:
        bar.close()
    return summary


def _chain(first, rest):
    yield first
    yield from rest


class _Sink:
    """Runs the detector on a batch of records and writes one output record per input record, in order."""

    def __init__(self, out_stream, text_out, redactor, text_field, detect_only, summary, on_error):
        self.out_stream, self.text_out, self.redactor = out_stream, text_out, redactor
        self.text_field, self.detect_only, self.summary, self.on_error = text_field, detect_only, summary, on_error
        self.state = {"consecutive_failures": 0}

    def flush(self, records, fmt):
        outputs = process_records(records, self.redactor, self.text_field, self.detect_only, self.summary, self.state,
                                  self.on_error)
        for record, (out, text) in zip(records, outputs):
            self.out_stream.write(_dumps(out) + b"\n")
            if self.text_out is not None:
                ending = record.ending if fmt == "lines" else "" if fmt == "text" else "\n"
                self.text_out.write((text + ending).encode("utf-8", "surrogatepass"))
        self.out_stream.flush()


def process_records(records, redactor, text_field, detect_only, summary, state, on_error=None):
    """(output record, redacted text or "") for each Record, in order: the one path from records to output records,
    for the command line and the corpus engines. A failed record becomes ``{"line": N, "error": ...}`` (with its
    ``id`` when the input had one), counted in `summary.failed` and its reason in `summary.failures`."""
    good = [r for r in records if r.error is None]
    results = _run(redactor, good, detect_only, state)
    out = []
    for record in records:
        result = results.get(record.line)
        if record.error is not None or isinstance(result, str):
            message = record.error or result
            summary.failed += 1
            summary.failures[record.reason or "detector failed"] += 1
            if on_error:
                on_error(record.line, message)
            failed = {"line": record.line, "error": message}
            if "id" in record.fields:
                failed["id"] = record.fields["id"]
            out.append((failed, ""))
        else:
            out.append((_output_record(record, result, text_field, detect_only, summary), result.redacted_text or ""))
        summary.records += 1
    return out


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
