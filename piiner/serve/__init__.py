"""The redaction service: FastAPI endpoints over a piiner model with requests batched onto it, and a web page."""
