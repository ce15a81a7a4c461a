"""Score a piiner model, a baseline, or predictions made elsewhere against gold PII spans, strictly.

    piiner-evaluate --model runs/quickstart --data data/quickstart --split test --out report.json
    piiner-evaluate --baseline regex --data data/quickstart --source presidio
    piiner-evaluate --predictions preds.jsonl --data gold.jsonl --label-map PER=PERSON,MISC=O
    piiner-evaluate --model runs/quickstart --data data/quickstart --source presidio --compare presidio,regex
    piiner-evaluate --predictions new/pred.jsonl --data data/reference --source btc --compare old/pred.jsonl

A true positive is an exact (start, end, type) match on the original text. Prints markdown tables (overall, per
tier against its recall target, per type) and throughput, and writes the JSON report with ``--out``. Every F1 comes
with a 95% interval over documents drawn again with replacement (the gold's ``group`` column, else each text
alone), and every compared system with the interval of its F1 minus this one's on the same draws: a difference
whose interval holds 0 is one these documents cannot tell from chance.
"""

import argparse
import json
import os
import shlex
import sys
import time
from collections import Counter

from piiner.baselines.systems import BASELINES, BaselineUnavailable, get_baseline, with_backstop
from piiner.evaluation.data import (
    HALVES,
    align_predictions,
    check_and_map_spans,
    document_of,
    load_split,
    parse_label_map,
    prediction_spans,
    read_jsonl,
    select_rows,
)
from piiner.evaluation.metrics import (
    bootstrap_f1, redaction_coverage, relaxed_matches, set_aside_unjudged, span_metrics, unscored_spans)
from piiner.evaluation.predict import predict_spans
from piiner.evaluation.report import format_markdown, throughput, write_json
from piiner.options import name_value_pairs, written_over
from piiner.hub.pii_schema import TIER_OF
from piiner.snapshot import check_model_path, load_evidence, load_pipeline


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--model", help="saved piiner model folder (or Hub id), run through its pipeline")
    who.add_argument("--baseline", choices=sorted(BASELINES), help="score a baseline instead of a model")
    who.add_argument("--predictions", help="JSONL of {id?, text?, spans} made elsewhere, matched by id or line")
    p.add_argument("--data", required=True, help="dataset folder (save_to_disk), Hub dataset id, or gold JSONL")
    p.add_argument("--split", default="test", help="split of a DatasetDict (default: test); several joined by commas "
                   "(train,validation,test: every document of a source the model never trained on)")
    p.add_argument("--source", help="keep only rows whose 'source' column equals this")
    p.add_argument("--half", choices=HALVES, help="keep one fixed half of the documents (ordered by a hash of each "
                   "'group', dealt alternately): development, where recipe changes are judged, or report, kept for "
                   "the figures quoted; the same --split and --source give the same halves")
    p.add_argument("--types", help="comma-separated piiner types to score (others ignored in gold and predictions)")
    p.add_argument("--label-map", help="rename gold (and --predictions) types: A=B,C=O or a JSON file; O drops")
    p.add_argument("--merge-types", help="score these types as one, in the gold and in every system's predictions: "
                   "A=B,... (e.g. DATE_OF_BIRTH=DATE against a baseline that cannot tell a birth date from a date)")
    p.add_argument("--compare", help="comma-separated baselines (regex, presidio, rampart) or prediction JSONL files "
                   "(another model's --save-predictions; NAME=FILE.jsonl to report one under NAME) scored on the same "
                   "rows in the same run, reported under 'compare' with a side-by-side table and the paired interval "
                   "of each F1 difference")
    p.add_argument("--resamples", type=int, default=1000, help="document draws for the intervals (default: 1000)")
    p.add_argument("--out", help="write the JSON report here")
    p.add_argument("--save-predictions", help="write the predictions as JSONL {id, text, spans, model or system}, the "
                   "format --predictions reads, to rescore them later (other --types, --source) without a rerun, the "
                   "report naming the model or baseline that made them; each "
                   "--compare baseline's go beside them (PATH.<baseline>.jsonl)")
    p.add_argument("--batch-size", type=int, default=16, help="texts per pipeline call (default: 16)")
    p.add_argument("--limit", type=int, help="score only the first N rows (after --source)")
    p.add_argument("--device", help="torch device for --model, e.g. cuda:0 (default: CPU)")
    p.add_argument("--recognizers", metavar="FILE", action="append",
                   help="with --model: YAML or JSON recognizers, allow_list and deny_list added to the model's own, "
                        "as piiner-redact takes (again to add another file)")
    p.add_argument("--backstop", choices=["regex"], help="add the regex baseline's spans (checksummed identifiers) "
                   "where the scored system found nothing overlapping: the backstop ablation")
    args = p.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        p.error("--limit must be >= 1")
    if args.batch_size < 1:
        p.error("--batch-size must be >= 1")
    try:  # the report keeps one score per name: a second system under it would replace the first unseen
        compared = _compared(args.compare)
    except ValueError as error:
        p.error(str(error))
    unknown = [b for b in compared.values() if b not in BASELINES and not b.endswith(".jsonl")]
    if unknown:
        p.error(f"--compare: unknown baselines {unknown}; choose from {sorted(BASELINES)} or give a .jsonl file")
    if args.resamples < 100:
        p.error("--resamples must be >= 100")
    clash = _written_over(args, compared)
    if clash:
        p.error(clash)
    return args


