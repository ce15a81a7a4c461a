"""Redact PII in text files, JSONL files or standard input, streaming JSONL out (one line per input record).

    piiner-redact --model runs/quickstart notes.txt > notes.redacted.jsonl
    piiner-redact --model runs/quickstart --mode surrogate --key-env PIINER_KEY records.jsonl
    cat notes.txt | piiner-redact --model runs/quickstart --detect-only -

Memory stays flat on any input size: lines are read, redacted and written a batch at a time. A line that cannot
be processed (invalid UTF-8, bad JSON, missing text field) is reported on stderr with its line number, written as
{"line": N, "error": ...}, and makes the exit status 1; the rest of the input is processed. See deid/streaming.py
for the output records and deid/redact.py for the meaning of each filter.
"""

import argparse
import os
import sys

from .redact import MODES, Redactor
from .streaming import StreamFailure, redact_stream


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", nargs="?", default="-", help="a text or JSONL file, or - for standard input")
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
    parser.add_argument("--text-field", default="text", help="JSONL field holding the text (default: text)")
    parser.add_argument("--format", choices=("auto", "text", "jsonl"), default="auto",
                        help="auto: .jsonl/.ndjson/.json files and input whose first line is a JSON object are JSONL")
    parser.add_argument("--batch-size", type=int, default=8, help="records per detector call (default: 8)")
    parser.add_argument("--device", default=None, help="device for the model, e.g. cpu or cuda:0")
    parser.add_argument("--output", "-o", default="-", help="output JSONL file (default: standard output)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return parser


def parse_thresholds(items, parser):
    thresholds = {}
    for item in items:
        tier, sep, score = item.partition("=")
        try:
            thresholds[int(tier)] = float(score)
        except ValueError:
            parser.error(f"--threshold expects TIER=SCORE such as 2=0.5, got {item!r}")
        if not sep:
            parser.error(f"--threshold expects TIER=SCORE such as 2=0.5, got {item!r}")
    return thresholds


def build_redactor(args, parser):
    key = None
    if args.key_env:
        key = os.environ.get(args.key_env)
        if not key:
            parser.error(f"--key-env {args.key_env}: that environment variable is unset or empty")
    elif args.mode in ("surrogate", "hash") and not args.detect_only:
        print("piiner-redact: no --key-env: surrogates and hashes are consistent within this run only", file=sys.stderr)
    settings = dict(mode=args.mode, types=args.types, min_tier=args.min_tier,
                    tier_thresholds=parse_thresholds(args.threshold, parser), key=key, batch_size=args.batch_size)
    try:
        if args.detector == "regex":
            from piiner.deid.regex_detector import RegexDetector

            return Redactor(RegexDetector(), **settings)
        if not args.model:
            parser.error("--model DIR is required (or --detector regex)")
        return Redactor.from_pretrained(args.model, device=args.device, pipeline_batch_size=args.batch_size,
                                        **settings)
    except (TypeError, ValueError) as err:
        parser.error(str(err))


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    redactor = build_redactor(args, parser)

    def report(line, message):
        print(f"piiner-redact: line {line}: {message}", file=sys.stderr)

    from_stdin = args.input == "-"
    if not from_stdin and not os.path.isfile(args.input):
        parser.error(f"input file not found: {args.input}")
    in_stream = sys.stdin.buffer if from_stdin else open(args.input, "rb")
    out_stream = sys.stdout.buffer if args.output == "-" else open(args.output, "wb")
    progress = not from_stdin and not args.no_progress and sys.stderr.isatty()
    try:
        summary = redact_stream(in_stream, out_stream, redactor, fmt=args.format, text_field=args.text_field,
                                detect_only=args.detect_only, batch_size=args.batch_size, path=args.input,
                                progress=progress, on_error=report)
    except StreamFailure as err:
        print(f"piiner-redact: stopped: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as other filters do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        if not from_stdin:
            in_stream.close()
        if args.output != "-":
            out_stream.close()
    print(f"piiner-redact: {summary.describe()}", file=sys.stderr)
    return 1 if summary.failed else 0


if __name__ == "__main__":
    sys.exit(main())
