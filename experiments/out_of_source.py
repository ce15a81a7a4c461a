"""Out-of-source evaluation: how a model does on a source it never trained on.

    python experiments/out_of_source.py leave-one-out --sources synthetic,presidio,wnut17,btc,... \\
        --held-out btc,wikigold,... --config configs/out-of-source.yaml --data data/reference --out runs/oos
    python experiments/out_of_source.py ablation --sources ... --held-out wikigold,sec_filings,gum \\
        --config configs/out-of-source.yaml --data data/reference --out runs/ablation
    python experiments/out_of_source.py in-source --model runs/reference --data data/reference \
        --sources btc,wikigold,... --out runs/reference
    python experiments/out_of_source.py table runs/oos [--in-source runs/reference]
    python experiments/out_of_source.py table runs/ablation --prefix eval_variant_0_ --in-source runs/reference
    python experiments/out_of_source.py table runs/ablation --prefix whole_variant_0_
    python experiments/out_of_source.py halves runs/ablation --data data/reference
    python experiments/out_of_source.py table runs/ablation --prefix development_variant_0_
    python experiments/out_of_source.py table runs/oos-draw2 runs/oos-draw3 --prefix report_variant_0_
    python experiments/out_of_source.py ablation-table runs/ablation
    python experiments/out_of_source.py unscored-table runs/reference

`leave-one-out` trains one model per held-out source on every other source (a corpus built without it, so no
synthetic record carries its sentences either) and scores it on that source's test split; `ablation` trains each
architecture and loss variant once, on every source but the held-out ones, and scores all of them there. A
held-out source is scored on its test split (`eval_*.json`, beside the in-source model's) and whole, every split of
it, since no split of it was trained on (`whole_*.json`: more documents, a narrower interval), and each half of
its documents apart (`development_*.json`, `report_*.json`: `halves`): a change to the recipe is judged on the
development half, and the figures quoted for the recipe are the report half's, which no decision has seen. Each
score comes with Presidio's, Rampart's and the regex baseline's on the same rows, in the same run (`--compare`; a
half's, with the baselines its whole report had). A source's types are the ones its annotators labelled (persons,
places, organizations; GUM also dates). `table` prints the results as markdown, beside the in-source scores of a
model trained on everything; a source scored by several runs (training seeds, or folders of runs on other draws of
the generated corpus) gets their mean and range.
"""

import argparse
import json
import os
import re
import subprocess
import sys

from piiner.data_prep.build import build
from piiner.evaluation.data import HALVES, SCORED_TYPES
from piiner.evaluation.metrics import RELAXED_SCHEMES
from piiner.evaluation.report import interval_text


# The systems every score is compared with, on the same rows in the same run, and their tables' column headings.
BASELINES = {"presidio": "Presidio + spaCy F1", "rampart": "Rampart F1", "regex": "regex F1"}

# The architecture and loss variants of the ablation: train.py flags.
VARIANTS = {
    "piiner (char CNN + gate + CRF, partial annotation)": [],
    "no gate (char features added)": ["--fusion", "sum"],
    "no char CNN": ["--fusion", "none"],
    "no CRF (per-token softmax)": ["--use_crf", "false"],
    "unlabelled types read as O": ["--partial_annotation", "false"],
}


# The report of a run with another training seed: eval_variant_<i>_seed<seed>_<source>.json.
SEEDED = re.compile(r"^seed\d+_")


# A source a model never trained on is scored twice: on its test split, beside the in-source model, and whole (every
# split: every document it has, so a narrower interval), into whole_<name>.json.
WHOLE = "train,validation,test"