def _written_over(args, compared):
    """Why a file this run writes would be written over an input it reads or over another of its outputs
    (``--out gold.jsonl``); None when none would."""
    reads = [("--data", args.data), ("--predictions", args.predictions)] + [
        ("--compare", path) for path in compared.values() if path.endswith(".jsonl")]
    writes = [("--out", args.out), ("--save-predictions", args.save_predictions)]
    if args.save_predictions:
        writes += [(f"--save-predictions' {name} file", compared_predictions(args.save_predictions, name))
                   for name, baseline in compared.items() if baseline in BASELINES]
    return written_over(reads, writes)


def _compared(spec):
    """``{name: baseline or FILE.jsonl}`` of ``--compare``: NAME=FILE.jsonl, or a baseline or file under its own
    name."""
    items = [item.strip() for item in (spec or "").split(",") if item.strip()]
    return name_value_pairs([item if "=" in item else f"{item}={item}" for item in items], "--compare",
                            "NAME=FILE.jsonl")


def _parse_types(spec):
    if not spec:
        return None
    types = [t.strip() for t in spec.split(",") if t.strip()]
    unknown = [t for t in types if t not in TIER_OF]
    if unknown:
        raise ValueError(f"--types names types that are not piiner types: {unknown}")
    return types


# What a predictions line may say made it: a piiner model (its folder or Hub id, and a recognizers file added to it)
# or a baseline (what it ran), and the backstop that added to its spans.
MADE_BY = ("model", "recognizers", "system", "backstop")


def write_predictions(path, rows, predictions, made_by=None):
    """JSONL with one line per gold row: its id and text and the predicted spans, and what made them where known
    (`made_by`, `MADE_BY`: the ``model`` folder or Hub id or a baseline's ``system``, and the ``backstop``), so that a
    report scored later from the file still names them."""
    made_by = {key: value for key, value in (made_by or {}).items() if value}
    with open(path, "w", encoding="utf-8") as f:
        for row, spans in zip(rows, predictions):
            line = {"id": row["id"], "text": row["text"], "spans": spans, **made_by}
            f.write(json.dumps(line, ensure_ascii=False) + "\n")


def compared_predictions(path, name):
    """Where ``--save-predictions PATH`` keeps the compared baseline `name`'s predictions: ``PATH.<name>.jsonl``
    (``whole_btc.presidio.jsonl`` beside ``whole_btc.jsonl``), which a later run compares with under that name
    (``--compare presidio=...``) instead of running the baseline again."""
    return f"{path.removesuffix('.jsonl')}.{name}.jsonl"


