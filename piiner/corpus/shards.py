"""A corpus as numbered shards, and a shard as records.

Input: a folder (or one file) of JSONL (.jsonl, .ndjson), JSON (.json), Parquet (.parquet) or text (.txt) files, a
folder written by `datasets`' `save_to_disk`, or a `datasets.Dataset`. Each file is a shard (a text file is one
document, its name its id); a file or dataset of more than `rows_per_shard` rows is cut into several. Records are
parsed as `piiner-redact` parses them, so a bad line or a non-string text is a failed record with its reason.
"""

import dataclasses
import json
import os

from piiner.deid.streaming import object_record, parse_line, whole_input_records

SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".parquet": "parquet", ".txt": "text"}


class CorpusError(ValueError):
    """An input that is not a corpus this job can read; the message says why."""


@dataclasses.dataclass(frozen=True)
class Shard:
    index: int
    kind: str  # jsonl, json, parquet, text, or dataset
    path: str  # the file, or the saved dataset folder
    start: int = 0  # rows [start, stop) of a file or dataset cut into several shards
    stop: int | None = None

    @property
    def name(self):
        return f"part-{self.index:05d}"


def plan_shards(source, rows_per_shard=50_000):
    """The shards of `source`: a path, or a `datasets.Dataset` (saved to a temporary folder is not needed: it is
    cut by rows and read back by the workers from its cache files); and, for a folder of files, {reason: [path, ...]}
    of the files under it that are not read, so that a job can say so ({} otherwise)."""
    if not isinstance(source, (str, os.PathLike)):
        return _dataset_shards(source, rows_per_shard), {}
    path = os.fspath(source)
    if _is_saved_dataset(path):
        import datasets

        return _dataset_shards(datasets.load_from_disk(path), rows_per_shard, path), {}
    files, unread = [path] if os.path.isfile(path) else [], {}
    for root, _, names in os.walk(path):  # nothing for a file
        for name in names:
            reason = _passed_over(name)
            if reason:
                unread.setdefault(reason, []).append(os.path.join(root, name))
            else:
                files.append(os.path.join(root, name))
    files.sort()
    if not os.path.exists(path):
        raise CorpusError(f"input {path} does not exist")
    if not files:
        raise CorpusError(f"{path} holds no {', '.join(SUFFIXES)} file")
    shards = []
    for file in files:
        kind = SUFFIXES.get(os.path.splitext(file)[1].lower())
        if kind is None:
            raise CorpusError(f"{file}: unsupported file type (use {', '.join(SUFFIXES)})")
        rows = _row_count(file, kind)
        for start in range(0, max(rows, 1), rows_per_shard) if kind in ("jsonl", "parquet") else [0]:
            stop = start + rows_per_shard if kind in ("jsonl", "parquet") else None
            shards.append(Shard(len(shards), kind, file, start, stop))
    return shards, {reason: sorted(paths) for reason, paths in unread.items()}


TABLE_SUFFIXES = (".csv", ".tsv", ".parquet")