def evaluate_source(model, data, source, out, baselines=tuple(BASELINES), split="test"):
    """piiner-evaluate on one source's `split` of `data`, with the baselines; returns the report. The model's
    predictions go to ``_predictions/`` beside the report (``btc.jsonl`` for ``eval_btc.json``, the baselines'
    beside them as ``btc.presidio.jsonl``; a push leaves names starting with "_" out), so that a later run can be
    compared with it on the same document draws (`piiner-evaluate --compare`), and its halves scored without running
    the baselines again."""
    from piiner.evaluation.cli import run

    predictions = saved_predictions(out)
    os.makedirs(os.path.dirname(predictions), exist_ok=True)
    argv = ["--model", model, "--data", data, "--source", source, "--split", split, "--out", out,
            "--save-predictions", predictions]
    if source in SCORED_TYPES:
        argv += ["--types", ",".join(SCORED_TYPES[source])]
    if baselines:
        argv += ["--compare", ",".join(baselines)]
    return run(argv)


def saved_predictions(report):
    """Where `evaluate_source` keeps the predictions behind a report: ``_predictions/`` beside it, ``btc.jsonl``
    for ``eval_btc.json``, ``whole_btc.jsonl`` for ``whole_btc.json``."""
    name = os.path.basename(report).removeprefix("eval_").removesuffix(".json")
    return os.path.join(os.path.dirname(report), "_predictions", f"{name}.jsonl")


def score_halves(whole, data, compare=None):
    """A whole-corpus report (`whole_<name>.json`) scored again on each half of its documents, from the predictions
    saved beside it, into `development_<name>.json` and `report_<name>.json`. ``data``: the gold corpus (the
    report's own, when it was written in another folder or on another machine). The systems the whole report was
    compared with (or ``compare``, a list of `BASELINES`) are scored on each half's rows too: from their predictions
    saved beside the model's, where the whole run kept them, else (a baseline) run again."""
    from piiner.evaluation.cli import run

    for argv in _halves_argv(whole, data, compare):
        run(argv)


def _halves_argv(whole, data, compare=None):
    folder, name = os.path.split(whole)
    name = name.removeprefix("whole_").removesuffix(".json")
    return [_rescore_argv(whole, data, os.path.join(folder, f"{half}_{name}.json"), half, compare, rerun=True)
            for half in HALVES]


def halves(args):
    """Every whole-corpus report of a folder scored on each half of its documents (`score_halves`); every report's
    arguments are found before any is scored, so a compared predictions file that is gone (one that cannot be run
    again, as a baseline can) stops it before any half is written."""
    from piiner.evaluation.cli import run

    wholes = [name for name in sorted(os.listdir(args.folder)) if name.startswith("whole_") and name.endswith(".json")]
    if not wholes:
        raise SystemExit(f"{args.folder}: no whole_<name>.json report to split (an ablation or leave-one-out writes "
                         "them)")
    _, missing = _by_saved_predictions(args.folder, wholes)
    if missing:
        raise SystemExit(f"{args.folder}: no saved predictions (_predictions/) behind {', '.join(missing)}; score "
                         "those sources whole again. Nothing was rescored")
    compare = args.compare.split(",") if args.compare else None
    for argv in [argv for name in wholes for argv in _halves_argv(os.path.join(args.folder, name), args.data, compare)]:
        run(argv)


def rescore(args):
    """Every report of a folder that `evaluate_source` wrote (``<prefix><name>.json`` with its predictions in
    ``_predictions/``) scored again from those predictions, with each system it was compared with from that system's
    saved predictions: after a change to the scoring, a finished run gets the new figures without running a model.
    Strict figures come back the same. A report whose predictions are not saved (the trainer's ``eval_results.json``,
    one scored elsewhere) is left as it was, and named on stderr. `halves` does the same for the halves of
    whole-corpus reports."""
    from piiner.evaluation.cli import run

    reports = [n for n in sorted(os.listdir(args.folder)) if n.startswith(args.prefix) and n.endswith(".json")]
    names, left = _by_saved_predictions(args.folder, reports)
    if not names:
        raise SystemExit(f"{args.folder}: no {args.prefix}<name>.json report with its predictions in _predictions/")
    if left:
        print(f"{args.folder}: reports left as they were, no predictions saved in _predictions/ ({len(left)}): "
              f"{', '.join(left)}", file=sys.stderr)
    runs = [_rescore_argv(os.path.join(args.folder, name), args.data) for name in names]  # all found before any runs
    for argv in runs:
        run(argv)


