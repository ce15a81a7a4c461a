"""NAME=VALUE settings of the command lines and configs: `--from-dir SOURCE=PATH`, `--threshold TIER=SCORE`,
`--report NAME=REPORT.json`, `--compare NAME=FILE.jsonl`, label maps (`PER=PERSON,...` or a JSON file) and
`source_repeats` (`presidio=3,...`). Every one is read here, the same way: a name given twice is an error, because
the dict they become keeps one value per name and would drop the other without a word. And `written_over`: the one
check of every command that an output it writes is not a file it reads or another of its outputs."""

import json
import os


def name_value_pairs(items, option, form="NAME=VALUE", split_at_last=False, allow_empty=False):
    """``{name: value}`` of ``NAME=VALUE`` strings, both stripped, in the order given.

    Args:
        items: the strings (an option's repeats, or a comma-separated list already split).
        option: how the error names the setting, e.g. ``"--threshold"``.
        form: what one item should look like, for the error, e.g. ``"TIER=SCORE"``.
        split_at_last: split at the last ``=`` (a name that may hold one), else at the first (a value that may).
        allow_empty: whether ``NAME=`` (an empty value) is an item.

    Raises:
        ValueError: naming `option` and the item, for an item without ``=``, a name or (unless `allow_empty`) a
            value, or a name given twice.
    """
    pairs = {}
    for item in items:
        name, sep, value = item.rpartition("=") if split_at_last else item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not (value or allow_empty):
            raise ValueError(f"{option} takes {form}, got {item!r}")
        if name in pairs:
            raise ValueError(f"{option} names {name!r} twice ({pairs[name]!r} and {value!r}): give it one value")
        pairs[name] = value
    return pairs


def comma_pairs(text, option, form="NAME=VALUE", allow_empty=False):
    """`name_value_pairs` of a comma-separated ``A=1,B=2`` (empty items skipped; None or "" gives {})."""
    items = [item for item in str(text or "").split(",") if item.strip()]
    return name_value_pairs(items, option, form, allow_empty=allow_empty)


def load_data_file(path, what):
    """What a YAML (.yaml, .yml) or JSON file holds; a `ValueError` "`what` `path`: why" where it cannot be read or
    parsed (a YAML syntax error too, which is no ValueError of its own)."""
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f) if str(path).endswith((".yaml", ".yml")) else json.load(f)
    except (OSError, ValueError, yaml.YAMLError) as error:
        raise ValueError(f"{what} {path}: {error}") from None


def load_json_object(path, option):
    """The JSON object in the file at `path`, a key written twice being an error (``json.load`` keeps the last)."""

    def unrepeated(pairs):
        keys = [key for key, _ in pairs]
        twice = sorted({key for key in keys if keys.count(key) > 1})
        if twice:
            raise ValueError(f"{option} file {path} names {', '.join(map(repr, twice))} twice: give each one value")
        return dict(pairs)

    with open(path, encoding="utf-8") as f:
        return json.load(f, object_pairs_hook=unrepeated)


def written_over(reads, writes):
    """Why an output would land on an input or on an earlier output ("--out gold.jsonl is also --data gold.jsonl:
    ..."), for the command's error; None when none would. `reads` and `writes` are ``(option, path)`` pairs; a read
    that is no file (a folder, a Hub id, "-") and an empty or "-" output are passed over. An existing file is known
    by its inode (a link or another spelling of its path is the same file), a new one by its path."""
    def key(path):
        if os.path.exists(path):
            stat = os.stat(path)
            return stat.st_dev, stat.st_ino
        return os.path.realpath(path)

    seen = {key(path): f"{option} {path}" for option, path in reads if path and os.path.isfile(path)}
    for option, path in writes:
        if not path or path == "-":
            continue
        found = key(path)
        if found in seen:
            return f"{option} {path} is also {seen[found]}: it would be written over; give another path"
        seen[found] = f"{option} {path}"
    return None


__all__ = ["name_value_pairs", "comma_pairs", "load_json_object", "written_over"]
