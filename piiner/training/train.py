"""Train a piiner model.

    piiner-train --config configs/quickstart.yaml [--field value ...]
    accelerate launch --config_file accelerate_configs/cpu_ddp.yaml -m piiner.training --config configs/tiny.yaml

The YAML holds any field of ModelArguments, DataArguments and PiiTrainingArguments (training/args.py); a flag on
the command line overrides it. The output folder is a complete Hub model repo: weights, config with labels and
tiers, tokenizer, the model's code files, a model card (README.md) and the evaluation reports.
"""

import dataclasses
import json
import logging
import math
import os
import sys

import datasets
import torch
import transformers
from transformers import AutoTokenizer, EarlyStoppingCallback, set_seed
from transformers.trainer_utils import get_last_checkpoint

from piiner.data_prep.build import features as record_features
from piiner.hub.decoding_piiner import fails_check, lower_case_ends
from piiner.hub.encoding_piiner import WindowCoverageError
from piiner.hub.modeling_piiner import PiiNerForTokenClassification
from piiner.training.args import parse_args, resolve_backbone
from piiner.training.callbacks import HubFilesCallback, NonFiniteGuard
from piiner.training.class_weights import inverse_sqrt_class_weights, label_counts
from piiner.training.collator import PiiNerCollator
from piiner.training.features import JOINED_COLUMNS, RecordCheck, build_features, join_records, oversample
from piiner.evaluation.model_card import training_card_inputs, write_model_card
from piiner.training.args import EMBEDDED_MINILM
from piiner.training.hub import ensure_code_files, format_upload_plan, upload_plan
from piiner.training.span_eval import SpanEvaluator, keep_emissions_and_tags
from piiner.training.trainer import PiiNerTrainer

logger = logging.getLogger("piiner.training.train")

LOCAL_PREFIXES = ("/", "./", "../", "~", "data/", "runs/")


def load_records(data_args):
    """The unified records as a DatasetDict, from a save_to_disk folder, a folder of .jsonl files or the Hub."""
    path = os.path.expanduser(data_args.dataset)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "dataset_dict.json")):
            return datasets.load_from_disk(path)
        files = {
            split: os.path.join(path, f"{split}.jsonl")
            for split in (data_args.train_split, data_args.validation_split, data_args.test_split)
            if split and os.path.isfile(os.path.join(path, f"{split}.jsonl"))
        }
        if not files:
            raise SystemExit(f"{path} holds neither a saved DatasetDict (dataset_dict.json) nor <split>.jsonl files")
        return datasets.DatasetDict({split: _read_jsonl_records(file) for split, file in files.items()})
    if data_args.dataset.startswith(LOCAL_PREFIXES) or os.sep in data_args.dataset and not _looks_like_hub_id(path):
        command = f"piiner-data build --sources {data_args.dataset_sources or '<sources>'} --out {data_args.dataset}"
        raise SystemExit(f"dataset folder {data_args.dataset} not found: build it first with\n    {command}")
    return datasets.load_dataset(data_args.dataset)


def _read_jsonl_records(file):
    """One split's records, the record columns typed as a built corpus types them. Arrow reads a column's type off
    the values: a split whose spans are all empty (notes without PII) has none to read, and read together with
    the other splits it would set their spans to that nothing. Other fields are kept as Arrow reads them."""
    split = datasets.load_dataset("json", data_files=file, split="train")
    typed = record_features()
    return split.cast(datasets.Features({
        name: typed[name] if name in typed else feature
        for name, feature in split.features.items()}))


def _looks_like_hub_id(name):
    return name.count("/") == 1 and not name.startswith((".", "/"))


def select_split(records, name, limit, what, label_types):
    """One split, limited, with every record checked (see `RecordCheck`); rejected records are logged by id."""
    if name not in records:
        raise SystemExit(f"the dataset has no {what} split {name!r} (splits: {sorted(records)})")
    split = records[name]
    # A limited split is a random sample of it (fixed seed): the records of a built corpus come source by source.
    split = split.shuffle(seed=0).select(range(min(limit, len(split)))) if limit is not None else split
    check = RecordCheck(what)
    checked = check(split, label_types)
    (logger.warning if check.rejected else logger.info)(check.describe(len(split)))
    if not len(checked):
        raise SystemExit(f"no usable {what} record: {check.describe(len(split))}")
    return checked


