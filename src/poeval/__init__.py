"""poeval: reproducible evaluation of poetry language models.

``from poeval import evaluate`` is the notebook entry point (:func:`poeval.api.evaluate`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["evaluate", "__version__"]

if TYPE_CHECKING:
    from poeval.api import evaluate


def __getattr__(name: str) -> Any:
    # imported on first use: every `poeval` command and module imports this package, and the metric
    # families pull in numpy and scipy, which most of them never need
    if name == "evaluate":
        from poeval.api import evaluate

        return evaluate
    raise AttributeError(f"module 'poeval' has no attribute {name!r}")
