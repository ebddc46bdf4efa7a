"""What the `poeval` subcommands share (:mod:`poeval.cli`, :mod:`poeval.cli_bpomp`): argument types, output."""

from __future__ import annotations

import argparse
import json

MODEL_PARAM_HELP = "the parameter that gave --model, named in errors (default: --model; the workflow: {})"


def json_object(text: str) -> dict:
    """An argparse type: a params section given as one JSON object."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON: {err.msg}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def print_json(obj) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=True))
