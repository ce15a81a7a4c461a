"""onnxruntime's graph optimisations on an exported piiner graph: the graph call on ~1,200-character documents with
onnxruntime's defaults and with `export.onnx_runtime.DISABLED_OPTIMIZERS` turned off (or any set given), calls
interleaved so machine noise hits every variant alike. Prints a table, and with `--profile` the top operators by
kernel time and each graph's time by part: products with a weight matrix (what int8 speeds up), attention (its
activation-by-activation products and softmax, fp32 in every graph) and the rest, and for the second graph (int8)
how far its weight products are from 4x the first's and what is left when they cost nothing.

    .venv/bin/python benchmarks/bench_onnx_session.py --onnx-dir runs/quickstart/onnx --threads 1
"""

import argparse
import collections
import json
import os
import statistics

import numpy as np
import onnxruntime


from bench_inference import alternate_in_blocks, make_documents  # noqa: E402

from piiner.export.onnx_export import INPUT_NAMES, graph_inputs  # noqa: E402
from piiner.export.onnx_runtime import DISABLED_OPTIMIZERS, OnnxPiiNer, cpu_session  # noqa: E402
from piiner.hub.encoding_piiner import encode_texts  # noqa: E402


BLOCK = 5  # calls of one variant in a row


def profile_events(path, threads, disabled, feeds, calls):
    """onnxruntime's per-node kernel events of `calls` calls."""
    sess = cpu_session(path, threads, disabled, profile=True)
    for _ in range(calls):
        sess.run(None, feeds)
    trace = sess.end_profiling()
    with open(trace) as f:
        events = json.load(f)
    os.remove(trace)
    return [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]


def kernel_ms(events, calls, key):
    """Kernel milliseconds per call, summed by `key(event)`."""
    out = collections.Counter()
    for event in events:
        out[key(event)] += event["dur"] / 1000 / calls
    return out


PRODUCTS = {"MatMul", "FusedMatMul", "Gemm", "MatMulInteger", "MatMulIntegerToFloat", "DynamicQuantizeMatMul"}
INT8_SIDE = {"DynamicQuantizeLinear"}  # quantising an activation for the weight product that follows
# Ceiling of int8 matrix products against fp32 on this CPU (VNNI: four int8 products per fp32 lane).
INT8_PRODUCT_SPEEDUP = 4.0


def part_of(event):
    """"weights", "attention" or "rest". The profiler lists activation inputs only (initializers have no shape
    there): a product of two 4-D activations is attention's (scores, or scores times values); a product with one
    listed input multiplies it by a weight."""
    op = event["args"]["op_name"]
    shapes = [list(x.values())[0] for x in event["args"].get("input_type_shape", [])]
    if op == "Softmax" or (op in PRODUCTS and sum(len(shape) == 4 for shape in shapes) >= 2):
        return "attention"
    if op in PRODUCTS or op in INT8_SIDE:
        return "weights"
    return "rest"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--onnx-dir", required=True, help="an export folder (piiner-export export)")
    p.add_argument("--graphs", default="model.onnx,model.int8.onnx", help="graph files in --onnx-dir")
    p.add_argument("--disable", default=",".join(DISABLED_OPTIMIZERS),
                   help="optimizers to turn off in the second variant (default: the ones OnnxPiiNer turns off)")
    p.add_argument("--doc-chars", type=int, default=1200)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--rounds", type=int, default=30,
                   help=f"timed calls per variant, in blocks of {BLOCK} (median reported)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--profile", type=int, default=0, metavar="K", help="also print the K slowest operator types")
    args = p.parse_args(argv)
    disabled = [name for name in args.disable.split(",") if name]
    graphs = [name for name in args.graphs.split(",") if os.path.isfile(os.path.join(args.onnx_dir, name))]
    if not graphs:
        p.error(f"none of {args.graphs} is in {args.onnx_dir}")
    finder = OnnxPiiNer(args.onnx_dir, onnx_file=graphs[0], num_threads=1)
    enc = encode_texts(finder.tokenizer, make_documents(args.batch, args.doc_chars), finder.config)
    rows = slice(0, args.batch)
    feeds = dict(zip(INPUT_NAMES, graph_inputs(enc["input_ids"][rows], enc["attention_mask"][rows],
                                               enc["char_ids"][rows])))
    variants = [(graph, label, off) for graph in graphs
                for label, off in (("onnxruntime defaults", []), (f"off: {', '.join(disabled)}", disabled))]
    sessions = [cpu_session(os.path.join(args.onnx_dir, graph), args.threads, off) for graph, _, off in variants]
    reference = [s.run(None, feeds)[0] for s in sessions]
    # Blocks of calls with a pause before each: an onnxruntime session's threads spin for a while after a call, and
    # with more than one thread they would take a core from the next session.
    blocks = alternate_in_blocks({i: (lambda _, sess=sess: sess.run(None, feeds)) for i, sess in enumerate(sessions)},
                                 max(1, args.rounds // BLOCK), lambda _: [None] * BLOCK)
    times = [[t for block in blocks[i] for t in block] for i in range(len(sessions))]
    shape = tuple(enc["input_ids"][rows].shape)
    print(f"# {args.batch} x {shape[1]} tokens, {args.threads} thread(s), onnxruntime {onnxruntime.__version__}, "
          f"load average {os.getloadavg()[0]:.2f}")
    print("| graph | optimisations | median ms | p25 ms | max abs emission gap to defaults |")
    print("|---|---|---|---|---|")
    for i, (graph, label, _) in enumerate(variants):
        gap = float(np.abs(reference[i] - reference[i - i % 2]).max())
        print(f"| {graph} | {label} | {1000 * statistics.median(times[i]):.1f} | "
              f"{1000 * np.percentile(times[i], 25):.1f} | {gap:.2g} |")
    if args.profile:
        calls, by_part = 10, {}
        for graph, label, off in variants:
            events = profile_events(os.path.join(args.onnx_dir, graph), args.threads, off, feeds, calls)
            ops = kernel_ms(events, calls, lambda event: event["args"]["op_name"]).most_common(args.profile)
            print(f"\n{graph}, {label}: " + ", ".join(f"{op} {ms:.2f} ms" for op, ms in ops))
            by_part[graph, label] = kernel_ms(events, calls, part_of)
        print("\n| graph | optimisations | weight products ms | attention ms | rest ms | kernels ms |")
        print("|---|---|---|---|---|---|")
        for (graph, label), p in by_part.items():
            print(f"| {graph} | {label} | {p['weights']:.1f} | {p['attention']:.1f} | {p['rest']:.1f} | "
                  f"{sum(p.values()):.1f} |")
        for (graph, label), p in by_part.items():
            fp32 = by_part.get((graphs[0], label))
            if graph == graphs[0] or fp32 is None:
                continue
            at_ceiling = sum(p.values()) - p["weights"] + fp32["weights"] / INT8_PRODUCT_SPEEDUP
            print(f"\n{graph}, {label}: weight products {fp32['weights'] / p['weights']:.2f}x as fast as in "
                  f"{graphs[0]} ({p['weights']:.1f} against {fp32['weights']:.1f} ms); at {INT8_PRODUCT_SPEEDUP:g}x "
                  f"the graph would take {at_ceiling:.1f} ms of kernels, and with them free "
                  f"{p['attention'] + p['rest']:.1f} ms: attention and the rest, which int8 does not touch, are "
                  f"{(p['attention'] + p['rest']) / sum(p.values()):.0%} of its {sum(p.values()):.1f} ms")

if __name__ == "__main__":
    main()
