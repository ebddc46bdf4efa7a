"""What the `poeval` subcommands share (:mod:`poeval.cli`, :mod:`poeval.cli_bpomp`): argument types, output."""

from __future__ import annotations

import argparse
import json

from poeval import config

MODEL_PARAM_HELP = "the parameter that gave --model, named in errors (default: --model; the workflow: {})"


def json_object(text: str) -> dict:
    """An argparse type: a params section given as one JSON object."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON: {err.msg}") from None
    except RecursionError:
        raise argparse.ArgumentTypeError("JSON nested too deeply") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def _int_at_least(low: int, high: int | None = None):
    """An argparse type: an integer in [low, high]."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {value}")
        return value
    return parse


nonneg_int = _int_at_least(0)     # counts that may be zero (--bootstrap-reps 0: no intervals)
positive_int = _int_at_least(1)   # sizes and thread counts
seed_int = _int_at_least(*config.seed_range())


def quantile(text: str) -> float:
    """An argparse type: a confidence cut-off, a quantile in [0, 1) (params bpomp.errors.confidence_quantiles)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value < 1:   # also refuses nan
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1, got {text}")
    return value


def add_lang(parser: argparse.ArgumentParser, **kwargs) -> None:
    """``--lang``, one of the languages poeval supports (:func:`poeval.config.languages`)."""
    parser.add_argument("--lang", choices=config.languages(), **kwargs)


def print_json(obj) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=True))
