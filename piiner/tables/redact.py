"""Redacting a table cell by cell with its column decisions (`columns`), streaming in batches of rows.

A cell of a ``type`` column is replaced whole as one value of that type; a cell of a ``text`` column is read as
"<column>: <cell>" and each entity inside it replaced; a ``none`` column and every cell without PII are written as
they were. Rows keep their order and columns; a row that cannot be read is a counted reject with its row number.
"""

import dataclasses
import json
from collections import Counter

from piiner.hub.pii_schema import TIER_OF

from .columns import analyse_columns, check_decision, context_text
from .formats import Reject, TableWriter, leaves, map_leaves


class TableError(ValueError):
    """Settings that do not fit the table (a column named that it lacks, a report of another schema)."""


@dataclasses.dataclass
class TableSummary:
    rows: int = 0
    written: int = 0
    rejects: Counter = dataclasses.field(default_factory=Counter)
    cells_redacted: Counter = dataclasses.field(default_factory=Counter)
    entities: int = 0

    def describe(self):
        parts = [f"{self.written} of {self.rows} rows written, {sum(self.cells_redacted.values())} cells redacted"]
        if self.rejects:
            parts.append(f"{sum(self.rejects.values())} rows REJECTED (" +
                         ", ".join(f"{k} {v}" for k, v in sorted(self.rejects.items())) + ")")
        return "; ".join(parts)


def apply_overrides(report, columns=None, skip_columns=(), column_types=None):
    """The report with `--columns` (only these are redacted), `--skip-columns` (left as they are) and
    `--column-type COL=TYPE|text|none` applied; a column the table lacks is an error naming it."""
    known = report.by_column()
    named = list(columns or []) + list(skip_columns or []) + list((column_types or {}).keys())
    missing = [c for c in named if c not in known]
    if missing:
        raise TableError(f"no column {missing[0]!r} in the table (its columns: {', '.join(known)})")
    for decision in report.columns:
        forced = (column_types or {}).get(decision.column)
        if forced is not None:
            kind, pii_type = ("type", forced) if forced not in ("text", "none") else (forced, None)
            check_decision(decision.column, kind, pii_type)
            decision.decision, decision.type, decision.reason = kind, pii_type, "set by --column-type"
        if (columns and decision.column not in columns) or decision.column in (skip_columns or ()):
            decision.decision, decision.reason = "none", "left as it is (--columns / --skip-columns)"
    return report


class CellRedactor:
    """Redacts rows with a `Redactor` (its mode, key, type and tier filters) and a `ColumnReport`."""

    def __init__(self, redactor, report):
        self.redactor, self.decisions = redactor, report.by_column()

    def _typed(self, column, value, summary):
        decision = self.decisions[column]
        text = str(value)
        stripped = text.strip()
        entity = {"type": decision.type, "tier": TIER_OF.get(decision.type), "score": 1.0}
        if not stripped or self.redactor.filter_reason(entity) is not None:
            return value
        start = text.index(stripped)
        summary.cells_redacted[column] += 1
        summary.entities += 1
        return text[:start] + self.redactor.replacement(stripped, decision.type, text) + text[start + len(stripped):]

    def redact_rows(self, rows, summary):
        """The rows redacted, in order."""
        scans = []  # (row index, column, value) of the text cells to read
        for i, row in enumerate(rows):
            scans += [(i, column, value) for column, value in leaves(row)
                      if self._kind(column) == "text" and isinstance(value, str) and value.strip()]
        contexts = [context_text(column, value) for _, column, value in scans]
        results = self.redactor.detect([text for text, _ in contexts]) if scans else []
        replaced = {}
        for (i, column, value), (_, prefix), result in zip(scans, contexts, results):
            entities = []
            for e in result.entities:
                if e["end"] <= prefix:
                    continue  # a finding inside the column's name
                start, end = max(e["start"], prefix) - prefix, e["end"] - prefix
                entities.append({**e, "start": start, "end": end, "word": value[start:end]})
            if entities:
                replaced[(i, column, value)] = self.redactor.apply(value, entities)
                summary.cells_redacted[column] += 1
                summary.entities += len(entities)
        out = []
        for i, row in enumerate(rows):
            def change(column, value, i=i):
                kind = self._kind(column)
                if kind == "type" and value is not None:
                    return self._typed(column, value, summary)
                return replaced.get((i, column, value), value) if kind == "text" else value
            out.append(map_leaves(row, change))
        return out

    def _kind(self, column):
        decision = self.decisions.get(column)
        return decision.decision if decision else "text"  # a column the sample never saw is scanned


def redact_table(table, redactor, out_stream, sample_rows=500, report=None, columns=None, skip_columns=(),
                 column_types=None, rejects_stream=None, progress=False):
    """Redact `table` (a `formats.Table`) into `out_stream` in its own format. Returns `(ColumnReport,
    TableSummary)`. `report` (a `ColumnReport`) skips the analysis; otherwise the first `sample_rows` rows are
    analysed. Rejected rows are counted and, when `rejects_stream` is given, written there as JSON lines
    {"row", "reason"} (never their content)."""
    summary = TableSummary()
    batches = table.batches()
    buffered, sample = [], []
    if report is None:
        for batch in batches:
            buffered.append(batch)
            sample.extend(row for _, row in batch if isinstance(row, dict))
            if len(sample) >= sample_rows:
                break
        sample = sample[:sample_rows]
        report = analyse_columns(sample, lambda texts: [r.entities for r in redactor.detect(texts)],
                                 columns=table.columns if table.fmt in ("csv", "tsv") else None,
                                 source=str(table.path))
    else:
        known = {d.column for d in report.columns}
        if table.fmt in ("csv", "tsv", "parquet") and set(table.columns) - known:
            raise TableError(f"the report has no decision for the columns {sorted(set(table.columns) - known)} "
                             "of this table: analyse it again (no --use-report) or give a report of its schema")
    report = apply_overrides(report, columns, skip_columns, column_types)
    typed_non_text = [d.column for d in report.columns if d.decision == "type" and table.fmt == "parquet"]
    writer = TableWriter(out_stream, table, as_text=_non_string_columns(table, typed_non_text))
    cells = CellRedactor(redactor, report)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(unit=" rows", desc="redacting")

    def run(batch):
        rows = [row for _, row in batch if isinstance(row, dict)]
        for number, row in batch:
            if isinstance(row, Reject):
                summary.rejects[row.kind] += 1
                if rejects_stream is not None:
                    rejects_stream.write((json.dumps({"row": row.row, "reason": row.reason}) + "\n").encode())
        summary.rows += len(batch)
        writer.write(cells.redact_rows(rows, summary))
        summary.written += len(rows)
        if bar is not None:
            bar.update(len(batch))

    for batch in buffered:
        run(batch)
    for batch in batches:
        run(batch)
    writer.close()
    if bar is not None:
        bar.close()
    return report, summary


def _non_string_columns(table, columns):
    if table.fmt != "parquet" or not columns:
        return []
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.ParquetFile(table.path).schema_arrow
    out = []
    for column in columns:
        if column not in schema.names:
            raise TableError(f"column {column!r} is a field inside a nested Parquet column; redact its parent "
                             "column with --column-type or skip it with --skip-columns")
        if not pa.types.is_string(schema.field(column).type) and not pa.types.is_large_string(
                schema.field(column).type):
            out.append(column)
    return out
