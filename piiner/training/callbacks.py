"""Trainer callbacks of a piiner run."""

import os

from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from .hub import ensure_code_files
from .trainer import NonFiniteError, first_non_finite


class NonFiniteGuard(TrainerCallback):
    """Stops training at the first optimizer step that leaves a non-finite parameter, naming step and component.

    The loss and gradients are checked earlier, in `PiiNerTrainer.training_step`; this catches the optimizer
    itself (AdamW's bias correction with a tiny epsilon was one of the reference's four NaN sources).
    """

    def on_optimizer_step(self, args, state, control, optimizer=None, **kwargs):
        if not getattr(args, "nan_guard", True) or optimizer is None:
            return
        where = first_non_finite(optimizer, "param")
        if where is not None:
            component, name = where
            raise NonFiniteError(
                f"the optimizer step {state.global_step + 1} (epoch {state.epoch or 0:.2f}) made parameters of the "
                f"{component} group non-finite (first: {name}); its learning rate or epsilon is too aggressive"
            )


class HubFilesCallback(TrainerCallback):
    """Makes every checkpoint folder a loadable Hub repo on its own: the model's code files sit next to its weights.

    transformers copies the custom code when it saves the model, but not in every case (#46165); a checkpoint
    without them fails to load, or to resume, in a fresh process.
    """

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            folder = os.path.join(args.output_dir, f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}")
            if os.path.isdir(folder):
                ensure_code_files(folder)
