"""Peak memory of `piiner-redact` against input size: the CLI streams, so peak RSS should stay flat as the file grows.

Generates text files of the given sizes (synthetic lines with emails, SSNs, phones, cards and IPs, plus one 1 MB
line per file), runs `piiner-redact` on each in a fresh process, and prints a table of file size, peak RSS
of that process, wall time and throughput. The regex detector keeps it fast enough for hundreds of megabytes;
`--model DIR` measures the real model instead (use small sizes: a model redacts kilobytes per second on CPU).

    python benchmarks/bench_redact_memory.py                       # 10, 50, 200 MB, regex detector
    python benchmarks/bench_redact_memory.py --sizes-mb 1000       # the 1 GB case
    python benchmarks/bench_redact_memory.py --model runs/quickstart --sizes-mb 0.1,0.5
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LINE_TEMPLATES = (
    "Patient {name} (SSN {ssn}) called from {phone} about the invoice.",
    "Please send the statement to {email}; card on file {card}.",
    "Login from {ip} by {email} at 09:14, flagged for review.",
    "Nothing sensitive in this line, just some ordinary words about the weather and the train schedule.",
)


def synthetic_line(rng):
    return rng.choice(LINE_TEMPLATES).format(
        name=rng.choice(["John Smith", "Ana Lima", "Wei Chen"]),
        ssn=f"{rng.randint(100, 899)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}",
        phone=f"({rng.randint(200, 999)}) {rng.randint(200, 999)}-{rng.randint(1000, 9999)}",
        email=f"user{rng.randint(1, 99999)}@example.com",
        card=" ".join(f"{rng.randint(0, 9999):04d}" for _ in range(4)),
        ip=".".join(str(rng.randint(1, 254)) for _ in range(4)),
    )


def write_file(path, size_bytes, seed=0):
    """Write about ``size_bytes`` of lines, buffered 1 MB at a time; files of 4 MB and more get one 1 MB line."""
    rng = random.Random(seed)
    written, long_line_done = 0, size_bytes < 4_000_000
    with open(path, "w", encoding="utf-8") as f:
        buffer, buffered = [], 0
        while written + buffered < size_bytes:
            if not long_line_done and written > size_bytes // 2:
                line = (" ".join(synthetic_line(rng) for _ in range(15_000)))[:1_000_000] + "\n"
                long_line_done = True
            else:
                line = synthetic_line(rng) + "\n"
            buffer.append(line)
            buffered += len(line)
            if buffered >= 1_000_000:
                f.write("".join(buffer))
                written, buffer, buffered = written + buffered, [], 0
        f.write("".join(buffer))
    return os.path.getsize(path)


def measure(path, args):
    """(peak RSS bytes, seconds, lines out) of one piiner-redact run in a child process."""
    cmd = [sys.executable, "-m", "piiner.deid", path, "--format", "lines", "--mode", args.mode, "--no-progress",
           "--batch-size", str(args.batch_size)]
    cmd += ["--model", args.model] if args.model else ["--detector", "regex"]
    start = time.perf_counter()
    # ru_maxrss of RUSAGE_CHILDREN is the largest child so far, so each size runs under its own wrapper process.
    wrapper = (
        "import resource, subprocess, sys\n"
        "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n"
        "lines = sum(chunk.count(b'\\n') for chunk in iter(lambda: p.stdout.read(1 << 20), b''))\n"
        "code = p.wait()\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, lines, code)\n"
    )
    proc = subprocess.run([sys.executable, "-c", wrapper] + cmd, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    max_rss_kb, lines_out, returncode = map(int, proc.stdout.split())
    if returncode != 0:
        raise SystemExit(f"piiner-redact failed with status {returncode}: {' '.join(cmd)}")
    return max_rss_kb * 1024, seconds, lines_out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes-mb", default="10,50,200", help="comma-separated file sizes in MB")
    parser.add_argument("--model", help="piiner model folder (default: the regex detector)")
    parser.add_argument("--mode", default="placeholder", choices=("placeholder", "mask", "surrogate", "hash"))
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--workdir", default=None, help="where to write the generated files (default: a temp dir)")
    args = parser.parse_args(argv)

    # piiner-redact writes into a pipe that the wrapper drains and counts, so the output never hits the disk.
    print(f"piiner-redact --mode {args.mode} --detector {'model ' + args.model if args.model else 'regex'}, "
          f"batch size {args.batch_size}; peak RSS of the piiner-redact process")
    print("| input size | lines | peak RSS | wall time | throughput |")
    print("|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        for size_mb in (float(s) for s in args.sizes_mb.split(",")):
            path = os.path.join(tmp, f"input_{size_mb:g}mb.txt")
            size = write_file(path, int(size_mb * 1_000_000))
            rss, seconds, lines = measure(path, args)
            os.remove(path)
            print(f"| {size / 1e6:.3g} MB | {lines} | {rss / 2**20:.0f} MiB | {seconds:.1f} s | "
                  f"{size / 1e6 / seconds:.3g} MB/s |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
