"""Token-classification pipeline for piiner (stub: being written, see issue 2)."""

from transformers import TokenClassificationPipeline


class PiiNerTokenClassificationPipeline(TokenClassificationPipeline):
    pass
