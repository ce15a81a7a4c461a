"""Training batches drawn at random against batches grouped by length, on a built corpus: padding and step time.

Windows are as short as the text they hold (a tweet is ~30 tokens, a filing's paragraph 128), and a batch is padded
to its longest window: drawn at random, most of a batch is padding. `train_sampling_strategy: group_by_length`
(transformers' `LengthGroupedSampler`: shuffled pools of 50 batches, each pool cut into batches of similar length)
keeps the same windows and the same number of them per step. For each sampler this prints the real and padded
tokens per batch over a whole epoch of the training split, and times training steps (forward, backward, AdamW) of
the piiner model on the packaged MiniLM with the trainer's collator: batches spread over the epoch (the grouped
sampler puts its longest batch first), the two samplers' interleaved.

    python benchmarks/bench_batching.py --data data/reference [--steps 20] [--threads 2]

The windows are the training split's, made as piiner-train makes them (128 tokens, stride 32), without the
oversampling of tier-1 records.
"""

import argparse
import os
import statistics
import time

import torch
from datasets import load_from_disk
from torch.utils.data import RandomSampler
from transformers.trainer_pt_utils import LengthGroupedSampler

from bench_train_step import untrained_piiner
from piiner.training.args import DEFAULT_TIER_WEIGHTS
from piiner.training.class_weights import label_weight_table, token_weights
from piiner.training.collator import PiiNerCollator
from piiner.training.features import build_features


def batches(sampler, batch_size):
    """The sampler's order cut into batches of row indices."""
    order = list(sampler)
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="data/reference", help="a corpus from piiner-data build")
    parser.add_argument("--backbone", default="embedded:all-MiniLM-L6-v2")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--stride", type=int, default=32)
    parser.add_argument("--steps", type=int, default=20, help="timed training steps per sampler (0: none)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = parser.parse_args()
    _, tokenizer, model = untrained_piiner(args.backbone, args.threads)
    config = model.config
    windows = build_features(load_from_disk(args.data)["train"], tokenizer, config, max_length=args.max_length,
                             stride=args.stride, desc="tokenize train")
    lengths = [len(ids) for ids in windows["input_ids"]]
    generator = torch.Generator().manual_seed(0)
    samplers = {
        "random": RandomSampler(windows, generator=generator),
        "grouped by length": LengthGroupedSampler(args.batch, lengths=lengths, generator=generator),
    }
    drawn = {name: batches(sampler, args.batch) for name, sampler in samplers.items()}

    collator = PiiNerCollator(tokenizer.pad_token_id, min_chars=max(config.char_kernel_sizes),
                              num_labels=config.num_labels)
    table = label_weight_table(config.id2label, config.type_to_tier, DEFAULT_TIER_WEIGHTS)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    times = {name: [] for name in drawn}
    model.train()
    columns = [c for c in windows.column_names if c not in ("offset_mapping", "example_index", "unreachable_spans")]
    inputs = windows.select_columns(columns)
    # Batches spread over the epoch: the grouped sampler puts its longest batch first.
    timed = {name: rows[::max(1, len(rows) // (args.steps + 1))][:args.steps + 1] for name, rows in drawn.items()}
    for step in range(args.steps + 1):  # the first round warms up
        for name, rows in timed.items():
            batch = collator([inputs[i] for i in rows[step]])
            batch["label_weights"] = token_weights(batch["labels"], table)
            start = time.perf_counter()
            model(**batch).loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if step:
                times[name].append(time.perf_counter() - start)

    print(f"\n{args.data} training split: {len(windows):,} windows of at most {args.max_length} tokens, batch "
          f"{args.batch}; {args.steps} interleaved steps per sampler, torch threads {torch.get_num_threads()}, load "
          f"average {os.getloadavg()[0]:.1f}\n")
    print("| sampler | real tokens per batch | padded tokens per batch | padding share | s/step (median) | "
          "real tokens/s |")
    print("|---|---|---|---|---|---|")
    for name, rows in drawn.items():
        real = sum(lengths[i] for batch in rows for i in batch) / len(rows)
        padded = sum(max(lengths[i] for i in batch) * len(batch) for batch in rows) / len(rows)
        if times[name]:
            median = statistics.median(times[name])
            timed_real = statistics.mean(sum(lengths[i] for i in batch) for batch in timed[name][1:])
            timing = f"{median:.3f} | {timed_real / median:,.0f}"
        else:
            timing = "- | -"
        print(f"| {name} | {real:.0f} | {padded:.0f} | {1 - real / padded:.0%} | {timing} |")


if __name__ == "__main__":
    main()