def _by_saved_predictions(folder, reports):
    """The report names of `folder` whose predictions are saved beside them (`saved_predictions`), and the rest."""
    saved = [name for name in reports if os.path.isfile(saved_predictions(os.path.join(folder, name)))]
    return saved, [name for name in reports if name not in saved]


def _rescore_argv(path, data=None, out=None, half=None, compare=None, rerun=False):
    """piiner-evaluate's arguments that score the report at `path` again from its saved predictions, into `out` (the
    report itself by default), on one `half` of its documents or on the rows it scored. Each system it was compared
    with (or ``compare``, a list of `BASELINES`) is read from the predictions saved beside the model's or from the
    file it was given as; where neither exists, a baseline is run again if `rerun`, else SystemExit before anything
    is scored."""
    from piiner.evaluation.cli import compared_predictions

    predictions = saved_predictions(path)
    if not os.path.isfile(predictions):
        raise SystemExit(f"{path}: its predictions {predictions} are missing; score the source again")
    with open(path) as f:
        report = json.load(f)
    meta = report["meta"]
    systems = []
    for item in compare if compare is not None else meta.get("compare") or report.get("compare") or ():
        system, _, given = item.partition("=")
        saved = compared_predictions(predictions, system)
        found = saved if os.path.isfile(saved) else given
        if found and os.path.isfile(found):
            systems.append(f"{system}={found}")
        elif rerun and system in BASELINES:
            systems.append(system)
        else:
            raise SystemExit(f"{path}: the predictions of {system}, which it was compared with, are not saved "
                             f"({saved}{' nor ' + given if given else ''}); nothing was rescored")
    argv = ["--predictions", predictions, "--data", data or meta["data"], "--split", meta["split"],
            "--out", out or path]
    for flag, value in (("--source", meta.get("source")), ("--half", half or meta.get("half")),
                        ("--types", ",".join(meta.get("types") or ())), ("--compare", ",".join(systems))):
        argv += [flag, value] if value else []
    return argv


def train(config, dataset, output_dir, extra=()):
    """piiner-train in a fresh process (a run's memory and threads end with it); raises on failure."""
    command = [sys.executable, "-m", "piiner.training.train", "--config", config, "--dataset", dataset, "--output_dir",
               output_dir, "--test_split", "none", "--overwrite_output_dir", "true", *extra]
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def trained_without(args, name, held_out, extra=()):
    """The model of one run: a corpus of every source but `held_out`, and a model trained on it (both reused when
    already there, so an interrupted sweep goes on where it stopped)."""
    kept = [s for s in args.sources.split(",") if s not in held_out]
    data = os.path.join(args.out, f"data_without_{'+'.join(held_out)}")
    if not os.path.isfile(os.path.join(data, "dataset_dict.json")):
        build(data, sources=kept, synthetic_per_type=args.synthetic_per_type, seed=args.seed)
    model = os.path.join(args.out, name)
    if not os.path.isfile(os.path.join(model, "model.safetensors")):
        train(args.config, data, model, extra)
    return model


def config_seed(path):
    """The training seed a YAML config sets (TrainingArguments' default, 42, when it sets none)."""
    import yaml

    with open(path) as f:
        return int((yaml.safe_load(f) or {}).get("seed", 42))


def in_source(args):
    """Every source's test split scored with one model trained on all of them (the reference model)."""
    for source in args.sources.split(","):
        evaluate_source(args.model, args.data, source, os.path.join(args.out, f"eval_{source}.json"))


def leave_one_out(args):
    for source in args.held_out.split(","):
        model = trained_without(args, f"without_{source}", [source])
        evaluate_source(model, args.data, source, os.path.join(args.out, f"eval_{source}.json"))
        whole = os.path.join(args.out, f"whole_{source}.json")
        evaluate_source(model, args.data, source, whole, split=WHOLE)
        score_halves(whole, args.data)