def plan_table_shards(source, rows_per_shard=50_000):
    """The shards of a folder (or one file) of tables: a CSV or TSV file is one shard, a Parquet file one shard per
    run of whole row groups holding at least `rows_per_shard` rows (`start`, `stop`: row group indexes). Also
    {reason: [path, ...]} of the files not read."""
    path = os.fspath(source)
    if not os.path.exists(path):
        raise CorpusError(f"input {path} does not exist")
    files, unread = ([path] if os.path.isfile(path) else []), {}
    for root, _, names in os.walk(path):
        for name in names:
            if name.startswith((".", "_")):
                unread.setdefault("name starts with . or _", []).append(os.path.join(root, name))
            elif os.path.splitext(name)[1].lower() not in TABLE_SUFFIXES:
                unread.setdefault(f"not {'/'.join(TABLE_SUFFIXES)}", []).append(os.path.join(root, name))
            else:
                files.append(os.path.join(root, name))
    if os.path.isfile(path) and os.path.splitext(path)[1].lower() not in TABLE_SUFFIXES:
        raise CorpusError(f"{path}: not a table file ({', '.join(TABLE_SUFFIXES)})")
    if not files:
        raise CorpusError(f"{path} holds no {', '.join(TABLE_SUFFIXES)} file")
    shards = []
    for file in sorted(files):
        if not file.lower().endswith(".parquet"):
            shards.append(Shard(len(shards), "table", file))
            continue
        import pyarrow.parquet as pq

        metadata = pq.ParquetFile(file).metadata
        first, rows = 0, 0
        for group in range(metadata.num_row_groups):
            rows += metadata.row_group(group).num_rows
            if rows >= rows_per_shard or group == metadata.num_row_groups - 1:
                shards.append(Shard(len(shards), "table", file, first, group + 1))
                first, rows = group + 1, 0
        if metadata.num_row_groups == 0:
            shards.append(Shard(len(shards), "table", file, 0, 0))
    return shards, {reason: sorted(paths) for reason, paths in unread.items()}


def _is_saved_dataset(path):
    return os.path.isdir(path) and any(os.path.exists(os.path.join(path, m)) for m in ("dataset_info.json",
                                                                                      "state.json"))


def _passed_over(name):
    """Why a file of an input folder is not read (None: it is): hidden, or not a type the job reads."""
    if name.startswith((".", "_")):
        return "name starts with . or _"
    if os.path.splitext(name)[1].lower() not in SUFFIXES:
        return f"not {'/'.join(SUFFIXES)}"
    return None


def _dataset_shards(dataset, rows_per_shard, path=None):
    if path is None:
        files = [f["filename"] for f in getattr(dataset, "cache_files", [])]
        if not files:
            raise CorpusError("an in-memory datasets.Dataset has no cache files for the workers to read: "
                              "save_to_disk it, or give the folder")
        path = os.path.dirname(files[0])
    if len(dataset) == 0:
        raise CorpusError("the dataset has no rows")
    return [Shard(i, "dataset", path, start, start + rows_per_shard)
            for i, start in enumerate(range(0, len(dataset), rows_per_shard))]


def _row_count(file, kind):
    if kind == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(file).metadata.num_rows
    if kind == "jsonl":
        with open(file, "rb") as f:
            return sum(1 for _ in f)
    return 1


def read_shard(shard, text_field):
    """The shard's records, numbered from 1 within the shard (`Record.line`), and how many blank JSONL lines it
    skipped (no record, but counted, so that a file's lines add up)."""
    if shard.kind == "jsonl":
        records, blank = [], 0
        with open(shard.path, "rb") as f:
            for number, raw in enumerate(f):
                if number < shard.start:
                    continue
                if shard.stop is not None and number >= shard.stop:
                    break
                record = parse_line(raw, number + 1, "jsonl", text_field)
                if record is None:
                    blank += 1
                else:
                    records.append(record)
        return records, blank
    if shard.kind in ("json", "text"):
        with open(shard.path, "rb") as f:
            records = whole_input_records(f.read(), shard.kind, text_field)
        if shard.kind == "text":  # a document's id is its file name
            records = [dataclasses.replace(r, fields={"id": os.path.basename(shard.path)}) for r in records]
        return records, 0
    rows = _table_rows(shard)
    return [object_record(row, shard.start + i + 1, text_field) for i, row in enumerate(rows)], 0


def _table_rows(shard):
    if shard.kind == "parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(shard.path)
    else:
        import datasets

        table = datasets.load_from_disk(shard.path).data.table
    stop = table.num_rows if shard.stop is None else min(shard.stop, table.num_rows)
    return table.slice(shard.start, max(stop - shard.start, 0)).to_pylist()


def dumps(record):
    return json.dumps(record, ensure_ascii=False)
