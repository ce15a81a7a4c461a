"""``piiner-data build --sources synthetic,presidio,wnut17 --out DIR [--from-dir SOURCE=PATH ...]``."""

import argparse
import sys

from ..options import name_value_pairs
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
    return p


def main(argv=None):
    args = parser().parse_args(argv)
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
