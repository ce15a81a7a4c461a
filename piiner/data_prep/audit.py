"""Counting what happened to every record and span, and writing it down (audit.md, audit.png, audit.json)."""

import collections
import json
import os

from piiner.hub.pii_schema import PII_TYPES, TIER_OF, TIER_TYPES

SPLITS = ("train", "validation", "test")


class Audit:
    """Counters per source: rejected records, rejected spans, and deliberate decisions (notes).

    A rejection is data lost to a defect (a span off its text, an overlap); a note is a counted decision that
    changes data on purpose (an unmapped label treated as not PII, a non-English row skipped, a repaired offset).
    """

    def __init__(self):
        self.record_rejections = collections.defaultdict(collections.Counter)
        self.span_rejections = collections.defaultdict(collections.Counter)
        self.notes = collections.defaultdict(collections.Counter)
        self.rows_read = collections.Counter()
        self.malformed = collections.defaultdict(list)

    def read(self, source, n=1):
        self.rows_read[source] += n

    def reject_record(self, source, reason, n=1):
        self.record_rejections[source][reason] += n

    def malformed_row(self, source, where):
        """A row that could not be read at all (`where`: its file, line and what is wrong); the rest is kept."""
        self.record_rejections[source]["malformed_row"] += 1
        self.malformed[source].append(where)

    def reject(self, source, reason, n=1):
        self.span_rejections[source][reason] += n

    def note(self, source, what, n=1):
        self.notes[source][what] += n

    def to_dict(self):
        return {
            "rows_read": dict(self.rows_read),
            "record_rejections": {s: dict(c) for s, c in self.record_rejections.items()},
            "span_rejections": {s: dict(c) for s, c in self.span_rejections.items()},
            "notes": {s: dict(c) for s, c in self.notes.items()},
            "malformed_rows": {s: list(rows) for s, rows in self.malformed.items()},
        }


def span_counts(splits):
    """{(type, source, split): count} over a mapping split -> list of unified records."""
    counts = collections.Counter()
    for split, records in splits.items():
        for record in records:
            for span in record["spans"]:
                counts[(span["label"], record["source"], split)] += 1
    return counts


def imbalance(counts_by_type):
    """(ratio, most frequent type, least frequent non-zero type) or (None, ...) when fewer than two types."""
    present = {t: n for t, n in counts_by_type.items() if n > 0}
    if len(present) < 2:
        return None, None, None
    most = max(present, key=present.get)
    least = min(present, key=present.get)
    return present[most] / present[least], most, least


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_audit(out_dir, splits, audit, settings):
    """Write audit.md, audit.json and audit.png for the built splits; return the per-type train counts."""
    counts = span_counts(splits)
    sources = sorted({r["source"] for records in splits.values() for r in records} | set(audit.rows_read))
    by_type_split = collections.Counter()
    for (label, _, split), n in counts.items():
        by_type_split[(label, split)] += n
    train_by_type = {t: by_type_split[(t, "train")] for t in PII_TYPES}
    ratio, most, least = imbalance(train_by_type)

    lines = ["# Data audit", ""]
    lines.append("Settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
    lines.append("")
    lines.append("## Records per source and split")
    lines.append("")
    rec_rows = []
    for source in sources:
        row = [source, audit.rows_read.get(source, 0)]
        row += [sum(1 for r in splits[s] if r["source"] == source) for s in SPLITS]
        row.append(sum(1 for s in SPLITS for r in splits[s] if r["source"] == source and not r["spans"]))
        rec_rows.append(row)
    lines.append(_table(["source", "rows read", *SPLITS, "records without spans"], rec_rows))
    lines.append("")
    lines.append("## Imbalance")
    lines.append("")
    missing = [t for t in PII_TYPES if train_by_type[t] == 0]
    if ratio is not None:
        lines.append(f"Train spans: most frequent {most} ({train_by_type[most]}), least frequent {least} "
                     f"({train_by_type[least]}): imbalance ratio {ratio:.1f}x.")
    lines.append(f"Types with no train span: {', '.join(missing) if missing else 'none'}.")
    lines.append("")
    lines.append("## Spans per type x source x split")
    lines.append("")
    header = ["tier", "type"] + [f"{src} {s}" for src in sources for s in SPLITS] + ["total"]
    rows = []
    for t in PII_TYPES:
        row = [TIER_OF[t], t] + [counts[(t, src, s)] for src in sources for s in SPLITS]
        row.append(sum(by_type_split[(t, s)] for s in SPLITS))
        rows.append(row)
    lines.append(_table(header, rows))
    lines.append("")
    lines.append("## Rejections and decisions")
    lines.append("")
    lines.append("Rejected records and spans are data lost to a defect; decisions are counted, deliberate changes.")
    lines.append("")
    rej_rows = []
    for kind, table in (("record rejected", audit.record_rejections), ("span rejected", audit.span_rejections),
                        ("decision", audit.notes)):
        for source in sorted(table):
            for reason, n in sorted(table[source].items()):
                rej_rows.append([source, kind, reason, n])
    lines.append(_table(["source", "kind", "reason", "count"], rej_rows) if rej_rows else "None.")
    lines.append("")
    if audit.malformed:
        lines.append("## Malformed rows (left out; the rest of each file was read)")
        lines.append("")
        for source in sorted(audit.malformed):
            shown = audit.malformed[source][:50]
            lines += [f"- {source}: {where}" for where in shown]
            if len(audit.malformed[source]) > len(shown):
                lines.append(f"- {source}: ... {len(audit.malformed[source]) - len(shown)} more (audit.json)")
        lines.append("")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "audit.md"), "w") as f:
        f.write("\n".join(lines))
    summary = audit.to_dict()
    summary["train_spans_per_type"] = train_by_type
    summary["imbalance_ratio"] = ratio
    summary["records"] = {s: len(splits[s]) for s in SPLITS}
    with open(os.path.join(out_dir, "audit.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    _plot(os.path.join(out_dir, "audit.png"), by_type_split)
    return train_by_type


def _plot(path, by_type_split):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(18, 6), gridspec_kw={"width_ratios": [len(TIER_TYPES[t]) for t in (1, 2, 3, 4)]})
    for ax, tier in zip(axes, (1, 2, 3, 4)):
        types = TIER_TYPES[tier]
        bottom = [0] * len(types)
        for split in SPLITS:
            values = [by_type_split[(t, split)] for t in types]
            ax.bar(types, values, bottom=bottom, label=split)
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.set_title(f"tier {tier}")
        ax.tick_params(axis="x", labelrotation=90, labelsize=7)
    axes[0].set_ylabel("spans")
    axes[0].legend()
    fig.suptitle("Spans per type, by tier and split")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
