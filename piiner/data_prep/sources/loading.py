"""Reading a source's rows from the Hub or from a local copy, and the helpers every adapter shares."""

import ast
import json
import os

SPLIT_NAMES = ("train", "validation", "test")


class SourceUnavailable(RuntimeError):
    """A source can be read neither from the Hub nor from a local path."""


def _split_of_filename(path):
    name = os.path.basename(path).lower()
    if "test" in name:
        return "test"
    if "valid" in name or "dev" in name or name.startswith("val"):
        return "validation"
    return "train"


def _json_lines(path, lines, problems):
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line.removeprefix("\ufeff")))  # a byte order mark is not JSON
        except json.JSONDecodeError as error:
            problems.append(f"{path}:{number}: not valid JSON ({error.msg})")
            continue
        if not isinstance(rows[-1], dict):
            problems.append(f"{path}:{number}: a row must be a JSON object, got {type(rows.pop()).__name__}")
    return rows


def _objects(path, rows, problems):
    """The rows of a JSON array that are objects; the others are described in `problems` by their index."""
    kept = []
    for index, row in enumerate(rows):
        if isinstance(row, dict):
            kept.append(row)
        else:
            problems.append(f"{path}[{index}]: a row must be a JSON object, got {type(row).__name__}")
    return kept


def _read_file(path, problems):
    """Rows of one file; a line that is not JSON is skipped and described in `problems` with its file and line."""
    lower = path.lower()
    if lower.endswith(".jsonl"):
        with open(path, "rb") as f:  # lines end at "\n" only (text mode would also split at "\r")
            return _json_lines(path, (raw.decode("utf-8", errors="replace") for raw in f), problems)
    if lower.endswith(".json"):
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            content = f.read()
        try:
            data = json.loads(content)
        except json.JSONDecodeError:
            # JSON lines under a .json name, as many Hub exports are
            return _json_lines(path, content.split("\n"), problems)
        if isinstance(data, list):
            return _objects(path, data, problems)
        if isinstance(data, dict):
            for key in ("data", "rows", "records"):
                if isinstance(data.get(key), list):
                    return _objects(path, data[key], problems)
            return [data]
        raise SourceUnavailable(f"{path}: expected a JSON list of rows or JSON lines")
    if lower.endswith(".parquet"):
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    if lower.endswith(".arrow"):
        import datasets

        return datasets.Dataset.from_file(path).to_list()
    raise SourceUnavailable(f"{path}: unsupported file type (use .jsonl, .json, .parquet or .arrow)")


def _is_saved_dataset(path):
    return any(os.path.exists(os.path.join(path, marker))
               for marker in ("dataset_dict.json", "state.json", "dataset_info.json"))


def read_local(path, problems=None):
    """{split: [row dict, ...]} from a file, a folder of files, or a ``save_to_disk`` folder. Malformed rows are
    left out and described (file and line) in `problems`, a list the caller counts."""
    problems = [] if problems is None else problems
    if not os.path.exists(path):
        raise SourceUnavailable(f"local path {path!r} does not exist")
    if os.path.isdir(path) and _is_saved_dataset(path):
        import datasets

        loaded = datasets.load_from_disk(path)
        if isinstance(loaded, datasets.DatasetDict):
            return {_split_of_filename(name): ds.to_list() for name, ds in loaded.items()}
        return {"train": loaded.to_list()}
    if os.path.isdir(path):
        files = sorted(
            os.path.join(root, name)
            for root, _, names in os.walk(path)
            for name in names
            if name.lower().endswith((".jsonl", ".json", ".parquet", ".arrow")) and not name.startswith(".")
            and name not in ("dataset_info.json", "state.json")
        )
        if not files:
            raise SourceUnavailable(f"{path!r} holds no .jsonl/.json/.parquet/.arrow file")
        out = {}
        for file in files:
            out.setdefault(_split_of_filename(file), []).extend(_read_file(file, problems))
        return out
    return {_split_of_filename(path): _read_file(path, problems)}


def read_rows(source, hub_id, local_path=None, hub_config=None, problems=None):
    """{split: rows} for a source: the local path when given, else ``datasets.load_dataset(hub_id)``."""
    if local_path:
        return read_local(local_path, problems)
    hint = f"pass --from-dir {source}=PATH (a .jsonl/.json/.parquet/.arrow file or folder, or a save_to_disk folder)"
    if offline():
        raise SourceUnavailable(f"source {source!r} needs the Hub dataset {hub_id!r} but the Hub is offline; {hint}")
    import datasets

    try:
        loaded = datasets.load_dataset(hub_id, hub_config) if hub_config else datasets.load_dataset(hub_id)
    except Exception as error:  # network, auth or gated-access failures all end here, with the cause kept
        raise SourceUnavailable(f"source {source!r}: could not load {hub_id!r} from the Hub ({error}); {hint}") from error
    return {_split_of_filename(name): ds for name, ds in loaded.items()}


