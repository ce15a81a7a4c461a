"""The output folder as a Hub model repo: its code files, and what a push would upload.

The card is built by ``evaluation.model_card``."""

import os
import shutil

from huggingface_hub.hf_api import DEFAULT_IGNORE_PATTERNS
from huggingface_hub.utils import filter_repo_objects
from transformers.dynamic_module_utils import get_relative_import_files
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

import piiner.hub.modeling_piiner

# What Trainer.push_to_hub leaves out of output_dir: checkpoint folders and names starting with "_" (a run's private
# files), plus the Hub client's own defaults (.git, .cache/huggingface).
PUSH_IGNORE_PATTERNS = ["_*", f"{PREFIX_CHECKPOINT_DIR}-*"] + list(DEFAULT_IGNORE_PATTERNS)


def code_files():
    """Absolute paths of the files that ship with the weights: ``modeling_piiner.py`` and everything it imports
    relatively, found the way ``save_pretrained`` finds them (transformers' ``get_relative_import_files``)."""
    entry = os.path.abspath(piiner.hub.modeling_piiner.__file__)
    return sorted({entry, *map(os.path.abspath, get_relative_import_files(entry))})


def ensure_code_files(folder):
    """Copy every Hub code file `folder` lacks; returns the names copied."""
    copied = []
    for path in code_files():
        target = os.path.join(folder, os.path.basename(path))
        if not os.path.isfile(target):
            shutil.copyfile(path, target)
            copied.append(os.path.basename(path))
    return copied


def upload_plan(folder):
    """``[(path in repo, size in bytes), ...]``: exactly the files ``Trainer.push_to_hub`` would upload from `folder`."""
    files = {
        os.path.relpath(os.path.join(dirpath, name), folder).replace(os.sep, "/")
        for dirpath, _, names in os.walk(folder)
        for name in names
    }
    kept = filter_repo_objects(sorted(files), ignore_patterns=PUSH_IGNORE_PATTERNS)
    return [(path, os.path.getsize(os.path.join(folder, path))) for path in kept]


def format_upload_plan(plan, repo_id):
    lines = [f"push dry run: {len(plan)} files, {sum(s for _, s in plan):,} bytes would go to {repo_id}"]
    width = max((len(p) for p, _ in plan), default=0)
    lines += [f"  {path:<{width}}  {size:>12,}" for path, size in plan]
    return "\n".join(lines)
