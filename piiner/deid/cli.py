"""Redact PII in a text document, JSONL, a JSON array or standard input; one JSON line out per input record.

    piiner-redact --model runs/quickstart notes.txt -o notes.redacted.jsonl --text-output notes.redacted.txt
    piiner-redact --model runs/quickstart --mode surrogate --key-env PIINER_KEY records.jsonl -o out.jsonl
    cat notes.txt | piiner-redact --model runs/quickstart --detect-only -

A .txt file (or text on standard input) is one document, so a value on the line after its label is redacted in
context; `--format lines` makes every line its own record and streams. JSONL streams with flat memory; a .json file
is read whole (an array of records, or one). See deid/streaming.py for the output records and deid/redact.py for
each filter.

Exit status: 0 all records written; 1 some records failed (each is written as {"line": N, "error": ...} and named
on stderr, the rest is processed); 2 bad command line, model refused, or the detector failed on every record;
3 an output cannot be written (a directory, unwritable, or the input itself). Outputs are written to a temporary
file beside them and renamed at the end, so an existing file is replaced only by a finished run.
"""

import argparse
import os
import sys
import tempfile

from ..options import name_value_pairs, written_over
from .redact import KEYED_MODES, MODES, Redactor
from .streaming import FORMATS, StreamFailure, redact_stream

EXIT_RECORDS_FAILED = 1
EXIT_USAGE = 2
EXIT_OUTPUT = 3


class OutputError(OSError):
    """An output path that cannot be written; the message names it."""


