"""What the `poeval` subcommands share (:mod:`poeval.cli`, :mod:`poeval.cli_bpomp`): argument types, output,
the declaration of their path arguments and the checks on them."""

from __future__ import annotations

import argparse
import json

from poeval import config, files
from poeval.errors import PoevalError

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


nonneg_int = _int_at_least(0)     # counts that may be zero
positive_int = _int_at_least(1)   # sizes and thread counts
seed_int = _int_at_least(*config.seed_range())
# the params schema's bounds (0: no intervals); 1e11 resamples would run for thousands of hours
bootstrap_reps_int = _int_at_least(*config.bootstrap_reps_range())
bpomp_bootstrap_reps_int = _int_at_least(*config.bootstrap_reps_range("bpomp"))


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


def add_force(p: argparse.ArgumentParser, out: str = "--out") -> None:
    """``--force`` of a command that replaces its output folder whole (:func:`poeval.files.check_out_dir`)."""
    p.add_argument("--force", action="store_true",
                   help=f"replace {out} even when it holds files that are not this command's earlier output "
                        "(never a folder holding the working directory or an input)")


def io_paths(p: argparse.ArgumentParser, outputs: tuple[str, ...], inputs: tuple[str, ...]) -> None:
    """Declare a subcommand's output and input path arguments, as written on the command line (``--out``,
    ``samples``), for :func:`check_io`. An input given as ``NAME=PATH`` / ``A:B:PATH`` items is written
    ``pairs=`` / ``inputs:``: its paths are each tail after the separator (and the whole item)."""
    p.set_defaults(io_paths=(p.prog.removeprefix("poeval "), outputs, inputs))


def _values(args, arg: str) -> list[str]:
    value = getattr(args, arg.strip("-=:").replace("-", "_"))
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def _paths(args, arg: str) -> list[str]:
    """The paths an input argument names: its values, or of ``NAME=PATH`` items each tail after a separator."""
    sep = arg[-1] if arg[-1] in "=:" else None
    if sep is None:
        return _values(args, arg)
    return [sep.join(parts[i:]) for parts in (item.split(sep) for item in _values(args, arg))
            for i in range(len(parts))]


def check_io(args) -> None:
    """Refuse an output path that would overwrite what the command reads or writes (:func:`poeval.files.clash`):
    one of its inputs, a file inside an input folder (a cache), an input's sidecar, or another of its outputs
    (or that one's sidecar); also through a symbolic or hard link."""
    command, outputs, inputs = getattr(args, "io_paths", ("", (), ()))
    written = [(out_arg, out) for out_arg in outputs for out in _values(args, out_arg)]
    for i, (out_arg, out) in enumerate(written):
        for in_arg in inputs:
            for path in _paths(args, in_arg):
                if how := files.clash(out, path):
                    raise PoevalError(f"{command}: {out_arg} {out} {how} an input ({in_arg.rstrip('=:')}); "
                                      "choose another path")
        for j, (other_arg, other) in enumerate(written):
            if i != j and (how := files.clash(out, other)):
                raise PoevalError(f"{command}: {out_arg} {out} {how} another output ({other_arg} {other}); "
                                  "choose another path")


def check_checkpoint_out(args, command: str, *inputs: str | None) -> None:
    """Before training: refuse an ``--out`` that :func:`poeval.files.check_out_dir` would not let the finished
    checkpoint replace (the trainers write it only at the end, hours later)."""
    from poeval.generators.engine import TRAINING_LOG

    files.check_out_dir(args.out, f"poeval {command}", TRAINING_LOG, inputs, args.force)


def stamped_job_option(parser: argparse.ArgumentParser, what: str, out: str, inputs: tuple[str, ...]) -> None:
    """(workflow) ``--job JSON`` (:func:`job_option`) of a command whose output cannot hold its provenance: after
    it succeeds, the command writes the stamp beside its output argument ``out`` (:func:`write_stamp`)."""
    job_option(parser, what)
    parser.set_defaults(stamp_out=out, stamp_inputs=inputs)


def write_stamp(args: argparse.Namespace) -> None:
    """The stamp of a command given ``--job`` by :func:`stamped_job_option`: the job's
    :meth:`~poeval.jobs.base.Job.recorded` (what `poeval stale` compares) and the files of its arguments
    ``inputs``, beside its output (none when the output was not asked for)."""
    job, out_arg = getattr(args, "job", None), getattr(args, "stamp_out", None)
    out = getattr(args, out_arg) if out_arg else None
    if job is None or out is None:
        return
    from poeval.stamps import numbered, write_stamp_file

    inputs = [f for name in args.stamp_inputs for f in _as_list(getattr(args, name))]
    write_stamp_file(out, numbered(inputs), job.recorded())


def _as_list(value) -> list[str]:
    return [] if value is None else [value] if isinstance(value, str) else list(value)



def job_option(parser: argparse.ArgumentParser, what: str) -> None:
    """(workflow) ``--job JSON``: the typed job its rule passes (:mod:`poeval.jobs`), parsed strictly into the
    class that ``what`` starts with (``poeval.jobs.train.TrainJob (...)``, imported only when a job is given);
    a bad job is a usage error naming the key."""
    def parse_job(text: str):
        import importlib

        from poeval.jobs.base import parse

        module, _, name = what.split()[0].rpartition(".")
        try:
            return parse(getattr(importlib.import_module(module), name), text)
        except PoevalError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    parser.add_argument("--job", type=parse_job, metavar="JSON", help=f"(workflow) the typed job its rule passes, as one JSON value: {what}")


def name_path(text: str) -> str:
    """An argparse type: a ``NAME=PATH`` item (kept as written, for :func:`check_io`; :func:`pairs` splits it)."""
    name, sep, path = text.partition("=")
    if not (sep and name and path):
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, got {text!r}")
    return text


def pairs(items: list[str] | None) -> dict[str, str]:
    """``NAME=PATH`` items as a dict (a later item of one name wins)."""
    return dict(item.partition("=")[::2] for item in items or ())


def job_of(args, by_hand: tuple[str, ...], build):
    """The typed job of a command: ``--job`` (the workflow's, parsed by :func:`job_option`), or built by
    ``build`` from the options a user gives by hand instead (``by_hand``: never with ``--job``)."""
    given = [f"--{name}" for name in by_hand if getattr(args, name) is not None]
    if args.job is not None:
        if given:
            raise PoevalError(f"--job holds {', '.join(f'--{n}' for n in by_hand)}: give it alone, not with "
                              f"{', '.join(given)}")
        return args.job
    return build()


def require_options(args, *names: str) -> None:
    missing = [f"--{name}" for name in names if getattr(args, name) is None]
    if missing:
        raise PoevalError(f"give --job, or {' and '.join(f'--{n}' for n in names)} (missing: {', '.join(missing)})")