def replay_passes(training_args, user_records, replay_records):
    """How many times a run may go over the user's records: each pass brings its own replayed records. From the
    samples `max_steps` draws (every process), else the epochs. A record gives one window or more, so counting
    records errs high, which costs only replayed records tokenized and never drawn."""
    if training_args.max_steps > 0:
        samples = (training_args.max_steps * training_args.per_device_train_batch_size
                   * training_args.gradient_accumulation_steps * training_args.world_size)
        return max(1, math.ceil(samples / (user_records + replay_records)))
    return max(1, math.ceil(training_args.num_train_epochs))


def with_replay(train_records, replay_corpus, data_args, label_types, seed, passes=1):
    """The user's training records `passes` times, each time beside `replay_records` of the replay corpus's training
    records of its own (a seeded sample, none drawn twice while the corpus lasts): adapting on a few hundred
    documents alone, a model forgets the text it was trained on, and replaying one sample at every pass teaches the
    model that sample instead (docs/experiments/adapting-to-clinical-notes.md)."""
    replay = select_split(replay_corpus, data_args.train_split, None, "replay", label_types).shuffle(seed=seed)
    wanted = data_args.replay_records * passes
    count = min(wanted, len(replay))
    if count < wanted:
        logger.warning("the replay corpus has %d training records, fewer than %d a pass for %d passes: the passes "
                       "share them", len(replay), data_args.replay_records, passes)
    replay = replay.select(range(count) if data_args.replay_source_power == 1 else
                           replay_by_source(replay["source"], count, data_args.replay_source_power))
    columns = [c for c in JOINED_COLUMNS if c in train_records.column_names and c in replay.column_names]
    rows = train_records.select_columns(columns).to_list() * passes + replay.select_columns(columns).to_list()
    logger.info("training on %d records of %s, up to %d passes over them, each with %d of the %d records replayed "
                "from %s", len(train_records), data_args.dataset, passes, data_args.replay_records, len(replay),
                data_args.replay_dataset)
    return datasets.Dataset.from_list(rows)


def replay_by_source(sources, count, power=0.0):
    """Which `count` of the (shuffled) replay rows, whose sources are `sources`, to take, in order: each source a
    share in proportion to its size to `power` (0: equal shares; 0.5: the square root, as multilingual models
    sample their languages), a source with fewer rows than its share giving the rest to the others, so a small
    corpus is not a handful of rows of a sample the largest one fills."""
    rows = {}
    for i, source in enumerate(sources):
        rows.setdefault(source, []).append(i)
    wanted, taken = min(count, len(sources)), dict.fromkeys(rows, 0)
    while sum(taken.values()) < wanted:
        # Each source with rows left takes its share of what is still wanted, a source too small for its share all
        # it has; the rows rounding leaves go one each to the largest remainders (then the smallest sources).
        open_ = sorted((s for s in rows if taken[s] < len(rows[s])), key=lambda s: (len(rows[s]), s))
        left = wanted - sum(taken.values())
        weights = [len(rows[s]) ** power for s in open_]
        exact = [left * w / sum(weights) for w in weights]
        shares = [int(x) for x in exact]
        by_remainder = sorted(range(len(open_)), key=lambda k: shares[k] - exact[k])
        for k in by_remainder[:left - sum(shares)]:
            shares[k] += 1
        for source, share in zip(open_, shares):
            taken[source] += min(share, len(rows[source]) - taken[source])
    return sorted(i for source, n in taken.items() for i in rows[source][:n])


# The sets a run scores (validation, test, the adaptation sets) are windowed as the pipeline reads a text, paragraph
# by paragraph in its default windows of up to 512 tokens, so the F1 printed is what piiner-evaluate reports for the
# same weights; training itself windows each record whole in max_length tokens.
SCORED_AS_THE_PIPELINE_READS = dict(max_length=None, stride=None, split_paragraphs=True)