def _read_predictions(path, rows, split_rows, label_map, dropped):
    """The spans of a predictions file for each gold row, renamed by the label map, as raw dicts and as tuples; and
    what its lines say made them (`write_predictions`' `MADE_BY`, each where every line names the same one)."""
    pred_rows = align_predictions(rows, read_jsonl(path), path, known_ids=[r["id"] for r in split_rows])
    pred = [check_and_map_spans({**r, "spans": prediction_spans(r)}, label_map, dropped, "pred") for r in pred_rows]
    made_by = {}
    for key in MADE_BY:
        names = {r[key] if isinstance(r.get(key), str) else None for r in pred_rows}
        if len(names) == 1 and None not in names:
            made_by[key] = names.pop()
    return [[{"start": a, "end": b, "label": t} for a, b, t in spans] for spans in pred], pred, made_by


def _run_predictor(args, texts):
    """Predicted span dicts of the model or baseline named in ``args``, the seconds the prediction took, and what
    made them (`MADE_BY`: the ``model`` as given, or what a baseline ran, its ``system``: Presidio's version and spaCy
    pipeline, say)."""
    if args.baseline:
        predictor = get_baseline(args.baseline)
        start = time.perf_counter()  # loading spaCy or the model is not throughput
        raw = predictor.predict(texts)
        return raw, time.perf_counter() - start, {"system": predictor.system}
    evidence = load_evidence(args.recognizers) if args.recognizers else None
    pipe = load_pipeline(args.model, args.device, evidence=evidence)
    start = time.perf_counter()
    raw = predict_spans(pipe, texts, batch_size=args.batch_size)
    made_by = {"model": args.model,
               **({"recognizers": ", ".join(map(os.path.abspath, args.recognizers))} if args.recognizers else {})}
    return raw, time.perf_counter() - start, made_by


def judged(rows, pred, types):
    """`pred` without the predictions of the scored `types` inside the rows' unjudged spans, and the report entry
    counting them (None when no row has an unjudged span)."""
    unjudged = [r.get("unjudged_spans") for r in rows]
    pred, set_aside = set_aside_unjudged(pred, unjudged, types)
    if not any(unjudged):
        return pred, None
    return pred, {"spans": sum(set_aside.values()), "per_type": dict(set_aside.most_common())}


def score(rows, gold, pred, types, set_aside=None, redacted=None):
    """``span_metrics`` of all rows, plus the overall scores of each source when the rows mix several, the
    predictions set aside in unjudged spans (`judged`), and what redacting every prediction hides (`redacted`: the
    predictions before that set-aside, which a redactor hides too; `pred` when None)."""
    report = span_metrics(gold, pred, types=types)
    if set_aside is not None:
        report["set_aside_unjudged"] = set_aside
    texts = [r["text"] for r in rows]
    report["relaxed"] = relaxed_matches(gold, pred, types=types)
    report["redaction"] = redaction_coverage(texts, gold, pred if redacted is None else redacted, types)
    if types:
        report["unscored"] = unscored_spans(texts, pred, types,
                                            [r.get("labelled_types") for r in rows],
                                            [r.get("not_pii_spans") for r in rows], gold)
    sources = sorted({r.get("source") for r in rows} - {None})
    if len(sources) > 1:
        # One model run, a row per source: a mixed test split hides which corpus a model is weak on.
        report["per_source"] = {}
        for name in sources:
            keep = [i for i, r in enumerate(rows) if r.get("source") == name]
            m = span_metrics([gold[i] for i in keep], [pred[i] for i in keep], types=types)
            report["per_source"][name] = dict(m["overall"], n_texts=len(keep))
    return report


def _interval(drawn, k):
    """System `k`'s share of `bootstrap_f1`'s result: its F1 interval and, after the first, its difference's."""
    out = {key: drawn[key] for key in ("level", "resamples", "documents")}
    out["f1"] = drawn["f1"][k]
    if k:
        out["f1_minus_first"] = drawn["f1_minus_first"][k]
    return out


def _as_tuples(raw):
    return [[(s["start"], s["end"], s["label"]) for s in spans] for spans in raw]


def _merged(spans_per_text, merge):
    """Spans with the merged types renamed (`--merge-types`); the same lists when there is nothing to merge."""
    if not merge:
        return spans_per_text
    return [[(start, end, merge.get(label, label)) for start, end, label in spans] for spans in spans_per_text]


