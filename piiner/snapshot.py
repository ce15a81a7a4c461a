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


EVIDENCE_KEYS = ("recognizers", "allow_list", "deny_list")


def load_evidence(paths):
    """`{"recognizers": [...], "allow_list": [...], "deny_list": {TYPE: [...]}}` from one YAML or JSON file or a list
    of them (any of the three keys in each), each file checked as the pipeline checks it, a `ValueError` naming the
    file and what is wrong. Several files add up as the pipeline adds a caller's evidence to a model's: recognizers
    and allow lists in file order, deny lists joined type by type (a shared rules file beside lists drawn from your
    own labels, `piiner-data lists`)."""
    from piiner.hub.recognizers_piiner import join_deny_lists

    merged = {}
    for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        for key, value in _evidence_file(path).items():
            merged[key] = (join_deny_lists(merged.get(key), value) if key == "deny_list"
                           else merged.get(key, []) + list(value))
    return merged


def _evidence_file(path):
    from piiner.hub.recognizers_piiner import RecognizerError, evidence_from
    from piiner.options import load_data_file

    data = load_data_file(path, "recognizers file")
    unknown = sorted(set(data) - set(EVIDENCE_KEYS)) if isinstance(data, dict) else None
    if not isinstance(data, dict) or unknown:
        raise ValueError(f"recognizers file {path}: must be a mapping of {', '.join(EVIDENCE_KEYS)}"
                         + (f"; unknown keys {unknown}" if unknown else ""))
    try:
        evidence_from(data.get("recognizers"), data.get("allow_list"), data.get("deny_list"))
    except RecognizerError as error:
        raise ValueError(f"recognizers file {path}: {error}") from None
    return {key: data[key] for key in EVIDENCE_KEYS if data.get(key) is not None}


def load_pipeline(model_dir, device=None, batch_size=None, evidence=None):
    """The piiner token-classification pipeline of a snapshot folder or Hub id, on `device` (default CPU);
    `evidence` (`load_evidence`) adds recognizers, an allow list and a deny list to every call."""
    from transformers import pipeline

    path = check_model_path(model_dir)
    kwargs = {} if batch_size is None else {"batch_size": batch_size}
    kwargs.update(evidence or {})
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


__all__ = ["SnapshotError", "check_model_path", "load_evidence", "load_pipeline"]