# A capital rule the user's labels break this often (a share of a type's spans, and at least this many spans)
# costs more recall than the precision it buys: clinical notes write "dr. lindquist" and "mary souza".
CAPITAL_RULE_BROKEN_SHARE = 0.05
CAPITAL_RULE_MIN_SPANS = 10


def capital_rule_for_labels(records, config):
    """The user's labels decide `config.capitalised_types` when a model is adapted: a type whose labelled spans
    have no capital, or a lower-case word at an end, in a mixed-case paragraph (what the decode's capital rule
    rejects) in more than `CAPITAL_RULE_BROKEN_SHARE` of them is taken out of the rule. Returns `{type: (broken,
    spans)}` of the types to take out; the caller applies it once the model before adapting has been scored."""
    ruled = list(getattr(config, "capitalised_types", None) or ())
    counts = {kind: [0, 0] for kind in ruled}
    for text, spans in zip(records["text"], records["spans"]):
        for span in spans or ():
            if span["label"] not in counts:
                continue
            entity = {"type": span["label"], "start": span["start"], "end": span["end"],
                      "word": text[span["start"]:span["end"]]}
            counts[span["label"]][1] += 1
            counts[span["label"]][0] += bool(fails_check(text, entity, ruled) or lower_case_ends(text, entity, ruled))
    return {kind: (broken, total) for kind, (broken, total) in counts.items()
            if total >= CAPITAL_RULE_MIN_SPANS and broken > CAPITAL_RULE_BROKEN_SHARE * total}


def replay_test(replay_corpus, data_args, label_types):
    """A seeded sample of the replayed corpus's test split, or None (no replay, or no such split)."""
    if replay_corpus is None or not data_args.test_split or data_args.test_split not in replay_corpus:
        return None
    return select_split(replay_corpus, data_args.test_split, data_args.max_eval_samples or 300, "replay test",
                        label_types)


def adaptation_sets(data_args, test_records, test_features, replay_test, tokenizer, config, window):
    """`[(name, records, features)]`: the sets an adapted model is scored on before and after training."""
    sets = []
    if test_features is not None:
        sets.append((f"{data_args.dataset} {data_args.test_split}", test_records, test_features))
    if replay_test is not None:
        features = build_features(replay_test, tokenizer, config, desc="tokenize replay test", **window)
        sets.append((f"{data_args.replay_dataset} {data_args.test_split} ({len(replay_test)} records)", replay_test,
                     features))
    return sets


def score_on(trainer, records, features):
    evaluator = SpanEvaluator(records, features, trainer.model)
    kept, trainer.compute_metrics = trainer.compute_metrics, evaluator
    try:
        trainer.predict(features, metric_key_prefix="adaptation")
    finally:
        trainer.compute_metrics = kept
    return evaluator.last_report["overall"]


def report_adaptation(output_dir, names, before, after):
    """Prints and writes (adaptation.json) each set's strict scores before and after adapting."""
    rows = [{"set": name, "before": {k: b[k] for k in ("precision", "recall", "f1")},
             "after": {k: a[k] for k in ("precision", "recall", "f1")}} for name, b, a in zip(names, before, after)]
    with open(os.path.join(output_dir, "adaptation.json"), "w") as f:
        json.dump(rows, f, indent=1)
    lines = ["adaptation, strict span scores before -> after:", "| set | precision | recall | F1 |", "|---|---|---|---|"]
    for row in rows:
        b, a = row["before"], row["after"]
        lines.append(f"| {row['set']} | " + " | ".join(f"{b[k]:.3f} -> {a[k]:.3f}" for k in ("precision", "recall",
                                                                                              "f1")) + " |")
    print("\n".join(lines), flush=True)


