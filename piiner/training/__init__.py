"""Training system of piiner: arguments, features, collator, Trainer subclass, callbacks and Hub output.

``train.py`` at the repository root is the entry point; this package holds its parts.
"""
