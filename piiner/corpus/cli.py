"""Redact a corpus on this machine or a Ray cluster; a job killed and started again skips the shards it finished.

    python -m piiner.corpus --input tickets/ --output tickets-redacted/ --model runs/reference --num-proc 2
    python -m piiner.corpus --engine ray --address auto --input /data/chats --output /data/chats-redacted \\
        --model org/piiner --num-proc 8 --num-gpus 1
"""

import argparse
import json
import sys

from piiner.deid.redact import KEYED_MODES, MODES

from .job import RedactorSpec
from .run import redact_corpus
from .shards import CorpusError


def positive_int(value):
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def parser():
    p = argparse.ArgumentParser(prog="piiner-corpus", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n")[1])
    p.add_argument("--input", required=True, help="folder or file of .jsonl/.json/.parquet/.txt, or a save_to_disk folder")
    p.add_argument("--output", required=True, help="folder for part-NNNNN files, rejects/ and summary.json")
    p.add_argument("--engine", choices=("datasets", "ray"), default="datasets")
    p.add_argument("--num-proc", type=positive_int, default=1, help="worker processes (datasets) or actors (ray)")
    p.add_argument("--address", help="Ray cluster address ('auto': the cluster this machine is in; default: local)")
    p.add_argument("--num-gpus", type=float, default=0, help="GPUs per Ray actor")
    p.add_argument("--model", help="piiner snapshot folder or Hub id")
    p.add_argument("--detector", choices=("model", "regex"), default="model")
    p.add_argument("--device", help="torch device of each worker's model, e.g. cuda:0")
    p.add_argument("--detect-only", action="store_true", help="write the entities, not redacted text")
    p.add_argument("--mode", choices=MODES, default="placeholder")
    p.add_argument("--types", help="comma-separated PII types (default: all)")
    p.add_argument("--min-tier", type=int, choices=(1, 2, 3, 4))
    p.add_argument("--key-env", help="environment variable holding the surrogate/hash key")
    p.add_argument("--text-field", default="text")
    p.add_argument("--batch-size", type=positive_int, default=16)
    p.add_argument("--rows-per-shard", type=positive_int, default=50_000)
    p.add_argument("--output-format", choices=("jsonl", "parquet"), default="jsonl")
    p.add_argument("--recognizers", metavar="FILE", action="append",
                   help="YAML or JSON with recognizers, an allow_list and a deny_list, added to the model's own; "
                        "give it again to add another file")
    p.add_argument("--tables", action="store_true",
                   help="the input is CSV, TSV and Parquet tables: each redacted column by column into a table of its "
                        "own format (column decisions in OUTPUT/column_reports.json)")
    p.add_argument("--sample-rows", type=positive_int, default=500,
                   help="with --tables: rows of each schema's first file read to decide its columns")
    p.add_argument("--use-report", metavar="PATH", help="with --tables: a saved column report (piiner-redact "
                                                        "--column-report) to apply instead of analysing")
    return p


def main(argv=None):
    import os

    p = parser()
    args = p.parse_args(argv)
    if args.detector == "model" and not args.model:
        p.error("--model is required (or --detector regex)")
    key = os.environ.get(args.key_env) if args.key_env else None
    if args.key_env and not key:
        p.error(f"--key-env {args.key_env}: that environment variable is unset or empty")
    if not key and args.mode in KEYED_MODES and not args.detect_only:
        print("piiner-corpus: no --key-env: surrogates and hashes are consistent within this run only, and a job "
              "stopped before its end cannot be finished by another run", file=sys.stderr)
    evidence = None
    if args.recognizers:
        if args.detector == "regex":
            p.error("--recognizers adds to a model's recognizers; the regex detector has none")
        from piiner.snapshot import load_evidence

        try:
            evidence = json.dumps(load_evidence(args.recognizers), sort_keys=True)
        except ValueError as error:
            p.error(str(error))
    spec = RedactorSpec(model=args.model, detector=args.detector, mode=args.mode,
                        types=tuple(args.types.split(",")) if args.types else None, min_tier=args.min_tier,
                        key=key, batch_size=args.batch_size, device=args.device, evidence=evidence)
    if args.use_report and not args.tables:
        p.error("--use-report needs --tables")
    try:
        report = None
        if args.use_report:
            from piiner.tables import ColumnReport

            report = ColumnReport.load(args.use_report)
        summary = redact_corpus(args.input, args.output, spec, engine=args.engine, num_proc=args.num_proc,
                                text_field=args.text_field, detect_only=args.detect_only,
                                rows_per_shard=args.rows_per_shard, output_format=args.output_format,
                                address=args.address, num_gpus=args.num_gpus, tables=args.tables,
                                sample_rows=args.sample_rows, column_report=report)
    except (CorpusError, ValueError) as error:
        print(f"piiner-corpus: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        done = os.path.join(args.output, "_done")
        finished = len([n for n in os.listdir(done) if n.endswith(".json")]) if os.path.isdir(done) else 0
        print(f"piiner-corpus: interrupted: {finished} shard(s) finished and kept in {args.output}; run the same "
              "command again to do the rest" + (" (with the same --key-env)" if key else ""), file=sys.stderr)
        return 130
    if summary.get("files_not_read"):
        reasons = ", ".join(f"{reason}: {count}" for reason, count in summary["files_not_read"].items())
        print(f"piiner-corpus: {sum(summary['files_not_read'].values())} files of the input folder not read "
              f"({reasons}), e.g. {', '.join(summary['files_not_read_first'])}", file=sys.stderr)
    print(json.dumps(summary, indent=1))
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