def build_model(model_args):
    """(tokenizer, model): a fresh head on the backbone, or a saved piiner model to continue from."""
    overrides = {k: v for k in ("char_dropout", "classifier_dropout", "fusion", "use_crf")
                 if (v := getattr(model_args, k)) is not None}
    if model_args.init_from_checkpoint:
        source = model_args.init_from_checkpoint
        model = PiiNerForTokenClassification.from_pretrained(source, **overrides)
    else:
        source = resolve_backbone(model_args.model_name_or_path)
        marker = model_args.line_break_marker
        model = PiiNerForTokenClassification.from_backbone(
            source, line_break_marker=None if marker.lower() in ("", "none") else marker, **overrides)
    tokenizer_source = resolve_backbone(model_args.tokenizer_name_or_path or source)
    # Given the model's config, AutoTokenizer does not read a saved piiner config of its own, whose custom code it
    # would ask (at a terminal: waiting for an answer) to be trusted.
    tokenizer = AutoTokenizer.from_pretrained(
        tokenizer_source,
        **({"config": model.config} if model_args.init_from_checkpoint and tokenizer_source == source else {}))
    if not tokenizer.is_fast:
        raise SystemExit(f"the tokenizer of {source} is not a fast tokenizer: piiner needs token offsets")
    return tokenizer, model


def check_output_dir(training_args):
    """Refuse to train into a non-empty output folder unless asked to resume or overwrite, and resolve
    `--resume_from_checkpoint last` to the newest checkpoint there. Runs before anything is written."""
    out, resume = training_args.output_dir, training_args.resume_from_checkpoint
    if resume in ("last", "true", "True"):
        last = get_last_checkpoint(out) if os.path.isdir(out) else None
        if last is None:
            raise SystemExit(f"--resume_from_checkpoint {resume}: no checkpoint-N folder in {out} to resume from")
        training_args.resume_from_checkpoint = last
    elif resume and not os.path.isdir(resume):
        raise SystemExit(f"--resume_from_checkpoint {resume}: no such checkpoint folder")
    if os.path.isdir(out) and os.listdir(out) and not training_args.resume_from_checkpoint \
            and not training_args.overwrite_output_dir:
        raise SystemExit(f"output_dir {out} is not empty: pass --resume_from_checkpoint last (or a checkpoint folder) "
                         "to continue that run, --overwrite_output_dir true to write into it anyway, or choose "
                         "another --output_dir")


