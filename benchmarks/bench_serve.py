"""Load test of the redaction service on 127.0.0.1: latency and throughput for 1, 5 and 20 concurrent clients,
against the same texts sent one after another, with the requests batched onto the model (and, for comparison, with
batching off: --max-batch-texts 1).

    python benchmarks/bench_serve.py --model runs/reference                 # ~500-character texts
    python benchmarks/bench_serve.py --model runs/reference --requests 200 --clients 1,5,20

Every client sends its share of a fixed number of requests (bounded count and time), each one text; the table
gives requests/s, p50 and p95 latency per setting. The service runs in this process (uvicorn in a thread).
"""

import argparse
import asyncio
import random
import socket
import statistics
import sys
import threading
import time

SENTENCES = [
    "Please call Maria Gonzalez at (217) 555-0143 about the refund.",
    "The invoice for order 88231 was sent to j.smith@example.org on March 3.",
    "Patient born 03/14/1962, MRN 00784512, seen at the Springfield clinic.",
    "Our meeting with the Denver office moved to Thursday afternoon.",
    "Wire the deposit to account 021000021 and confirm by email.",
    "The weather was fine and the train left on time.",
]


def texts(count, chars, seed=0):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        text = ""
        while len(text) < chars:
            text += rng.choice(SENTENCES) + " "
        out.append(text.strip())
    return out


def serve(app):
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}"


async def load(url, bodies, clients, timeout_s):
    import httpx

    latencies, queue = [], list(bodies)
    deadline = time.monotonic() + timeout_s

    async def client(session):
        while queue and time.monotonic() < deadline:
            body = queue.pop()
            started = time.perf_counter()
            response = await session.post(f"{url}/v1/redact", json=body)
            response.raise_for_status()
            latencies.append(time.perf_counter() - started)

    async with httpx.AsyncClient(timeout=120) as session:
        await session.post(f"{url}/v1/redact", json=bodies[0])  # warm up
        started = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return latencies, elapsed


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="piiner snapshot (default: the regex detector, to time the service alone)")
    p.add_argument("--clients", default="1,5,20")
    p.add_argument("--requests", type=int, default=100, help="requests per setting")
    p.add_argument("--chars", type=int, default=500, help="characters per text")
    p.add_argument("--max-batch-texts", type=int, default=32)
    p.add_argument("--max-wait-ms", type=float, default=10)
    p.add_argument("--timeout", type=float, default=300, help="seconds per setting at most")
    p.add_argument("--threads", type=int, default=2, help="torch threads")
    args = p.parse_args(argv)

    import torch

    from piiner.serve.app import Settings, create_app

    torch.set_num_threads(args.threads)
    if args.model:
        from piiner.snapshot import load_pipeline

        pipe = load_pipeline(args.model)
        detector = lambda batch: pipe(batch, batch_size=args.max_batch_texts)  # noqa: E731
    else:
        from piiner.baselines.regex import RegexDetector

        detector = RegexDetector()
    bodies = [{"text": t} for t in texts(args.requests, args.chars)]
    rows = []
    for batch_limit in (args.max_batch_texts, 1):
        app = create_app(detector, args.model or "regex", Settings(max_batch_texts=batch_limit,
                                                                   max_wait_ms=args.max_wait_ms))
        server, url = serve(app)
        for clients in [int(c) for c in args.clients.split(",")]:
            latencies, elapsed = asyncio.run(load(url, bodies, clients, args.timeout))
            latencies.sort()
            rows.append((batch_limit, clients, len(latencies), len(latencies) / elapsed,
                         1000 * statistics.median(latencies), 1000 * latencies[int(0.95 * (len(latencies) - 1))]))
        server.should_exit = True
        time.sleep(0.5)
    print(f"\n{args.requests} requests of ~{args.chars} characters per setting, model: {args.model or 'regex'}, "
          f"torch threads {args.threads}, max wait {args.max_wait_ms} ms\n")
    print("| batching (texts per model call) | concurrent clients | requests | requests/s | p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|")
    for batch_limit, clients, n, rate, p50, p95 in rows:
        print(f"| up to {batch_limit} | {clients} | {n} | {rate:.1f} | {p50:.0f} | {p95:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
