"""Tokens per second of one training step (forward, backward, AdamW step): piiner vs a plain token classifier.

Both use the same backbone and the same batch (default: the packaged MiniLM, 16 windows of 128 tokens). piiner
adds the char CNN, the gated fusion and the CRF; the target is an overhead of at most 20%.

    python benchmarks/bench_train_step.py [--backbone embedded:all-MiniLM-L6-v2] [--batch 16] [--length 128] [--steps 5]
    python benchmarks/bench_train_step.py --device cuda [--bf16]     # on a GPU; bf16 autocast as `--bf16 true` trains
    python benchmarks/bench_train_step.py --device cuda --profile 5 [--bf16]   # the ops where train.py's step spends

Prints a markdown table. Timings on a shared machine vary: run it on an idle one and say so when quoting it.
"""

import argparse
import os
import statistics
import time

import torch


from transformers import AutoModelForTokenClassification, AutoTokenizer  # noqa: E402

from piiner.hub.modeling_piiner import PiiNerForTokenClassification  # noqa: E402
from piiner.hub.pii_schema import LABEL2ID  # noqa: E402
from piiner.hub.encoding_piiner import encode_texts  # noqa: E402
from piiner.training.args import resolve_backbone  # noqa: E402
from piiner.training.args import DEFAULT_TIER_WEIGHTS  # noqa: E402
from piiner.training.class_weights import label_weight_table, token_weights  # noqa: E402
from piiner.training.features import unannotated_label_ids  # noqa: E402

SENTENCE = (
    "Please send the signed form to Maria Garcia at maria.garcia@example.com or call +1 (555) 201-3344; "
    "her SSN 123-45-6789 and card 4111 1111 1111 1111 are on file at 42 Oak Street, Springfield. "
)


def make_batch(tokenizer, config, batch, length):
    texts = [f"Ticket {i}: " + SENTENCE * 8 for i in range(batch)]
    enc = encode_texts(tokenizer, texts, config, max_length=length, stride=0)
    keep = [i for i, s in enumerate(enc["overflow_to_sample_mapping"].tolist()) if i == 0 or s != enc["overflow_to_sample_mapping"][i - 1]]
    inputs = {k: enc[k][keep] for k in ("input_ids", "attention_mask", "char_ids")}
    if "token_type_ids" in enc:
        inputs["token_type_ids"] = enc["token_type_ids"][keep]
    # Labels: O on text, a B-/I-EMAIL run in the middle of each row, -100 on special tokens and padding.
    real = inputs["char_ids"].ne(0).any(-1)
    labels = torch.full(real.shape, LABEL2ID["O"]).masked_fill(~real, -100)
    labels[:, 10] = LABEL2ID["B-EMAIL"]
    labels[:, 11:14] = LABEL2ID["I-EMAIL"]
    inputs["labels"] = labels
    return inputs


