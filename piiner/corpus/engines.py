"""The engines that run a job's shards: worker processes on this machine, or Ray Data."""

import concurrent.futures
import dataclasses
import json
import multiprocessing

from .job import run_shard
from .shards import Shard


def run_local(job, shards, num_proc):
    """Shards over `num_proc` worker processes (or this process for 1), each loading the model once."""
    if num_proc <= 1:
        for shard in shards:
            run_shard(job, shard)
        return
    # "spawn": a fresh interpreter per worker, never a fork of a process that holds torch threads.
    context = multiprocessing.get_context("spawn")
    # No initializer: a redactor that fails to build there breaks the pool with no word of why. A worker builds it
    # at its first shard (`run_shard`: `spec.cached`) and keeps it; an error there comes back here as itself.
    with concurrent.futures.ProcessPoolExecutor(num_proc, mp_context=context) as pool:
        try:
            for done in concurrent.futures.as_completed([pool.submit(run_shard, job, s) for s in shards]):
                done.result()  # a worker's exception stops the job; finished shards stay done
        except BaseException:  # an error or Ctrl-C: the shards not started stay undone for the next run
            pool.shutdown(cancel_futures=True)
            raise


class ShardWorker:
    """A Ray Data callable class: each actor builds its Redactor once, then redacts whole shards as the local
    engine's workers do (`run_shard`: read, redact, write, done marker) and returns their counts."""

    def __init__(self, job):
        self.job, self.redactor = job, job.spec.build()

    def __call__(self, batch):  # a pyarrow.Table of shard fields (batch_format="pyarrow")
        counts = [run_shard(self.job, Shard(**row), self.redactor) for row in batch.to_pylist()]
        return {"counts": [json.dumps(c) for c in counts]}


def run_ray(job, shards, num_actors, address=None, num_gpus=0):
    """The shards as one Ray Data job: `map_batches` over the shard list with a pool of `num_actors` actors, each
    loading the model once for the whole job and reading, redacting and writing one shard at a time (the same files
    as the local engine, so a job can be restarted on either; the workers must see the input and output paths)."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False,
                 runtime_env={"env_vars": {"TOKENIZERS_PARALLELISM": "false"}})
    finished = (ray.data.from_items([dataclasses.asdict(shard) for shard in shards])
                .map_batches(ShardWorker, fn_constructor_kwargs={"job": job}, batch_size=1, batch_format="pyarrow",
                             compute=ray.data.ActorPoolStrategy(size=num_actors), num_gpus=num_gpus))
    for _ in finished.iter_rows():  # every shard written by its actor; its counts are in its done marker
        pass
