"""Strict span-level evaluation of PII taggers: metrics, baselines, reports and the model card."""

from .metrics import span_metrics

__all__ = ["span_metrics"]