def ablation(args):
    held_out = args.held_out.split(",")
    chosen = {int(i) for i in args.variants.split(",")} if args.variants else set(range(len(VARIANTS)))
    # The config's own seed keeps the plain names (variant_<i>); another seed is a run of its own, named after it.
    own_seed = config_seed(args.config)
    seeds = [None if int(s) == own_seed else int(s) for s in args.train_seeds.split(",")] if args.train_seeds else [None]
    for index, (variant, flags) in enumerate(VARIANTS.items()):
        if index not in chosen:
            continue
        for seed in seeds:
            name = f"variant_{index}" + (f"_seed{seed}" if seed is not None else "")
            extra = flags + (["--seed", str(seed)] if seed is not None else [])
            model = trained_without(args, name, held_out, extra)
            baselines = () if index or seed is not None else tuple(BASELINES)
            for source in held_out + args.also.split(","):
                if source:
                    evaluate_source(model, args.data, source, os.path.join(args.out, f"eval_{name}_{source}.json"),
                                    baselines=baselines)
            for source in held_out:
                whole = os.path.join(args.out, f"whole_{name}_{source}.json")
                evaluate_source(model, args.data, source, whole, baselines=baselines, split=WHOLE)
                score_halves(whole, args.data)
            with open(os.path.join(model, "variant.json"), "w") as f:
                json.dump({"variant": variant, "flags": flags, "held_out": held_out, "seed": seed}, f)


def _scores(report, system=None, scheme="strict"):
    """A report's overall scores (a baseline's, with `system`) under a matching scheme: strict, or one of
    `RELAXED_SCHEMES`; None for a report written before the relaxed schemes were."""
    scores = report["compare"][system] if system else report
    return scores["overall"] if scheme == "strict" else (scores.get("relaxed") or {}).get(scheme)


def _f1(report, system=None, scheme="strict"):
    scores = _scores(report, system, scheme)
    return None if scores is None else scores["f1"]


def _cell(value):
    return "-" if value is None else f"{value:.3f}"


def _reports(folder, prefix="eval_", seeds=False):
    """(source, report) of each `<prefix><source>.json` evaluation report in `folder`, by source name; with
    ``seeds``, also each `<prefix>seed<k>_<source>.json`, a run of another training seed (ablation --train-seeds)."""
    for name in sorted(os.listdir(folder)):
        if not (name.startswith(prefix) and name.endswith(".json")) or (
                prefix == "eval_" and name.startswith("eval_variant_")):
            continue
        source = name[len(prefix):-len(".json")]
        if SEEDED.match(source) and not seeds:
            continue
        with open(os.path.join(folder, name)) as f:
            report = json.load(f)
        if "overall" in report:  # not another tool's file (the Trainer's eval_results.json)
            yield SEEDED.sub("", source), report


def _runs(folders, prefix):
    """source -> the reports of every run scored on it, in every folder (`_reports` with the other seeds' runs)."""
    runs = {}
    for folder in folders:
        for source, report in _reports(folder, prefix, seeds=True):
            runs.setdefault(source, []).append(report)
    return dict(sorted(runs.items()))


