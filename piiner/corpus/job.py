"""One redaction job over a corpus: shards run by an engine, written whole or not at all, restartable.

Output folder:

- ``part-NNNNN.jsonl`` (or ``.parquet``): one output record per input record of shard NNNNN, in input order, the
  records `piiner-redact` writes (a failed one as ``{"line", "error", "id"?}``);
- ``rejects/part-NNNNN.jsonl``: the failed records of the shard, with their reason;
- ``_done/part-NNNNN.json``: the shard's counts and settings, written last: a shard with one is finished, and a job
  started again skips it (a shard half-written when the job was killed is written again from the start);
- ``summary.json``: the counts of the whole job, failures by reason.

The folder must lie outside the input and be new, empty or a job's own (``_done/`` is made first); a job started
again over other input, cut into shards differently or with other settings (model, types, mode, key, ...), is
refused rather than skipping shards it never ran or mixing two kinds of output. In mode surrogate or hash without a
key, one random key serves every worker of the run (so a value gets one replacement across the corpus), and a run
stopped before its end cannot be finished by another.

Engines: ``datasets`` runs shards in `num_proc` worker processes on this machine, each loading the model once;
``ray`` runs the shard list through Ray Data (`map_batches` over an actor pool of `num_proc` actors, each loading
the model once for the whole job and running shards as the local workers do), so it runs unchanged on a cluster
whose workers see the paths.
"""

import ctypes
import dataclasses
import json
import os
from collections import Counter

from piiner.deid.redact import KEYED_MODES
from piiner.deid.streaming import StreamSummary, process_records
from piiner.deid.surrogates import keyed_digest

from .shards import CorpusError, dumps, read_shard

_REDACTORS = {}  # one per worker process, built on first use


@dataclasses.dataclass(frozen=True)
class RedactorSpec:
    """How a worker builds its Redactor (picklable, so it travels to processes and Ray actors)."""

    model: str | None = None
    detector: str = "model"  # or "regex"
    mode: str = "placeholder"
    types: tuple | None = None
    min_tier: int | None = None
    thresholds: tuple = ()  # ((tier, score), ...)
    key: str | None = None
    batch_size: int = 16
    device: str | None = None
    evidence: str | None = None  # recognizers and lists as JSON (`snapshot.load_evidence`), added to the model's

    def build(self):
        from piiner.deid.redact import Redactor

        keep_heap_flat()  # every engine builds a worker's redactor here, once per process
        settings = dict(mode=self.mode, types=self.types, min_tier=self.min_tier,
                        tier_thresholds=dict(self.thresholds), key=self.key, batch_size=self.batch_size)
        if self.detector == "regex":
            from piiner.baselines.regex import RegexDetector

            return Redactor(RegexDetector(), **settings)
        evidence = json.loads(self.evidence) if self.evidence else None
        return Redactor.from_pretrained(self.model, device=self.device, pipeline_batch_size=self.batch_size,
                                        evidence=evidence, **settings)

    def settings(self):
        """What decides a record's output, not how fast it comes: a finished shard's done marker keeps it, and a job
        started again must match it. The key is kept as an HMAC fingerprint, never itself."""
        model = self.model if self.detector == "model" else None
        settings = {"detector": self.detector, "model": os.path.realpath(model) if model and os.path.isdir(model)
                    else model, "types": sorted(self.types) if self.types else None, "min_tier": self.min_tier,
                    "thresholds": sorted(self.thresholds), "mode": self.mode,
                    "evidence": json.loads(self.evidence) if self.evidence else None}
        if self.mode in KEYED_MODES:
            key = self.key.encode("utf-8") if isinstance(self.key, str) else self.key
            settings["key"] = keyed_digest(key, "corpus job settings").hex()[:16] if key else None
        return settings

    def cached(self):
        if self not in _REDACTORS:
            _REDACTORS[self] = self.build()
        return _REDACTORS[self]


