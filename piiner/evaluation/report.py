"""Evaluation reports: one JSON shape, rendered as markdown tables for the terminal, the README and the card.

A report is the ``span_metrics`` result (overall, per_type, per_tier) plus ``per_source`` (overall scores of each
source when the data mixes several), ``unscored`` (with ``--types``: the spans predicted of types neither scored nor
labelled in the gold, per type and per 1,000 words, and the gold spans lying inside them), ``throughput``,
``dropped`` (spans not scored, by reason) and ``meta`` (command line, model or baseline, data, split, n_texts,
seconds), and ``interval`` (the F1's 95% interval over documents drawn again; under ``compare``, also each system's
F1 minus this one's on the same draws).
"""

import json
import os


def throughput(n_texts, n_chars, seconds):
    """Texts per second, characters per second and milliseconds per 1,000 characters of one timed run."""
    return {
        "n_texts": n_texts,
        "n_chars": n_chars,
        "seconds": seconds,
        "texts_per_s": n_texts / seconds if seconds > 0 else None,
        "chars_per_s": n_chars / seconds if seconds > 0 else None,
        "ms_per_1k_chars": 1e6 * seconds / n_chars if n_chars else None,
    }


def _num(x, digits=3):
    if x is None:
        return "-"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_num(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


_SCORE_COLS = ("precision", "recall", "f1", "f2", "tp", "fp", "fn", "support")


def interval_text(interval, key="f1"):
    """``0.700-0.770`` for an F1 interval, ``-0.050 to +0.010`` for a difference's, ``-`` for none."""
    span = (interval or {}).get(key)
    if not span:
        return "-"
    low, high = span
    return f"{low:+.3f} to {high:+.3f}" if key != "f1" else f"{low:.3f}-{high:.3f}"


def overall_table(report):
    o = report["overall"]
    return _table(_SCORE_COLS, [[o[c] for c in _SCORE_COLS]])


def compare_table(report, name="this run"):
    """System by system on the same rows: overall scores, F1 difference to the first system, per-source F1."""
    systems = {name: report, **report["compare"]}
    sources = list(report.get("per_source") or {})
    unscored = "unscored" in report
    header = ("system", "precision", "recall", "f1", "f1 95% interval", "f2", "f1 vs " + name,
              "f1 vs " + name + ", 95% interval") + tuple(f"f1 {s}" for s in sources) + (
        ("other types per 1k words",) if unscored else ()) + ("ms per 1k chars",)
    rows = []
    for system, r in systems.items():
        o, t = r["overall"], r.get("throughput") or {}
        rows.append([system, o["precision"], o["recall"], o["f1"], interval_text(r.get("interval")), o["f2"],
                     o["f1"] - report["overall"]["f1"],
                     interval_text(r.get("interval"), "f1_minus_first") if r is not report else "-"]
                    + [r["per_source"][s]["f1"] for s in sources]
                    + ([(r.get("unscored") or {}).get("per_1k_words")] if unscored else [])
                    + [t.get("ms_per_1k_chars")])
    return _table(header, rows)


def source_table(report):
    rows = [[name] + [r[c] for c in _SCORE_COLS] + [r.get("n_texts")] for name, r in report["per_source"].items()]
    return _table(("source",) + _SCORE_COLS + ("texts",), rows)


def tier_table(report):
    rows = []
    for tier, r in sorted(report["per_tier"].items(), key=lambda kv: int(kv[0])):
        meets = {True: "yes", False: "**no**", None: "-"}[r.get("meets_target")]
        rows.append([str(tier), r["recall"], r["target"], meets, r["precision"], r["f1"], r["f2"], r["support"]])
    return _table(("tier", "recall", "target", "meets", "precision", "f1", "f2", "support"), rows)


def type_table(report, tier_of=None):
    header = (("type", "tier") if tier_of else ("type",)) + _SCORE_COLS
    rows = []
    for span_type, r in report["per_type"].items():
        lead = [span_type, str(tier_of.get(span_type, "-"))] if tier_of else [span_type]
        rows.append(lead + [r[c] for c in _SCORE_COLS])
    return _table(header, rows)


def relaxed_table(report):
    from piiner.evaluation.metrics import RELAXED_FIELDS, RELAXED_SCHEMES

    rows = [[scheme, meaning, *(_num(report["relaxed"][scheme][f]) for f in RELAXED_FIELDS)]
            for scheme, meaning in RELAXED_SCHEMES.items()]
    return _table(("scheme", "counts as a match", *RELAXED_FIELDS), rows)


def redaction_table(report, name="this run"):
    """System by system: what redacting every predicted span, whatever its type, hides of the gold."""
    systems = {name: report, **(report.get("compare") or {})}
    rows = [[system, c["span_recall"], f"{c['hidden_spans']} of {c['gold_spans']}", c["char_recall"],
             c["redacted_share"]] for system, c in ((s, r.get("redaction")) for s, r in systems.items()) if c]
    return _table(("system", "gold spans hidden whole", "spans", "gold characters hidden", "all characters redacted"),
                  rows)


def format_markdown(report, title=None):
    """The report as markdown: overall, per tier (with recall targets), per type, throughput, dropped spans."""
    from piiner.hub.pii_schema import TIER_OF

    meta = report.get("meta", {})
    name = meta.get("model") or meta.get("baseline") or meta.get("predictions") or "predictions"
    data = meta.get("data", "data")
    parts = [f"## {title or f'{name} on {data}'}"]
    if meta:
        parts.append(
            f"{meta.get('n_texts', '?')} texts, split `{meta.get('split')}`"
            + (f", source `{meta['source']}`" if meta.get("source") else "")
            + (f", types {', '.join(meta['types'])}" if meta.get("types") else "")
        )
    parts += ["### Overall (strict span match)", overall_table(report)]
    i = report.get("interval")
    if i:
        parts.append(f"F1 95% interval over {i['documents']:,} documents drawn again ({i['resamples']:,} draws): "
                     + (interval_text(i) if i["f1"] else "none (one document)"))
    if report.get("compare"):
        parts += ["### Compared on the same rows", compare_table(report, name)]
    if report.get("per_source"):
        parts += ["### Per source", source_table(report)]
    if report.get("relaxed"):
        parts += ["### Relaxed matches (where the strict misses go)", relaxed_table(report)]
    if report.get("redaction"):
        parts += ["### Redaction (every predicted span hidden, whatever its type; whitespace not counted)",
                  redaction_table(report, name)]
    parts += ["### Per tier", tier_table(report)]
    parts += ["### Per type", type_table(report, TIER_OF)]
    u = report.get("unscored")
    if u and u["spans"]:
        parts += [f"### Types the gold does not judge\n\n{u['spans']} predicted spans of types neither scored here "
                  f"nor labelled in the gold, {u['per_1k_words']:.1f} per 1,000 words"
                  + (f"; {u['on_not_pii_spans']} of them on stretches the gold labels as no PII type (wrong)"
                     if u.get("on_not_pii_spans") else ""),
                  _table(("type", "spans"), list(u["per_type"].items()))]
        if u.get("gold_inside"):
            parts += ["Gold spans of the scored types lying inside one of these, each a miss in the score (the "
                      "system gave the stretch another type: a street address over a city and state, a party "
                      "over an organization): " + ", ".join(f"{n} inside {t}" for t, n in u["gold_inside"].items())]
    a = report.get("set_aside_unjudged")
    if a and a["spans"]:
        parts.append(f"{a['spans']} predicted spans lie inside stretches the gold leaves unjudged (a mention it may "
                     "or may not count as PII, such as a bare year) and are not scored: "
                     + ", ".join(f"{t} {n}" for t, n in a["per_type"].items()))
    t = report.get("throughput")
    if t:
        parts += ["### Throughput", _table(
            ("texts", "chars", "seconds", "texts/s", "chars/s", "ms per 1k chars"),
            [[t["n_texts"], t["n_chars"], t["seconds"], t["texts_per_s"], t["chars_per_s"], t["ms_per_1k_chars"]]],
        )]
    if report.get("dropped"):
        parts += ["### Spans not scored", _table(("reason", "spans"), sorted(report["dropped"].items()))]
    return "\n\n".join(parts) + "\n"


def write_json(report, path):
    """Write the report as indented JSON (tier keys become strings, as JSON requires)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2, sort_keys=False)
        f.write("\n")


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


__all__ = ["throughput", "format_markdown", "overall_table", "compare_table", "source_table", "tier_table", "type_table", "write_json",
           "read_json"]
