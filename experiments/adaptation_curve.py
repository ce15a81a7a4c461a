"""The adaptation learning curve: `configs/adapt.yaml` on N of a user's labelled training documents, for each N,
scored on the user's held-out test split (strict, on the types given), beside the model it started from and Presidio
in the same run; and what each model kept of its original corpus, per source of its test split. Prints two tables
and writes a plot.

    piiner-data import notes.jsonl --format jsonl --label-map MAP --group-by patient --out DATA
    .venv/bin/python experiments/adaptation_curve.py --data DATA --sizes 25,50,100,200,400 --seeds 42,7 \\
        --types PERSON,DATE,LOCATION,PHONE --kept data/quickstart --out runs/curve

Each run is `piiner-train --config configs/adapt.yaml --dataset DATA --max_train_samples N --seed S`, then
`piiner-evaluate --model RUN --data DATA/test.jsonl --types TYPES` and, with --kept, `piiner-evaluate --model RUN
--data KEPT --save-predictions P` once over the chosen sources, each source rescored from P; a run whose report
exists is not run again.
"""

import argparse
import json
import os
import subprocess
import sys

from piiner.evaluation.data import SCORED_TYPES

BIN = os.path.dirname(sys.executable)


def run(command, log):
    with open(log, "w") as f:
        subprocess.run(command, check=True, stdout=f, stderr=subprocess.STDOUT)


def scores(report_path, system=None):
    with open(report_path) as f:
        report = json.load(f)
    overall = (report["compare"][system] if system else report)["overall"]
    return overall["precision"], overall["recall"], overall["f1"]


def kept_scores(model, name, kept, sources, out, split="test"):
    """Strict F1 per source of the original corpus's rows of `split`, a corpus on the types its annotators labelled
    (as the out-of-source table scores it): one pipeline run, each source rescored from it. Files of another split
    than test are named for it, so a folder holds both."""
    import datasets

    stem = "kept" if split == "test" else f"kept-{split}"
    subset = os.path.join(out, f"{stem}.jsonl")
    if not os.path.exists(subset):
        rows = datasets.load_from_disk(kept)[split].filter(lambda r: r["source"] in sources)
        rows.to_json(subset + ".part", lines=True)
        os.replace(subset + ".part", subset)
    predictions = os.path.join(out, f"{name}.{stem}.jsonl")
    if not os.path.exists(predictions):
        run([os.path.join(BIN, "piiner-evaluate"), "--model", model, "--data", subset, "--resamples", "100",
             "--save-predictions", predictions + ".part"], predictions + ".log")
        os.replace(predictions + ".part", predictions)
    f1s = {}
    for source in sources:
        report = os.path.join(out, f"{name}.{stem}.{source}.json")
        if not os.path.exists(report):
            types = ["--types", ",".join(SCORED_TYPES[source])] if source in SCORED_TYPES else []
            run([os.path.join(BIN, "piiner-evaluate"), "--predictions", predictions, "--data", subset, "--source",
                 source, "--resamples", "100", "--out", report] + types, report + ".log")
        f1s[source] = scores(report)[2]
    return f1s


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="a dataset folder from piiner-data import (train and test.jsonl)")
    p.add_argument("--sizes", default="25,50,100,200,400")
    p.add_argument("--seeds", default="42")
    p.add_argument("--types", required=True, help="comma-separated types scored on the test split")
    p.add_argument("--base", default="runs/quickstart", help="the model adaptation starts from")
    p.add_argument("--config", default="configs/adapt.yaml")
    p.add_argument("--compare", default="presidio", help="baselines scored on the test split in the base run")
    p.add_argument("--kept", help="the base model's dataset folder (data/quickstart): score each model on its test "
                   "split, per source, to see what adapting forgot")
    p.add_argument("--kept-sources", default="btc,gum,sec_filings,uner_ewt,wikigold,formats,synthetic")
    p.add_argument("--kept-split", default="test", help="the split of --kept scored (validation to choose a recipe "
                   "by, test to report)")
    p.add_argument("--out", required=True, help="folder for the runs, their reports and the plot")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    test = os.path.join(args.data, "test.jsonl")
    evaluate = [os.path.join(BIN, "piiner-evaluate"), "--data", test, "--types", args.types]
    base_report = os.path.join(args.out, "base.json")
    if not os.path.exists(base_report):
        run(evaluate + ["--model", args.base, "--out", base_report] + (["--compare", args.compare] if args.compare
                                                                        else []), base_report + ".log")
    rows = [("0 (the base model)", "-", *scores(base_report))]
    baselines = [(name, *scores(base_report, name)) for name in args.compare.split(",") if args.compare]
    sources = args.kept_sources.split(",")
    kept = {"0": kept_scores(args.base, "base", args.kept, sources, args.out, args.kept_split)} if args.kept else {}
    for size in (int(s) for s in args.sizes.split(",")):
        for seed in (int(s) for s in args.seeds.split(",")):
            folder = os.path.join(args.out, f"n{size}_s{seed}")
            report = folder + ".json"
            if not os.path.exists(report):
                run([os.path.join(BIN, "piiner-train"), "--config", args.config, "--dataset", args.data,
                     "--init_from_checkpoint", args.base, "--output_dir", folder, "--max_train_samples", str(size),
                     "--seed", str(seed), "--overwrite_output_dir", "true"], folder + ".log")
                run(evaluate + ["--model", folder, "--out", report], report + ".log")
            rows.append((str(size), str(seed), *scores(report)))
            if args.kept:
                kept[f"{size}_s{seed}"] = kept_scores(folder, f"n{size}_s{seed}", args.kept, sources, args.out,
                                                      args.kept_split)
    print(f"strict scores on {test} ({args.types}):")
    print("| labelled documents | seed | precision | recall | F1 |")
    print("|---|---|---|---|---|")
    for size, seed, precision, recall, f1 in rows:
        print(f"| {size} | {seed} | {precision:.3f} | {recall:.3f} | {f1:.3f} |")
    for name, precision, recall, f1 in baselines:
        print(f"| {name}, same run | - | {precision:.3f} | {recall:.3f} | {f1:.3f} |")
    if kept:
        print(f"\nstrict F1 on the {args.kept_split} split of {args.kept}, per source (what adapting kept):")
        print("| model | " + " | ".join(sources) + " |")
        print("|---|" + "---|" * len(sources))
        for name, f1s in kept.items():
            print(f"| {name} | " + " | ".join(f"{f1s[s]:.3f}" for s in sources) + " |")
    plot(rows, os.path.join(args.out, "adaptation_curve.png"))
    return 0


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [0 if size.startswith("0") else int(size) for size, *_ in rows]
    xs = sorted(set(sizes))
    fig, ax = plt.subplots(figsize=(6, 4))
    for column, style, name in ((4, "o-", "strict F1"), (3, "s--", "recall")):  # the mean line, each seed a dot
        means = [sum(r[column] for x, r in zip(sizes, rows) if x == size) / sizes.count(size) for size in xs]
        line, = ax.plot(xs, means, style, label=f"{name} (mean of seeds)")
        ax.plot(sizes, [r[column] for r in rows], style[0], color=line.get_color(), alpha=0.35, linestyle="none")
    ax.set_xscale("symlog", linthresh=25)
    ax.set_xticks(xs, [str(s) for s in xs])
    ax.minorticks_off()
    ax.set_xlabel("labelled documents adapted on")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


if __name__ == "__main__":
    sys.exit(main())