def table(args):
    """Markdown: per source, out-of-source F1 (and in-source, when given), the baselines on the same rows. A source
    with one run gets its precision and recall and, with strict scores from reports that have them, the F1's 95%
    interval over documents drawn again; one with several runs (training seeds, folders of other draws of the
    corpus) the mean F1 and its range over the runs, which must all have scored the same number of texts."""
    runs = _runs(args.folder, args.prefix)
    intervals = args.scheme == "strict" and any(len(reports) == 1 and "interval" in reports[0]
                                                for reports in runs.values())
    rows = []
    for source, reports in runs.items():
        n_texts = _texts_scored(source, reports)
        in_source = []
        if args.in_source:
            path = os.path.join(args.in_source, f"eval_{source}.json")
            if os.path.isfile(path):
                with open(path) as f:
                    in_source = [_cell(_f1(json.load(f), scheme=args.scheme))]
            else:
                in_source = ["-"]
        scores = [_scores(report, scheme=args.scheme) for report in reports]
        if len(reports) > 1:
            f1s = [o["f1"] for o in scores if o is not None]
            cell = _mean_and_range(f1s, "runs") if len(f1s) == len(reports) else "-"
        else:
            cell = "-" if scores[0] is None else \
                f"{scores[0]['f1']:.3f} ({scores[0]['precision']:.3f} / {scores[0]['recall']:.3f})"
        interval = reports[0].get("interval") if len(reports) == 1 else None
        compare = _first_compared(reports)
        cells = [source, f"{n_texts:,}", cell,
                 *([f"{interval_text(interval)} ({interval['documents']:,})" if interval and interval["f1"] else "-"]
                   if intervals else []),
                 *in_source, *(_cell(_f1({"compare": compare}, system, args.scheme)) if system in compare else "-"
                               for system in BASELINES)]
        rows.append("| " + " | ".join(cells) + " |")
    columns = ["source", "texts", args.label, *(["F1 95% interval (documents)"] if intervals else []),
               *(["piiner in source F1"] if args.in_source else []), *BASELINES.values()]
    if args.scheme != "strict":
        columns = [c.replace("F1", f"F1 ({RELAXED_SCHEMES[args.scheme]})") for c in columns]
    header = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    print("\n".join(header + rows + _baselines_ran(args.folder)))


def unscored_table(args):
    """Markdown: per source scored on some types only, the spans each system predicted of the other types per
    1,000 words (what the score cannot see: a NER corpus says neither yes nor no to them), and piiner's commonest."""
    columns = ["source", "words", "piiner", *(f"{BASELINES[s].removesuffix(' F1')}" for s in BASELINES),
               "piiner's commonest other types"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for source, report in _reports(args.folder, args.prefix):
        if "unscored" not in report:
            continue
        compare, unscored = report.get("compare") or {}, report["unscored"]
        rates = [unscored, *((compare[s].get("unscored") if s in compare else None) for s in BASELINES)]
        commonest = ", ".join(f"{t} {n}" for t, n in list(unscored["per_type"].items())[:5])
        lines.append(f"| {source} | {unscored['words']:,} | "
                     + " | ".join(f"{u['per_1k_words']:.1f}" if u else "-" for u in rates) + f" | {commonest} |")
    print("\n".join(lines))


def redaction_table(args):
    """Markdown: per source, what redacting every predicted span (whatever its type) hides: the share of gold spans
    hidden whole and the share of all characters redacted, piiner's (mean and range over runs) and each baseline's.
    Reports written before the measure existed show "-": `rescore` (and `halves`, for the halves) scores them again
    from their saved predictions."""
    columns = ["source", "texts", "piiner: gold spans hidden", "piiner: characters redacted",
               *(f"{BASELINES[s].removesuffix(' F1')}: hidden / redacted" for s in BASELINES)]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for source, reports in _runs(args.folder, args.prefix).items():
        n_texts = _texts_scored(source, reports)
        coverage = [report.get("redaction") or {} for report in reports]
        compare = {system: scored.get("redaction") for system, scored in _first_compared(reports).items()}
        cells = [source, f"{n_texts:,}",
                 _runs_cell(coverage, "span_recall"), _runs_cell(coverage, "redacted_share"),
                 *(f"{_cell(compare[s]['span_recall'])} / {_cell(compare[s]['redacted_share'])}" if compare.get(s)
                   else "-" for s in BASELINES)]
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines + _baselines_ran(args.folder)))


