"""Texts scored alone and joined into longer documents: what a model does when a short text is one part of a long
input (a thread of messages, a batch of notes pasted together), as users' documents are.

Each source's test texts are joined `--per-doc` at a time by each of `--joiners` (escape sequences allowed: "\\n\\n"
is a blank line), the joined documents go through the pipeline, and every entity is mapped back to the text it
starts in; one that runs on past its text's end ("crossing") is counted and scored as it is, wrong. Strict span F1
over the same texts and gold, so the columns differ only by what surrounds each text. Sources whose people labelled
a few types are scored on those (`out_of_source.SCORED_TYPES`), with unjudged spans set aside.

    python benchmarks/bench_joined_texts.py --model runs/reference --data data/reference \\
        --sources presidio,synthetic,wnut17 [--per-doc 8] [--joiners '\\n\\n,\\n']
"""

import argparse
import codecs

from transformers import pipeline

from piiner.evaluation.data import load_split
from piiner.evaluation.metrics import set_aside_unjudged, span_metrics
from piiner.evaluation.data import SCORED_TYPES


def joined(texts, per_doc, joiner):
    """(documents, for each document the start of each of its texts)."""
    documents, starts = [], []
    for k in range(0, len(texts), per_doc):
        parts = texts[k:k + per_doc]
        offsets, position = [], 0
        for part in parts:
            offsets.append(position)
            position += len(part) + len(joiner)
        documents.append(joiner.join(parts))
        starts.append(offsets)
    return documents, starts


def back_to_texts(entities, starts, texts, per_doc):
    """Each document's entities as (start, end, type) of the text they start in, and how many run past its end."""
    out, crossing = [[] for _ in texts], 0
    for k, (document, offsets) in enumerate(zip(entities, starts)):
        for entity in document:
            part = max(j for j, offset in enumerate(offsets) if offset <= entity["start"])
            row, offset = k * per_doc + part, offsets[part]
            crossing += entity["end"] > offset + len(texts[row])
            out[row].append((entity["start"] - offset, entity["end"] - offset, entity["type"]))
    return out, crossing


def f1(rows, pred, types):
    pred = set_aside_unjudged(pred, [r.get("unjudged_spans") for r in rows], types)[0]
    return span_metrics([r["spans"] for r in rows], pred, types=types)["overall"]["f1"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--data", default="data/reference")
    p.add_argument("--split", default="test")
    p.add_argument("--sources", default="presidio,synthetic,wnut17")
    p.add_argument("--per-doc", type=int, default=8, help="texts per joined document (default: 8)")
    p.add_argument("--joiners", default="\\n\\n,\\n", help="comma-separated joiners, escape sequences allowed")
    p.add_argument("--batch-size", type=int, default=16)
    args = p.parse_args()
    joiners = [codecs.decode(j, "unicode_escape") for j in args.joiners.split(",")]
    tagger = pipeline("token-classification", model=args.model, trust_remote_code=True)
    rows_of = {}
    for row in load_split(args.data, args.split):
        rows_of.setdefault(row.get("source"), []).append(row)
    header = ["source", "texts", "alone"] + [f"joined by {j!r}, {args.per_doc} a document" for j in joiners]
    print(f"Strict span F1 of {args.model} on the {args.split} split of {args.data} (crossings in brackets)\n")
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for source in args.sources.split(","):
        rows = rows_of.get(source)
        if not rows:
            raise SystemExit(f"{args.data} has no {args.split} row of source {source!r}")
        texts, types = [r["text"] for r in rows], SCORED_TYPES.get(source)
        alone = tagger(texts, batch_size=args.batch_size)
        cells = [source, f"{len(rows):,}", f"{f1(rows, alone, types):.3f}"]
        for joiner in joiners:
            documents, starts = joined(texts, args.per_doc, joiner)
            pred, crossing = back_to_texts(tagger(documents, batch_size=args.batch_size), starts, texts, args.per_doc)
            cells.append(f"{f1(rows, pred, types):.3f} ({crossing})")
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
