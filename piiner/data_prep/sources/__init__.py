"""Adapters from each public PII corpus to raw records (``data_prep.records`` validates them).

``SOURCES[name]`` says where a source lives (a Hub id, or a local folder for the two sets shipped in
../shared/data) and how its rows become raw records: {id, source, text, spans: [{start, end, label, value?}],
group, source_split}. ``iter_source(name, local_path, audit)`` reads it: the local path when given (``--from-dir``),
else the default folder, else ``datasets.load_dataset(hub_id)``.
"""

import dataclasses
import os
from typing import Callable, Optional

from . import ai4privacy, gretel, labels, nemotron, ner_sets, presidio, wnut17
from .loading import SourceUnavailable, fetch_files, read_local, read_rows

# The checkout this package sits in (editable install); ../shared/data beside it is the offline copy of the sets.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def shared_data_dir():
    """../shared/data beside the repo, or $PIINER_SHARED_DATA."""
    return os.environ.get("PIINER_SHARED_DATA") or os.path.join(REPO_ROOT, "..", "shared", "data")


@dataclasses.dataclass(frozen=True)
class Source:
    """Where a source lives and how its rows become raw records.

    `local_reader(path, problems)` reads a local copy (a folder or a file) into {split: rows}, describing malformed
    rows in `problems`; `urls` maps each file of the local copy to its public address, fetched into the cache when
    neither --from-dir nor the shared folder has it; `hub_id` is read with `datasets.load_dataset` otherwise."""

    name: str
    to_records: Callable
    hub_id: Optional[str] = None
    local_reader: Callable = read_local
    default_folder: Optional[str] = None  # under shared_data_dir()
    urls: Optional[dict] = None
    labelled_types: Optional[tuple] = None  # the types its annotation covers; None: every type
    written_by_people: bool = False  # real text, not templates: the synthetic generator may set PII into it


def _mapped(label_map, *extra):
    """The types a source's label map can produce: what its annotation covers."""
    return tuple(sorted({t for t in label_map.values() if t} | set(extra)))


_NER_SETS = {  # name: (local reader, records, shared folder)
    "btc": (ner_sets.read_btc, ner_sets.btc_records, "btc"),
    "wikigold": (ner_sets.read_wikigold, ner_sets.wikigold_records, "wikigold"),
    "sec_filings": (ner_sets.read_sec, ner_sets.sec_records, "sec-filings"),
    "uner_ewt": (ner_sets.read_uner, ner_sets.uner_records, "uner-ewt"),
    "gum": (ner_sets.read_gum, ner_sets.gum_records, "gum"),
}

SOURCES = {
    "presidio": Source("presidio", presidio.records, local_reader=presidio.read_rows,
                       default_folder="presidio-research", urls=presidio.URLS,
                       labelled_types=_mapped(labels.PRESIDIO, "DATE_OF_BIRTH")),
    "wnut17": Source("wnut17", wnut17.records, local_reader=wnut17.read_rows, default_folder="wnut17",
                     urls=wnut17.URLS, labelled_types=wnut17.LABELLED_TYPES, written_by_people=True),
    **{name: Source(name, to_records, local_reader=reader, default_folder=folder, urls=ner_sets.URLS[name],
                    labelled_types=ner_sets.LABELLED_TYPES[name], written_by_people=True)
       for name, (reader, to_records, folder) in _NER_SETS.items()},
    **{name: Source(name, ai4privacy.records, hub_id=hub, labelled_types=_mapped(labels.AI4PRIVACY))
       for name, hub in ai4privacy.HUB_IDS.items()},
    "nemotron": Source("nemotron", nemotron.records, hub_id=nemotron.HUB_IDS["nemotron"],
                       labelled_types=_mapped(labels.SNAKE)),
    "gretel_finance": Source("gretel_finance", gretel.finance_records, hub_id=gretel.HUB_IDS["gretel_finance"],
                             labelled_types=_mapped(labels.SNAKE)),
    "gretel_masking": Source("gretel_masking", gretel.masking_records, hub_id=gretel.HUB_IDS["gretel_masking"],
                             labelled_types=_mapped(labels.SNAKE)),
}


def iter_source(name, local_path, audit):
    """Raw records of source ``name``, read from the first place that has it: ``local_path`` (--from-dir), the
    shared data folder, the download cache (fetching the public files when online), or the Hub. Malformed rows are
    counted in the audit with their file and line."""
    if name not in SOURCES:
        raise SourceUnavailable(f"unknown source {name!r}; known: synthetic, {', '.join(SOURCES)}")
    source = SOURCES[name]
    problems = []
    shared = os.path.join(shared_data_dir(), source.default_folder) if source.default_folder else None
    if local_path:
        if not os.path.exists(local_path):
            raise SourceUnavailable(f"source {name!r}: --from-dir path {local_path!r} does not exist")
        rows_by_split = source.local_reader(local_path, problems)
    elif shared and os.path.exists(shared):
        rows_by_split = source.local_reader(shared, problems)
    elif source.urls:
        hint = f"pass --from-dir {name}=PATH to a local copy, or put the files under {shared}"
        rows_by_split = source.local_reader(fetch_files(name, source.urls, hint), problems)
    elif source.hub_id:
        rows_by_split = read_rows(name, source.hub_id, problems=problems)
    else:
        raise SourceUnavailable(f"source {name!r}: {shared} is missing; pass --from-dir {name}=PATH")
    for problem in problems:
        audit.malformed_row(name, problem)
    for record in source.to_records(name, rows_by_split, audit):
        record.setdefault("labelled_types", source.labelled_types)
        yield record


__all__ = ["SOURCES", "Source", "SourceUnavailable", "iter_source", "shared_data_dir"]
