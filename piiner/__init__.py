"""piiner: a small, fast PII tagger for English text, published the Hugging Face way.

The files that ship with the weights sit flat in this folder and import each other relatively
(``configuration_piiner``, ``modeling_piiner``, ``crf_piiner``, ``pipeline_piiner``, ...); the rooms beside them are
the system around the model: ``data_prep`` (corpora), ``training``, ``evaluation``, ``export`` (ONNX) and ``deid``
(redaction). Importing ``piiner`` loads none of them.
"""

__version__ = "0.2.0"
