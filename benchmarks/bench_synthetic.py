"""Time the synthetic generator: build N records (generation + span validation, as ``build`` does).

    python benchmarks/bench_synthetic.py              # 100,000 records
    python benchmarks/bench_synthetic.py --records 20000 --seed 3

Prints one table row per stage; the target on a 2-core CPU is under 2 minutes for 100,000 records.
"""

import argparse
import itertools
import math
import time


from piiner.data_prep.audit import Audit  # noqa: E402
from piiner.data_prep.records import clean_record  # noqa: E402
from piiner.data_prep.synthetic import SyntheticGenerator  # noqa: E402
from piiner.hub.pii_schema import PII_TYPES  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    generator = SyntheticGenerator(seed=args.seed)
    # records() yields per_type x 41 typed records plus 10% hard negatives
    per_type = math.ceil(args.records / (len(PII_TYPES) * (1 + generator.negative_fraction)))
    audit = Audit()

    started = time.perf_counter()
    raw = list(itertools.islice(generator.records(per_type), args.records))
    generated = time.perf_counter()
    cleaned = [clean_record(r, audit) for r in raw]
    validated = time.perf_counter()

    n = len(cleaned)
    spans = sum(len(r["spans"]) for r in cleaned if r is not None)
    rows = [("generate", generated - started), ("validate", validated - generated), ("total", validated - started)]
    print(f"{'stage':<10}{'records':>10}{'spans':>10}{'seconds':>10}{'records/s':>12}{'spans/s':>12}")
    for stage, seconds in rows:
        print(f"{stage:<10}{n:>10}{spans:>10}{seconds:>10.1f}{n / seconds:>12.0f}{spans / seconds:>12.0f}")
    rejected = sum(sum(c.values()) for c in audit.span_rejections.values())
    print(f"spans rejected by validation: {rejected}")


if __name__ == "__main__":
    main()
