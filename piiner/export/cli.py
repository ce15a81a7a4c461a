"""Export a saved piiner model to ONNX (with its CRF), quantise it to int8, and use the graph.

    piiner-export export runs/quickstart --out runs/quickstart/onnx --int8
    piiner-export predict runs/quickstart/onnx --file model.int8.onnx --data data/quickstart --split test \\
        --out runs/quickstart/onnx/pred_int8_test.jsonl
    piiner-evaluate --predictions runs/quickstart/onnx/pred_int8_test.jsonl --data data/quickstart --split test
    piiner-export compare runs/quickstart runs/quickstart/onnx --data data/quickstart --split test --limit 500
    piiner-export batch-check runs/quickstart/onnx --file model.int8.onnx --data data/quickstart --limit 320

`predict` writes the JSONL that `piiner-evaluate --predictions` scores, so the fp32 and int8 graphs are scored
exactly as the PyTorch model is. `compare` checks that the graph yields the entities of the PyTorch pipeline;
`batch-check` that a text gets the same entities in a batch as alone (exit status 1 if not).
"""

import argparse
import json
import sys
import time
from pathlib import Path

from piiner.options import written_over
from piiner.snapshot import SnapshotError, load_pipeline


def load_texts(data, split, limit):
    """Rows `{id, text}` of a dataset folder / Hub id / JSONL (the evaluation loader), the first `limit` of them."""
    from piiner.evaluation.data import load_gold

    rows = load_gold(data, split=split, limit=limit)
    return [{"id": r.get("id", str(i)), "text": r["text"]} for i, r in enumerate(rows)]


def cmd_export(args):
    from piiner.export.onnx_export import DEFAULT_OPSET, check_export_folder, export_onnx
    from piiner.export.quantize import quantize_int8

    out = check_export_folder(args.out or Path(args.model) / "onnx")  # before the model loads
    pipe = load_pipeline(args.model)
    model, tokenizer = pipe.model, pipe.tokenizer
    started = time.perf_counter()
    path = export_onnx(
        model, out, tokenizer=tokenizer, opset_version=args.opset or DEFAULT_OPSET
    )
    print(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MiB, {time.perf_counter() - started:.0f} s, "
          "verified against PyTorch)")
    if args.int8:
        int8 = quantize_int8(path, per_channel=not args.per_tensor)
        print(f"wrote {int8} ({int8.stat().st_size / 2**20:.1f} MiB)")


def cmd_predict(args):
    from piiner.export.onnx_runtime import OnnxPiiNer

    clash = written_over([("--data", args.data)], [("--out", args.out)])
    if clash:
        raise ValueError(clash)
    finder = OnnxPiiNer(args.onnx_dir, onnx_file=args.file)
    rows = load_texts(args.data, args.split, args.limit)
    started = time.perf_counter()
    entities = finder([r["text"] for r in rows], batch_size=args.batch_size)
    seconds = time.perf_counter() - started
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for row, found in zip(rows, entities):
            spans = [{"start": e["start"], "end": e["end"], "label": e["type"]} for e in found]
            f.write(json.dumps({"id": row["id"], "text": row["text"], "spans": spans}) + "\n")
    print(f"wrote {len(rows)} predictions to {out} ({len(rows) / seconds:.1f} texts/s)")


def cmd_compare(args):
    from piiner.export.onnx_runtime import OnnxPiiNer

    texts = [r["text"] for r in load_texts(args.data, args.split, args.limit)]
    expected = load_pipeline(args.model)(texts, batch_size=args.batch_size)
    got = OnnxPiiNer(args.onnx_dir, onnx_file=args.file)(texts, batch_size=args.batch_size)
    differing = _differing(expected, got)
    print(f"{len(texts) - len(differing)}/{len(texts)} texts with identical entities "
          f"({sum(map(len, expected))} pipeline entities, {sum(map(len, got))} from {args.file})")
    _show(differing, expected, got, "pipeline", "onnx")
    return 1 if differing and args.file == "model.onnx" else 0


def cmd_batch_check(args):
    from piiner.export.onnx_runtime import OnnxPiiNer

    texts = [r["text"] for r in load_texts(args.data, args.split, args.limit)]
    finder = OnnxPiiNer(args.onnx_dir, onnx_file=args.file, batch_quantized=args.batch_quantized)
    batched = finder(texts, batch_size=args.batch_size)
    alone = finder(texts, batch_size=1)
    differing = _differing(batched, alone)
    print(f"{len(texts) - len(differing)}/{len(texts)} texts with the same entities at batch {args.batch_size} as "
          f"alone ({args.file}, {'one window' if finder.one_window_per_call else 'the batch'} per graph call)")
    _show(differing, batched, alone, "batched", "alone")
    return 1 if differing else 0


def _keys(entities):
    return [(e["start"], e["end"], e["type"]) for e in entities]


def _differing(first, second):
    """Indices of the texts whose (start, end, type) entities differ between two runs."""
    return [i for i, (a, b) in enumerate(zip(first, second)) if _keys(a) != _keys(b)]


def _show(differing, first, second, first_name, second_name, limit=5):
    width = max(len(first_name), len(second_name))
    for i in differing[:limit]:
        print(f"  text {i}: {first_name:<{width}} {_keys(first[i])}\n{'':>{len(str(i)) + 9}}"
              f"{second_name:<{width}} {_keys(second[i])}")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export", help="export a saved model folder to ONNX")
    e.add_argument("model", help="saved piiner model folder")
    e.add_argument("--out", help="export folder (default: MODEL/onnx)")
    e.add_argument("--int8", action="store_true", help="also write the dynamic int8 copy model.int8.onnx")
    e.add_argument("--per-tensor", action="store_true",
                   help="one int8 scale per weight matrix (default: one per output channel)")
    e.add_argument("--opset", type=int, help="ONNX opset (default: export.onnx_export.DEFAULT_OPSET, 20)")
    for name, help_text in (("predict", "write predictions of a graph as JSONL for piiner-evaluate"),
                            ("compare", "compare the graph's entities with the PyTorch pipeline's"),
                            ("batch-check", "compare the graph's entities at --batch-size with one text per call")):
        s = sub.add_parser(name, help=help_text)
        if name == "compare":
            s.add_argument("model", help="the saved piiner model folder the graph was exported from")
        s.add_argument("onnx_dir", help="export folder")
        s.add_argument("--file", default="model.onnx", help="graph in the folder (model.onnx or model.int8.onnx)")
        s.add_argument("--data", required=True, help="dataset folder (save_to_disk), Hub id or JSONL of texts")
        s.add_argument("--split", default="test")
        s.add_argument("--limit", type=int, help="first N rows only")
        s.add_argument("--batch-size", type=int, default=32)
        if name == "batch-check":
            s.add_argument("--batch-quantized", action="store_true",
                           help="let an int8 graph batch windows (OnnxPiiNer(batch_quantized=True))")
        if name == "predict":
            s.add_argument("--out", required=True, help="JSONL to write")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    handler = {"export": cmd_export, "predict": cmd_predict, "compare": cmd_compare, "batch-check": cmd_batch_check}[
        args.command
    ]
    try:
        return handler(args) or 0
    except (SnapshotError, FileNotFoundError, FileExistsError, NotADirectoryError, ValueError) as error:
        print(f"piiner-export: error: {error}", file=sys.stderr)  # a path or data given: its error in one line
        return 2


if __name__ == "__main__":
    sys.exit(main())