def keep_heap_flat():
    """Fix glibc's mmap threshold at its initial 128 KiB; returns whether it was set (False off glibc).

    glibc raises the threshold each time a large block is freed, so later tensor-sized blocks come from the heap,
    where small long-lived objects between them keep the freed pages resident: a worker's memory then climbs in
    steps with the length of the corpus (benchmarks/bench_corpus.py measures it). Blocks over the threshold are
    mapped and unmapped, and their memory goes back to the system when freed."""
    try:
        libc = ctypes.CDLL(None)
        return libc.mallopt(-3, 128 * 1024) == 1  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        return False


@dataclasses.dataclass(frozen=True)
class Job:
    output: str
    spec: RedactorSpec
    text_field: str = "text"
    detect_only: bool = False
    output_format: str = "jsonl"
    # A job over tables: the column report of each schema, as ((columns as JSON, report as JSON), ...), decided
    # once by the driver so every shard of a schema redacts the same columns the same way.
    column_reports: tuple = ()

    def settings(self):
        """`RedactorSpec.settings` and how records are read and written (JSON-shaped, as a done marker holds them);
        detection alone leaves out the redaction mode and key."""
        settings = dict(self.spec.settings(), text_field=self.text_field, detect_only=self.detect_only,
                        output_format=self.output_format)
        if self.column_reports:
            decisions = [[d["column"], d["decision"], d["type"]] for _, report in self.column_reports
                         for d in json.loads(report)["columns"]]
            settings = dict(self.spec.settings(), column_decisions=decisions)
        if self.detect_only:
            settings.pop("mode"), settings.pop("key", None)
        return json.loads(json.dumps(settings))

    def column_report(self, columns):
        from piiner.tables import ColumnReport

        reports = dict(self.column_reports)
        return ColumnReport.from_json(json.loads(reports[json.dumps(list(columns))]))


def run_shard(job, shard, redactor=None):
    """Redact one shard and write its files; returns its counts."""
    redactor = redactor or job.spec.cached()
    if shard.kind == "table":
        return run_table_shard(job, shard, redactor)
    records, blank_lines = read_shard(shard, job.text_field)
    outputs = []
    for start in range(0, len(records), job.spec.batch_size):
        outputs += redact_records(records[start:start + job.spec.batch_size], redactor, job)
    return write_shard(job, shard, outputs, blank_lines)


def run_table_shard(job, shard, redactor):
    """One table file (or a run of a Parquet file's row groups) redacted into the output folder as
    `part-NNNNN.<its name>` in its own format, with the job's column decisions for its schema; its rejected rows
    (number and reason) in rejects/; then its done marker."""
    import io

    from piiner.tables import redact_table
    from piiner.tables.formats import Table

    table = Table(shard.path, row_groups=None if shard.stop is None else range(shard.start, shard.stop))
    path = os.path.join(job.output, f"{shard.name}.{os.path.basename(shard.path)}")
    rejects = io.BytesIO()
    with open(f"{path}.partial", "wb") as f:
        _, summary = redact_table(table, redactor, f, report=job.column_report(table.columns),
                                  rejects_stream=rejects)
    os.replace(f"{path}.partial", path)
    _write_atomically(os.path.join(job.output, "rejects", f"{shard.name}.jsonl"), rejects.getvalue())
    return mark_done(job, shard, summary.written, summary.rejects, summary.entities)


def redact_records(records, redactor, job):
    """(output record, failure reason or None) per record, in order: what every engine runs on a batch."""
    outputs = process_records(records, redactor, job.text_field, job.detect_only, StreamSummary(),
                              {"consecutive_failures": 0})
    # A failed record's output is {"line", "error", "id"?}; every other one has "entities".
    return [(out, None if "entities" in out else record.reason or "detector failed")
            for (out, _), record in zip(outputs, records)]


def write_shard(job, shard, outputs, blank_lines=0):
    """A shard's output records, its rejects (the failed records with their reason) and, last, its done marker with
    its counts, each written to a temporary name and renamed; returns the counts."""
    rows = [out for out, _ in outputs]
    rejects = [dict(out, reason=reason) for out, reason in outputs if reason]
    write_rows(rows, os.path.join(job.output, f"{shard.name}.{job.output_format}"), job.output_format)
    write_rows(rejects, os.path.join(job.output, "rejects", f"{shard.name}.jsonl"), "jsonl")
    return mark_done(job, shard, len(rows), Counter(reason for _, reason in outputs if reason),
                     sum(len(out.get("entities", ())) for out, reason in outputs if not reason), blank_lines)


