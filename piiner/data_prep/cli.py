"""``piiner-data build --sources synthetic,presidio,wnut17 --out DIR [--from-dir SOURCE=PATH ...]``;
``piiner-data import INPUT --format label-studio|doccano|brat|conll|jsonl --label-map MAP --out DIR``;
``piiner-data lists DATA --out lists.yaml`` (deny lists from your labels)."""

import argparse
import sys

from piiner.hub.pii_schema import PII_TYPES

from ..options import name_value_pairs
from .importers import FORMATS
from .build import DEFAULT_SOURCES, DEFAULT_SYNTHETIC_PER_TYPE, GENERATED, build
from .sources import SOURCES, SourceUnavailable

KNOWN_SOURCES = (*GENERATED, *SOURCES)


def parser():
    p = argparse.ArgumentParser(prog="piiner-data", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build the unified corpus (DatasetDict + audit) into --out")
    b.add_argument("--sources", default=",".join(DEFAULT_SOURCES),
                   help=f"comma-separated, from: {', '.join(KNOWN_SOURCES)} (default: %(default)s)")
    b.add_argument("--out", required=True, help="output folder (save_to_disk DatasetDict, audit.md/png/json, test_<source>.jsonl)")
    b.add_argument("--from-dir", action="append", default=[], metavar="SOURCE=PATH",
                   help="read SOURCE from a local .jsonl/.json/.parquet/.arrow file or folder instead of the Hub")
    b.add_argument("--synthetic-per-type", type=int, default=DEFAULT_SYNTHETIC_PER_TYPE,
                   help="synthetic records whose main subject is each of the 41 types (default: %(default)s)")
    b.add_argument("--seed", type=int, default=0)
    i = sub.add_parser("import", help="your labelled documents (an annotation tool's export) as a dataset folder")
    i.add_argument("input", help="the export: a file, or a folder for brat")
    i.add_argument("--format", required=True, choices=FORMATS)
    i.add_argument("--label-map", required=True, metavar="MAP",
                   help="YAML or JSON mapping each label to a piiner type, O (an entity of no PII type) or drop")
    i.add_argument("--out", required=True, help="dataset folder: train/validation/test.jsonl and import_report.json")
    i.add_argument("--group-by", metavar="FIELD",
                   help="split by this field of each document (patient, customer, file); default: each document "
                        "is its own group")
    i.add_argument("--unmapped", choices=("error", "drop"), default="error",
                   help="labels the map does not name: stop and list them (default), or leave them unlabelled")
    i.add_argument("--name", default="mine", help="the source name written into each record (default: mine)")
    i.add_argument("--validation-fraction", type=float, default=0.1)
    i.add_argument("--test-fraction", type=float, default=0.2)
    i.add_argument("--join-words", nargs="?", const="all", default="", metavar="TYPES",
                   help="your tool labelled word by word (\"Holy\" and \"Cross\" as two places): spans of one of "
                        "these piiner types (comma-separated; none given: every type) apart by spaces or one hyphen "
                        "become one span")
    li = sub.add_parser("lists", help="deny lists of the names your labels always mark, for --recognizers")
    li.add_argument("data", help="a folder from piiner-data import (its --split) or a JSONL file of records")
    li.add_argument("--split", default="train")
    li.add_argument("--out", required=True, help="YAML file with deny_list, which --recognizers reads")
    li.add_argument("--types", default="PERSON,LOCATION,ORGANIZATION", help="comma-separated (default: %(default)s)")
    li.add_argument("--min-count", type=int, default=2, help="labelled at least this often (default: %(default)s)")
    li.add_argument("--min-groups", type=int, default=2,
                    help="in at least this many groups: patients, customers (default: %(default)s)")
    li.add_argument("--min-precision", type=float, default=0.9,
                    help="labelled in at least this share of the places it occurs (default: %(default)s)")
    return p


def run_import(args):
    from .importers import ImportError_, import_documents, load_label_map

    for name in ("validation_fraction", "test_fraction"):
        if not 0 <= getattr(args, name) < 1:
            parser().error(f"--{name.replace('_', '-')} must be in [0, 1)")
    try:
        label_map = load_label_map(args.label_map)
        join_words = ({t for t in label_map.values() if t in PII_TYPES} if args.join_words == "all"
                      else {t.strip() for t in args.join_words.split(",") if t.strip()})
        report = import_documents(args.input, args.format, label_map, args.out,
                                  group_by=args.group_by, unmapped=args.unmapped, name=args.name,
                                  validation_fraction=args.validation_fraction, test_fraction=args.test_fraction,
                                  join_words=join_words)
    except ImportError_ as error:
        print(f"piiner-data import: error: {error}", file=sys.stderr)
        return 2
    records, groups = report["records"], report["groups"]
    print("piiner-data import: " + ", ".join(f"{s} {records[s]} records ({groups[s]} groups)" for s in records)
          + f"; {report['rejected']} rows rejected; labelled types {', '.join(report['labelled_types'])}")
    if report["word_parts_joined"]:
        print("  joined word by word: " + ", ".join(f"{t} {n}" for t, n in report["word_parts_joined"].items()))
    if report["word_parts_apart"]:
        print("  spans of one type apart by only a space or hyphen, left as separate entities: "
              + ", ".join(f"{t} {n}" for t, n in report["word_parts_apart"].items())
              + " (if your tool labels word by word, --join-words joins them)", file=sys.stderr)
    for row in report["rejected_rows"][:10]:
        print(f"  rejected {row['where']}: {row['reason']}", file=sys.stderr)
    if report["rejected"] > 10:
        print(f"  ... and {report['rejected'] - 10} more in {args.out}/import_report.json", file=sys.stderr)
    return 0


def run_lists(args):
    from ..options import written_over
    from .lists import deny_lists, read_records, write_lists

    types = [t.strip() for t in args.types.split(",") if t.strip()]
    unknown = [t for t in types if t not in PII_TYPES]
    if unknown or not types:
        parser().error(f"--types: {', '.join(unknown) or 'none given'} is not a piiner type")
    if args.min_count < 1 or args.min_groups < 1 or not 0 < args.min_precision <= 1:
        parser().error("--min-count and --min-groups must be >= 1, --min-precision in (0, 1]")
    clash = written_over([("data", args.data)], [("--out", args.out)])
    if clash:
        parser().error(clash)
    try:
        records = read_records(args.data, args.split)
    except ValueError as error:
        print(f"piiner-data lists: error: {error}", file=sys.stderr)
        return 2
    lists, rows = deny_lists(records, types, args.min_count, args.min_groups, args.min_precision)
    settings = (f"{len(records)} records of {args.data}; labelled >= {args.min_count} times in >= {args.min_groups} "
                f"groups and in >= {args.min_precision:.0%} of the places each occurs")
    write_lists(args.out, lists, rows, settings)
    print(f"piiner-data lists: {len(rows)} strings ({', '.join(f'{t} {len(v)}' for t, v in lists.items()) or 'none'})"
          f" -> {args.out}; {settings}. It holds strings of your documents: read it before you use or share it.")
    return 0


def main(argv=None):
    args = parser().parse_args(argv)
    if args.command == "import":
        return run_import(args)
    if args.command == "lists":
        return run_lists(args)
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    unknown = [s for s in sources if s not in KNOWN_SOURCES]
    if unknown:
        parser().error(f"unknown source(s) {', '.join(unknown)}; known: {', '.join(KNOWN_SOURCES)}")
    if args.synthetic_per_type < 0:
        parser().error("--synthetic-per-type must be >= 0")
    try:
        from_dirs = name_value_pairs(args.from_dir, "--from-dir", "SOURCE=PATH")
    except ValueError as error:
        parser().error(str(error))
    import datasets

    datasets.disable_progress_bars()  # the summary at the end says what was written
    try:
        build(args.out, sources=sources, from_dirs=from_dirs, synthetic_per_type=args.synthetic_per_type,
              seed=args.seed)
    except (SourceUnavailable, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