def _baselines_ran(folders):
    """Lines to print under a table: what each baseline ran (Presidio's version and spaCy pipeline, say), read from
    the reports of `folders` that recorded it (a half's report scored from predictions saved before they named their
    system does not; the whole report beside it does). A baseline that ran as two systems in those folders gets both
    named. None recorded: no line."""
    ran = {}
    for folder in folders:
        for _, report in _reports(folder, prefix="", seeds=True):
            for name, scored in (report.get("compare") or {}).items():
                if name in BASELINES and scored.get("system"):
                    ran.setdefault(name, set()).add(scored["system"])
    if not ran:
        return []
    named = [f"{BASELINES[name].removesuffix(' F1')}: {' and '.join(sorted(systems))}" for name, systems in ran.items()]
    return ["", f"Baselines as run: {'; '.join(named)}."]


def _texts_scored(source, reports):
    """The number of texts every run of `source` scored: runs on other rows cannot share a row of a table."""
    texts = {report["meta"]["n_texts"] for report in reports}
    if len(texts) > 1:
        raise SystemExit(f"{source}: its runs scored different numbers of texts ({sorted(texts)}); a table "
                         "averages runs on the same rows only")
    return texts.pop()


def _first_compared(reports):
    """Each compared system's scores from the first run that has it: the baselines are the same on every run's
    rows."""
    compare = {}
    for report in reports:
        for system, scored in (report.get("compare") or {}).items():
            compare.setdefault(system, scored)
    return compare


def _runs_cell(coverage, key):
    """The mean and range of `key` over the runs' redaction figures; "-" where a run lacks the measure (a report
    written before it) or had nothing to measure (no gold span)."""
    values = [c.get(key) for c in coverage]
    return "-" if None in values else _mean_and_range(values, "runs")


def ablation_table(args):
    """Markdown: one row per variant that has run, the F1 of each source it was scored on (`args.scored`: its test
    split, every document, or one half); with runs of several training seeds, their mean and range."""
    rows, sources = [], []
    for index, variant in enumerate(VARIANTS):
        scores = {}
        for source, report in _reports(args.folder, f"{args.scored}_variant_{index}_", seeds=True):
            scores.setdefault(source, []).append(_f1(report))
        if scores:
            rows.append((variant, scores))
            sources += [s for s in scores if s not in sources]
    lines = ["| variant | " + " | ".join(sources) + " |", "|---|" + "---|" * len(sources)]
    for variant, scores in rows:
        lines.append(f"| {variant} | " + " | ".join(_mean_and_range(scores.get(s)) for s in sources) + " |")
    print("\n".join(lines))


def _mean_and_range(values, unit="seeds"):
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{sum(values) / len(values):.3f} ({min(values):.3f}-{max(values):.3f}, {len(values)} {unit})"


