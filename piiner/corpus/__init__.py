"""Corpus-scale redaction: a folder of files or a `datasets.Dataset`, cut into shards that workers redact (or scan)
with a model each loads once, on one machine (`datasets` engine) or a Ray cluster (`ray` engine); restartable."""

from .job import RedactorSpec
from .run import redact_corpus

__all__ = ["RedactorSpec", "redact_corpus"]