def evaluate(args, command=None):
    """Run one evaluation described by parsed ``args``; returns the report dict (see evaluation.report)."""
    if args.model:
        check_model_path(args.model)  # before reading the data: a typo should not cost a dataset load
    types = _parse_types(args.types)
    label_map = parse_label_map(args.label_map)
    compare = _compared(args.compare)
    split_rows = load_split(args.data, split=args.split)
    rows = select_rows(split_rows, source=args.source, limit=args.limit, half=args.half)
    texts = [r["text"] for r in rows]
    n_chars = sum(map(len, texts))
    dropped = Counter()
    gold = [check_and_map_spans(r, label_map, dropped, "gold") for r in rows]

    seconds = None
    if args.predictions:
        raw, pred, made_by = _read_predictions(args.predictions, rows, split_rows, label_map, dropped)
    else:
        raw, seconds, made_by = _run_predictor(args, texts)
        pred = _as_tuples(raw)
    if args.backstop:
        raw = with_backstop(raw, get_baseline(args.backstop).predict(texts))
        pred = _as_tuples(raw)
        made_by["backstop"] = args.backstop
    if args.save_predictions:
        write_predictions(args.save_predictions, rows, raw, made_by)

    merge = parse_label_map(args.merge_types)
    gold, redacted = _merged(gold, merge), _merged(pred, merge)
    pred, set_aside = judged(rows, redacted, types)
    report = score(rows, gold, pred, types, set_aside, redacted)
    if seconds is not None:
        report["throughput"] = throughput(len(texts), n_chars, seconds)
    compared = {}
    if compare:
        # Baselines (or another run's predictions) on exactly the same rows, gold and type restriction.
        report["compare"] = {}
        for name, what in compare.items():
            if what.endswith(".jsonl"):
                _, pred_b, timing = _read_predictions(what, rows, split_rows, label_map, dropped)
            else:
                raw_b, seconds_b, made_by_b = _run_predictor(argparse.Namespace(baseline=what), texts)
                if args.save_predictions:
                    write_predictions(compared_predictions(args.save_predictions, name), rows, raw_b, made_by_b)
                pred_b = _as_tuples(raw_b)
                timing = {"throughput": throughput(len(texts), n_chars, seconds_b), **made_by_b}
            redacted_b = _merged(pred_b, merge)
            pred_b, set_aside_b = judged(rows, redacted_b, types)
            report["compare"][name] = dict(score(rows, gold, pred_b, types, set_aside_b, redacted_b), **timing)
            compared[name] = pred_b
    # One set of document draws for every system: the intervals of their differences are paired.
    drawn = bootstrap_f1(gold, [pred, *compared.values()], [document_of(r) for r in rows], types,
                         resamples=args.resamples)
    report["interval"] = _interval(drawn, 0)
    for k, name in enumerate(compared, 1):
        report["compare"][name]["interval"] = _interval(drawn, k)
    report["dropped"] = dict(sorted(dropped.items()))
    report["meta"] = {
        "command": command or " ".join(shlex.quote(a) for a in sys.argv),
        "model": args.model or made_by.get("model"),
        "recognizers": made_by.get("recognizers"),
        "baseline": args.baseline,
        "system": made_by.get("system"),
        "predictions": args.predictions,
        "backstop": made_by.get("backstop"),
        "compare": [name if name == what else f"{name}={what}" for name, what in compare.items()] or None,
        "data": args.data,
        "split": args.split,
        "source": args.source,
        "half": args.half,
        "types": types,
        "label_map": label_map or None,
        "merge_types": merge or None,
        "n_texts": len(texts),
        "n_chars": n_chars,
        "seconds": seconds,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return report


def run(argv=None):
    """Parse ``argv``, evaluate, print the tables, write ``--out``; returns the report."""
    args = parse_args(argv)
    command = "piiner-evaluate " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    try:
        report = evaluate(args, command)
    except (ValueError, FileNotFoundError, NotADirectoryError, BaselineUnavailable) as err:
        sys.exit(f"piiner-evaluate: error: {err}")
    print(format_markdown(report))
    if args.out:
        write_json(report, args.out)
        print(f"report written to {args.out}")
    return report


def main(argv=None):
    run(argv)
    return 0


__all__ = ["evaluate", "main", "run", "compared_predictions"]


if __name__ == "__main__":
    sys.exit(main())
