"""Metric families. Each module exposes `compute(samples, reference, **params) -> dict`."""