def offline():
    """True when the environment forbids the network (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE)."""
    return any(os.environ.get(v, "").lower() in ("1", "true", "yes") for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def cache_dir():
    """Where downloaded source files are kept: $PIINER_CACHE or ~/.cache/piiner/data."""
    return os.environ.get("PIINER_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "piiner", "data")


def mirrored(url):
    """`url` through $PIINER_DATA_MIRROR when set: https://host/path -> MIRROR/host/path (a local copy of the public
    files, or a fixture server in the tests)."""
    mirror = os.environ.get("PIINER_DATA_MIRROR")
    if not mirror:
        return url
    return mirror.rstrip("/") + "/" + url.split("://", 1)[-1]


def fetch_files(source, files, hint):
    """The folder holding `files` ({path inside the folder: public URL}) in the download cache, downloading the
    ones not there yet. Raises SourceUnavailable, with `hint`, when offline or a download fails."""
    import urllib.error
    import urllib.request

    folder = os.path.join(cache_dir(), source)
    for relative, url in files.items():
        target = os.path.join(folder, relative)
        if os.path.exists(target):
            continue
        if offline():
            raise SourceUnavailable(f"source {source!r} is not cached and the network is off (HF_HUB_OFFLINE or "
                                    f"HF_DATASETS_OFFLINE is set), so {url} cannot be fetched; {hint}")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        partial = target + ".part"
        try:
            with urllib.request.urlopen(mirrored(url), timeout=60) as response, open(partial, "wb") as f:
                while chunk := response.read(1 << 20):
                    f.write(chunk)
        except (urllib.error.URLError, OSError) as error:
            if os.path.exists(partial):
                os.remove(partial)
            raise SourceUnavailable(f"source {source!r}: could not download {mirrored(url)} ({error}); {hint}") from None
        os.replace(partial, target)
    return folder


def parse_list(value):
    """A list from a real list, a JSON string or a Python-repr string (the Hub stores all three)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    if hasattr(value, "tolist"):
        return list(value.tolist())
    if isinstance(value, str):
        value = value.strip()
        if not value:
            return []
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            try:
                parsed = ast.literal_eval(value)
            except (ValueError, SyntaxError) as error:
                raise ValueError(f"not a list literal: {value[:60]!r}") from error
        if isinstance(parsed, (list, tuple)):
            return list(parsed)
    raise ValueError(f"expected a list of spans, got {type(value).__name__}")


ENGLISH = frozenset({"en", "eng", "english"})


def is_english(row):
    """True unless the row's language column names another language (rows without one are English)."""
    language = row.get("language", row.get("lang"))
    if language is None or language == "":
        return True
    code = str(language).strip().lower().replace("_", "-")
    return code in ENGLISH or code.startswith("en-")


def map_span(source, label, label_map, audit, normalize=lambda s: s):
    """The canonical type for a source label, or None (counted: not PII by decision, or unknown label)."""
    key = normalize(str(label))
    if key in label_map:
        canonical = label_map[key]
        if canonical is None:
            audit.note(source, f"not_pii_label:{key}")
        return canonical
    audit.note(source, f"unknown_label:{key}")
    return None


def english_rows(source, rows_by_split, audit):
    """(split, index, row) of every English row; every row read and every row skipped is counted."""
    for split, rows in rows_by_split.items():
        for i, row in enumerate(rows):
            audit.read(source)
            if not is_english(row):
                audit.note(source, "skipped_non_english_row")
                continue
            yield split, i, row


def row_id(row, split, index, keys=("uid", "id")):
    for key in keys:
        if row.get(key) not in (None, ""):
            return row[key]
    return f"{split}-{index}"


def offset_spans(source, field, label_map, normalize, audit, value_key=None):
    """Spans with offsets from a list / JSON / repr ``field``, labels mapped; None when it cannot be parsed or holds a
    label its map does not know (the record is rejected and counted)."""
    try:
        raw_spans = parse_list(field)
    except ValueError:
        audit.reject_record(source, "unparseable_spans")
        return None
    if not all(isinstance(span, dict) for span in raw_spans):
        audit.reject_record(source, "unparseable_spans")
        return None
    unknown = sorted({str(s.get("label")) for s in raw_spans if normalize(str(s.get("label"))) not in label_map})
    if unknown:  # its text would become a negative for a type nobody decided on: the record goes, counted
        audit.reject_record(source, f"unknown_label:{unknown[0]}")
        return None
    spans = []
    for span in raw_spans:
        label = map_span(source, span.get("label"), label_map, audit, normalize)
        if label is not None:
            spans.append({"start": span.get("start"), "end": span.get("end"), "label": label,
                          "value": span.get(value_key) if value_key else None})
    return spans
