"""The engines that run a job's shards: worker processes on this machine, or Ray Data."""

import concurrent.futures
import multiprocessing
import os

from .job import run_shard


def _start_worker(spec):
    spec.cached()  # the model loads once per worker, before its first shard


def _run_one(job, shard):
    return run_shard(job, shard)


def run_local(job, shards, num_proc):
    """Shards over `num_proc` worker processes (or this process for 1), each loading the model once."""
    if num_proc <= 1:
        for shard in shards:
            run_shard(job, shard)
        return
    # "spawn": a fresh interpreter per worker, never a fork of a process that holds torch threads.
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(num_proc, mp_context=context, initializer=_start_worker,
                                                initargs=(job.spec,)) as pool:
        for done in concurrent.futures.as_completed([pool.submit(_run_one, job, s) for s in shards]):
            done.result()  # a worker's exception stops the job; finished shards stay done


class ShardRedactor:
    """A Ray Data callable class: each actor builds its Redactor once, then redacts whole batches of records."""

    def __init__(self, job):
        self.job, self.redactor = job, job.spec.build()

    def __call__(self, batch):
        import json

        from piiner.deid.streaming import Record, StreamSummary, process_records

        records = [Record(int(line), text=text if isinstance(text, str) else None, fields=json.loads(fields),
                          error=error or None, reason=reason or None)
                   for line, text, fields, error, reason in zip(batch["line"], batch["text"], batch["fields"],
                                                                batch["error"], batch["reason"])]
        summary = StreamSummary()
        outputs = process_records(records, self.redactor, self.job.text_field, self.job.detect_only, summary,
                                  {"consecutive_failures": 0})
        return {"line": [r.line for r in records], "output": [json.dumps(out, ensure_ascii=False)
                                                              for out, _ in outputs],
                "reason": [r.reason or ("detector failed" if "error" in out else "") for (out, _), r
                           in zip(outputs, records)]}


def run_ray(job, shards, num_actors, address=None, num_gpus=0):
    """Each shard through Ray Data: its records as a dataset, `map_batches` over an actor pool, collected in order
    and written whole (the same files as the local engine, so a job can be restarted on either)."""
    import json

    import ray

    from .job import write_rows, _write_atomically
    from .shards import read_shard

    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False,
                 runtime_env={"env_vars": {"TOKENIZERS_PARALLELISM": "false"}})
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    for shard in shards:
        records = read_shard(shard, job.text_field)
        items = [{"line": r.line, "text": r.text if r.text is not None else "", "fields": json.dumps(r.fields),
                  "error": r.error or "", "reason": r.reason or ""} for r in records]
        if not items:
            outputs = []
        else:
            dataset = ray.data.from_items(items).map_batches(
                ShardRedactor, fn_constructor_kwargs={"job": job}, batch_size=job.spec.batch_size,
                concurrency=num_actors, num_gpus=num_gpus)
            outputs = [(json.loads(row["output"]), row["reason"]) for row in dataset.iter_rows()]
        rows = [out for out, _ in outputs]
        rejects = [dict(out, reason=reason) for out, reason in outputs if "error" in out]
        write_rows(rows, os.path.join(job.output, f"{shard.name}.{job.output_format}"), job.output_format)
        write_rows(rejects, os.path.join(job.output, "rejects", f"{shard.name}.jsonl"), "jsonl")
        failures = {}
        for _, reason in outputs:
            if reason:
                failures[reason] = failures.get(reason, 0) + 1
        counts = {"shard": shard.name, "input": shard.path, "records": len(rows), "failed": len(rejects),
                  "failures": failures, "entities": sum(len(out.get("entities", [])) for out in rows)}
        _write_atomically(os.path.join(job.output, "_done", f"{shard.name}.json"), json.dumps(counts).encode())
