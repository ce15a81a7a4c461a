"""Load test of the redaction service on 127.0.0.1: latency and throughput for 1, 5 and 20 concurrent clients,
against the same texts sent one after another, with the requests batched onto the model (and, for comparison, with
batching off: --max-batch-texts 1).

    python benchmarks/bench_serve.py --model runs/reference                 # ~500-character texts
    python benchmarks/bench_serve.py --model runs/reference --requests 200 --clients 1,5,20

Every client sends its share of a fixed number of requests (bounded count and time), each one text; the table
gives requests/s, p50 and p95 latency per setting. The service runs in this process (uvicorn in a thread).

    python benchmarks/bench_serve.py --model runs/quickstart --clients 5 --beside 100000

`--beside CHARS` also times the small requests while one request of CHARS characters (paragraphs apart; with
`--one-paragraph`, one paragraph) is served: a fair service keeps their p95 near what it is alone.
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


async def load(url, bodies, clients, timeout_s, big=None):
    """Small-request latencies and elapsed time; with `big`, one request of it is sent at the start beside them, and
    its own latency is returned too."""
    import httpx

    latencies, queue, big_latency = [], list(bodies), []
    deadline = time.monotonic() + timeout_s

    async def client(session):
        while queue and time.monotonic() < deadline:
            body = queue.pop()
            started = time.perf_counter()
            response = await session.post(f"{url}/v1/redact", json=body)
            response.raise_for_status()
            latencies.append(time.perf_counter() - started)

    async def big_client(session):
        started = time.perf_counter()
        response = await session.post(f"{url}/v1/redact", json=big)
        response.raise_for_status()
        big_latency.append(time.perf_counter() - started)

    async with httpx.AsyncClient(timeout=1800) as session:
        await session.post(f"{url}/v1/redact", json=bodies[0])  # warm up
        started = time.perf_counter()
        big_task = asyncio.create_task(big_client(session)) if big else None
        await asyncio.sleep(0.2 if big else 0)  # the big request is in before the small ones
        await asyncio.gather(*(client(session) for _ in range(clients)))
        elapsed = time.perf_counter() - started
        if big_task:
            await big_task
    return latencies, elapsed, (big_latency[0] if big_latency else None)


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
    p.add_argument("--beside", type=int, metavar="CHARS",
                   help="also time the small requests beside one request of CHARS characters")
    p.add_argument("--one-paragraph", action="store_true", help="the --beside request is one paragraph")
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
    if args.beside:
        return beside(args, detector, bodies)
    rows = []
    for batch_limit in (args.max_batch_texts, 1):
        app = create_app(detector, args.model or "regex", Settings(max_batch_texts=batch_limit,
                                                                   max_wait_ms=args.max_wait_ms))
        server, url = serve(app)
        for clients in [int(c) for c in args.clients.split(",")]:
            latencies, elapsed, _ = asyncio.run(load(url, bodies, clients, args.timeout))
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


def beside(args, detector, bodies):
    """The small requests alone, then beside one big request, on one service; prints a table."""
    from piiner.serve.app import Settings, create_app

    big = {"text": (" " if args.one_paragraph else "\n\n").join(texts(max(1, args.beside // 1000), 1000, seed=1))}
    app = create_app(detector, args.model or "regex", Settings(max_batch_texts=args.max_batch_texts,
                                                               max_wait_ms=args.max_wait_ms,
                                                               max_body_bytes=4 * args.beside + 1_000_000))
    server, url = serve(app)
    rows = []
    for clients in [int(c) for c in args.clients.split(",")]:
        for with_big in (False, True):
            latencies, _, big_seconds = asyncio.run(load(url, bodies, clients, args.timeout,
                                                         big if with_big else None))
            latencies.sort()
            rows.append((clients, with_big, len(latencies), 1000 * statistics.median(latencies),
                         1000 * latencies[int(0.95 * (len(latencies) - 1))], big_seconds))
    server.should_exit = True
    print(f"\n{args.requests} requests of ~{args.chars} characters per setting, beside one of {len(big['text']):,} "
          f"characters in {1 if args.one_paragraph else len(big['text']) // 1000} paragraphs; model: {args.model or 'regex'}, torch threads "
          f"{args.threads}\n")
    print("| small-request clients | big request beside them | small requests | small p50 ms | small p95 ms | "
          "big request s |")
    print("|---|---|---|---|---|---|")
    for clients, with_big, n, p50, p95, big_seconds in rows:
        print(f"| {clients} | {'yes' if with_big else 'no'} | {n} | {p50:.0f} | {p95:.0f} | "
              f"{'-' if big_seconds is None else f'{big_seconds:.1f}'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
