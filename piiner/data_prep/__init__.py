"""Data preparation for piiner: public PII corpora and a synthetic generator, unified into one record shape.

Record: ``{"id", "source", "text", "spans": [{"start", "end", "label"}], "group"}`` with canonical labels from
``piiner.hub.pii_schema``. ``piiner-data build --out DIR`` writes a ``datasets.DatasetDict`` with train,
validation and test (split by ``group`` so no template or document leaks), ``audit.md``/``audit.png``/``audit.json``
and one ``test_<source>.jsonl`` per source.
"""

from .build import build
from .records import check_record, clean_record

__all__ = ["build", "check_record", "clean_record"]
