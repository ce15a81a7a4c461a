"""Reading and writing tables in batches of rows: CSV and TSV, JSON records (JSONL or a JSON array, nested fields
read as dotted columns) and Parquet (row group by row group).

A row is a dict from column to value. A CSV row that cannot be a row of the table (a field count other than the
header's, a quote the reader cannot close, a cell over the size limit) becomes a `Reject` with its row number and
reason, so the caller counts it; nothing is skipped silently.
"""

import csv
import dataclasses
import io
import json
import os

TABLE_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl",
                  ".json": "json"}
MAX_CELL_CHARS = 100_000


class TableReadError(ValueError):
    """The file cannot be read as a table at all (encoding, header, format); the message names the file."""


@dataclasses.dataclass
class Reject:
    row: int  # 1-based data row (the header is row 0), or the line of a JSON record
    kind: str  # what a summary counts it under ("ragged row")
    detail: str = ""  # what exactly is wrong

    @property
    def reason(self):
        return f"{self.kind}: {self.detail}" if self.detail else self.kind


def table_format(path, given=None):
    if given:
        return given
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in TABLE_SUFFIXES:
        raise TableReadError(f"{path}: not a table file (.csv, .tsv, .jsonl, .json, .parquet)")
    return TABLE_SUFFIXES[suffix]


# -- JSON records: nested objects as dotted columns -----------------------------------------------------------

