"""The piiner Trainer: tier-weighted CRF loss, one AdamW group per model component, a NaN/inf guard.

Only documented hooks are overridden (``compute_loss``, ``prediction_step``, ``create_optimizer``,
``training_step``), each calling ``super()`` for the work the stock Trainer does, and ``_get_eval_sampler``, which
keeps the evaluated windows in their own order whatever the training sampler.
"""

import torch
from torch.utils.data import SequentialSampler
from transformers import PreTrainedModel, Trainer
from transformers.trainer_utils import has_length

from .class_weights import label_weight_table, token_weights
from piiner.evaluation.model_card import add_reports, has_card_inputs

COMPONENTS = ("backbone", "char", "head")


class NonFiniteError(RuntimeError):
    """Training produced a NaN or inf; the message names the optimizer step and the component."""


def component_modules(model):
    """The model's modules by optimizer component, found by module structure, not by parameter-name patterns.

    backbone: the pretrained encoder (the one `PreTrainedModel` inside the base model); char: everything else in
    the base model (char CNN, gated fusion); head: everything outside the base model (emissions, CRF).
    """
    base = model.base_model
    if base is model:
        raise ValueError(f"{type(model).__name__} has no base model: cannot tell the backbone from the head")
    encoders = [m for m in base.children() if isinstance(m, PreTrainedModel)]
    if len(encoders) != 1:
        raise ValueError(f"expected exactly one encoder inside {type(base).__name__}, found {len(encoders)}")
    backbone = encoders[0]
    return {
        "backbone": [backbone],
        "char": [m for m in base.children() if m is not backbone],
        "head": [m for m in model.children() if m is not base],
    }


def component_parameters(model):
    """``{component: [(name, parameter), ...]}`` over the trainable parameters; every one in exactly one component.

    Parameters registered directly on the base model count as "char", directly on the top model as "head".
    """
    names = {id(p): n for n, p in model.named_parameters()}
    owned = {c: [] for c in COMPONENTS}
    for component, modules in component_modules(model).items():
        for module in modules:
            owned[component].extend(module.parameters())
    owned["char"].extend(model.base_model.parameters(recurse=False))
    owned["head"].extend(model.parameters(recurse=False))
    grouped = {c: [(names[id(p)], p) for p in params if p.requires_grad] for c, params in owned.items()}
    seen = {}
    for component, named in grouped.items():
        for name, _ in named:
            if name in seen:
                raise AssertionError(f"parameter {name} is in both the {seen[name]} and the {component} group")
            seen[name] = component
    missing = [n for n, p in model.named_parameters() if p.requires_grad and n not in seen]
    if missing:
        raise AssertionError(f"trainable parameters in no optimizer group: {missing}")
    return grouped