def names_only_rows(labels):
    """`unannotated_labels` that mark the second half of the rows as labelled for names only (as the NER corpora
    are): their loss is the partial-annotation NLL, as in a training batch that mixes sources."""
    ids = unannotated_label_ids(["PERSON", "LOCATION", "ORGANIZATION"], LABEL2ID)
    marked = torch.zeros(labels.shape[0], len(LABEL2ID), dtype=torch.bool)
    marked[labels.shape[0] // 2:, ids] = True
    return marked


class StepTimer:
    """One model + batch + AdamW on a device; `step()` times one training step (bf16 autocast when asked, as the
    Trainer's `--bf16 true` runs it; the GPU's queue drained before and after)."""

    def __init__(self, name, model, inputs, device="cpu", bf16=False):
        self.device, self.bf16 = torch.device(device), bf16
        self.name, self.model = name, model.to(self.device)
        self.inputs = {k: v.to(self.device) for k, v in inputs.items()}
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
        self.times = []

    def _sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def step(self, record=True):
        self.model.train()
        self._sync()
        start = time.perf_counter()
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            loss = self.model(**self.inputs).loss
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self._sync()
        if record:
            self.times.append(time.perf_counter() - start)


def run_interleaved(timers, steps, warmup=1):
    """Round-robin over the models, so load from other processes hits all of them alike; report the minimum
    (the step least disturbed by others) and the median."""
    for _ in range(warmup):
        for timer in timers:
            timer.step(record=False)
    for _ in range(steps):
        for timer in timers:
            timer.step()


def profile_steps(timer, steps, rows=15):
    """Tables of the ops of `steps` training steps by self time on the device (CUDA; on the CPU, CPU time) and by
    self CPU time: where a step's time goes, e.g. whether bf16 autocast adds casts or the GPU waits on the host."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if timer.device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(steps):
            timer.step(record=False)
    ops = prof.key_averages()
    on_device = "self_cuda_time_total" if timer.device.type == "cuda" else "self_cpu_time_total"
    print(f"\n{timer.name}, {steps} steps under the profiler, by {on_device}:\n")
    print(ops.table(sort_by=on_device, row_limit=rows))
    if timer.device.type == "cuda":
        print("\nby self_cpu_time_total (the host's work, launches included):\n")
        print(ops.table(sort_by="self_cpu_time_total", row_limit=rows))


def untrained_piiner(backbone, threads=None):
    """(backbone path, its tokenizer, a piiner model around it with a fresh head), torch's threads set when given and
    its seed fixed."""
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(0)
    path = resolve_backbone(backbone)
    return path, AutoTokenizer.from_pretrained(path), PiiNerForTokenClassification.from_backbone(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backbone", default="embedded:all-MiniLM-L6-v2")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cuda (default: cpu)")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast, as training with --bf16 true")
    parser.add_argument("--profile", type=int, metavar="STEPS", help="after the table, profile this many steps of "
                        "piiner as train.py runs it and print the ops that take the time")
    args = parser.parse_args()
    path, tokenizer, piiner = untrained_piiner(args.backbone, args.threads)
    batch = make_batch(tokenizer, piiner.config, args.batch, args.length)
    table = label_weight_table(piiner.config.id2label, piiner.config.type_to_tier, DEFAULT_TIER_WEIGHTS)
    n_tokens = int(batch["attention_mask"].sum())

    plain = AutoModelForTokenClassification.from_pretrained(path, num_labels=len(LABEL2ID))
    without_chars = {k: v for k, v in batch.items() if k != "char_ids"}
    weighted = {**batch, "label_weights": token_weights(batch["labels"], table)}
    on = dict(device=args.device, bf16=args.bf16)
    timers = [
        StepTimer("plain AutoModelForTokenClassification (softmax CE)", plain, without_chars, **on),
        StepTimer("piiner without char ids (encoder + CRF NLL)", piiner, without_chars, **on),
        StepTimer("piiner (char CNN + fusion + CRF NLL)", piiner, batch, **on),
        StepTimer("piiner as train.py runs it (+ tier-weighted token NLL)", piiner, weighted, **on),
        StepTimer("the same, half the rows labelled for names only (partial-annotation NLL)", piiner,
                  {**weighted, "unannotated_labels": names_only_rows(batch["labels"])}, **on),
    ]
    run_interleaved(timers, args.steps)
    rows = [(t.name, min(t.times), statistics.median(t.times)) for t in timers]

    base = rows[0][1]
    print(f"\nbackbone {args.backbone}, batch {tuple(batch['input_ids'].shape)}, {n_tokens} real tokens, "
          f"device {args.device}{' (bf16 autocast)' if args.bf16 else ''}, "
          f"torch threads {torch.get_num_threads()}, {args.steps} interleaved steps each, load average "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| model | s/step (min) | s/step (median) | tokens/s (min) | overhead vs plain (min) |")
    print("|---|---|---|---|---|")
    for name, fastest, median in rows:
        print(f"| {name} | {fastest:.3f} | {median:.3f} | {n_tokens / fastest:,.0f} | {100 * (fastest / base - 1):+.0f}% |")
    if args.profile:
        profile_steps(timers[-1], args.profile)


if __name__ == "__main__":
    main()
