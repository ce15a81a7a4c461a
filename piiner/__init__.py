"""piiner: a small, fast PII tagger for English text, published the Hugging Face way.

``hub`` holds the files that ship with the weights (config, model, CRF, encoding, decoding, recognizers,
pipeline); they import each other relatively and nothing around them. The rooms beside it are the system around
the model: ``data_prep`` (corpora), ``training``, ``evaluation``, ``baselines`` (regex, Presidio, Rampart),
``export`` (ONNX), ``deid`` (redaction), ``serve`` (HTTP) and ``corpus`` (many files, Ray Data). Importing
``piiner`` loads none of them.
"""

__version__ = "0.2.0"