def build_parser():
    parser = argparse.ArgumentParser(prog="piiner-redact", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", nargs="?", default="-", help="a text, JSONL or JSON file, or - for standard input")
    parser.add_argument("--model", help="piiner model folder or Hub id (loaded offline with HF_HUB_OFFLINE=1)")
    parser.add_argument("--detector", choices=("model", "regex"), default="model",
                        help="'regex' uses a few regular expressions instead of a model: smoke tests and benchmarks")
    parser.add_argument("--mode", choices=MODES, default="placeholder",
                        help="placeholder: [EMAIL]; mask: ****; surrogate: a realistic fake of the same format; "
                             "hash: [EMAIL:1a2b3c4d] (keyed HMAC-SHA256)")
    parser.add_argument("--detect-only", action="store_true",
                        help="write the original text and the entities (with their words) instead of redacting")
    parser.add_argument("--types", help="comma-separated PII types to redact (default: all), e.g. SSN,EMAIL")
    parser.add_argument("--min-tier", type=int, choices=(1, 2, 3, 4),
                        help="redact tiers 1..N only; tier 1 is the most sensitive (SSN, cards), 4 the least")
    parser.add_argument("--threshold", action="append", default=[], metavar="TIER=SCORE",
                        help="minimum score for a tier, e.g. --threshold 3=0.6 (repeatable)")
    parser.add_argument("--key-env", metavar="VAR",
                        help="environment variable holding the secret key for surrogate/hash modes; the same key "
                             "gives the same replacement for the same value across runs. Without it a random key "
                             "is used, consistent within this run only")
    parser.add_argument("--text-field", default="text", help="JSON field holding the text (default: text)")
    parser.add_argument("--format", choices=FORMATS, default="auto",
                        help="auto: .jsonl/.ndjson JSONL, .json JSON, .txt one document; otherwise JSONL when the "
                             "first line is a JSON object, else one document. lines: one record per text line")
    parser.add_argument("--batch-size", type=int, default=8, help="records per detector call (default: 8)")
    parser.add_argument("--device", default=None, help="device for the model, e.g. cpu or cuda:0")
    parser.add_argument("--output", "-o", default="-", help="output JSONL file (default: standard output)")
    parser.add_argument("--text-output", metavar="PATH",
                        help="also write the redacted text here: the document as it is, or one line per record "
                             "(--format lines; a failed record is an empty line)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--recognizers", metavar="FILE", action="append",
                        help="YAML or JSON with recognizers (patterns, validators, context words), an allow_list and "
                             "a deny_list, added to the model's own; give it again to add another file")
    tables = parser.add_argument_group(
        "tables", "A .csv, .tsv or .parquet input (or .jsonl/.json with --table) is redacted as a table: same rows and "
        "columns in the same format, each cell read with its column's name as context, each column decided from a "
        "sample (one PII type, free text, or none).")
    tables.add_argument("--table", action="store_true",
                        help="read JSON records as a table (nested fields as dotted columns), not as text records")
    tables.add_argument("--sample-rows", type=int, default=500,
                        help="rows read to decide what each column holds (default: 500; every row of a smaller table)")
    tables.add_argument("--column-report", metavar="PATH", help="write the column decisions here as JSON")
    tables.add_argument("--use-report", metavar="PATH",
                        help="apply a saved --column-report instead of analysing (a later file of the same schema)")
    tables.add_argument("--columns", help="comma-separated columns to redact; the others are left as they are")
    tables.add_argument("--skip-columns", help="comma-separated columns left as they are")
    tables.add_argument("--column-type", action="append", default=[], metavar="COLUMN=TYPE",
                        help="set a column's decision: a PII type (every cell redacted whole), text or none; "
                             "repeatable")
    tables.add_argument("--rejects", metavar="PATH",
                        help="write each rejected row's number and reason here as JSON lines (never its content)")
    tables.add_argument("--encoding", default="utf-8-sig", help="text encoding of a CSV, TSV or JSON table "
                                                                "(default: UTF-8, with or without a byte order mark)")
    return parser


def is_table(args):
    from piiner.tables.formats import TABLE_SUFFIXES

    kind = TABLE_SUFFIXES.get(os.path.splitext(args.input)[1].lower())
    return kind in ("csv", "tsv", "parquet") or (kind in ("jsonl", "json") and args.table)


def _names(value):
    return [name.strip() for name in value.split(",") if name.strip()] if value else None


def run_table(args, parser, outputs_for):
    """`piiner-redact TABLE -o OUT`: the table path. Returns the exit status."""
    from piiner.tables import ColumnReport, TableError, redact_table
    from piiner.tables.formats import Table, TableReadError

    if args.detect_only or args.text_output:
        parser.error("--detect-only and --text-output read text records; for a table, --column-report says what "
                     "each column holds")
    if args.sample_rows < 1:
        parser.error("--sample-rows must be at least 1")
    out_suffix = os.path.splitext(args.output)[1].lower()
    in_suffix = os.path.splitext(args.input)[1].lower()
    if args.output == "-" and in_suffix == ".parquet":
        parser.error("a Parquet table needs --output FILE.parquet")
    if args.output != "-" and out_suffix != in_suffix:
        parser.error(f"the output keeps the input's format: give --output a {in_suffix} path, got {args.output}")
    clash = written_over([("input", args.input), ("--use-report", args.use_report)],
                         [("--output", args.output), ("--rejects", args.rejects), ("--column-report", args.column_report)])
    if clash:
        parser.error(clash)
    try:
        column_types = name_value_pairs(args.column_type, "--column-type", "COLUMN=TYPE such as ssn=SSN")
    except ValueError as error:
        parser.error(str(error))
    try:
        report = ColumnReport.load(args.use_report) if args.use_report else None
        table = Table(args.input, encoding=args.encoding)
    except (ValueError, OSError) as error:
        print(f"piiner-redact: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    outputs = outputs_for([args.output, args.rejects, args.column_report])
    redactor = build_redactor(args, parser)
    progress = not args.no_progress and sys.stderr.isatty()
    try:
        report, summary = redact_table(table, redactor, outputs[0].stream, sample_rows=args.sample_rows,
                                       report=report, columns=_names(args.columns),
                                       skip_columns=_names(args.skip_columns), column_types=column_types,
                                       rejects_stream=outputs[1].stream if args.rejects else None, progress=progress)
    except (TableError, TableReadError, ValueError) as error:
        print(f"piiner-redact: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.column_report:
        stream = outputs[2].stream
        stream.write(report.dumps().encode())
    for output in outputs:
        if output is not None:
            output.commit()
    print(report.describe(), file=sys.stderr)
    print(f"piiner-redact: {summary.describe()}", file=sys.stderr)
    return EXIT_RECORDS_FAILED if summary.rejects else 0


def parse_thresholds(items, parser):
    try:
        pairs = name_value_pairs(items, "--threshold", "TIER=SCORE such as 2=0.5")
    except ValueError as error:
        parser.error(str(error))
    thresholds = {}
    for tier, score in pairs.items():
        try:
            tier_number, value = int(tier), float(score)
        except ValueError:
            parser.error(f"--threshold takes TIER=SCORE such as 2=0.5, got {tier}={score}")
        if tier_number in thresholds:  # "2" and "02" are one tier
            parser.error(f"--threshold names tier {tier_number} twice: give it one score")
        thresholds[tier_number] = value
    return thresholds


def build_redactor(args, parser):
    key = None
    if args.key_env:
        key = os.environ.get(args.key_env)
        if not key:
            parser.error(f"--key-env {args.key_env}: that environment variable is unset or empty")
    elif args.mode in KEYED_MODES and not args.detect_only:
        print("piiner-redact: no --key-env: surrogates and hashes are consistent within this run only", file=sys.stderr)
    settings = dict(mode=args.mode, types=args.types, min_tier=args.min_tier,
                    tier_thresholds=parse_thresholds(args.threshold, parser), key=key, batch_size=args.batch_size)
    if args.recognizers and args.detector == "regex":
        parser.error("--recognizers adds to a model's recognizers; the regex detector has none")
    try:
        if args.detector == "regex":
            from piiner.baselines.regex import RegexDetector

            return Redactor(RegexDetector(), **settings)
        from piiner.snapshot import load_evidence

        evidence = load_evidence(args.recognizers) if args.recognizers else None
        return Redactor.from_pretrained(args.model, device=args.device, pipeline_batch_size=args.batch_size,
                                        evidence=evidence, **settings)
    except (TypeError, ValueError) as err:
        parser.error(str(err))


def check_output(path, inputs):
    """Refuse an output that is a directory, is one of the inputs, or cannot be created (checked before any work)."""
    if path == "-":
        return
    if os.path.isdir(path):
        raise OutputError(f"output {path} is a directory; give a file path")
    clash = written_over([("input", source) for source in inputs], [("output", path)])
    if clash:
        raise OutputError(clash)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise OutputError(f"cannot write {path}: the folder {folder} does not exist")


class AtomicOutput:
    """A binary output: standard output, or a temporary file beside `path` renamed onto it by `commit()`; a run
    that stops before that leaves `path` as it was."""

    def __init__(self, path):
        self.path = path
        if path == "-":
            self.stream, self.temporary = sys.stdout.buffer, None
            return
        folder = os.path.dirname(os.path.abspath(path))
        try:
            handle, self.temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".part",
                                                      dir=folder)
        except OSError as err:
            raise OutputError(f"cannot write {path}: {err.strerror}") from None
        self.stream = os.fdopen(handle, "wb")

    def commit(self):
        if self.temporary is not None:
            self.stream.close()
            os.replace(self.temporary, self.path)
            self.temporary = None

    def discard(self):
        if self.temporary is not None:
            self.stream.close()
            os.unlink(self.temporary)
            self.temporary = None


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    if args.detector == "model" and not args.model:
        parser.error("--model DIR is required (or --detector regex)")
    if args.text_output and args.detect_only:
        parser.error("--text-output writes redacted text; it cannot be combined with --detect-only")
    from_stdin = args.input == "-"
    if not from_stdin and os.path.isdir(args.input):
        parser.error(f"{args.input} is a folder: piiner-redact reads one file (piiner-corpus reads a folder)")
    if not from_stdin and not os.path.isfile(args.input):
        parser.error(f"input file not found: {args.input}")
    clash = written_over([], [("--output", args.output), ("--text-output", args.text_output)])
    if clash:
        parser.error(clash)
    if args.text_output == "-" and args.output == "-":
        parser.error("--text-output - needs --output FILE: both cannot go to standard output")
    outputs = []
    if is_table(args):
        def outputs_for(paths):
            for path in paths:
                if path:
                    check_output(path, [args.input])
                    outputs.append(AtomicOutput(path))
                else:
                    outputs.append(None)
            return outputs

        try:
            return run_table(args, parser, outputs_for)
        except OutputError as err:
            print(f"piiner-redact: error: {err}", file=sys.stderr)
            return EXIT_OUTPUT
        finally:
            for output in outputs:
                if output is not None:
                    output.discard()

    def report(line, message):
        print(f"piiner-redact: record {line}: {message}", file=sys.stderr)

    try:
        for path in (args.output, args.text_output):
            if path:
                check_output(path, [args.input])
                outputs.append(AtomicOutput(path))  # creating its temporary file proves the folder writable
        redactor = build_redactor(args, parser)  # the model loads only once inputs and outputs are known good
        in_stream = sys.stdin.buffer if from_stdin else open(args.input, "rb")
        progress = not from_stdin and not args.no_progress and sys.stderr.isatty()
        try:
            summary = redact_stream(in_stream, outputs[0].stream, redactor, fmt=args.format,
                                    text_field=args.text_field, detect_only=args.detect_only,
                                    batch_size=args.batch_size, path=args.input, progress=progress,
                                    on_error=report, text_out=outputs[1].stream if len(outputs) > 1 else None)
        finally:
            if not from_stdin:
                in_stream.close()
        for output in outputs:
            output.commit()
    except OutputError as err:
        print(f"piiner-redact: error: {err}", file=sys.stderr)
        return EXIT_OUTPUT
    except StreamFailure as err:
        print(f"piiner-redact: stopped: {err}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as other filters do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_RECORDS_FAILED
    finally:
        for output in outputs:
            output.discard()
    print(f"piiner-redact: {summary.describe()}", file=sys.stderr)
    return EXIT_RECORDS_FAILED if summary.failed else 0


if __name__ == "__main__":
    sys.exit(main())
