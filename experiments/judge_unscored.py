"""What one model emits and another does not, among the types a human-labelled corpus leaves unlabelled, judged by
reading: how many of them are real PII, and whether the spans a recipe change removes were over-redaction.

The NER corpora label persons, places and organizations (GUM also dates; BTC also handles and links, by pattern);
every other span a model finds there is unscored, as the reports count it (`metrics.judged_types`), and no F1 says
whether it was right. `draw` reads a model's saved predictions on every document
(`_predictions/whole_<name>_<source>.jsonl` of `python experiments/out_of_source.py ablation`) and writes a
random sample of its unscored spans ("emitted") as a numbered list for a reader to judge. Given a second model, it
samples instead the unscored spans that the first has and the second has not ("removed": no span of the same type
overlaps it) and the reverse ("added"), shuffled into one list without their side, so that the reading is blind.
`count` reads the judged file and prints each side's share judged right, with a Wilson 95% interval, and by type,
leaving out (and counting) any verdict on a span its text's gold labels after all. Both read the gold corpus
(`--data`, data/reference by default, as the ablations score it).

    python experiments/judge_unscored.py draw runs/oos-draw2 variant_0 --out JUDGE [--emitted 150 --seed 32]
    python experiments/judge_unscored.py draw runs/oos-draw2 variant_0 variant_4 --out JUDGE [--removed 100 --added 40]
    (write R or W after each number of JUDGE/list.txt into the verdict column of JUDGE/judged.tsv)
    python experiments/judge_unscored.py count JUDGE/judged.tsv

A span is right when it is an instance of its type as the schema's public sources label it (a calendar date, a
demonym, a religion, a person's age, a party or political view, a medical condition, a crime or conviction, a pay
figure, a gender word for a person, a URL, a handle), its boundaries roughly right; wrong otherwise.
"""

import argparse
import csv
import math
import os
import random
from collections import Counter, defaultdict

from piiner.evaluation.data import load_gold, read_jsonl
from piiner.evaluation.metrics import judged_types
from out_of_source import SCORED_TYPES, WHOLE, saved_predictions

SOURCES = ("btc", "gum", "sec_filings", "uner_ewt", "wikigold")
COLUMNS = ("number", "side", "source", "id", "start", "end", "type", "verdict")


def _predictions(folder, name, source):
    """A model's saved predictions on every document of `source` (`whole_<name>_<source>.json`'s), by row id."""
    rows = read_jsonl(saved_predictions(os.path.join(folder, f"whole_{name}_{source}.json")))
    return {row["id"]: row for row in rows}


def _judged(data, source):
    """Row id -> the types the gold of that text of `source` judges (its scored and its labelled types)."""
    return {row["id"]: judged_types(SCORED_TYPES[source], row.get("labelled_types"))
            for row in load_gold(data, WHOLE, source)}


def only_in(first, second, judged):
    """The spans of `first`'s rows of a type their text's gold does not judge (`judged`, by row id) that no span of
    the same type in `second` overlaps."""
    out = []
    for key, row in first.items():
        others = second[key]["spans"]
        for span in row["spans"]:
            if span["label"] not in judged[key] and not any(
                    o["label"] == span["label"] and o["start"] < span["end"] and span["start"] < o["end"]
                    for o in others):
                out.append((row, span))
    return out


def draw(args):
    removed, added = [], []
    for source in SOURCES:
        judged = _judged(args.data, source)
        a = _predictions(args.folder, args.first, source)
        b = _predictions(args.folder, args.second, source) if args.second else {key: {"spans": []} for key in a}
        removed += [(source, row, span) for row, span in only_in(a, b, judged)]
        added += [(source, row, span) for row, span in only_in(b, a, judged)] if args.second else []
    rng = random.Random(args.seed)
    if not args.second:
        items = [("emitted", x) for x in rng.sample(removed, args.emitted)]
    else:
        items = ([("removed", x) for x in rng.sample(removed, args.removed)]
                 + [("added", x) for x in rng.sample(added, args.added)])
        rng.shuffle(items)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "list.txt"), "w") as listing, \
            open(os.path.join(args.out, "judged.tsv"), "w", newline="") as table:
        writer = csv.writer(table, delimiter="\t")
        writer.writerow(COLUMNS)
        for number, (side, (source, row, span)) in enumerate(items):
            text, start, end = row["text"], span["start"], span["end"]
            shown = f"{text[max(0, start - 60):start]}[[{text[start:end]}]]{text[end:end + 60]}"
            listing.write(f"{number:3d} {span['label']:22s} {shown!r}\n")
            writer.writerow((number, side, source, row["id"], start, end, span["label"], ""))
    counts = (f"removed {len(removed)}, added {len(added)}" if args.second else f"unscored {len(removed)}")
    print(f"{counts}; sampled {len(items)} into {args.out}")


def wilson(right, n, z=1.96):
    """The Wilson score interval of a share `right / n`."""
    share, denominator = right / n, 1 + z * z / n
    centre = (share + z * z / (2 * n)) / denominator
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / denominator
    return centre - half, centre + half


def count(args):
    with open(args.judged, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    unjudged = [r["number"] for r in rows if r["verdict"] not in ("R", "W")]
    if unjudged:
        raise SystemExit(f"{args.judged}: rows {', '.join(unjudged)} have no verdict (R or W)")
    judged = {source: _judged(args.data, source) for source in dict.fromkeys(r["source"] for r in rows)}
    scored, kept = Counter(), []
    for r in rows:
        if r["type"] in judged[r["source"]][r["id"]]:
            scored[r["type"]] += 1
        else:
            kept.append(r)
    if scored:
        print(f"left out: {scored.total()} verdicts on spans their text's gold labels "
              f"({', '.join(f'{t} {n}' for t, n in scored.most_common())})\n")
    rows = kept
    print("| side | judged | right | share | 95% interval |\n|---|---|---|---|---|")
    for side in dict.fromkeys(r["side"] for r in rows):
        verdicts = [r["verdict"] for r in rows if r["side"] == side]
        right = verdicts.count("R")
        low, high = wilson(right, len(verdicts))
        print(f"| {side} | {len(verdicts)} | {right} | {right / len(verdicts):.0%} | {low:.0%}-{high:.0%} |")
    by_type = defaultdict(Counter)
    for r in rows:
        by_type[(r["side"], r["type"])][r["verdict"]] += 1
    print("\n| side | type | right / judged |\n|---|---|---|")
    for (side, kind), verdicts in sorted(by_type.items(), key=lambda item: (item[0][0], -sum(item[1].values()))):
        print(f"| {side} | {kind} | {verdicts['R']} / {sum(verdicts.values())} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("draw", help="sample a model's unscored spans, or those one model has and another has not")
    d.add_argument("folder", help="an ablation folder holding both models' _predictions")
    d.add_argument("first", help="the model whose spans are 'removed' when the second lacks them (variant_0)")
    d.add_argument("second", nargs="?", help="a model compared with it (variant_4); without one, a sample of "
                                              "every unscored span of the first")
    d.add_argument("--emitted", type=int, default=150)
    d.add_argument("--out", required=True)
    d.add_argument("--removed", type=int, default=100)
    d.add_argument("--added", type=int, default=40)
    d.add_argument("--seed", type=int, default=31)
    c = sub.add_parser("count", help="the share judged right on each side, and by type")
    c.add_argument("judged")
    for p in (d, c):
        p.add_argument("--data", default="data/reference", help="the gold corpus the predictions were scored on")
    args = parser.parse_args()
    draw(args) if args.command == "draw" else count(args)


if __name__ == "__main__":
    main()
