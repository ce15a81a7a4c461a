"""Loading a saved piiner snapshot for the tools around the model (evaluation, redaction, export, demo, service).

One path: `load_pipeline` builds the pipeline a user of the Hub gets, `pipeline("token-classification", model=...,
trust_remote_code=True)`, from the snapshot's own code and safetensors weights. A snapshot with a missing,
unexpected or mis-shaped weight is refused by the model's `from_pretrained`; here that refusal, like a path that
is not a snapshot, becomes a `SnapshotError` whose message a command line prints as it is.
"""

import os
import pathlib


class SnapshotError(ValueError):
    """The model path is not a complete piiner snapshot; the message says what is wrong."""


def check_model_path(model_dir):
    """The path as a string; a `SnapshotError` naming it when it is neither a snapshot folder nor shaped like a Hub
    id, or a folder without its config or safetensors weights."""
    path = str(model_dir)
    local = pathlib.Path(os.path.expanduser(path))
    if local.exists():
        if not local.is_dir():
            raise SnapshotError(f"the model must be a saved model folder or a Hub id, got the file {path}")
        if not (local / "config.json").is_file():
            raise SnapshotError(f"no config.json in {path}: not a saved model folder (save_pretrained writes one)")
        if not any(local.glob("*.safetensors")):
            found = ", ".join(sorted(p.name for p in local.iterdir())) or "nothing"
            raise SnapshotError(f"no *.safetensors weights in {path} (found: {found}); piiner loads weights only "
                                "from safetensors")
        return str(local)
    if path.startswith((".", "/", "~")) or path.count("/") != 1:
        raise SnapshotError(f"model folder not found: {path} (nor is it a Hub id of the form org/name)")
    return path


def load_pipeline(model_dir, device=None, batch_size=None):
    """The piiner token-classification pipeline of a snapshot folder or Hub id, on `device` (default CPU)."""
    from transformers import pipeline

    path = check_model_path(model_dir)
    kwargs = {} if batch_size is None else {"batch_size": batch_size}
    try:
        return pipeline("token-classification", model=path, trust_remote_code=True, device=device,
                        model_kwargs={"use_safetensors": True}, **kwargs)
    except (LookupError, ValueError) as error:
        # The snapshot's IncompleteCheckpointError comes from its own copy of modeling_piiner.py, so it is caught by
        # its base class; a ValueError is transformers refusing the folder's config ("Unrecognized model ... no
        # model_type"); a KeyError or IndexError is a bug somewhere, not a verdict on the snapshot.
        if isinstance(error, (KeyError, IndexError)):
            raise
        raise SnapshotError(str(error)) from None


__all__ = ["SnapshotError", "check_model_path", "load_pipeline"]