def parser():
    p = argparse.ArgumentParser(prog="python experiments/out_of_source.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_text in (("leave-one-out", "a model per held-out source, trained on all the others"),
                            ("ablation", "each variant trained once without the held-out sources")):
        s = sub.add_parser(name, help=help_text)
        s.add_argument("--sources", required=True, help="every source of the full corpus")
        s.add_argument("--held-out", required=True, help="sources to hold out (one at a time, or all at once)")
        s.add_argument("--config", required=True, help="the training YAML of each run")
        s.add_argument("--data", required=True, help="the full corpus, whose test splits are scored")
        s.add_argument("--out", required=True, help="folder for the corpora, models and reports")
        s.add_argument("--synthetic-per-type", type=int, default=200)
        s.add_argument("--seed", type=int, default=0)
        if name == "ablation":
            s.add_argument("--also", default="formats,synthetic,presidio",
                           help="sources also scored (in source for every variant)")
            s.add_argument("--variants", help=f"indices of the variants to run (default: all): "
                           f"{'; '.join(f'{i} {v}' for i, v in enumerate(VARIANTS))}")
            s.add_argument("--train-seeds", help="train each variant once per seed (comma-separated; default: the "
                           "config's seed only); the table gives each score's mean and range over the seeds")
    i = sub.add_parser("in-source", help="every source's test split scored with one model")
    i.add_argument("--model", required=True)
    i.add_argument("--data", required=True)
    i.add_argument("--sources", required=True)
    i.add_argument("--out", required=True, help="folder for eval_<source>.json")
    t = sub.add_parser("table", help="print the reports of one or more folders as a markdown table (several runs of "
                       "a source: mean and range)")
    t.add_argument("folder", nargs="+", help="folders of reports (several: runs on other draws of the corpus)")
    t.add_argument("--in-source", help="a folder with eval_<source>.json reports of a model trained on everything")
    t.add_argument("--scheme", default="strict", choices=list(RELAXED_SCHEMES),
                   help="span matching: strict (default) or a relaxed scheme of the reports "
                        f"({'; '.join(f'{k}: {v}' for k, v in RELAXED_SCHEMES.items())})")
    u = sub.add_parser("unscored-table", help="print, per source, the spans of types its gold does not score "
                       "(per 1,000 words, every system)")
    u.add_argument("folder")
    u.add_argument("--prefix", default="eval_", help="report files <prefix><source>.json")
    r = sub.add_parser("redaction-table", help="print, per source, the gold spans that redacting every predicted span "
                       "hides whole and the characters it redacts (every system; several folders: mean and range)")
    r.add_argument("folder", nargs="+", help="folders of reports (several: runs on other draws of the corpus)")
    r.add_argument("--prefix", default="eval_", help="report files <prefix><source>.json")
    h = sub.add_parser("halves", help="score a folder's whole-corpus reports again on each half of their documents "
                       "(development_<name>.json, report_<name>.json), from their saved predictions")
    h.add_argument("folder")
    h.add_argument("--data", required=True, help="the gold corpus the reports were scored on")
    h.add_argument("--compare", help="baselines to score on each half's rows beside the model (comma-separated: "
                   f"{', '.join(BASELINES)}; default: those each whole report was compared with)")
    s = sub.add_parser("rescore", help="score a folder's reports again from their saved predictions (and the "
                       "baselines' they were compared with), e.g. after a change to the scoring")
    s.add_argument("folder")
    s.add_argument("--prefix", default="eval_", help="report files <prefix><name>.json (default: eval_)")
    s.add_argument("--data", help="the gold corpus (default: the one each report names)")
    a = sub.add_parser("ablation-table", help="print an ablation folder's F1 per variant and source as markdown")
    a.add_argument("folder")
    a.add_argument("--scored", default="eval", choices=["eval", "whole", "development", "report"],
                   help="the reports read: eval (test splits, the default), whole (every document of a held-out "
                        "source), or one half of them (development, report)")
    t.add_argument("--label", default="piiner out of source F1", help="heading of the reports' F1 column")
    t.add_argument("--prefix", default="eval_", help="report files <prefix><source>.json (an ablation's variant 0: "
                   "eval_variant_0_)")
    return p


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    # A folder the command reads: a typo is named here, not met as a traceback (or, for --in-source, a column of "-").
    folders = getattr(args, "folder", None)
    for name, folder in [*(("folder", f) for f in ([folders] if isinstance(folders, str) else folders or [])),
                         ("--in-source", getattr(args, "in_source", None))]:
        if folder is not None and not os.path.isdir(folder):
            p.error(f"{name} {folder}: no such folder")
    if args.command in ("leave-one-out", "ablation"):  # before a corpus is built or a model trained
        if not os.path.isfile(args.config):
            p.error(f"--config {args.config}: no such file")
        unknown = [s for s in args.held_out.split(",") if s not in args.sources.split(",")]
        if unknown:
            p.error(f"--held-out names {', '.join(unknown)}, which --sources does not: a held-out source must be one "
                    "of the full corpus's sources")
    if args.command == "halves" and args.compare:
        unknown = [s for s in args.compare.split(",") if s not in BASELINES]
        if unknown:
            p.error(f"--compare names {', '.join(unknown)}: the baselines are {', '.join(BASELINES)}")
    commands = {"in-source": in_source, "leave-one-out": leave_one_out, "ablation": ablation, "table": table,
                "halves": halves, "rescore": rescore, "unscored-table": unscored_table,
                "redaction-table": redaction_table, "ablation-table": ablation_table}
    commands[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