def main(argv=None, extra_callbacks=()):
    model_args, data_args, training_args = parse_args(argv)
    logging.basicConfig(
        format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO, stream=sys.stdout, force=True
    )
    transformers.utils.logging.set_verbosity(training_args.get_process_log_level())
    datasets.utils.logging.set_verbosity(training_args.get_process_log_level())
    if training_args.early_stopping_patience is not None and not (
        training_args.load_best_model_at_end and training_args.metric_for_best_model
    ):
        raise SystemExit("early_stopping_patience needs load_best_model_at_end: true and a metric_for_best_model")
    check_output_dir(training_args)
    if training_args.torch_num_threads:
        torch.set_num_threads(training_args.torch_num_threads)
    set_seed(training_args.seed)
    logger.info("process %d of %d (pid %d)", training_args.process_index, training_args.world_size, os.getpid())

    records = load_records(data_args)
    tokenizer, model = build_model(model_args)
    config = model.config
    label_types = {label.split("-", 1)[1] for label in config.label2id if label != "O"}
    train_records = select_split(records, data_args.train_split, data_args.max_train_samples, "training", label_types)
    eval_records = select_split(
        records, data_args.validation_split, data_args.max_eval_samples, "validation", label_types
    )
    test_records = (
        select_split(records, data_args.test_split, None, "test", label_types)
        if data_args.test_split in records else None
    )

    unruled = capital_rule_for_labels(train_records, config) if model_args.init_from_checkpoint else {}
    replay = (load_records(dataclasses.replace(data_args, dataset=data_args.replay_dataset))
              if data_args.replay_dataset else None)
    if replay is not None and data_args.replay_records > 0:
        passes = replay_passes(training_args, len(train_records), data_args.replay_records)
        if training_args.max_steps <= 0:  # an epoch of the Trainer now goes over every pass
            training_args.num_train_epochs /= passes
        train_records = with_replay(train_records, replay, data_args, label_types, training_args.seed, passes)

    # What the model trains on: the records, joined into longer texts when asked (the card counts the records).
    train_texts = join_records(train_records, data_args.join_texts, training_args.seed)
    if data_args.join_texts > 1:
        logger.info("training records joined 1 to %d at a time: %d records -> %d texts",
                    data_args.join_texts, len(train_records), len(train_texts))

    # The main process tokenizes and writes the cache; the other ranks then read it instead of redoing the work.
    with training_args.main_process_first(desc="tokenize"):
        window = dict(max_length=data_args.max_length, stride=data_args.stride)
        scoring = SCORED_AS_THE_PIPELINE_READS
        try:
            train_features = build_features(train_texts, tokenizer, config, desc="tokenize train", **window)
            eval_features = build_features(eval_records, tokenizer, config, desc="tokenize validation", **scoring)
            test_features = (
                build_features(test_records, tokenizer, config, desc="tokenize test", **scoring) if test_records
                else None
            )
        except WindowCoverageError as err:
            raise SystemExit(f"tokenizing the records: {err}") from None
    for name, recs, feats in (("train", train_texts, train_features), ("validation", eval_records, eval_features)):
        n_spans = sum(len(s or ()) for s in recs["spans"])
        logger.info(
            "%s: %d records -> %d windows; %d of %d spans have a boundary inside a token (unreachable by strict "
            "span match)", name, len(recs), len(feats), sum(feats["unreachable_spans"]), n_spans,
        )
    if data_args.repeats_by_source:
        sources = set(train_texts["source"]) if "source" in train_texts.column_names else set()
        unknown = set(data_args.repeats_by_source) - sources
        if unknown:
            raise SystemExit(
                f"source_repeats names {sorted(unknown)}, which no training record comes from "
                f"(training sources: {sorted(sources) or 'none named: the records have no source field'})"
            )
    train_features, n_oversampled = oversample(
        train_features, train_texts, data_args.oversampled_tiers, data_args.oversample_factor,
        data_args.repeats_by_source,
    )
    if n_oversampled:
        logger.info(
            "oversampling: %d records repeated (tier %s spans x%d; sources %s) -> %d training windows",
            n_oversampled, data_args.oversample_tiers, data_args.oversample_factor,
            data_args.source_repeats or "none", len(train_features),
        )

    class_weights = None
    if training_args.class_weighting == "inverse_sqrt":
        counts = label_counts(train_features["labels"], len(config.id2label))
        class_weights = inverse_sqrt_class_weights(counts, outside_id=config.label2id["O"])

    evaluator = SpanEvaluator(eval_records, eval_features, model)
    callbacks = [NonFiniteGuard(), HubFilesCallback(), *extra_callbacks]
    if training_args.early_stopping_patience is not None:
        callbacks.append(
            EarlyStoppingCallback(training_args.early_stopping_patience, training_args.early_stopping_threshold)
        )
    trainer = PiiNerTrainer(
        model=model,
        args=training_args,
        train_dataset=train_features,
        eval_dataset=eval_features,
        data_collator=PiiNerCollator(tokenizer.pad_token_id, min_chars=max(config.char_kernel_sizes),
                                     num_labels=config.num_labels if training_args.partial_annotation else None,
                                     absent_label_ids=training_args.absent_label_ids(config.label2id)),
        processing_class=tokenizer,
        compute_metrics=evaluator,
        preprocess_logits_for_metrics=keep_emissions_and_tags,
        callbacks=callbacks,
        class_weights=class_weights,
    )
    # An adapted model is judged by what changed: the user's test split and the replayed corpus's, before and after.
    comparisons = adaptation_sets(data_args, test_records, test_features, replay_test(replay, data_args, label_types),
                                  tokenizer, config, scoring) if model_args.init_from_checkpoint else []
    before = [score_on(trainer, *c[1:]) for c in comparisons]
    for kind, (broken, total) in unruled.items():
        logger.info("capitalised_types: %s taken out of the capital rule: %d of its %d labelled spans have no capital "
                    "at an end in mixed-case text", kind, broken, total)
    if unruled:
        config.capitalised_types = [kind for kind in config.capitalised_types if kind not in unruled]
    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    if trainer.control.should_training_stop and trainer.state.global_step < trainer.state.max_steps:
        logger.info("training stopped early at step %d", trainer.state.global_step)
    trainer.save_model()
    trainer.save_state()

    reports = {}
    if training_args.do_eval or training_args.eval_strategy != "no":
        metrics = trainer.evaluate()
        trainer.save_metrics("eval", metrics)
        reports["validation"] = {**evaluator.last_report, "n_texts": len(eval_records)}
    if test_features is not None:
        trainer.compute_metrics = SpanEvaluator(test_records, test_features, trainer.model)
        metrics = trainer.predict(test_features, metric_key_prefix="test").metrics
        trainer.save_metrics("test", metrics)
        reports["test"] = {**trainer.compute_metrics.last_report, "n_texts": len(test_records)}

    # Every process predicts (a distributed predict gathers from all of them); the first one reports.
    after = [score_on(trainer, *c[1:]) for c in comparisons]
    if comparisons and trainer.is_world_process_zero():
        report_adaptation(training_args.output_dir, [c[0] for c in comparisons], before, after)
    if trainer.is_world_process_zero():
        finish_output_folder(trainer, model_args, data_args, reports, train_records, n_oversampled)
    if training_args.push_to_hub:
        trainer.push_to_hub(commit_message="piiner training run")
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    return trainer


