"""De-identification on top of any PII detector: redact, mask, hash or replace with consistent surrogates.

``deid.redact`` is the API, ``deid.surrogates`` the format-preserving fakes, ``deid.streaming`` the line-by-line
readers and writers behind the ``piiner-redact`` command-line tool.
"""

from .redact import MODES, RedactionResult, Redactor, redact
from .surrogates import SurrogateGenerator

__all__ = ["MODES", "RedactionResult", "Redactor", "SurrogateGenerator", "redact"]
