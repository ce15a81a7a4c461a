"""train.py end to end on a tiny random BERT and a dozen inline records: loss, optimizer groups, checkpoints,
resume, the Hub output folder and the NaN guard."""

import json
import os
import subprocess
import sys
import textwrap
import types

import datasets
import pytest
import torch
from conftest import (REPO_ROOT, OverflowStopsEarly, build_tiny_tokenizer, env_without_this_repo, save_tiny_snapshot,
                      tiny_bert_config)
from safetensors.torch import load_file
from transformers import BertModel, TrainerCallback

from piiner.hub.modeling_piiner import PiiNerForTokenClassification
from piiner.hub.pii_schema import LABELS, TIER_OF
import piiner.training.train as train_module
from piiner.training.train import main
from piiner.training.args import parse_args
from piiner.training.collator import PiiNerCollator
from piiner.training.features import build_features
from piiner.training.hub import upload_plan
from piiner.training.trainer import NonFiniteError, PiiNerTrainer, component_parameters

TEMPLATES = [
    ("call {PERSON} at {PHONE} now", {"PERSON": "john smith", "PHONE": "555-201-3344"}),
    ("my ssn is {SSN} and my email is {EMAIL}", {"SSN": "123-45-6789", "EMAIL": "jo@ex.com"}),
    ("card {CREDIT_CARD} was declined at {ORGANIZATION}", {"CREDIT_CARD": "4111 1111 1111 1111", "ORGANIZATION": "acme"}),
    ("login from {IP_ADDRESS} by {USERNAME}", {"IP_ADDRESS": "10.0.0.7", "USERNAME": "jdoe88"}),
    ("the pin is {PIN} for account {ACCOUNT_NUMBER}", {"PIN": "4921", "ACCOUNT_NUMBER": "000123456789"}),
    ("nothing to see here at all", {}),
]


def make_record(i, template, values, repeat=1):
    text, spans = "", []
    parts = template.split("{")
    text += parts[0]
    for part in parts[1:]:
        label, rest = part.split("}", 1)
        start = len(text)
        text += values[label]
        spans.append({"start": start, "end": len(text), "label": label})
        text += rest
    if repeat > 1:  # a long text: the same sentence again and again, spans shifted
        sentence, sentence_spans = text, spans
        text, spans = "", []
        for _ in range(repeat):
            spans += [{**s, "start": s["start"] + len(text), "end": s["end"] + len(text)} for s in sentence_spans]
            text += sentence + " . "
        text = text.rstrip()
    return {"id": f"r{i}", "source": "inline", "text": text, "spans": spans, "group": f"g{i}"}


def tiny_records():
    records = [make_record(i, *TEMPLATES[i % len(TEMPLATES)]) for i in range(12)]
    records.append(make_record(12, *TEMPLATES[1], repeat=5))  # longer than one 32-token window
    return datasets.DatasetDict(
        train=datasets.Dataset.from_list(records[:9] + records[12:]),
        validation=datasets.Dataset.from_list(records[9:12] + records[12:]),
        test=datasets.Dataset.from_list(records[:3]),
    )


def write_run_inputs(folder):
    """A tiny random BERT backbone with its tokenizer, and a saved DatasetDict of unified records."""
    backbone = os.path.join(folder, "backbone")
    config = tiny_bert_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    BertModel(config).save_pretrained(backbone)
    build_tiny_tokenizer().save_pretrained(backbone)
    data = os.path.join(folder, "data")
    tiny_records().save_to_disk(data)
    return backbone, data


def train_argv(backbone, data, output_dir, *extra):
    return [
        "--config", os.path.join(REPO_ROOT, "configs", "tiny.yaml"),
        "--model_name_or_path", backbone, "--dataset", data, "--output_dir", output_dir,
        "--backbone_learning_rate", "3e-4", "--char_learning_rate", "2e-3", "--head_learning_rate", "5e-3",
        "--disable_tqdm", "true", "--max_eval_samples", "4", *extra,
    ]


@pytest.fixture(scope="module")
def run_inputs(tmp_path_factory):
    return write_run_inputs(str(tmp_path_factory.mktemp("inputs")))


