"""Training system of piiner: arguments, features, collator, Trainer subclass, callbacks and Hub output.

``train.py`` is the entry point (`piiner-train`, `python -m piiner.training`); the other modules are its parts.
"""
