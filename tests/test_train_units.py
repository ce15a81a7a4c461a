"""Pieces of the training system in isolation: arguments, label alignment, windows, collator, loss weights."""

import glob
import math
import os

import datasets
import pytest
import tokenizers
import torch
from conftest import REPO_ROOT, tiny_bert_config

from piiner.hub.configuration_piiner import PiiNerConfig
from piiner.hub.pii_schema import ID2LABEL, LABEL2ID, TIER_OF
from piiner.training.args import DataArguments, PiiTrainingArguments, parse_args, parse_tier_weights
from piiner.training.class_weights import inverse_sqrt_class_weights, label_counts, label_weight_table, token_weights
from piiner.training.collator import PiiNerCollator
from piiner.training.features import align_labels, build_features, join_records, oversample


def write_yaml(tmp_path, text):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return str(path)


def test_flags_override_yaml_and_yaml_overrides_defaults(tmp_path):
    config = write_yaml(
        tmp_path,
        f"output_dir: {tmp_path}/out\nmax_steps: 7\nhead_learning_rate: 5.0e-4\ntier_weights: {{1: 4, 2: 2, 3: 1, 4: 1}}\n"
        "max_length: 64\nstride: 8\n",
    )
    model_args, data_args, args = parse_args(["--config", config, "--max_steps", "9", "--stride", "4"])
    assert args.max_steps == 9 and data_args.stride == 4  # flags win
    assert args.head_learning_rate == 5e-4 and data_args.max_length == 64  # YAML beats the defaults
    assert args.tier_weights == {1: 4.0, 2: 2.0, 3: 1.0, 4: 1.0}
    assert args.label_names == ["labels"]  # label_weights is computed in compute_loss, not read from the data
    assert model_args.model_name_or_path.startswith("embedded:")


def test_unknown_yaml_key_is_an_error_naming_it(tmp_path):
    config = write_yaml(tmp_path, f"output_dir: {tmp_path}\nhead_lerning_rate: 1.0e-3\n")
    with pytest.raises(SystemExit, match="head_lerning_rate"):
        parse_args(["--config", config])


def test_a_yaml_file_that_does_not_parse_is_an_error_naming_file_and_line(tmp_path):
    config = write_yaml(tmp_path, f"output_dir: {tmp_path}\nmax_steps: [1\n")
    with pytest.raises(SystemExit, match=r"run.yaml is not valid YAML: .*line 3"):
        parse_args(["--config", config])


@pytest.mark.parametrize("line, key", [("max_steps: 6.7", "max_steps"), ("seed: true", "seed"),
                                       ("head_learning_rate: fast", "head_learning_rate"), ("bf16: 1", "bf16"),
                                       ("stride: null", "stride")])
def test_yaml_values_are_type_checked_when_parsed(tmp_path, line, key):
    """max_steps 6.7 in a YAML fails here, naming the key, not after the model has loaded."""
    config = write_yaml(tmp_path, f"output_dir: {tmp_path}\n{line}\n")
    with pytest.raises(SystemExit, match=f"{key}: .* is not a valid"):
        parse_args(["--config", config])


def test_a_yaml_value_outside_its_arguments_choices_is_an_error_naming_it(tmp_path):
    """As a flag would be: a misspelt sampling strategy must not fall back to random batches in silence."""
    config = write_yaml(tmp_path, f"output_dir: {tmp_path}\ntrain_sampling_strategy: group_by_lenght\n")
    with pytest.raises(SystemExit, match="train_sampling_strategy='group_by_lenght' is not one of .*group_by_length"):
        parse_args(["--config", config])


def test_yaml_numbers_written_as_strings_are_read_as_a_flag_would_be(tmp_path):
    config = write_yaml(tmp_path, f"output_dir: {tmp_path}\nhead_learning_rate: 1e-3\nmax_steps: '12'\n")
    _, _, args = parse_args(["--config", config])
    assert args.head_learning_rate == 1e-3 and args.max_steps == 12


def test_relative_paths_in_a_yaml_are_relative_to_its_folder(tmp_path, monkeypatch):
    folder = tmp_path / "configs"
    folder.mkdir()
    (tmp_path / "corpus").mkdir()
    (folder / "run.yaml").write_text("dataset: ../corpus\noutput_dir: ../runs/x\n"
                                     "model_name_or_path: org/backbone\ntokenizer_name_or_path: ./tok\n")
    monkeypatch.chdir(tmp_path / "corpus")  # anywhere else: the YAML's folder decides, not the working directory
    model_args, data_args, args = parse_args(["--config", str(folder / "run.yaml")])
    assert data_args.dataset == str(tmp_path / "corpus") and args.output_dir == str(tmp_path / "runs" / "x")
    assert model_args.model_name_or_path == "org/backbone"  # a Hub id stays a Hub id
    assert model_args.tokenizer_name_or_path == str(folder / "tok")
    # A flag is relative to the working directory, as on any command line.
    _, data_args, _ = parse_args(["--config", str(folder / "run.yaml"), "--dataset", "here"])
    assert data_args.dataset == "here"


@pytest.mark.parametrize(
    "value, expected",
    [("1:3,2:2,3:1.5,4:1", {1: 3.0, 2: 2.0, 3: 1.5, 4: 1.0}), ('{"1": 1, "2": 1, "3": 1, "4": 2}', {1: 1, 2: 1, 3: 1, 4: 2})],
)
def test_tier_weights_parse_from_flag_forms(value, expected):
    assert parse_tier_weights(value) == expected


@pytest.mark.parametrize("value", ["1:3,2:2,3:1.5", "1:3,2:2,3:1.5,4:0", "1:3,2:2,3:1,4:1,5:1"])
def test_tier_weights_reject_missing_extra_or_non_positive_tiers(value):
    with pytest.raises(ValueError, match="tier_weights"):
        parse_tier_weights(value)


