"""`piiner-serve --model DIR_or_HUB_ID`: the redaction service and its web page on http://127.0.0.1:8000."""

import argparse
import os
import sys

from .app import Settings, create_app


def parser():
    p = argparse.ArgumentParser(prog="piiner-serve", description=__doc__)
    p.add_argument("--model", help="piiner snapshot folder or Hub id")
    p.add_argument("--detector", choices=("model", "regex"), default="model",
                   help="'regex': a few regular expressions instead of a model (a smoke test)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--device", help="torch device for the model, e.g. cuda:0")
    defaults = Settings()
    p.add_argument("--max-batch-texts", type=int, default=defaults.max_batch_texts,
                   help="texts per model call, gathered from concurrent requests (default: %(default)s)")
    p.add_argument("--max-wait-ms", type=float, default=defaults.max_wait_ms,
                   help="how long a text waits for others to share its batch (default: %(default)s)")
    p.add_argument("--max-body-bytes", type=int, default=defaults.max_body_bytes,
                   help="a request body over this is refused with 413, whether sent with a length or in chunks")
    p.add_argument("--max-texts", type=int, default=defaults.max_texts, help="texts per request at most")
    p.add_argument("--max-batch-chars", type=int, default=defaults.max_batch_chars,
                   help="characters per model call; long texts go in pieces of a quarter of it, cut at paragraph "
                        "boundaries, so a small request waits behind one batch of a large one (default: %(default)s)")
    p.add_argument("--recognizers", metavar="FILE", action="append",
                   help="YAML or JSON with recognizers, an allow_list and a deny_list, added to the model's own; "
                        "give it again to add another file")
    p.add_argument("--api-key-env", metavar="VAR",
                   help="environment variable holding the API key(s), comma-separated: requests to /v1/ without one "
                        "get 401")
    return p


def api_keys(variable):
    """The keys in environment variable `variable` (comma-separated); a ValueError where it is unset or empty."""
    if variable is None:
        return frozenset()
    keys = frozenset(k.strip() for k in os.environ.get(variable, "").split(",") if k.strip())
    if not keys:
        raise ValueError(f"--api-key-env {variable}: that environment variable is unset or empty")
    return keys


def build_app(args):
    settings = Settings(max_batch_texts=args.max_batch_texts, max_wait_ms=args.max_wait_ms,
                        max_body_bytes=args.max_body_bytes, max_texts=args.max_texts,
                        max_batch_chars=args.max_batch_chars, api_keys=api_keys(args.api_key_env))
    if args.detector == "regex":
        from piiner.baselines.regex import RegexDetector

        return create_app(RegexDetector(), "regex", settings)
    from piiner.snapshot import load_evidence, load_pipeline

    evidence = load_evidence(args.recognizers) if args.recognizers else None
    pipe = load_pipeline(args.model, device=args.device, evidence=evidence)
    return create_app(lambda texts: pipe(texts, batch_size=args.max_batch_texts), args.model, settings)


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    if args.detector == "model" and not args.model:
        p.error("--model DIR is required (or --detector regex)")
    try:
        import uvicorn
    except ImportError:
        p.error("the service needs its extra: pip install 'piiner[serve]'")
    from piiner.snapshot import SnapshotError

    try:
        app = build_app(args)
    except (SnapshotError, ValueError) as error:
        p.exit(2, f"piiner-serve: error: {error}\n")
    uvicorn.run(app, host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
