"""The output folder as a Hub model repo: code files, the card files, and what a push would upload.

The card itself is rendered by ``evaluation.model_card``."""

import ast
import os
import shutil

from huggingface_hub.hf_api import DEFAULT_IGNORE_PATTERNS
from huggingface_hub.utils import filter_repo_objects
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

import piiner.modeling_piiner

# What Trainer.push_to_hub leaves out of output_dir: checkpoint folders and names starting with "_" (this run's
# private files, e.g. _ranks/), plus the Hub client's own defaults (.git, .cache/huggingface).
PUSH_IGNORE_PATTERNS = ["_*", f"{PREFIX_CHECKPOINT_DIR}-*"] + list(DEFAULT_IGNORE_PATTERNS)
# The entry points of the code that ships with the weights; everything they import relatively ships too.
ROOT_ENTRY_FILES = ("modeling_piiner.py", "pipeline_piiner.py", "tokenization_utils.py")


def _relative_imports(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                names.add(node.module.split(".")[0])
            else:
                names.update(alias.name for alias in node.names)
    return names


def code_files():
    """Absolute paths of the Hub code files: the entry files and, transitively, every file they import relatively."""
    root = os.path.dirname(os.path.abspath(piiner.modeling_piiner.__file__))
    todo = [os.path.join(root, name) for name in ROOT_ENTRY_FILES if os.path.isfile(os.path.join(root, name))]
    found = set()
    while todo:
        path = todo.pop()
        if path in found:
            continue
        found.add(path)
        for module in _relative_imports(path):
            candidate = os.path.join(root, module + ".py")
            if os.path.isfile(candidate):
                todo.append(candidate)
    return sorted(found)


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


def write_card_files(folder, card):
    """Write a rendered card as README.md (what the Hub shows) and model_card.md (the same text)."""
    for name in ("README.md", "model_card.md"):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(card)