class Snapshot(TrainerCallback):
    """Keeps a copy of the trainable parameters as training starts."""

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}

    def on_step_end(self, args, state, control, optimizer=None, **kwargs):
        if state.global_step == 2:
            self.lrs_at_step_2 = {g["component"]: g["lr"] for g in optimizer.param_groups}


class StopAt(TrainerCallback):
    """Simulates a run killed right after the checkpoint of step `step` is written."""

    def __init__(self, step):
        self.step = step

    def on_save(self, args, state, control, **kwargs):
        if state.global_step >= self.step:
            control.should_training_stop = True


FULL_RUN_FLAGS = ("--test_split", "test", "--metric_for_best_model", "f2", "--push_dry_run", "true")


@pytest.fixture(scope="module")
def full_run(run_inputs, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("full"))
    snapshot = Snapshot()
    trainer = main(train_argv(*run_inputs, out, *FULL_RUN_FLAGS), extra_callbacks=[snapshot])
    return trainer, snapshot, out


def test_every_trainable_parameter_changes(full_run):
    trainer, snapshot, _ = full_run
    after = dict(trainer.model.named_parameters())
    unchanged = [n for n, before in snapshot.before.items() if torch.equal(before, after[n].detach())]
    assert not unchanged


def test_each_component_has_its_own_learning_rate_and_epsilon(full_run):
    trainer, snapshot, _ = full_run
    groups = trainer.optimizer.param_groups
    initial = {g["component"]: g["initial_lr"] for g in groups}
    assert initial == {"backbone": 3e-4, "char": 2e-3, "head": 5e-3}
    assert {g["component"]: g["eps"] for g in groups}["backbone"] == trainer.args.adam_epsilon  # BERT: not 1.0
    # The schedule scales every group by the same factor, so their ratios survive the whole run.
    lrs = snapshot.lrs_at_step_2
    assert 0 < lrs["backbone"] < 3e-4 and lrs["char"] / lrs["backbone"] == pytest.approx(2e-3 / 3e-4)
    assert lrs["head"] / lrs["backbone"] == pytest.approx(5e-3 / 3e-4)
    for group in groups:
        no_decay = [n for n in group["names"] if n.endswith("bias") or "LayerNorm" in n]
        if group["weight_decay"] > 0:
            assert not no_decay


def test_groups_partition_the_parameters_by_module():
    model = PiiNerForTokenClassification(PiiNerForTokenClassification.config_class(encoder_config=tiny_bert_config()))
    groups = component_parameters(model)
    names = {c: {n for n, _ in named} for c, named in groups.items()}
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert set().union(*names.values()) == trainable and sum(map(len, names.values())) == len(trainable)
    assert all(n.startswith("piiner.encoder.") for n in names["backbone"])
    assert {n.split(".")[1] for n in names["char"]} == {"char_cnn", "fusion"}
    assert {n.split(".")[0] for n in names["head"]} == {"classifier", "crf"}


def test_best_checkpoint_is_tracked_by_the_chosen_metric(full_run):
    trainer, _, out = full_run
    evals = [h for h in trainer.state.log_history if "eval_f2" in h and h["step"] in (3, 6)]
    assert len(evals) >= 2
    best = max(evals, key=lambda h: h["eval_f2"])
    assert trainer.state.best_metric == best["eval_f2"]
    assert trainer.state.best_model_checkpoint.startswith(os.path.join(out, "checkpoint-"))
    assert {"eval_tier1_recall", "eval_precision", "eval_recall", "eval_f1"} <= set(evals[0])


