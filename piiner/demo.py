"""Print what a trained piiner snapshot finds in a few sentences: the last step of `make quickstart`.

    piiner-demo --model runs/quickstart [--text "Call John at 555-0100"]

It loads the snapshot the way a user of the Hub would, through `pipeline(..., trust_remote_code=True)`, so it
also shows that the saved folder is complete.
"""

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

DEMO_TEXTS = [
    "Hi, I'm Maria Gonzalez, my SSN is 536-22-8491 and you can mail me at maria.gonzalez@example.org.",
    "Wire the refund to IBAN GB82 WEST 1234 5698 7654 32 (account holder: Dr. Alan Turing), card 4111 1111 1111 1111.",
    "Patient born 03/14/1962, MRN: 00784512, lives at 42 Willow Lane, Springfield; call (217) 555-0143.",
    "Order #88231-B shipped with firmware v2.4.1 on 2024-05-02 12:31:07 UTC.",
    "@jsmith88 just posted from 192.168.10.24 -> https://example.com/u/jsmith88",
]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a saved piiner snapshot folder or Hub id")
    parser.add_argument("--text", action="append", help="text to tag (repeatable); defaults to built-in examples")
    args = parser.parse_args(argv)

    from piiner.snapshot import SnapshotError, load_pipeline

    try:
        tagger = load_pipeline(args.model)
    except SnapshotError as error:
        parser.exit(2, f"piiner-demo: error: {error}\n")
    for text in args.text or DEMO_TEXTS:
        print(f"\n{text}")
        entities = tagger(text)
        if not entities:
            print("    (no PII found)")
        for ent in entities:
            print(f"    {ent['type']:<16} tier {ent['tier']}  {ent['score']:.2f}  [{ent['start']}:{ent['end']}]  {ent['word']!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
