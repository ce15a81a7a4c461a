"""Peak memory of `piiner-redact TABLE` as the table grows: a generated CSV of N rows redacted in a fresh process,
peak resident memory read from the kernel (ru_maxrss). Flat memory means the table streams. Prints a table.

    .venv/bin/python benchmarks/bench_table_memory.py                      # regex detector: 200,000 and 2,000,000 rows
    .venv/bin/python benchmarks/bench_table_memory.py --model runs/quickstart --rows 2000,20000
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time


def write_csv(path, rows, seed=0):
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write("id,name,ssn,email,notes\n")
        for i in range(rows):
            f.write(f"{i},Person {i % 997},{rng.randint(100, 665):03d}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)},"
                    f"user{i}@example.com,\"called back at 212-555-{i % 10000:04d}, ok\"\n")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="saved piiner model (default: the regex detector)")
    p.add_argument("--rows", default="200000,2000000", help="comma-separated table sizes")
    args = p.parse_args(argv)
    command = [os.path.join(os.path.dirname(sys.executable), "piiner-redact"), "--no-progress"]
    command += ["--model", args.model] if args.model else ["--detector", "regex"]
    print(f"detector: {args.model or 'regex'}")
    print("| rows | CSV MB | seconds | rows/s | peak memory MB |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for rows in (int(r) for r in args.rows.split(",")):
            source, out = os.path.join(folder, f"t{rows}.csv"), os.path.join(folder, f"t{rows}.out.csv")
            write_csv(source, rows)
            start = time.perf_counter()
            # Each size in its own child, so that ru_maxrss of the children is this run's alone.
            probe = [sys.executable, "-c", "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
                     "stderr=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"]
            peak_kb = int(subprocess.run(probe + command + [source, "-o", out], check=True, capture_output=True,
                                         text=True).stdout.split()[-1])
            seconds = time.perf_counter() - start
            print(f"| {rows:,} | {os.path.getsize(source) / 1e6:.0f} | {seconds:.1f} | {rows / seconds:,.0f} | "
                  f"{peak_kb / 1024:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