def test_output_folder_is_a_complete_hub_repo(full_run):
    trainer, _, out = full_run
    files = set(os.listdir(out))
    code = {"configuration_piiner.py", "modeling_piiner.py", "crf_piiner.py", "encoding_piiner.py", "decoding_piiner.py",
            "pipeline_piiner.py", "pii_schema.py"}
    assert code | {"model.safetensors", "config.json", "tokenizer.json", "README.md", "model_card.md",
                   "evaluation_validation.json", "evaluation_test.json"} <= files
    config = json.load(open(os.path.join(out, "config.json")))
    assert config["id2label"]["1"] == LABELS[1] and len(config["id2label"]) == 83
    assert config["type_to_tier"] == TIER_OF
    assert config["line_break_marker"] == "\u00b6"  # a new model reads line breaks
    assert "AutoModelForTokenClassification" in config["auto_map"]
    assert "token-classification" in config["custom_pipelines"]
    card = open(os.path.join(out, "README.md")).read()
    assert card == open(os.path.join(out, "model_card.md")).read()
    assert "trust_remote_code=True" in card and "data test split" in card and "piiner_metrics.png" in files
    trainer.create_model_card(model_name="x")  # what push_to_hub writes before uploading: the same card
    assert open(os.path.join(out, "README.md")).read() == card
    report = json.load(open(os.path.join(out, "evaluation_test.json")))
    assert set(report) >= {"overall", "per_type", "per_tier"}


def test_push_dry_run_lists_what_push_to_hub_uploads(full_run):
    _, _, out = full_run
    plan = dict(upload_plan(out))
    assert not [p for p in plan if p.startswith(("checkpoint-", "_"))]
    assert {"model.safetensors", "config.json", "README.md", "modeling_piiner.py", "tokenizer.json"} <= set(plan)
    assert plan["model.safetensors"] == os.path.getsize(os.path.join(out, "model.safetensors"))


