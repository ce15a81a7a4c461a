"""A whole corpus job: plan the shards, check the output folder, run what is not done on an engine, add up.

`job` is one shard's work, `engines` where shards run (this machine or Ray); this module puts them together, so
neither imports the other's caller.
"""

import dataclasses
import json
import os
import secrets
from collections import Counter

from piiner.deid.redact import KEYED_MODES
from piiner.snapshot import check_model_path

from . import engines
from .job import Job, check_output_folder, pending
from .shards import plan_shards, plan_table_shards


def redact_corpus(source, output, spec, engine="datasets", num_proc=1, text_field="text", detect_only=False,
                  rows_per_shard=50_000, output_format="jsonl", address=None, num_gpus=0, tables=False,
                  sample_rows=500, column_report=None):
    """Redact (or, with `detect_only`, scan) every record of `source` into `output`; returns the job's summary.

    Args:
        source: a folder or file of JSONL/JSON/Parquet/text files, a `save_to_disk` folder, or a `datasets.Dataset`.
        spec (`RedactorSpec`): the model (or regex detector) and the redaction settings each worker builds.
        engine: "datasets" (worker processes here) or "ray" (Ray Data; `address` of the cluster, "auto" to join
            the one this machine belongs to, None for a local instance).
        num_proc: worker processes, or Ray actors.
        num_gpus: GPUs per Ray actor (0 on a CPU cluster); with GPUs and no `spec.device`, the model runs on the
            actor's GPU ("cuda"), not on its CPU.
        tables: read `source` as a folder of CSV, TSV and Parquet tables: each redacted column by column into a
            table of its own format (piiner/tables), a big Parquet file cut by row groups. The columns of each schema
            are decided once, here, from the first `sample_rows` rows of its first file (or taken from
            `column_report`, a `ColumnReport`), and written to column_reports.json.
    """
    if output_format not in ("jsonl", "parquet"):
        raise ValueError(f"output_format must be jsonl or parquet, got {output_format!r}")
    if isinstance(num_proc, bool) or not isinstance(num_proc, int) or num_proc < 1:
        raise ValueError(f"num_proc must be a whole number of at least 1, got {num_proc!r}")
    if spec.mode in KEYED_MODES and spec.key is None:  # one key for every worker of this run, not one each
        spec = dataclasses.replace(spec, key=secrets.token_bytes(32))
    if num_gpus and spec.device is None and spec.detector == "model":
        spec = dataclasses.replace(spec, device="cuda")
    if spec.detector == "model":
        check_model_path(spec.model)  # a typo named here, not by each worker or Ray actor that fails to load it
    if tables:
        if detect_only:
            raise ValueError("tables are redacted; detect_only reads text records")
        shards, unread = plan_table_shards(source, rows_per_shard)
        check_output_folder(os.fspath(output), source)
        reports = column_reports(shards, spec, sample_rows, column_report)
        job = Job(os.fspath(output), spec, column_reports=tuple(reports.items()))
        os.makedirs(job.output, exist_ok=True)
        with open(os.path.join(job.output, "column_reports.json"), "w", encoding="utf-8") as f:
            json.dump([json.loads(report) for report in reports.values()], f, indent=1, ensure_ascii=False)
    else:
        job = Job(os.fspath(output), spec, text_field, detect_only, output_format)
        shards, unread = plan_shards(source, rows_per_shard)
        check_output_folder(job.output, source)
    todo = pending(job, shards)
    if todo and engine == "datasets" and num_proc <= 1:
        spec.cached()  # the shards run in this process: a model that does not load fails once, before any output
    os.makedirs(os.path.join(job.output, "_done"), exist_ok=True)  # first: marks the folder as this job's
    if todo:
        if engine == "datasets":
            engines.run_local(job, todo, num_proc)
        elif engine == "ray":
            engines.run_ray(job, todo, num_proc, address, num_gpus)
        else:
            raise ValueError(f"engine must be 'datasets' or 'ray', got {engine!r}")
    return write_summary(job, shards, skipped=len(shards) - len(todo), unread=unread)


def column_reports(shards, spec, sample_rows, given=None):
    """{columns as JSON: report as JSON} for each schema among the shards' files: `given` where it decides every
    column of the schema, else decided from the first `sample_rows` rows of the schema's first file."""
    from piiner.tables import analyse_columns
    from piiner.tables.formats import Table

    reports = {}
    for path in dict.fromkeys(shard.path for shard in shards):
        table = Table(path)
        key = json.dumps(list(table.columns))
        if key in reports:
            continue
        if given is not None and set(table.columns) <= {d.column for d in given.columns}:
            reports[key] = json.dumps(given.to_json())
            continue
        sample = []
        for _, row in table.rows():
            if isinstance(row, dict):
                sample.append(row)
                if len(sample) >= sample_rows:
                    break
        report = analyse_columns(sample, lambda texts: [r.entities for r in spec.cached().detect(texts)],
                                 columns=table.columns, source=path)
        reports[key] = json.dumps(report.to_json())
    return reports


def write_summary(job, shards, skipped=0, unread=None):
    """summary.json: the shards' counts added up, failures by reason, and the input folder's files not read (by
    reason, with the first few named)."""
    total = {"shards": len(shards), "shards_skipped_as_done": skipped, "records": 0, "failed": 0, "entities": 0,
             "blank_lines_skipped": 0}
    if unread:
        total["files_not_read"] = {reason: len(paths) for reason, paths in sorted(unread.items())}
        total["files_not_read_first"] = sorted(p for paths in unread.values() for p in paths)[:5]
    failures = Counter()
    for shard in shards:
        with open(os.path.join(job.output, "_done", f"{shard.name}.json")) as f:
            counts = json.load(f)
        for key in ("records", "failed", "entities", "blank_lines_skipped"):
            total[key] += counts.get(key, 0)  # a marker from before blank lines were counted has none
        failures.update(counts["failures"])
    total["failures"] = dict(sorted(failures.items()))
    with open(os.path.join(job.output, "summary.json"), "w") as f:
        json.dump(total, f, indent=1)
    return total