def test_tier_weight_schedule_changes_with_epochs(tmp_path):
    schedule = '[{"1": 3, "2": 2, "3": 1.5, "4": 1}, {"1": 1, "2": 1, "3": 1, "4": 1}]'
    _, _, args = parse_args(["--output_dir", str(tmp_path), "--tier_weight_schedule", schedule])
    assert args.tier_weights_for_epoch(0.7)[1] == 3.0
    assert args.tier_weights_for_epoch(1.2)[1] == 1.0
    assert args.tier_weights_for_epoch(5)[1] == 1.0  # the last entry repeats


SPANS = [{"start": 8, "end": 20, "label": "EMAIL"}, {"start": 24, "end": 35, "label": "SSN"}]


def test_labels_follow_character_spans_not_word_boundaries():
    # "mail to a.b@cd.com or 123-45-6789!" tokenised into pieces; offsets in characters.
    offsets = [(0, 0), (0, 4), (5, 7), (8, 9), (9, 10), (10, 20), (21, 23), (24, 27), (27, 35), (35, 36), (0, 0)]
    labels = align_labels(offsets, SPANS, LABEL2ID)
    names = [None if i == -100 else list(LABEL2ID)[i] for i in labels]
    assert names == [
        None, "O", "O", "B-EMAIL", "I-EMAIL", "I-EMAIL", "O", "B-SSN", "I-SSN", "O", None,
    ]


def test_a_window_opening_inside_an_entity_starts_with_b():
    offsets = [(0, 0), (12, 20), (21, 23), (0, 0)]  # the window starts in the middle of the email
    labels = align_labels(offsets, SPANS, LABEL2ID)
    assert labels[1] == LABEL2ID["B-EMAIL"]


def test_token_straddling_two_spans_belongs_to_the_one_starting_inside_it():
    spans = [{"start": 0, "end": 4, "label": "PERSON"}, {"start": 4, "end": 8, "label": "PHONE"}]
    labels = align_labels([(0, 2), (2, 6), (6, 8)], spans, LABEL2ID)
    assert labels == [LABEL2ID["B-PERSON"], LABEL2ID["B-PHONE"], LABEL2ID["I-PHONE"]]


def test_unknown_span_type_is_an_error_naming_the_record(tiny_tokenizer):
    config = PiiNerConfig(encoder_config=tiny_bert_config())
    records = datasets.Dataset.from_list(
        [{"id": "r7", "text": "call john", "spans": [{"start": 5, "end": 9, "label": "NICKNAME"}]}]
    )
    with pytest.raises(ValueError, match="r7.*NICKNAME"):
        build_features(records, tiny_tokenizer, config, max_length=16, stride=4)


def _cache_file(records, tokenizer):
    config = PiiNerConfig(encoder_config=tiny_bert_config())
    return build_features(records, tokenizer, config, max_length=16, stride=4).cache_files[0]["filename"]


def test_cached_windows_are_found_by_a_used_tokenizer_but_not_under_another_tokenizers_version(
        tiny_tokenizer, tmp_path, monkeypatch):
    """A run reads the windows an earlier run cached, whether or not its tokenizer has been called yet (each call
    leaves truncation settings on it); the same tokenizer file windows differently across tokenizers versions
    (0.23.1-0.23.2 cut overflow short, huggingface/tokenizers#2091), so a cache written under one is not read
    under another."""
    datasets.Dataset.from_list([{"id": "a", "text": "call john", "spans": []}]).save_to_disk(str(tmp_path / "r"))
    records = datasets.load_from_disk(str(tmp_path / "r"))
    fresh = _cache_file(records, tiny_tokenizer)  # tokenizes: the tokenizer now holds truncation settings
    assert _cache_file(records, tiny_tokenizer) == fresh
    monkeypatch.setattr(tokenizers, "__version__", "0.0.1")
    assert _cache_file(records, tiny_tokenizer) != fresh


def test_long_texts_become_overlapping_windows_covering_every_token(tiny_tokenizer):
    config = PiiNerConfig(encoder_config=tiny_bert_config())
    text = " ".join(f"word{i}" for i in range(30)) + " my ssn is 123-45-6789 end"
    start = text.index("123")
    records = datasets.Dataset.from_list(
        [
            {"id": "long", "text": text, "spans": [{"start": start, "end": start + 11, "label": "SSN"}]},
            {"id": "short", "text": "call me", "spans": []},
        ]
    )
    features = build_features(records, tiny_tokenizer, config, max_length=24, stride=6)
    windows = [i for i, e in enumerate(features["example_index"]) if e == 0]
    assert len(windows) > 3 and all(len(features["input_ids"][i]) <= 24 for i in windows)
    full = tiny_tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)["offset_mapping"]
    seen = {tuple(o) for i in windows for o in features["offset_mapping"][i] if o[1] > o[0]}
    assert seen == {tuple(o) for o in full}  # nothing cut
    ssn_tags = [
        tag for i in windows for tag, (s, e) in zip(features["labels"][i], features["offset_mapping"][i])
        if s >= start and e <= start + 11 and e > s
    ]
    assert ssn_tags and set(ssn_tags) <= {LABEL2ID["B-SSN"], LABEL2ID["I-SSN"]}
    assert features["example_index"][-1] == 1 and sum(features["unreachable_spans"]) == 0
    char_rows = features["char_ids"][windows[0]]
    assert char_rows[0] == [] and all(char_rows[1:-1])  # [CLS] has no characters, real tokens do


def test_oversampling_repeats_windows_of_records_with_rare_tier_spans():
    records = datasets.Dataset.from_list(
        [
            {"id": "a", "text": "x", "spans": [{"start": 0, "end": 1, "label": "SSN"}]},
            {"id": "b", "text": "y", "spans": [{"start": 0, "end": 1, "label": "EMAIL"}]},
        ]
    )
    features = datasets.Dataset.from_dict({"example_index": [0, 0, 1]})
    out, n = oversample(features, records, {1}, 3)
    assert n == 1 and out["example_index"] == [0, 0, 0, 0, 0, 0, 1]


