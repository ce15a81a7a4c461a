"""Corpus redaction throughput and memory: docs/s and chars/s for 1 and 2 workers on the datasets and Ray engines,
with the regex detector and with a model, the scaling efficiency (2 workers against twice 1), and the peak memory
of a worker as the corpus grows tenfold (it should stay flat: a worker holds one shard at a time).

    python benchmarks/bench_corpus.py --model runs/reference --docs 400
    python benchmarks/bench_corpus.py --docs 20000 --engines datasets        # regex only

Each setting runs in a fresh process (`python -m piiner.corpus`), timed end to end, model loading included; peak
memory is the largest resident set of any one of that process and its workers (psutil, sampled every 0.1 s).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from bench_serve import texts


def write_corpus(folder, docs, chars, files=4):
    os.makedirs(folder, exist_ok=True)
    all_texts = texts(docs, chars, seed=1)
    for f in range(files):
        with open(os.path.join(folder, f"part{f}.jsonl"), "w") as out:
            for i in range(f, docs, files):
                out.write(json.dumps({"id": i, "text": all_texts[i]}) + "\n")
    return sum(map(len, all_texts))


def peak_rss_of_tree(process, stop):
    import psutil

    peak = 0
    root = psutil.Process(process.pid)
    while not stop.is_set():
        try:
            members = [root] + root.children(recursive=True)
            peak = max([peak] + [m.memory_info().rss for m in members if m.is_running()])
        except psutil.Error:
            pass
        time.sleep(0.1)
    return peak


def run(engine, workers, corpus, output, detector_args, rows_per_shard):
    command = [sys.executable, "-m", "piiner.corpus", "--engine", engine, "--input", corpus, "--output", output,
               "--num-proc", str(workers), "--rows-per-shard", str(rows_per_shard), *detector_args]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"})
    stop, result = threading.Event(), {}
    sampler = threading.Thread(target=lambda: result.update(peak=peak_rss_of_tree(process, stop)))
    sampler.start()
    out, err = process.communicate()
    stop.set()
    sampler.join()
    seconds = time.perf_counter() - started
    if process.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(command)} failed: {err[-2000:]}")
    return seconds, result.get("peak", 0) / 2**20, json.loads(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="piiner snapshot; without it only the regex detector runs")
    p.add_argument("--docs", type=int, default=400)
    p.add_argument("--chars", type=int, default=800)
    p.add_argument("--engines", default="datasets,ray")
    p.add_argument("--workers", default="1,2")
    p.add_argument("--rows-per-shard", type=int, default=50)
    p.add_argument("--growth", type=int, default=10, help="the memory check's corpus is this many times larger")
    args = p.parse_args(argv)
    detectors = [("regex", ["--detector", "regex"])] + ([("model", ["--model", args.model])] if args.model else [])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus")
        chars = write_corpus(corpus, args.docs, args.chars)
        for engine in args.engines.split(","):
            for name, detector_args in detectors:
                single = None
                for workers in [int(w) for w in args.workers.split(",")]:
                    seconds, peak, summary = run(engine, workers, corpus, os.path.join(tmp, f"out-{engine}-{name}-{workers}"),
                                                 detector_args, args.rows_per_shard)
                    rate = args.docs / seconds
                    single = single or rate
                    rows.append((engine, name, workers, args.docs, seconds, rate, chars / seconds,
                                 rate / (single * workers), peak))
        big = os.path.join(tmp, "big")
        write_corpus(big, args.docs * args.growth, args.chars)
        name, detector_args = detectors[-1]
        memory = []
        for folder, docs in ((corpus, args.docs), (big, args.docs * args.growth)):
            _, peak, _ = run("datasets", 1, folder, os.path.join(tmp, f"mem-{docs}"), detector_args, args.rows_per_shard)
            memory.append((docs, peak))
    print(f"\n{args.docs} documents of ~{args.chars} characters in 4 JSONL files, {args.rows_per_shard} rows per "
          "shard; times include starting the workers and loading the model\n")
    print("| engine | detector | workers | docs | seconds | docs/s | chars/s | scaling efficiency | peak MB (largest process) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for engine, name, workers, docs, seconds, rate, char_rate, efficiency, peak in rows:
        print(f"| {engine} | {name} | {workers} | {docs} | {seconds:.1f} | {rate:.1f} | {char_rate:,.0f} | "
              f"{efficiency:.2f} | {peak:.0f} |")
    print(f"\nPeak memory, datasets engine, 1 worker, {detectors[-1][0]} detector, as the corpus grows:\n")
    print("| docs | peak MB |\n|---|---|")
    for docs, peak in memory:
        print(f"| {docs:,} | {peak:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
