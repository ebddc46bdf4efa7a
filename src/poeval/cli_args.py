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


def stamp_option(parser: argparse.ArgumentParser, out: str, inputs: tuple[str, ...]) -> None:
    """(workflow) ``--stamp PARAMS``: after it succeeds, the command writes the provenance stamp beside its
    output argument ``out`` (:func:`poeval.stamps.write_stamp_file`) with PARAMS, the params its rule built the
    command from (:func:`poeval.report.recorded.bpomp_params`, what `poeval stale` compares), and the files of
    its arguments ``inputs``."""
    parser.add_argument("--stamp", type=json_object, metavar="PARAMS",
                        help="(workflow) the params this command was built from, recorded in <out>.stamp.json")
    parser.set_defaults(stamp_out=out, stamp_inputs=inputs)


def write_stamp(args: argparse.Namespace) -> None:
    """The stamp that ``--stamp`` asks for (:func:`stamp_option`), if it does."""
    if getattr(args, "stamp", None) is None:
        return
    from poeval.stamps import numbered, write_stamp_file

    files = [f for name in args.stamp_inputs for f in _as_list(getattr(args, name))]
    write_stamp_file(getattr(args, args.stamp_out), numbered(files), args.stamp)


def _as_list(value) -> list[str]:
    return [] if value is None else [value] if isinstance(value, str) else list(value)