LOAD_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForTokenClassification, AutoTokenizer, pipeline
    results = {}
    for folder in sys.argv[1:]:
        model = AutoModelForTokenClassification.from_pretrained(folder, trust_remote_code=True)
        saved = load_file(folder + "/model.safetensors")
        state = model.state_dict()
        same = all(torch.equal(state[k], v) for k, v in saved.items()) and set(saved) <= set(state)
        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
        pii = pipeline("token-classification", model=folder, trust_remote_code=True)
        entities = pii("call john smith at 555-201-3344 now")
        results[folder] = {"same": same, "module": type(model).__module__, "entities": isinstance(entities, list)}
    print("RESULT:" + json.dumps(results))
    """
)


def test_every_checkpoint_and_the_final_folder_load_in_a_fresh_process(full_run, tmp_path):
    _, _, out = full_run
    folders = [out] + sorted(os.path.join(out, d) for d in os.listdir(out) if d.startswith("checkpoint-"))
    assert len(folders) == 3
    # A cwd outside the repo: the code must come from the folders themselves, not from this checkout.
    env = env_without_this_repo(HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(tmp_path / "modules"))
    result = subprocess.run(
        [sys.executable, "-c", LOAD_SCRIPT, *folders], capture_output=True, text=True, cwd=tmp_path, env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.split("RESULT:")[-1])
    for folder in folders:
        assert loaded[folder]["same"], folder
        assert loaded[folder]["module"].startswith("transformers_modules"), folder  # remote code, not this repo
        assert loaded[folder]["entities"]


def test_a_killed_run_resumed_ends_with_the_same_weights(full_run, run_inputs, tmp_path):
    _, _, full_out = full_run
    out = str(tmp_path / "killed")
    # Same flags as the full run, evaluations included (an evaluation draws from the RNG, so it shifts the
    # dropout masks after it); only the test split scored after training is left out.
    quiet = ("--metric_for_best_model", "f2", "--test_split", "none")
    stopped = main(train_argv(*run_inputs, out, *quiet), extra_callbacks=[StopAt(3)])
    assert stopped.state.global_step == 3
    resumed = main(train_argv(*run_inputs, out, *quiet, "--resume_from_checkpoint", os.path.join(out, "checkpoint-3")))
    assert resumed.state.global_step == 6
    expected = load_file(os.path.join(full_out, "model.safetensors"))
    got = load_file(os.path.join(out, "model.safetensors"))
    assert expected.keys() == got.keys()
    mismatched = [k for k in expected if not torch.allclose(expected[k], got[k], rtol=0, atol=1e-6)]
    assert not mismatched


class PoisonHeadGradients(TrainerCallback):
    def on_train_begin(self, args, state, control, model=None, **kwargs):
        model.classifier.weight.register_hook(lambda grad: grad * float("nan"))


def test_nan_guard_stops_naming_the_step_and_the_component(run_inputs, tmp_path):
    argv = train_argv(*run_inputs, str(tmp_path), "--eval_strategy", "no", "--save_strategy", "no")
    with pytest.raises(NonFiniteError, match=r"head group \(first: classifier.weight\) at optimizer step 1"):
        main(argv, extra_callbacks=[PoisonHeadGradients()])


def test_loss_is_the_crf_nll_weighted_by_the_tier_of_each_gold_token(run_inputs, tmp_path):
    backbone, data = run_inputs
    model = PiiNerForTokenClassification.from_backbone(backbone, classifier_dropout=0.0, char_dropout=0.0).eval()
    tokenizer = build_tiny_tokenizer()
    features = build_features(datasets.load_from_disk(data)["train"].select(range(4)), tokenizer, model.config, 32, 8)
    batch = PiiNerCollator(tokenizer.pad_token_id, min_chars=5)([features[i] for i in range(4)])

    def loss_with(*flags):
        _, _, args = parse_args(["--output_dir", str(tmp_path), "--use_cpu", "true", "--report_to", "none", *flags])
        return PiiNerTrainer(model=model, args=args).compute_loss(model, dict(batch)).item()

    unweighted = model(**batch).loss.item()
    assert loss_with("--tier_weights", "1:1,2:1,3:1,4:1") == pytest.approx(unweighted, rel=1e-5)
    assert loss_with("--tier_weights", "1:2,2:2,3:2,4:2", "--outside_weight", "2") == pytest.approx(2 * unweighted, rel=1e-5)
    tier1_heavy = loss_with("--tier_weights", "1:10,2:1,3:1,4:1")
    assert tier1_heavy > unweighted  # the batch holds SSN / credit card tokens


def test_missing_quickstart_corpus_names_the_command_that_builds_it(tmp_path):
    argv = ["--config", os.path.join(REPO_ROOT, "configs", "quickstart.yaml"), "--dataset", "data/__missing__",
            "--output_dir", str(tmp_path)]
    with pytest.raises(SystemExit, match="piiner-data build --sources synthetic,presidio,wnut17,btc,.*,formats,dense --out data/__missing__"):
        main(argv)


def test_records_entering_training_are_checked_sorted_and_rejected_by_name(run_inputs, tmp_path, capsys):
    """A folder of JSONL straight into train.py: unsorted spans are all labelled (only the first was), and a record
    with an out-of-range, overlapping or unknown-label span is rejected by id and counted, never half-labelled."""
    backbone, _ = run_inputs
    text = "call john smith at 555-201-3344 or jo@ex.com"
    spans = [{"start": 35, "end": 44, "label": "EMAIL"}, {"start": 5, "end": 15, "label": "PERSON"},
             {"start": 19, "end": 31, "label": "PHONE"}]
    good = {"id": "unsorted", "text": text, "spans": spans}
    bad = [
        {"id": "past-the-end", "text": text, "spans": [{"start": 40, "end": 99, "label": "EMAIL"}]},
        {"id": "overlap", "text": text, "spans": [{"start": 5, "end": 15, "label": "PERSON"},
                                                  {"start": 10, "end": 20, "label": "PERSON"}]},
        {"id": "no-such-type", "text": text, "spans": [{"start": 5, "end": 15, "label": "WIZARD"}]},
    ]
    data = tmp_path / "jsonl"
    data.mkdir()
    for split in ("train", "validation"):
        (data / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [good, *bad]))

    records = datasets.load_dataset("json", data_files={"train": str(data / "train.jsonl")})["train"]
    from piiner.training.features import RecordCheck

    check = RecordCheck("training")
    kept = check(records, set(TIER_OF))
    assert kept["id"] == ["unsorted"]
    assert {reason: ids for reason, ids in check.rejected.items()} == {
        "span_out_of_range": ["past-the-end"], "overlapping_spans": ["overlap"], "unknown_label": ["no-such-type"]}
    config = PiiNerForTokenClassification.config_class(encoder_config=tiny_bert_config())
    features = build_features(kept, build_tiny_tokenizer(), config, max_length=64, stride=8)
    labelled = {LABELS[label].split("-", 1)[1] for label in features["labels"][0] if label > 0}
    assert labelled == {"EMAIL", "PERSON", "PHONE"}

    main(train_argv(backbone, str(data), str(tmp_path / "run"), "--test_split", "none", "--max_steps", "1",
                    "--eval_strategy", "no", "--save_strategy", "no"))
    logged = capsys.readouterr().out
    assert "training: 3 of 4 records rejected" in logged and "past-the-end" in logged


def test_join_texts_trains_on_joined_records_and_the_card_says_so(run_inputs, tmp_path, capsys):
    backbone, data = run_inputs
    out = str(tmp_path / "run")
    main(train_argv(backbone, data, out, "--test_split", "none", "--max_steps", "1", "--eval_strategy", "no",
                    "--save_strategy", "no", "--join_texts", "4"))
    joined = [line for line in capsys.readouterr().out.splitlines() if "training records joined" in line]
    assert joined and joined[0].endswith("texts") and "10 records -> " in joined[0]
    assert int(joined[0].split("-> ")[1].split()[0]) < 10
    with open(os.path.join(out, "README.md"), encoding="utf-8") as f:
        assert "1 to 4, joined by a blank line or a line break" in f.read()


@pytest.mark.parametrize("flags, says", [
    (["--absent_types", "SALARY,AGE"], "types a source does not label left open (read as absent: SALARY,AGE)"),
    (["--partial_annotation", "false"], "types a source does not label read as O"),
])
def test_the_card_says_how_the_loss_read_partially_labelled_text(run_inputs, tmp_path, flags, says):
    backbone, data = run_inputs
    out = str(tmp_path / "run")
    main(train_argv(backbone, data, out, "--test_split", "none", "--max_steps", "1", "--eval_strategy", "no",
                    "--save_strategy", "no", *flags))
    with open(os.path.join(out, "README.md"), encoding="utf-8") as f:
        assert f"- partially labelled text: {says}\n" in f.read()


def test_a_new_model_reads_line_breaks_unless_told_not_to(run_inputs):
    from piiner.training.train import build_model
    from piiner.training.args import ModelArguments

    backbone, _ = run_inputs
    assert build_model(ModelArguments(model_name_or_path=backbone))[1].config.line_break_marker == "\u00b6"
    _, model = build_model(ModelArguments(model_name_or_path=backbone, line_break_marker="none"))
    assert model.config.line_break_marker is None


def test_source_repeats_naming_a_source_with_no_training_record_is_an_error(run_inputs, tmp_path):
    backbone, data = run_inputs
    with pytest.raises(SystemExit, match=r"source_repeats names \['wnut\'\], which no training record comes from"):
        main(train_argv(backbone, data, str(tmp_path / "run"), "--source_repeats", "wnut=3", "--max_steps", "1"))


def test_a_tokenizer_whose_windows_stop_short_stops_training_before_it_starts(run_inputs, tmp_path, monkeypatch):
    """tokenizers 0.23.1-0.23.2 (huggingface/tokenizers#2091) would train on the first window of each long record
    only: the run stops, naming the fix, instead of learning from the cut texts."""
    backbone, _ = run_inputs
    records = tiny_records()
    data = str(tmp_path / "data")
    long = make_record(99, *TEMPLATES[0], repeat=12)  # four 32-token windows
    datasets.DatasetDict(train=datasets.Dataset.from_list(list(records["train"]) + [long]),
                         validation=records["validation"]).save_to_disk(data)
    real_build_model = train_module.build_model
    monkeypatch.setattr(train_module, "build_model",
                        lambda args: (lambda tok, model: (OverflowStopsEarly(tok), model))(*real_build_model(args)))
    with pytest.raises(SystemExit, match=r"tokenizing the records: .*tokenizers#2091"):
        main(train_argv(backbone, data, str(tmp_path / "run"), "--max_length", "32", "--stride", "8",
                        "--max_steps", "1"))


def test_a_non_empty_output_dir_is_refused_unless_resuming_or_overwriting(run_inputs, tmp_path):
    backbone, data = run_inputs
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("someone's file")
    quick = ("--max_steps", "2", "--eval_strategy", "no", "--save_strategy", "steps", "--save_steps", "2",
             "--test_split", "none")
    with pytest.raises(SystemExit, match="is not empty: pass --resume_from_checkpoint last"):
        main(train_argv(backbone, data, str(out), *quick))
    with pytest.raises(SystemExit, match="no checkpoint-N folder"):
        main(train_argv(backbone, data, str(out), *quick, "--resume_from_checkpoint", "last"))
    main(train_argv(backbone, data, str(out), *quick, "--overwrite_output_dir", "true"))
    assert (out / "notes.txt").read_text() == "someone's file" and (out / "checkpoint-2").is_dir()
    resumed = main(train_argv(backbone, data, str(out), *quick, "--max_steps", "3", "--resume_from_checkpoint", "last"))
    assert resumed.args.resume_from_checkpoint == str(out / "checkpoint-2") and resumed.state.global_step == 3


@pytest.mark.parametrize("recipe", ["out-of-source.yaml", "quickstart.yaml"])
def test_recipe_configs_train_with_the_reference_loss(recipe, tmp_path):
    """The README's out-of-source figures and the quickstart stand for the recipe `make reference` trains: a config
    that drifts from it in how the loss reads partially labelled text (or names a type piiner lacks) fails here."""
    def loss_settings(name):
        config = os.path.join(REPO_ROOT, "configs", name)
        _, data, args = parse_args(["--config", config, "--output_dir", str(tmp_path)])
        return (args.partial_annotation, args.absent_types, args.tier_weights, data.oversample_factor,
                data.oversample_tiers)

    reference = loss_settings("reference-cpu.yaml")
    assert reference[1] == "SALARY,CRIMINAL_RECORD,AGE,SWIFT_CODE,RELIGION"
    assert loss_settings(recipe) == reference


def test_adapting_on_a_folder_of_jsonl_mixes_in_replayed_records_of_the_original_corpus(run_inputs, tmp_path, capsys):
    # The user's three documents as `piiner-data import` writes them, and 4 records of the original corpus replayed.
    backbone, data = run_inputs
    mine = tmp_path / "mine"
    mine.mkdir()
    for split, records in (("train", tiny_records()["validation"].select(range(3))),  # none of them in the corpus
                           ("validation", tiny_records()["train"].select(range(2))),
                           ("test", tiny_records()["test"].select(range(2)))):
        with open(mine / f"{split}.jsonl", "w") as f:
            f.writelines(json.dumps({**r, "labelled_types": ["PERSON", "EMAIL"]}) + "\n" for r in records)
    base = save_tiny_snapshot(tmp_path / "base")  # a trained model whose card says where it was published
    (base / "model_card_inputs.json").write_text(json.dumps({"repo_id": "acme/piiner-small"}))
    out = str(tmp_path / "run")
    # 3 steps of 4 windows: at least two passes over the 3 records, each with 4 replayed records of its own
    main(train_argv(backbone, str(mine), out, "--test_split", "test", "--max_steps", "3", "--eval_strategy", "no",
                    "--save_strategy", "no", "--replay_dataset", data, "--replay_records", "4",
                    "--init_from_checkpoint", str(base)))
    logged = capsys.readouterr().out
    assert (f"training on 3 records of {mine}, up to 2 passes over them, each with 4 of the 8 records replayed from "
            f"{data}") in logged
    # the user's test split and the replayed corpus's, scored before and after
    assert "adaptation, strict span scores before -> after:" in logged
    with open(os.path.join(out, "adaptation.json")) as f:
        assert [row["set"] for row in json.load(f)] == [f"{mine} test", f"{data} test (3 records)"]
    with open(os.path.join(out, "README.md"), encoding="utf-8") as f:
        card = f.read()
    assert "- training records: 11" in card  # distinct: 3 of the user's, 8 replayed
    assert f"- adapted from: {base}, with 4 records of {data} replayed at each pass over the training records" in card
    assert "base_model: acme/piiner-small" in card
    # an adapted model is a snapshot like any other: the redaction tools load it
    from piiner.deid import Redactor

    assert Redactor.from_pretrained(out)("mail jo@ex.com").redacted_text.endswith(" [EMAIL]")  # a tiny model


def test_each_pass_over_the_users_records_brings_replayed_records_of_its_own():
    # One replayed sample at every pass is learned by heart: GUM's organizations went from recall 0.58 to 0.42 on
    # replay alone (docs/experiments/adapting-to-clinical-notes.md).
    from piiner.training.train import replay_passes, with_replay

    corpus = tiny_records()
    mine = corpus["validation"].select(range(3))  # records the corpus's training split does not hold
    args = types.SimpleNamespace(max_steps=5, per_device_train_batch_size=4, gradient_accumulation_steps=1,
                                 world_size=1, num_train_epochs=3.0)
    assert replay_passes(args, 3, 2) == 4  # 20 windows drawn, 5 records a pass
    assert replay_passes(types.SimpleNamespace(**{**vars(args), "max_steps": -1}), 3, 2) == 3  # the epochs
    data_args = types.SimpleNamespace(train_split="train", replay_records=2, replay_source_power=1, dataset="mine",
                                      replay_dataset="corpus")
    mixed = with_replay(mine, corpus, data_args, set(TIER_OF), seed=0, passes=4)
    assert all(mixed["id"].count(i) == 4 for i in mine["id"])
    replayed = [i for i in mixed["id"] if i not in mine["id"]]
    assert len(replayed) == 8 and len(set(replayed)) == 8  # fresh records at every pass, none twice


def test_an_adapted_model_drops_the_capital_rule_for_a_type_the_users_labels_write_in_lower_case(
        run_inputs, tmp_path, capsys):
    # Nursing notes write "dr. lindquist" in mixed-case text: the decode's capital rule would reject those names
    # however well the model learns them. Places keep the rule where the labels capitalise them.
    backbone, data = run_inputs
    mine = tmp_path / "mine"
    mine.mkdir()
    names = ["dr. lindquist", "Dr. Vasquez", "Mary Souza", "Tom Reed", "Ann Cole", "Joe Park", "Sam Hill", "Eve Lin",
             "Ida Ross", "Max Wu", "Lu Chen", "Al Gore"]

    def note(i, name):
        text = f"Seen by {name} today. Transferred to Boston."
        return {"id": f"n{i}", "text": text, "labelled_types": ["PERSON", "LOCATION"],
                "spans": [{"start": 8, "end": 8 + len(name), "label": "PERSON"},
                          {"start": text.index("Boston"), "end": text.index("Boston") + 6, "label": "LOCATION"}]}

    for split, notes in (("train", [note(i, n) for i, n in enumerate(names)]), ("validation", [note(20, "Bo Li")])):
        with open(mine / f"{split}.jsonl", "w") as f:
            f.writelines(json.dumps(n) + "\n" for n in notes)
    base = save_tiny_snapshot(tmp_path / "base")
    out = str(tmp_path / "run")
    main(train_argv(backbone, str(mine), out, "--test_split", "none", "--max_steps", "1", "--eval_strategy", "no",
                    "--save_strategy", "no", "--init_from_checkpoint", str(base)))
    logged = capsys.readouterr()
    assert ("capitalised_types: PERSON taken out of the capital rule: 1 of its 12 labelled spans have no capital at "
            "an end in mixed-case text") in logged.out
    # the tokenizer of the model it starts from loads without asking to trust the model's code (a terminal waits)
    assert "custom code" not in logged.out + logged.err
    assert PiiNerForTokenClassification.from_pretrained(out).config.capitalised_types == ["LOCATION", "ORGANIZATION"]
    # the model it started from is left as it was
    assert PiiNerForTokenClassification.from_pretrained(base).config.capitalised_types == [
        "PERSON", "LOCATION", "ORGANIZATION"]


def test_the_sets_a_run_scores_are_windowed_as_the_pipeline_reads_a_text():
    # Notes of several paragraphs, longer than a training window: the pipeline reads each paragraph apart in its own
    # windows, and a score printed from other windows is not what piiner-evaluate reports.
    from piiner.hub.encoding_piiner import encode_texts

    tokenizer, config = build_tiny_tokenizer(), PiiNerForTokenClassification.config_class(encoder_config=tiny_bert_config())
    text = "\n\n".join(" ".join(f"w{i % 10} john" for i in range(k)) for k in (3, 40, 7))
    records = datasets.Dataset.from_list([{"id": "n1", "text": text, "spans": []}])
    scored = build_features(records, tokenizer, config, desc="scored", **train_module.SCORED_AS_THE_PIPELINE_READS)
    read = encode_texts(tokenizer, [text], config, return_tensors=None)
    assert [list(ids) for ids in scored["input_ids"]] == [list(ids) for ids in read["input_ids"]]


def test_scored_windows_are_not_taken_from_the_cache_of_a_model_with_more_positions(tmp_path):
    # Two models sharing a tokenizer score the same records on disk (whose features datasets caches by key): the
    # pipeline's default window depends on each encoder's positions, so each gets windows it can read.
    text = " ".join(f"w{i % 10} john" for i in range(60))
    datasets.Dataset.from_list([{"id": "n1", "text": text, "spans": []}]).save_to_disk(str(tmp_path / "records"))
    records = datasets.load_from_disk(str(tmp_path / "records"))
    tokenizer = build_tiny_tokenizer()
    for positions in (64, 16):
        config = PiiNerForTokenClassification.config_class(
            encoder_config=tiny_bert_config(max_position_embeddings=positions))
        scored = build_features(records, tokenizer, config, desc="scored", **train_module.SCORED_AS_THE_PIPELINE_READS)
        assert max(len(ids) for ids in scored["input_ids"]) == positions


def test_the_f1_reported_during_training_is_what_the_pipeline_scores_on_the_same_texts(run_inputs, tmp_path):
    # One path from windows to entities: recognizers, type checks and decoding again apply during training's
    # evaluation as in the pipeline. A barely trained model breaks checks everywhere, so both paths are exercised.
    from piiner.evaluation.metrics import span_metrics
    from piiner.hub.pipeline_piiner import PiiNerTokenClassificationPipeline

    backbone, data = run_inputs
    # Validation texts of several paragraphs, as notes and documents are: the pipeline reads each paragraph apart.
    corpus = datasets.load_from_disk(data)
    joined = []
    validation = corpus["validation"]
    for first, second in zip(validation.select(range(0, len(validation) - 1, 2)),
                             validation.select(range(1, len(validation), 2))):
        shift = len(first["text"]) + 2
        joined.append({**first, "text": first["text"] + "\n\n" + second["text"],
                       "spans": list(first["spans"]) + [{**sp, "start": sp["start"] + shift, "end": sp["end"] + shift}
                                                        for sp in second["spans"]]})
    corpus["validation"] = datasets.Dataset.from_list(joined, features=corpus["validation"].features)
    data = str(tmp_path / "paragraphs")
    corpus.save_to_disk(data)
    out = str(tmp_path / "run")
    main(train_argv(backbone, data, out, "--test_split", "none", "--max_steps", "1", "--save_strategy", "no",
                    "--max_eval_samples", "100"))
    with open(os.path.join(out, "evaluation_validation.json")) as f:
        during_training = json.load(f)["overall"]
    records = datasets.load_from_disk(data)["validation"]
    pipe = PiiNerTokenClassificationPipeline(model=PiiNerForTokenClassification.from_pretrained(out),
                                             tokenizer=build_tiny_tokenizer(), device=-1)
    found = pipe(records["text"])  # the windows a user gets
    gold = [[(s["start"], s["end"], s["label"]) for s in spans] for spans in records["spans"]]
    pred = [[(e["start"], e["end"], e["type"]) for e in entities] for entities in found]
    through_pipeline = span_metrics(gold, pred)["overall"]
    assert sum(map(len, pred)) > 0
    assert {k: through_pipeline[k] for k in ("precision", "recall", "f1", "support")} == {
        k: during_training[k] for k in ("precision", "recall", "f1", "support")}
