"""Build the unified corpus: read sources, validate spans, split by group, deduplicate, save, audit."""

import json
import os
import shutil
import time

from .audit import SPLITS, Audit, write_audit
from .dedup import deduplicate
from .records import check_record, clean_record
from .sources import SOURCES, iter_source
from .split import assign_splits
from .synthetic import SyntheticGenerator

DEFAULT_SOURCES = ("synthetic", "presidio", "wnut17")
# Made by the synthetic generator, not read: "formats" is the test set of held-out identifier layouts, "dense" the
# test set of notes joining four to seven held-out templates.
GENERATED = ("synthetic", "formats", "dense")
FORMATS_PER_TYPE = 40
DENSE_RECORDS = 300
DEFAULT_SYNTHETIC_PER_TYPE = 200
COLUMNS = ("id", "source", "text", "spans", "group", "labelled_types", "not_pii_spans", "unjudged_spans")


def features():
    import datasets

    return datasets.Features({
        "id": datasets.Value("string"),
        "source": datasets.Value("string"),
        "text": datasets.Value("string"),
        "spans": datasets.List({"start": datasets.Value("int32"), "end": datasets.Value("int32"),
                                "label": datasets.Value("string")}),
        "group": datasets.Value("string"),
        "labelled_types": datasets.List(datasets.Value("string")),
        "not_pii_spans": datasets.List({"start": datasets.Value("int32"), "end": datasets.Value("int32")}),
        "unjudged_spans": datasets.List({"start": datasets.Value("int32"), "end": datasets.Value("int32")}),
    })


def collect(sources, from_dirs, synthetic_per_type, seed, audit):
    """Unified records (with ``split``) of every source, validated, before deduplication. The read sources come
    first, so that the synthetic generator can set some of its PII into their sentences (of the same split)."""
    unknown = set(from_dirs) - set(sources)
    if unknown:
        raise ValueError(f"--from-dir names source(s) not in --sources: {', '.join(sorted(unknown))}")
    records = []
    for name in (s for s in sources if s not in GENERATED):
        for raw in assign_splits(list(iter_source(name, from_dirs.get(name), audit))):
            cleaned = clean_record(raw, audit)
            if cleaned is not None:
                records.append(cleaned)
    carriers = {}
    for record in records:
        if SOURCES[record["source"]].written_by_people:
            carriers.setdefault(record["split"], []).append(record)
    generator = SyntheticGenerator(seed=seed)
    made = {"synthetic": lambda: generator.records(synthetic_per_type, carriers),
            "formats": lambda: generator.formats_records(FORMATS_PER_TYPE),
            "dense": lambda: generator.dense_records(DENSE_RECORDS)}
    for name in (s for s in sources if s in GENERATED):
        for raw in made[name]():
            audit.read(name)
            cleaned = clean_record(raw, audit)
            if cleaned is not None:
                records.append(cleaned)
    return records


def build(out_dir, sources=DEFAULT_SOURCES, from_dirs=None, synthetic_per_type=DEFAULT_SYNTHETIC_PER_TYPE, seed=0,
          verbose=True):
    """Write ``out_dir`` (DatasetDict + audit + per-source test files); return the DatasetDict."""
    import datasets

    started = time.time()
    sources = list(dict.fromkeys(sources))
    if not sources:
        raise ValueError("no source given")
    replaced = previous_build(out_dir)  # before any work: a folder of someone else's files is refused at once
    audit = Audit()
    records = collect(sources, dict(from_dirs or {}), synthetic_per_type, seed, audit)
    records = deduplicate(records, audit)
    if not records:
        counts = audit.to_dict()
        raise ValueError(f"no record to write from {', '.join(sources)}: rows read {counts['rows_read']}, records "
                         f"rejected {counts['record_rejections']}, decisions {counts['notes']}")
    splits = {s: [r for r in records if r["split"] == s] for s in SPLITS}
    for record in records:
        check_record(record)
    _check_groups(splits)

    _remove(out_dir, replaced)
    os.makedirs(out_dir, exist_ok=True)
    # An empty split is left out: datasets cannot load a saved empty one back (the summary shows its 0).
    dataset = datasets.DatasetDict({
        split: datasets.Dataset.from_dict({c: [r[c] for r in rows] for c in COLUMNS}, features=features())
        for split, rows in splits.items() if rows
    })
    dataset.save_to_disk(out_dir)
    for source in sources:
        path = os.path.join(out_dir, f"test_{source}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for r in splits["test"]:
                if r["source"] == source:
                    # What the scorer needs to judge a system as the DatasetDict's test split does.
                    row = {c: r[c] for c in COLUMNS if c != "group"}
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
    settings = {"sources": ",".join(sources), "synthetic_per_type": synthetic_per_type, "seed": seed}
    write_audit(out_dir, splits, audit, settings)
    with open(os.path.join(out_dir, MANIFEST), "w", encoding="utf-8") as f:
        json.dump(sorted(os.listdir(out_dir)), f, indent=1)
    if verbose:
        print(summary(splits, out_dir, time.time() - started))
    return dataset


MANIFEST = ".piiner-data-build.json"  # the names a build wrote into its --out folder


def previous_build(out_dir):
    """The names a previous build wrote into `out_dir` (its manifest), to be replaced; [] for a new or empty folder.
    A folder holding anything else is refused: a build deletes only files it wrote itself."""
    if not os.path.isdir(out_dir) or not os.listdir(out_dir):
        return []
    manifest = os.path.join(out_dir, MANIFEST)
    if not os.path.isfile(manifest):
        found = sorted(os.listdir(out_dir))
        raise ValueError(f"--out {out_dir} is not empty and was not written by piiner-data build (it holds "
                         f"{', '.join(found[:5])}{' ...' if len(found) > 5 else ''}); choose a new or empty folder")
    with open(manifest, encoding="utf-8") as f:
        return json.load(f) + [MANIFEST]


def _remove(out_dir, names):
    for name in names:
        path = os.path.join(out_dir, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)


def _check_groups(splits):
    """No group (template / source document) may sit in two splits."""
    seen = {}
    for split, rows in splits.items():
        for r in rows:
            for part in r["group"].split("+") if r["source"] == "synthetic" else (r["group"],):
                other = seen.setdefault((r["source"], part), split)
                if other != split:
                    raise AssertionError(f"group {part!r} of {r['source']} is in both {other} and {split}")


def summary(splits, out_dir, seconds):
    lines = [f"built {out_dir} in {seconds:.1f}s"]
    sources = sorted({r["source"] for rows in splits.values() for r in rows})
    lines.append(f"{'source':<16}" + "".join(f"{s:>12}" for s in SPLITS) + f"{'spans':>10}")
    for source in sources:
        counts = [sum(1 for r in splits[s] if r["source"] == source) for s in SPLITS]
        n_spans = sum(len(r["spans"]) for s in SPLITS for r in splits[s] if r["source"] == source)
        lines.append(f"{source:<16}" + "".join(f"{c:>12}" for c in counts) + f"{n_spans:>10}")
    lines.append(f"{'total':<16}" + "".join(f"{len(splits[s]):>12}" for s in SPLITS))
    lines.append(f"audit: {os.path.join(out_dir, 'audit.md')}")
    return "\n".join(lines)