def test_source_repeats_multiply_with_the_tier_oversampling():
    records = datasets.Dataset.from_list(
        [
            {"id": "a", "source": "synthetic", "text": "x", "spans": [{"start": 0, "end": 1, "label": "SSN"}]},
            {"id": "b", "source": "wnut17", "text": "y", "spans": [{"start": 0, "end": 1, "label": "PERSON"}]},
            {"id": "c", "source": "presidio", "text": "z", "spans": [{"start": 0, "end": 1, "label": "SSN"}]},
        ]
    )
    features = datasets.Dataset.from_dict({"example_index": [0, 1, 1, 2]})
    out, n = oversample(features, records, {1}, 2, {"wnut17": 3, "presidio": 2})
    assert n == 3 and out["example_index"] == [0, 0] + [1] * 6 + [2] * 4


def _joinable_records():
    rows = []
    for i in range(12):
        text = f"Call Ann{i} at 555-01{i:02d}."
        rows.append({"id": f"s{i}", "source": "synthetic", "text": text, "group": f"g{i}", "labelled_types": None,
                     "spans": [{"start": 5, "end": 9 + len(str(i)), "label": "PERSON"},
                               {"start": len(text) - 9, "end": len(text) - 1, "label": "PHONE"}],
                     "not_pii_spans": None, "unjudged_spans": None})
    for i in range(6):
        text = f"I met Bo{i} in 2005 at Acme."
        rows.append({"id": f"g{i}", "source": "gum", "text": text, "group": f"d{i}",
                     "labelled_types": ["PERSON", "LOCATION", "ORGANIZATION", "DATE"],
                     "spans": [{"start": 6, "end": 9, "label": "PERSON"},
                               {"start": len(text) - 5, "end": len(text) - 1, "label": "ORGANIZATION"}],
                     "not_pii_spans": [{"start": 0, "end": 1}], "unjudged_spans": [{"start": 13, "end": 17}]})
    return datasets.Dataset.from_list(rows)


def test_joined_records_keep_every_record_once_with_its_spans_on_the_same_characters():
    records = _joinable_records()
    joined = join_records(records, 4, seed=0)
    assert 0 < len(joined) < len(records) and "group" not in joined.column_names
    by_id = {r["id"]: r for r in records}
    seen = []
    for row in joined:
        parts = row["id"].split("+")
        seen += parts
        assert len({by_id[p]["source"] for p in parts}) == 1 and row["source"] == by_id[parts[0]]["source"]
        assert row["labelled_types"] == by_id[parts[0]]["labelled_types"]
        joiners = set()
        offset = 0
        for p in parts:
            original = by_id[p]
            assert row["text"][offset:offset + len(original["text"])] == original["text"]
            for field in ("spans", "not_pii_spans", "unjudged_spans"):
                moved = [row["text"][s["start"]:s["end"]] for s in row[field] or ()
                         if offset <= s["start"] < offset + len(original["text"])]
                assert moved == [original["text"][s["start"]:s["end"]] for s in original[field] or ()]
            offset += len(original["text"])
            if offset < len(row["text"]):
                joiner = "\n\n" if row["text"].startswith("\n\n", offset) else "\n"
                joiners.add(joiner)
                offset += len(joiner)
        assert offset == len(row["text"]) and len(joiners) <= 1
    assert sorted(seen) == sorted(records["id"])
    assert max(len(r["id"].split("+")) for r in joined) > 1


def test_records_are_joined_only_with_records_of_the_same_annotation():
    records = _joinable_records()
    records = records.map(lambda r, i: {"labelled_types": ["PERSON"] if i % 2 else None}, with_indices=True)
    for row in join_records(records, 6, seed=1):
        parts = [int(p[1:]) for p in row["id"].split("+")]
        assert len({(row["id"][0], i % 2) for i in parts}) == 1


def test_joining_one_record_at_a_time_changes_nothing_and_is_seeded():
    records = _joinable_records()
    assert join_records(records, 1, seed=0) is records
    assert join_records(records, 3, seed=5).to_list() == join_records(records, 3, seed=5).to_list()
    with pytest.raises(ValueError, match="join_texts must be >= 1"):
        DataArguments(join_texts=0)


@pytest.mark.parametrize("text, named", [("presidio", "'presidio'"), ("presidio=0", "'presidio=0'"), ("=2", "'=2'"),
                                         ("presidio=two", "'presidio=two'"),
                                         ("presidio=3,presidio=2", "names 'presidio' twice")])
def test_a_malformed_source_repeats_entry_is_an_error_naming_it(text, named):
    with pytest.raises(ValueError, match=f"source_repeats .*{named}"):
        DataArguments(dataset="d", source_repeats=text)