def finish_output_folder(trainer, model_args, data_args, reports, train_records, n_oversampled):
    """Code files, evaluation reports and the model card next to the weights; the push dry run, if asked."""
    args = trainer.args
    ensure_code_files(args.output_dir)
    command = "piiner-train " + " ".join(sys.argv[1:])
    named_reports = {}
    for split, report in reports.items():
        report = dict(report)
        report["meta"] = {"split": split, "command": command, "n_texts": report.pop("n_texts"), "model": args.output_dir}
        with open(os.path.join(args.output_dir, f"evaluation_{split}.json"), "w") as f:
            json.dump(report, f, indent=2)
        named_reports[f"{os.path.basename(os.path.normpath(data_args.dataset))} {split} split"] = report
    write_model_card(args.output_dir, trainer.model.config, **training_card_inputs(
        trainer, data_args, train_records, n_oversampled, named_reports, command, hub_base_model(model_args),
        model_args))
    if args.push_dry_run:
        repo_id = args.hub_model_id or os.path.basename(os.path.abspath(args.output_dir))
        print(format_upload_plan(upload_plan(args.output_dir), repo_id), flush=True)


def hub_base_model(model_args):
    """The Hub id of the model this one starts from, for the card's metadata, when there is one: the checkpoint an
    adapted model started from (its Hub id, or the repo its saved card names), else the encoder."""
    if model_args.init_from_checkpoint:
        name = model_args.init_from_checkpoint
        if _looks_like_hub_id(name) and not os.path.exists(name):
            return name
        try:
            with open(os.path.join(name, "model_card_inputs.json"), encoding="utf-8") as f:
                return json.load(f).get("repo_id")
        except (OSError, ValueError):
            return None
    name = model_args.model_name_or_path
    if name.lower() == EMBEDDED_MINILM.lower():
        return "sentence-transformers/all-MiniLM-L6-v2"
    return name if _looks_like_hub_id(name) and not os.path.exists(name) else None


def cli(argv=None):
    """The console entry point (`piiner-train`, `python -m piiner.training`, `accelerate launch -m piiner.training`)."""
    trainer = main(argv)
    if trainer.args.world_size > 1:
        # Leave without running destructors. On torch 2.13 the gloo process group, freed late by DDP's reducer,
        # joins its worker threads while holding the GIL; a worker still releasing a finished all-gather's tensors
        # needs the GIL, and the rank can hang forever. Everything is written and the group was destroyed by main().
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(cli())
