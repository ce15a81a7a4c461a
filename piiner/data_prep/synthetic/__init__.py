"""Synthetic PII records for all 41 types: value generators, templates held out by split, hard negatives."""

from .generate import SyntheticGenerator, all_templates

__all__ = ["SyntheticGenerator", "all_templates"]