def leaves(record, prefix=""):
    """(column, value) for every leaf of a JSON record: nested objects as "a.b", list items as "a[]"."""
    if isinstance(record, dict):
        for key, value in record.items():
            yield from leaves(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(record, list):
        for value in record:
            yield from leaves(value, f"{prefix}[]")
    else:
        yield prefix, record


def map_leaves(record, change, prefix=""):
    """A copy of `record` with each leaf replaced by `change(column, value)`, keys and order kept."""
    if isinstance(record, dict):
        return {key: map_leaves(value, change, f"{prefix}.{key}" if prefix else str(key))
                for key, value in record.items()}
    if isinstance(record, list):
        return [map_leaves(value, change, f"{prefix}[]") for value in record]
    return change(prefix, record)


# -- readers ----------------------------------------------------------------------------------------------------

class Table:
    """One input table: `columns` (in order), and `batches()` yielding lists of `(row_number, row or Reject)`."""

    def __init__(self, path, fmt=None, encoding="utf-8-sig", batch_rows=512, max_cell_chars=MAX_CELL_CHARS,
                 row_groups=None):
        self.path, self.fmt, self.encoding = path, table_format(path, fmt), encoding
        self.batch_rows, self.max_cell_chars = batch_rows, max_cell_chars
        self.row_groups = None if row_groups is None else list(row_groups)  # Parquet: read these groups only
        self.columns = self._columns()

    def _text(self):
        try:
            return open(self.path, encoding=self.encoding, newline="")
        except LookupError:
            raise TableReadError(f"unknown encoding {self.encoding!r}") from None

    def _columns(self):
        if self.fmt in ("csv", "tsv"):
            with self._text() as f:
                try:
                    header = next(csv.reader(f, delimiter=self.delimiter, strict=True), None)
                except UnicodeDecodeError as error:
                    raise TableReadError(f"{self.path}: not {self.encoding} text ({error.reason} at byte "
                                         f"{error.start}); give its encoding with --encoding") from None
                except csv.Error as error:
                    raise TableReadError(f"{self.path}: the header row cannot be read ({error})") from None
            if not header or not any(h.strip() for h in header):
                raise TableReadError(f"{self.path}: no header row (the first row names the columns)")
            if len(set(header)) != len(header):
                twice = sorted({h for h in header if header.count(h) > 1})
                raise TableReadError(f"{self.path}: the header names a column twice: {twice}")
            return header
        if self.fmt == "parquet":
            import pyarrow.parquet as pq

            try:
                return list(pq.ParquetFile(self.path).schema_arrow.names)
            except Exception as error:  # noqa: BLE001  (pyarrow raises several kinds for a file that is not Parquet)
                raise TableReadError(f"{self.path}: not a Parquet file ({error})") from None
        columns = {}
        for _, row in self._records():
            if isinstance(row, dict):
                columns.update(dict.fromkeys(column for column, _ in leaves(row)))
        return list(columns)

    @property
    def delimiter(self):
        return "\t" if self.fmt == "tsv" else ","

    def _records(self):
        if self.fmt == "json":
            with self._text() as f:
                try:
                    data = json.load(f)
                except (json.JSONDecodeError, UnicodeDecodeError) as error:
                    raise TableReadError(f"{self.path}: not JSON ({error})") from None
            data = data if isinstance(data, list) else [data]
            for number, item in enumerate(data, 1):
                yield number, item if isinstance(item, dict) else Reject(number, "not a JSON object")
            return
        with self._text() as f:
            number = 0
            while True:
                try:
                    line = f.readline()
                except UnicodeDecodeError as error:
                    raise TableReadError(f"{self.path}: not {self.encoding} text after line {number} "
                                         f"({error.reason}); give its encoding with --encoding") from None
                if not line:
                    return
                number += 1
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except json.JSONDecodeError as error:
                    yield number, Reject(number, "not JSON", error.msg)
                    continue
                yield number, item if isinstance(item, dict) else Reject(number, "not a JSON object")

    def _csv_rows(self):
        with self._text() as f:
            reader = csv.reader(f, delimiter=self.delimiter, strict=True)
            try:
                next(reader)
                while True:
                    try:
                        fields = next(reader)
                    except StopIteration:
                        return
                    except csv.Error as error:
                        yield reader.line_num, Reject(reader.line_num - 1, "bad CSV", str(error))
                        continue
                    number = reader.line_num - 1  # data rows from 1: the header is row 0
                    if not fields:
                        continue  # a blank line is no row
                    if len(fields) != len(self.columns):
                        yield number, Reject(number, "ragged row",
                                                     f"{len(fields)} fields, the header has {len(self.columns)}")
                        continue
                    yield number, dict(zip(self.columns, fields))
            except UnicodeDecodeError as error:
                raise TableReadError(f"{self.path}: not {self.encoding} text ({error.reason}); give its encoding "
                                     "with --encoding") from None

    def _parquet_rows(self):
        import pyarrow.parquet as pq

        parquet = pq.ParquetFile(self.path)
        groups = self.row_groups
        # Rows are numbered in the whole file, so a reject names the same row whichever shard read it.
        number = sum(parquet.metadata.row_group(g).num_rows for g in range(groups[0])) if groups else 0
        for batch in parquet.iter_batches(batch_size=self.batch_rows, row_groups=groups):
            for row in batch.to_pylist():
                number += 1
                yield number, row

    def rows(self):
        source = {"csv": self._csv_rows, "tsv": self._csv_rows, "parquet": self._parquet_rows}.get(self.fmt,
                                                                                                   self._records)
        for number, row in source():
            if isinstance(row, dict):
                long = next((c for c, v in leaves(row) if isinstance(v, str) and len(v) > self.max_cell_chars), None)
                if long is not None:
                    row = Reject(number, "cell over the size limit",
                                 f"column {long!r} holds more than {self.max_cell_chars:,} characters")
            yield number, row

    def batches(self):
        batch = []
        for item in self.rows():
            batch.append(item)
            if len(batch) == self.batch_rows:
                yield batch
                batch = []
        if batch:
            yield batch


# -- writers ----------------------------------------------------------------------------------------------------

class TableWriter:
    """Writes rows in the input's format to a binary stream; `schema` (Parquet) is the input's, with the columns
    named in `as_text` turned into strings (a redacted value is text)."""

    def __init__(self, stream, table, as_text=()):
        self.stream, self.table, self.fmt = stream, table, table.fmt
        self.count = 0
        if self.fmt in ("csv", "tsv"):
            self.text = io.TextIOWrapper(stream, encoding="utf-8", newline="", write_through=True)
            self.csv = csv.writer(self.text, delimiter=table.delimiter, lineterminator="\n")
            self.csv.writerow(table.columns)
        elif self.fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            schema = pq.ParquetFile(table.path).schema_arrow
            for name in as_text:
                index = schema.get_field_index(name)
                schema = schema.set(index, pa.field(name, pa.string()))
            self.schema = schema
            self.writer = pq.ParquetWriter(stream, schema)
        elif self.fmt == "json":
            self.items = []

    def write(self, rows):
        self.count += len(rows)
        if self.fmt in ("csv", "tsv"):
            self.csv.writerows([[row[c] for c in self.table.columns] for row in rows])
        elif self.fmt == "parquet":
            import pyarrow as pa

            if rows:
                self.writer.write_table(pa.Table.from_pylist(rows, schema=self.schema))
        elif self.fmt == "json":
            self.items.extend(rows)
        else:
            self.stream.write(b"".join(json.dumps(row, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"
                                       for row in rows))

    def close(self):
        if self.fmt in ("csv", "tsv"):
            self.text.flush()
            self.text.detach()
        elif self.fmt == "parquet":
            self.writer.close()
        elif self.fmt == "json":
            self.stream.write(json.dumps(self.items, ensure_ascii=False, indent=1).encode("utf-8", "surrogatepass"))