def test_collator_pads_every_input_including_char_ids():
    collate = PiiNerCollator(pad_token_id=0, min_chars=5)
    batch = collate(
        [
            {"input_ids": [2, 7, 3], "attention_mask": [1, 1, 1], "labels": [-100, 4, -100], "char_ids": [[], [9, 9], []],
             "offset_mapping": [[0, 0], [0, 2], [0, 0]]},
            {"input_ids": [2, 3], "attention_mask": [1, 1], "labels": [-100, -100], "char_ids": [[], []]},
        ]
    )
    assert set(batch) == {"input_ids", "attention_mask", "labels", "char_ids"}
    assert batch["input_ids"].tolist() == [[2, 7, 3], [2, 3, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert batch["labels"].tolist() == [[-100, 4, -100], [-100, -100, -100]]
    assert batch["char_ids"].shape == (2, 3, 5) and batch["char_ids"][0, 1, :2].tolist() == [9, 9]


def test_inverse_sqrt_class_weights_follow_the_seed_scheme():
    o, b_ssn, i_ssn, b_email = LABEL2ID["O"], LABEL2ID["B-SSN"], LABEL2ID["I-SSN"], LABEL2ID["B-EMAIL"]
    rows = [[-100] + [o] * 100 + [b_ssn] * 4 + [i_ssn] * 16 + [b_email] * 64 + [-100] * 50]
    counts = label_counts(rows, len(LABEL2ID))
    assert counts[o] == 100 and sum(counts) == 184  # padding / special tokens are not counted
    weights = inverse_sqrt_class_weights(counts, outside_id=o)
    entity = [weights[i] for i in (b_ssn, i_ssn, b_email)]
    assert math.isclose(sum(entity) / 3, 1.0)
    assert math.isclose(weights[b_ssn] / weights[b_email], 4.0)  # sqrt(64 / 4)
    assert weights[o] <= 1.0 and weights[o] < weights[b_email]


def test_token_weights_use_the_tier_of_the_gold_type():
    config = PiiNerConfig(encoder_config=tiny_bert_config())
    table = label_weight_table(config.id2label, config.type_to_tier, {1: 3.0, 2: 2.0, 3: 1.5, 4: 1.0}, 0.5)
    labels = torch.tensor([[-100, LABEL2ID["O"], LABEL2ID["I-SSN"], LABEL2ID["B-EMAIL"], LABEL2ID["B-DATE"], LABEL2ID["B-PIN"]]])
    assert token_weights(labels, table).tolist() == [[0.0, 0.5, 3.0, 2.0, 1.5, 1.0]]


def test_non_finite_parameter_is_reported_with_its_component(tmp_path):
    from piiner.hub.modeling_piiner import PiiNerForTokenClassification
    from piiner.training.trainer import PiiNerTrainer, first_non_finite

    model = PiiNerForTokenClassification(PiiNerConfig(encoder_config=tiny_bert_config()))
    _, _, args = parse_args(["--output_dir", str(tmp_path), "--use_cpu", "true", "--report_to", "none"])
    optimizer = PiiNerTrainer(model=model, args=args).create_optimizer()
    assert first_non_finite(optimizer, "param") is None
    with torch.no_grad():
        model.piiner.fusion.gate.bias[3] = float("inf")
    assert first_non_finite(optimizer, "param") == ("char", "piiner.fusion.gate.bias")
    # Gradients: parameters without one are skipped, and the name is still the bad tensor's, in a later group.
    named = dict(model.named_parameters())
    named["piiner.fusion.gate.bias"].grad = torch.zeros_like(named["piiner.fusion.gate.bias"])
    named["classifier.weight"].grad = torch.zeros_like(named["classifier.weight"])
    named["classifier.bias"].grad = torch.full_like(named["classifier.bias"], float("nan"))
    assert first_non_finite(optimizer, "grad") == ("head", "classifier.bias")
    named["classifier.bias"].grad.zero_()
    assert first_non_finite(optimizer, "grad") is None


def test_deberta_backbone_gets_adam_epsilon_one_unless_set(tmp_path):
    from conftest import tiny_deberta_config

    from piiner.hub.modeling_piiner import PiiNerForTokenClassification
    from piiner.training.trainer import PiiNerTrainer

    model = PiiNerForTokenClassification(PiiNerConfig(encoder_config=tiny_deberta_config()))
    for flags, expected in (([], 1.0), (["--backbone_adam_epsilon", "1e-6"], 1e-6)):
        _, _, args = parse_args(["--output_dir", str(tmp_path), "--use_cpu", "true", "--report_to", "none", *flags])
        optimizer = PiiNerTrainer(model=model, args=args).create_optimizer()
        eps = {g["component"]: g["eps"] for g in optimizer.param_groups}
        assert eps == {"backbone": expected, "char": args.adam_epsilon, "head": args.adam_epsilon}


def test_early_stopping_without_a_best_model_metric_is_refused(tmp_path):
    from piiner.training.train import main

    with pytest.raises(SystemExit, match="early_stopping_patience needs load_best_model_at_end"):
        main(["--output_dir", str(tmp_path), "--early_stopping_patience", "2", "--report_to", "none"])


def test_records_of_a_names_only_corpus_mark_every_other_label_as_unannotated(tiny_tokenizer):
    from piiner.training.features import unannotated_label_ids

    ids = unannotated_label_ids(["PERSON", "LOCATION", "ORGANIZATION"], LABEL2ID)
    assert len(ids) == 2 * 38 and LABEL2ID["B-PERSON"] not in ids and LABEL2ID["I-EMAIL"] in ids
    assert LABEL2ID["O"] not in ids and unannotated_label_ids(None, LABEL2ID) == []
    records = datasets.Dataset.from_list([
        {"id": "ner", "text": "ann met bob", "spans": [], "labelled_types": ["PERSON", "LOCATION", "ORGANIZATION"]},
        {"id": "synthetic", "text": "ann met bob", "spans": [], "labelled_types": None},
    ])
    config = PiiNerConfig(encoder_config=tiny_bert_config())
    features = build_features(records, tiny_tokenizer, config, max_length=16, stride=2)
    assert features["unannotated_labels"] == [ids, []]
    collate = PiiNerCollator(pad_token_id=0, num_labels=len(LABEL2ID))
    rows = [{k: features[i][k] for k in ("input_ids", "attention_mask", "labels", "unannotated_labels")}
            for i in range(2)]
    batch = collate(rows)
    assert batch["unannotated_labels"].shape == (2, len(LABEL2ID))
    assert batch["unannotated_labels"][0].nonzero().flatten().tolist() == ids
    assert not batch["unannotated_labels"][1].any()
    assert "unannotated_labels" not in collate(rows[1:])  # a batch of fully labelled rows: the usual loss
    assert "unannotated_labels" not in PiiNerCollator(pad_token_id=0)(rows)  # partial_annotation: false
    # absent_types PASSWORD,PIN: an "O" of the names-only record now counts against those two types.
    args = PiiTrainingArguments(output_dir="unused", absent_types=" PASSWORD, PIN", report_to="none")
    absent = args.absent_label_ids(LABEL2ID)
    assert sorted(absent) == sorted(LABEL2ID[f"{p}-{t}"] for p in "BI" for t in ("PASSWORD", "PIN"))
    batch = PiiNerCollator(pad_token_id=0, num_labels=len(LABEL2ID), absent_label_ids=absent)(rows)
    assert batch["unannotated_labels"][0].nonzero().flatten().tolist() == [i for i in ids if i not in absent]
    with pytest.raises(ValueError, match=r"absent_types names \['PASWORD'\]"):
        PiiTrainingArguments(output_dir="unused", absent_types="PASWORD", report_to="none")


def test_a_batch_of_full_and_partial_rows_costs_one_pass_over_its_positions(monkeypatch):
    """The loss's sequential loop is a GPU step's cost (hundreds of tiny kernels per pass): token-weighted full rows
    and partial rows (two normalisers each) are stacked into one backward pass, not a pass per quantity."""
    from piiner.hub import crf_piiner
    from piiner.hub.modeling_piiner import PiiNerForTokenClassification

    steps = []
    original = crf_piiner._TransitionSums.backward_step
    monkeypatch.setattr(crf_piiner._TransitionSums, "backward_step",
                        lambda self, x: steps.append("backward_step") or original(self, x))
    torch.manual_seed(0)
    model = PiiNerForTokenClassification(PiiNerConfig(encoder_config=tiny_bert_config()))
    input_ids, char_ids = torch.randint(5, 99, (3, 6)), torch.randint(1, 100, (3, 6, 3))
    char_ids[:, 0] = 0  # [CLS]
    labels = torch.tensor([[-100, 0, LABEL2ID["B-EMAIL"], 0, 0, 0], [-100, LABEL2ID["B-PERSON"], 0, 0, 0, 0],
                           [-100, 0, 0, LABEL2ID["B-PERSON"], LABEL2ID["I-PERSON"], 0]])
    unannotated = torch.zeros(3, len(LABEL2ID), dtype=torch.bool)
    unannotated[1:, LABEL2ID["B-EMAIL"]] = True
    loss = model(input_ids, char_ids=char_ids, labels=labels, label_weights=torch.rand(3, 6) + 0.5,
                 unannotated_labels=unannotated).loss
    loss.backward()
    assert steps == ["backward_step"] * 6 and torch.isfinite(loss)


def test_partial_rows_are_scored_by_the_marginal_likelihood_full_rows_as_before():
    from piiner.hub.crf_piiner import crf_partial_nll, crf_token_nll
    from piiner.hub.modeling_piiner import PiiNerForTokenClassification

    torch.manual_seed(0)
    model = PiiNerForTokenClassification(PiiNerConfig(encoder_config=tiny_bert_config()))
    input_ids = torch.randint(5, 99, (2, 6))
    char_ids = torch.randint(1, 100, (2, 6, 3))
    char_ids[:, 0] = 0  # [CLS]
    labels = torch.tensor([[-100, 0, LABEL2ID["B-EMAIL"], 0, 0, 0], [-100, LABEL2ID["B-PERSON"], 0, 0, 0, 0]])
    weights = torch.tensor([[0.0, 1.0, 2.0, 1.0, 1.0, 1.0], [0.0, 2.0, 1.0, 1.0, 1.0, 3.0]])
    unannotated = torch.zeros(2, len(LABEL2ID), dtype=torch.bool)
    unannotated[1, [LABEL2ID["B-EMAIL"], LABEL2ID["I-EMAIL"]]] = True  # row 1 was labelled for names only
    model.eval()  # no dropout: the same emissions for the loss and the check
    with torch.no_grad():
        loss = model(input_ids, char_ids=char_ids, labels=labels, label_weights=weights,
                     unannotated_labels=unannotated).loss
        out = model(input_ids, char_ids=char_ids, decode=True)
        emissions = torch.log_softmax(model.classifier(model.piiner(input_ids, char_ids=char_ids).last_hidden_state),
                                      -1)
        start, transitions, end = model.crf.constrained_transitions()
        mask = labels != -100
        full = (crf_token_nll(emissions[:1], labels[:1].clamp(min=0), mask[:1], start, transitions, end)
                * weights[:1]).sum()
        allowed = torch.nn.functional.one_hot(labels[1:].clamp(min=0), len(LABEL2ID)).bool()
        allowed[0, 2:, LABEL2ID["B-EMAIL"]] = allowed[0, 2:, LABEL2ID["I-EMAIL"]] = True
        partial = crf_partial_nll(emissions[1:], allowed, mask[1:], start, transitions, end) * weights[1, 1:].mean()
    assert out.decoded_tags is not None
    assert loss.item() == pytest.approx(((full + partial.sum()) / 2).item(), rel=1e-5)
    # Positions 3-4 of row 1 lie in a span its annotators labelled as no PII type (a product, a title): "O" there
    # is a negative for the unannotated types too.
    not_pii = torch.zeros(2, 6, dtype=torch.long)
    not_pii[1, 3:5] = 1
    with torch.no_grad():
        loss = model(input_ids, char_ids=char_ids, labels=labels, label_weights=weights,
                     unannotated_labels=unannotated, not_pii_mask=not_pii).loss
        allowed[0, 3:5, LABEL2ID["B-EMAIL"]] = allowed[0, 3:5, LABEL2ID["I-EMAIL"]] = False
        partial = crf_partial_nll(emissions[1:], allowed, mask[1:], start, transitions, end) * weights[1, 1:].mean()
    assert loss.item() == pytest.approx(((full + partial.sum()) / 2).item(), rel=1e-5)
    with pytest.raises(ValueError, match=r"not_pii_mask must have shape \(2, 6\)"):
        model(input_ids, char_ids=char_ids, labels=labels, unannotated_labels=unannotated, not_pii_mask=not_pii[:, :4])


def test_tokens_of_a_not_pii_span_are_marked_through_features_and_batches(tiny_tokenizer):
    records = datasets.Dataset.from_list([
        {"id": "wnut", "text": "ann plays star wars today", "spans": [{"start": 0, "end": 3, "label": "PERSON"}],
         "labelled_types": ["PERSON", "LOCATION", "ORGANIZATION"], "not_pii_spans": [{"start": 10, "end": 19}]},
        {"id": "synthetic", "text": "ann", "spans": [], "labelled_types": None, "not_pii_spans": []},
    ])
    config = PiiNerConfig(encoder_config=tiny_bert_config())
    features = build_features(records, tiny_tokenizer, config, max_length=64, stride=2)
    text, offsets, marks = records[0]["text"], features[0]["offset_mapping"], features[0]["not_pii_mask"]
    assert "".join(text[a:b] for (a, b), m in zip(offsets, marks) if m) == "starwars"
    assert all(10 <= a and b <= 19 for (a, b), m in zip(offsets, marks) if m)
    assert not any(features[1]["not_pii_mask"])
    rows = [{k: features[i][k] for k in ("input_ids", "attention_mask", "labels", "unannotated_labels", "not_pii_mask")}
            for i in range(2)]
    batch = PiiNerCollator(pad_token_id=0, num_labels=len(LABEL2ID))(rows)
    assert batch["not_pii_mask"].tolist() == [marks, [0] * len(marks)]


def test_unjudged_positions_are_open_to_every_label_in_the_loss():
    """A bare year in GUM is a time mention the schema may or may not call a DATE: the loss sums over every label on
    its tokens (a row labelled for every type included) instead of teaching "O" there."""
    from piiner.hub.crf_piiner import crf_partial_nll, crf_token_nll
    from piiner.hub.modeling_piiner import PiiNerForTokenClassification

    torch.manual_seed(0)
    model = PiiNerForTokenClassification(PiiNerConfig(encoder_config=tiny_bert_config())).eval()
    input_ids = torch.randint(5, 99, (2, 6))
    char_ids = torch.randint(1, 100, (2, 6, 3))
    char_ids[:, 0] = 0  # [CLS]
    labels = torch.tensor([[-100, 0, LABEL2ID["B-EMAIL"], 0, 0, 0], [-100, LABEL2ID["B-PERSON"], 0, 0, 0, 0]])
    unjudged = torch.zeros(2, 6, dtype=torch.long)
    unjudged[0, 3:5] = 1
    unjudged[:, 0] = 1  # not a CRF position: ignored
    with torch.no_grad():
        loss = model(input_ids, char_ids=char_ids, labels=labels, unjudged_mask=unjudged).loss
        plain = model(input_ids, char_ids=char_ids, labels=labels).loss
        emissions = torch.log_softmax(model.classifier(model.piiner(input_ids, char_ids=char_ids).last_hidden_state),
                                      -1)
        start, transitions, end = model.crf.constrained_transitions()
        mask = labels != -100
        allowed = torch.nn.functional.one_hot(labels[:1].clamp(min=0), len(LABEL2ID)).bool()
        allowed[0, 3:5] = True
        opened = crf_partial_nll(emissions[:1], allowed, mask[:1], start, transitions, end).sum()
        full = crf_token_nll(emissions[1:], labels[1:].clamp(min=0), mask[1:], start, transitions, end).sum()
    assert loss.item() == pytest.approx(((opened + full) / 2).item(), rel=1e-5)
    assert loss.item() < plain.item()  # a sum over more paths than the one labelled
    with pytest.raises(ValueError, match=r"unjudged_mask must have shape \(2, 6\)"):
        model(input_ids, char_ids=char_ids, labels=labels, unjudged_mask=unjudged[:, :4])


def test_tokens_of_an_unjudged_span_are_marked_through_features_and_batches(tiny_tokenizer):
    records = datasets.Dataset.from_list([
        {"id": "gum", "text": "ann moved there in 2005 .", "spans": [{"start": 0, "end": 3, "label": "PERSON"}],
         "labelled_types": ["DATE", "PERSON"], "not_pii_spans": [], "unjudged_spans": [{"start": 19, "end": 23}]},
        {"id": "synthetic", "text": "ann", "spans": [], "labelled_types": None, "not_pii_spans": [],
         "unjudged_spans": []},
    ])
    config = PiiNerConfig(encoder_config=tiny_bert_config())
    features = build_features(records, tiny_tokenizer, config, max_length=64, stride=2)
    text, offsets, marks = records[0]["text"], features[0]["offset_mapping"], features[0]["unjudged_mask"]
    assert "".join(text[a:b] for (a, b), m in zip(offsets, marks) if m) == "2005"
    assert not any(features[1]["unjudged_mask"])
    rows = [{k: features[i][k] for k in ("input_ids", "attention_mask", "labels", "unjudged_mask")} for i in range(2)]
    batch = PiiNerCollator(pad_token_id=0, num_labels=len(LABEL2ID))(rows)
    assert batch["unjudged_mask"].tolist() == [marks, [0] * len(marks)]
    assert "unjudged_mask" not in PiiNerCollator(pad_token_id=0, num_labels=len(LABEL2ID))(rows[1:])
    assert "unjudged_mask" not in PiiNerCollator(pad_token_id=0)(rows)  # partial_annotation: false reads "O"


def test_records_whose_annotation_fields_cannot_be_read_are_rejected_by_reason():
    """A type name the model does not have in `labelled_types` ("PER") would leave PERSON open on every "O" of the
    record, and a stretch off the text would mark the wrong tokens: such records are rejected, counted by reason."""
    from piiner.training.features import RecordCheck

    good = {"id": "good", "text": "ann moved in 2005", "spans": [{"start": 0, "end": 3, "label": "PERSON"}],
            "labelled_types": ["PERSON"], "not_pii_spans": [], "unjudged_spans": [{"start": 13, "end": 17}]}
    records = datasets.Dataset.from_list([
        good, {**good, "id": "per", "labelled_types": ["PER"]},
        {**good, "id": "off-text", "unjudged_spans": [{"start": 13, "end": 40}]},
        {**good, "id": "backwards", "not_pii_spans": [{"start": 9, "end": 4}]}])
    check = RecordCheck("training")
    assert check(records, set(TIER_OF))["id"] == ["good"]
    assert check.rejected == {"labelled_types_not_a_list_of_types": ["per"],
                              "unjudged_spans_not_character_ranges_of_the_text": ["off-text"],
                              "not_pii_spans_not_character_ranges_of_the_text": ["backwards"]}


def test_line_break_markers_get_no_label_and_the_loss_runs_over_the_rest(tiny_tokenizer):
    from piiner.hub.modeling_piiner import PiiNerForTokenClassification

    text = "ann lee\n12 main st\nbob"
    records = datasets.Dataset.from_list([{"id": "r", "text": text, "spans": [
        {"start": 0, "end": 7, "label": "PERSON"}, {"start": 8, "end": 18, "label": "STREET_ADDRESS"},
        {"start": 19, "end": 22, "label": "PERSON"}]}])
    config = PiiNerConfig(encoder_config=tiny_bert_config(), line_break_marker="\u00b6")
    features = build_features(records, tiny_tokenizer, config, max_length=64, stride=2)
    plain = build_features(records, tiny_tokenizer, PiiNerConfig(encoder_config=tiny_bert_config()), 64, 2)[0]
    marked = [(text[a:b], label) for (a, b), label in zip(features[0]["offset_mapping"], features[0]["labels"])]
    assert [label for word, label in marked if word == "\n"] == [-100] * 2
    assert [label for word, label in marked if word != "\n"] == plain["labels"]  # B-/I- as without markers
    assert {ID2LABEL[label] for label in plain["labels"] if label >= 0} == {
        "B-PERSON", "I-PERSON", "B-STREET_ADDRESS", "I-STREET_ADDRESS"}
    batch = PiiNerCollator(pad_token_id=0, min_chars=5)(
        [{k: features[0][k] for k in ("input_ids", "attention_mask", "labels", "char_ids")}])
    assert torch.isfinite(PiiNerForTokenClassification(config)(**batch).loss)


def test_a_record_of_two_paragraphs_is_one_training_window_and_a_label_across_the_blank_line_stays_whole(
        tiny_tokenizer):
    """Training windows a record whole (paragraphs apart cost 1.2 to 4.0 points out of source): an address that runs
    over a blank line, as in presidio-research's letters, is taught as one address, not two."""
    text = "call john smith\n\n12 high st\n\nleeds"
    records = datasets.Dataset.from_list([{"id": "r", "text": text, "spans": [
        {"start": 5, "end": 15, "label": "PERSON"}, {"start": 17, "end": 35, "label": "STREET_ADDRESS"}]}])
    config = PiiNerConfig(encoder_config=tiny_bert_config())
    features = build_features(records, tiny_tokenizer, config, max_length=64, stride=2)
    assert features["example_index"] == [0]
    window = features[0]
    address = [ID2LABEL[label] for (a, b), label in zip(window["offset_mapping"], window["labels"])
               if label >= 0 and 17 <= a < 35]
    assert address[0] == "B-STREET_ADDRESS" and set(address[1:]) == {"I-STREET_ADDRESS"}
    assert "leeds" in "".join(text[a:b] for (a, b), label in zip(window["offset_mapping"], window["labels"])
                              if label >= 0 and a >= 17)


def test_features_keep_their_schema_when_the_first_batch_has_no_partial_record(tiny_tokenizer):
    """datasets infers a column's type from the first batch of a map; an all-empty first batch made it 'null' and
    the first partially labelled record further on a cast error."""
    rows = [{"id": str(i), "text": "ann", "spans": [], "labelled_types": None} for i in range(1001)]
    rows[-1]["labelled_types"] = ["PERSON"]
    config = PiiNerConfig(encoder_config=tiny_bert_config())
    features = build_features(datasets.Dataset.from_list(rows), tiny_tokenizer, config, max_length=16, stride=2)
    assert features["unannotated_labels"][-1] and not features["unannotated_labels"][0]


def test_length_grouped_training_leaves_evaluated_windows_in_order(tmp_path):
    """With training batches grouped by length, evaluation still reads the windows in their own order: the span
    metrics take prediction row i as window i of the split (the stock Trainer would group those too)."""
    from piiner.hub.modeling_piiner import PiiNerForTokenClassification
    from piiner.training.trainer import PiiNerTrainer

    model = PiiNerForTokenClassification(PiiNerConfig(encoder_config=tiny_bert_config()))
    lengths = [3 + (7 * i) % 40 for i in range(96)]
    windows = datasets.Dataset.from_dict({
        "input_ids": [[i + 1] * n for i, n in enumerate(lengths)],
        "attention_mask": [[1] * n for n in lengths],
        "labels": [[LABEL2ID["O"]] * n for n in lengths],
    })
    _, _, args = parse_args(["--output_dir", str(tmp_path), "--use_cpu", "true", "--report_to", "none",
                             "--train_sampling_strategy", "group_by_length", "--per_device_train_batch_size", "8",
                             "--per_device_eval_batch_size", "8"])
    trainer = PiiNerTrainer(model=model, args=args, train_dataset=windows, eval_dataset=windows,
                            data_collator=PiiNerCollator(pad_token_id=0))
    evaluated = [row[0] for batch in trainer.get_eval_dataloader() for row in batch["input_ids"].tolist()]
    assert evaluated == [i + 1 for i in range(len(lengths))]
    # Training batches are grouped: far less padding than the windows in their own order.
    padded = sum(batch["input_ids"].numel() for batch in trainer.get_train_dataloader())
    in_order = sum(max(lengths[i:i + 8]) * len(lengths[i:i + 8]) for i in range(0, len(lengths), 8))
    assert padded < 0.8 * in_order


@pytest.mark.parametrize("recipe", sorted(glob.glob(os.path.join(REPO_ROOT, "configs", "*.yaml"))),
                         ids=os.path.basename)
def test_every_shipped_recipe_parses(recipe):
    """A misspelt key or value in a recipe fails here, not at the start of someone's two-hour run."""
    _, _, args = parse_args(["--config", recipe])
    assert args.max_steps > 0 or args.num_train_epochs > 0


def test_a_record_without_a_spans_field_is_rejected_not_read_as_free_of_pii():
    import datasets

    from piiner.hub.pii_schema import PII_TYPES
    from piiner.training.features import RecordCheck

    records = datasets.Dataset.from_list([
        {"id": "a", "text": "Mail a@b.com", "spans": [{"start": 5, "end": 12, "label": "EMAIL"}],
         "labelled_types": None},
        {"id": "b", "text": "Mail c@d.com", "spans": None, "labelled_types": None},
        {"id": "c", "text": "nothing labelled here", "spans": None, "labelled_types": []},
        {"id": "d", "text": "Mail e@f.com", "spans": [{"start": 5, "end": 12, "label": "FAVOURITE"}],
         "labelled_types": None}])
    check = RecordCheck("train")
    kept = check(records, set(PII_TYPES))
    assert kept["id"] == ["a", "c"]
    assert check.rejected == {"no_spans_field": ["b"], "unknown_label": ["d"]}


def test_span_eval_scores_a_partially_labelled_record_on_the_types_it_labels_only():
    # A clinical note labelled for PERSON only: the e-mail address the model finds there is not a false positive.
    import datasets
    import numpy as np
    from transformers import EvalPrediction

    from conftest import build_tiny_tokenizer, tiny_bert_config
    from piiner.hub.configuration_piiner import PiiNerConfig
    from piiner.hub.modeling_piiner import PiiNerForTokenClassification
    from piiner.training.features import build_features
    from piiner.training.span_eval import SpanEvaluator

    text = "ann mailed bob@x.com"
    model = PiiNerForTokenClassification(PiiNerConfig(encoder_config=tiny_bert_config(), builtin_recognizers=False))
    config = model.config
    rows = [{"id": str(i), "text": text, "spans": [{"start": 0, "end": 3, "label": "PERSON"}],
             "labelled_types": types} for i, types in enumerate((["PERSON"], None))]
    records = datasets.Dataset.from_list(rows)
    features = build_features(records, build_tiny_tokenizer(), config, max_length=32, stride=8)
    label = {v: int(k) for k, v in config.id2label.items()}
    tags = np.full((len(features), 32), -100)
    for row, offsets in enumerate(features["offset_mapping"]):
        for t, (start, end) in enumerate(offsets):
            if end > start:
                tags[row, t] = (label["B-PERSON"] if start == 0 else label["I-PERSON"] if start < 3
                                else label["B-EMAIL"] if start == 11 else label["I-EMAIL"] if start > 11
                                else label["O"])
    # Emissions that put these tags far ahead: the evaluator decodes them as the pipeline does.
    emissions = np.full((*tags.shape, len(label)), -20.0, dtype=np.float32)
    np.put_along_axis(emissions, np.maximum(tags, 0)[..., None], 0.0, axis=-1)
    evaluator = SpanEvaluator(records, features, model)
    evaluator(EvalPrediction(predictions=(emissions, tags), label_ids=None))
    # record 0 scores 1 of 1 right; record 1 (every type labelled) has the e-mail as a false positive
    assert evaluator.last_report["overall"]["precision"] == 2 / 3


def test_replay_by_source_takes_equal_shares_and_gives_a_small_sources_rest_to_the_others():
    """In proportion to size, an 800-record replay of the quickstart corpus holds about 24 GUM records beside 370
    synthetic ones; by source each takes an equal share, the first rows of its own in the shuffled order."""
    import collections

    from piiner.training.train import replay_by_source

    sources = ["a", "b", "c"] * 5 + ["a"] * 95 + ["c"] * 45  # a: 100 rows, b: 5, c: 50
    rows = replay_by_source(sources, 60)
    assert len(rows) == 60 and rows == sorted(rows)
    counts = collections.Counter(sources[i] for i in rows)
    assert counts["b"] == 5 and {counts["a"], counts["c"]} == {27, 28}
    for source in "abc":  # a prefix of each source's rows
        own = [i for i, s in enumerate(sources) if s == source]
        assert [i for i in rows if sources[i] == source] == own[:counts[source]]
    assert len(replay_by_source(sources, 1000)) == len(sources)
    assert replay_by_source(["a"] * 10, 4) == [0, 1, 2, 3]  # one source: its first rows


def test_replay_source_power_one_half_shares_by_the_square_root_of_each_size():
    """Between proportion (GUM starved) and equal shares (the largest source starved), the square root of each
    size, and the rounding never loses a row."""
    import collections

    from piiner.training.args import DataArguments
    from piiner.training.train import replay_by_source

    sources = ["a"] * 100 + ["b"] * 25 + ["c"]
    counts = collections.Counter(sources[i] for i in replay_by_source(sources, 32, 0.5))
    assert counts == {"a": 21, "b": 10, "c": 1}  # 10 : 5 : 1 of 32, c's missing row to a, the larger remainder
    for count in range(1, 127):
        assert len(replay_by_source(sources, count, 0.5)) == count
    with pytest.raises(ValueError, match="replay_source_power"):
        DataArguments(replay_source_power=2)