def mark_done(job, shard, records, failures, entities, blank_lines=0):
    """The shard's done marker, written last (after its outputs): its counts, input and settings; returns the
    counts."""
    counts = {"shard": shard.name, "input": os.path.realpath(shard.path), "rows": [shard.start, shard.stop],
              "settings": job.settings(), "records": records, "failed": sum(failures.values()),
              "failures": dict(failures), "entities": entities, "blank_lines_skipped": blank_lines}
    _write_atomically(os.path.join(job.output, "_done", f"{shard.name}.json"), json.dumps(counts).encode())
    return counts


def write_rows(rows, path, output_format):
    if output_format == "parquet":
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pa.Table.from_pylist(rows)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # fields whose type differs from row to row: one JSON column
            table = pa.Table.from_pylist([{"record": dumps(r)} for r in rows])
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        data = buffer.getvalue()
    else:
        data = "".join(dumps(r) + "\n" for r in rows).encode("utf-8", "surrogatepass")
    _write_atomically(path, data)


def _write_atomically(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.partial"
    with open(partial, "wb") as f:
        f.write(data)
    os.replace(partial, path)


def pending(job, shards):
    """The shards without a done marker. A marker left by a job over other input (another file there, or its rows
    cut into shards differently) is an error: skipping its shard would leave this job's records out."""
    todo, settings = [], job.settings()
    for shard in shards:
        marker = os.path.join(job.output, "_done", f"{shard.name}.json")
        if not os.path.exists(marker):
            todo.append(shard)
            continue
        with open(marker) as f:
            done = json.load(f)
        were = (os.path.realpath(done.get("input", "")), done.get("rows", [shard.start, shard.stop]))
        now = (os.path.realpath(shard.path), [shard.start, shard.stop])
        if were != now:
            raise CorpusError(f"{job.output} holds another job's output: its {shard.name} was {were[0]} rows "
                              f"{were[1]}, this job's is {now[0]} rows {now[1]}; give a new output folder (or the "
                              "same input and --rows-per-shard to finish that job)")
        _check_settings(job.output, shard, done.get("settings", settings), settings)
    return todo


def _check_settings(output, shard, were, now):
    """A finished shard written with other settings (model, types, mode, key, ...) is an error: finishing the job
    would mix two kinds of output. With no key given, each run draws its own, so a keyed job cannot be finished."""
    differ = sorted(name for name in were.keys() | now.keys() if were.get(name) != now.get(name))
    if not differ:
        return
    why = ", ".join(f"{name} {were.get(name)!r} then, {now.get(name)!r} now" for name in differ if name != "key")
    if "key" in differ and "key" in were and "key" in now:  # else the mode differs, and says it
        why = ", ".join(filter(None, [why, "another key (without --key-env each run draws a random one, so a job "
                                           "in mode surrogate or hash finishes only with the key it started with)"]))
    raise CorpusError(f"{output} was written with other settings: its {shard.name} has {why}; run again with "
                      "the settings it was started with, or give a new output folder")


def check_output_folder(output, source):
    """Refuse an output folder inside the input (a job started again would read its own output) or one holding
    files no job wrote (they could be overwritten)."""
    out = os.path.realpath(output)
    if isinstance(source, (str, os.PathLike)):
        inside = os.path.realpath(source)
        if out == inside or out.startswith(inside.rstrip(os.sep) + os.sep):
            raise CorpusError(f"output {output} is inside the input {os.fspath(source)}: a job started again would "
                              "read its own output as input; give a folder outside it")
    if os.path.isdir(out) and os.listdir(out) and not os.path.isdir(os.path.join(out, "_done")):
        raise CorpusError(f"output {output} holds files and no piiner-corpus output (no _done/ folder); give an "
                          "empty or new folder, so that nothing there is overwritten")