class PiiNerTrainer(Trainer):
    """A [`Trainer`] for [`PiiNerForTokenClassification`] driven by [`PiiTrainingArguments`].

    - `prediction_step` asks the model to decode, so evaluation sees which positions the CRF runs over.
    - `compute_loss` passes per-token `label_weights` (tier weight of the gold type, times the class weight of the
      gold label when `class_weights` is given) to the model, whose loss is the weighted CRF NLL averaged over
      sequences. The tier weights follow `args.tier_weight_schedule` when one is set.
    - `create_optimizer` builds AdamW with a group per component (backbone, char, head), each with its own learning
      rate and epsilon, split again into decayed and not-decayed parameters (biases and norms get no decay).
    - `training_step` checks the loss and each group's gradients when `args.nan_guard` is on; `NonFiniteGuard`
      checks the parameters after each optimizer step.
    - Evaluation reads the windows in their order (`_get_eval_sampler`), also when training batches are grouped by
      length (`train_sampling_strategy: group_by_length`), where the stock Trainer would shuffle them too: the
      metrics (`SpanEvaluator`) read prediction row i as window i of the split.

    Args:
        class_weights (`list[float]`, *optional*): a weight per label id (see `class_weights.inverse_sqrt_class_weights`).
        Everything else as for [`Trainer`].
    """

    # The model's loss is a per-batch mean (it sets accepts_loss_kwargs = False), so the Trainer must divide it by
    # the accumulation steps itself and must not rescale it by the number of processes.
    loss_is_scaled_for_ga = False

    def __init__(self, *args, class_weights=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.class_weights = class_weights
        self._weight_tables = {}

    def create_model_card(self, *args, **kwargs):
        """`push_to_hub`'s card: the piiner card, re-rendered from the inputs train.py wrote, instead of the generic
        one the stock Trainer would write over README.md; the stock card for a folder without them."""
        if not has_card_inputs(self.args.output_dir):
            return super().create_model_card(*args, **kwargs)
        if self.is_world_process_zero():
            add_reports(self.args.output_dir, {})

    def label_weight_table(self, epoch=None):
        """Loss weight by gold label id for the current (or given) epoch."""
        epoch = int(self.state.epoch or 0) if epoch is None else int(epoch)
        tier_weights = self.args.tier_weights_for_epoch(epoch)
        key = tuple(sorted(tier_weights.items()))
        if key not in self._weight_tables:
            config = self.accelerator.unwrap_model(self.model).config
            self._weight_tables[key] = label_weight_table(
                config.id2label, config.type_to_tier, tier_weights, self.args.outside_weight, self.class_weights
            )
        return self._weight_tables[key]

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.get("labels")
        if labels is not None and "label_weights" not in inputs:
            inputs = {**inputs, "label_weights": token_weights(labels, self.label_weight_table())}
        return super().compute_loss(model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch)

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        """Evaluation asks the model for its CRF decode (`decode=True`): its tags' -100 marks the positions outside the
        CRF, which the metrics read beside the emissions they decode as the pipeline does."""
        if not prediction_loss_only:
            inputs = {**inputs, "decode": True}
        return super().prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys)

    def _get_eval_sampler(self, eval_dataset):
        if self.args.train_sampling_strategy != "group_by_length" or not has_length(eval_dataset):
            return super()._get_eval_sampler(eval_dataset)
        # The stock Trainer's sampler for every other strategy: in order on one process; on several, none here,
        # so that Accelerate shards the windows in order and the gathered predictions come back in order.
        return SequentialSampler(eval_dataset) if self.args.world_size <= 1 else None

    def create_optimizer(self, model=None):
        if self.optimizer is not None:
            return self.optimizer
        opt_model = self.model if model is None else model
        optimizer_cls, optimizer_kwargs = self.get_optimizer_cls_and_kwargs(self.args, opt_model)
        if not issubclass(optimizer_cls, torch.optim.AdamW):
            raise ValueError(f"piiner trains with AdamW parameter groups; optim={self.args.optim} is not AdamW")
        decay = set(self.get_decay_parameter_names(opt_model))
        settings = {
            "backbone": (self.args.backbone_learning_rate, self.backbone_epsilon(opt_model)),
            "char": (self.args.char_learning_rate, self.args.adam_epsilon),
            "head": (self.args.head_learning_rate, self.args.adam_epsilon),
        }
        groups = []
        for component, named in component_parameters(opt_model).items():
            lr, eps = settings[component]
            for decayed in (True, False):
                params = [p for n, p in named if (n in decay) == decayed]
                if params:
                    groups.append({
                        "params": params,
                        "names": [n for n, p in named if (n in decay) == decayed],
                        "component": component,
                        "lr": lr,
                        "eps": eps,
                        "weight_decay": self.args.weight_decay if decayed else 0.0,
                    })
        self.optimizer = optimizer_cls(groups, **optimizer_kwargs)
        return self.optimizer

    def backbone_epsilon(self, model):
        """`backbone_adam_epsilon`, or when unset 1.0 for DeBERTa encoders (see SPEC §4) and `adam_epsilon` else."""
        if self.args.backbone_adam_epsilon is not None:
            return self.args.backbone_adam_epsilon
        encoder_type = getattr(getattr(model.config, "encoder_config", None), "model_type", "") or ""
        return 1.0 if encoder_type.startswith("deberta") else self.args.adam_epsilon

    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = super().training_step(model, inputs, num_items_in_batch)
        if self.args.nan_guard:
            step = self.state.global_step + 1
            if not torch.isfinite(loss).all():
                raise NonFiniteError(
                    f"non-finite training loss ({loss.item()}) at optimizer step {step}, epoch {self.state.epoch:.2f}: "
                    "the forward pass (encoder, char CNN, fusion or CRF) produced it; lower the learning rates or "
                    "check the batch"
                )
            where = first_non_finite(self.optimizer, "grad")
            if where is not None:
                component, name = where
                raise NonFiniteError(
                    f"non-finite gradient in the {component} group (first: {name}) at optimizer step {step}, "
                    f"epoch {self.state.epoch:.2f}, with a finite loss ({loss.item():.4g})"
                )
        return loss


def first_non_finite(optimizer, what):
    """``(component, parameter name)`` of the first non-finite gradient (`what="grad"`) or value ("param"), or None.

    One norm per tensor, all groups' norms checked together: when everything is finite, which is every step but
    the last, the check reads one boolean back from the device (on a GPU, one synchronisation a step).
    """
    groups, norms = [], []
    for group in optimizer.param_groups:
        named = [(n, p.grad if what == "grad" else p) for n, p in zip(group["names"], group["params"])]
        named = [(n, t.detach()) for n, t in named if t is not None]
        if named:
            groups.append((group["component"], [n for n, _ in named]))
            norms.append(torch.stack(torch._foreach_norm([t for _, t in named])).float())
    if not norms:
        return None
    finite = torch.isfinite(torch.cat(norms))
    if bool(finite.all()):
        return None
    bad = int((~finite).nonzero()[0])
    for component, names in groups:
        if bad < len(names):
            return component, names[bad]
        bad -= len(names)
