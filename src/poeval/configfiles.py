"""The workflow profile's check of the ``--configfile`` files on Snakemake's command line.

Snakemake merges those files into one mapping before the Snakefile's first line, copying every nested
mapping: a file whose YAML aliases repeat a mapping millions of times (nine short lines) is expanded there,
for minutes and gigabytes, before the params step (:func:`poeval.params.resolve`) could refuse it. The
workflow profile (``profiles/default/config.yaml``) is read earlier still, so it runs :func:`check_command_line`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from poeval import config
from poeval.errors import PoevalError


def configfiles(argv: list[str]) -> list[str]:
    """The files a Snakemake command line names with ``--configfile``/``--configfiles`` (either spelling,
    each taking one or more files, as Snakemake's own)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)   # --config is another option
    parser.add_argument("--configfile", "--configfiles", nargs="+", action="extend", default=[])
    return parser.parse_known_args(argv)[0].configfile


def check_command_line(argv: list[str] | None = None) -> None:
    """Exit with one line of error when a ``--configfile`` in ``argv`` (Snakemake's arguments) is YAML whose
    aliases expand past :data:`poeval.config.MAX_YAML_VALUES`; a missing file is left to Snakemake."""
    for name in configfiles(sys.argv[1:] if argv is None else argv):
        if not Path(name).is_file():
            continue
        try:
            config.load_yaml(Path(name))
        except PoevalError as err:
            sys.exit(f"poeval: error: {err}")
