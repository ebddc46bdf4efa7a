"""Which built artifacts are stale by their provenance stamps, and a Snakemake run that rebuilds them.

Snakemake decides what is stale from its ``.snakemake/metadata``, which does not travel with the
artifacts: after `dvc pull` or `dvc checkout` into a fresh clone (or any copy of the outputs) it sees only
files that exist and cannot tell that a param changed. The stamps (:mod:`poeval.stamps`) travel with
the artifacts, so they decide here: an artifact whose recorded params differ from the ones the workflow
would pass now, or one of whose recorded inputs now hashes differently, is stale, and :func:`run_stage`
hands it to Snakemake's ``--forcerun`` (removing it would not do: Snakemake leaves a missing file alone
when what reads it is up to date). Snakemake's own triggers still apply, and it reruns everything
downstream of a forced job. An artifact whose own stamp agrees but one of whose recorded inputs is
rebuilt by a stale one (the metric cells of a samples system whose sample file changed) is listed too, so
that `poeval stale` names everything the change will rebuild that carries a stamp.

The steps whose outputs cannot hold a stamp (tables, figures, rhyme labels, word2vec vectors) write one
beside them (:func:`poeval.paths.stamp_file`); the caches (embeddings, memorization index, topic model)
keep theirs in their JSON. A table or figure records its cells as its inputs, so a rebuilt cell lists it too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from poeval import paths
from poeval.config import fill
from poeval.errors import PoevalError
from poeval.io import read_json
from poeval.generators.registry import is_supplied
from poeval.generators.supplied import sample_files
from poeval.jobs.base import Step
from poeval.report.steps import by_rule, steps
from poeval.report.param_diff import param_diffs
from poeval.stamps import code_revision, path_sha256


def rules() -> list[str]:
    """The rules whose outputs carry a stamp, in DAG order."""
    return [step.rule for step in steps()]


@dataclass
class Stale:
    rule: str
    output: str               # what --forcerun gets
    stamped: str              # the file whose stamp disagrees
    reasons: list[str] = field(default_factory=list)


def _matches(step: Step, root: Path) -> list[tuple[str, dict]]:
    """(stamped path, wildcards) of every stamped file of ``step`` under ``root``."""
    pattern = paths.pattern(step.stamped)
    regex = re.compile(re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(pattern)) + "$")
    found = []
    for path in sorted(root.glob(re.sub(r"\{\w+\}", "*", pattern))):
        rel = path.relative_to(root).as_posix()
        if match := regex.match(rel):
            found.append((rel, match.groupdict()))
    return found


def _in_run(params: dict, w: dict) -> bool:
    """Whether the wildcards name something this config runs (a checkpoint of a system dropped from
    ``systems`` is not the workflow's to rebuild)."""
    configured = {"lang": params["languages"], "system": [*params["systems"], paths.HUMAN],
                  "decoding": params["decodings"], "family": params["metrics"]["families"]}
    if w.get("system") == paths.HUMAN:   # a HUMAN cell's decoding is its sample
        configured["decoding"] = [paths.TRAIN] + [paths.human_id(k) for k in range(params["human"]["n_samples"])]
    elif "decoding" in w and is_supplied(params["models"].get(w["system"]) or {}):   # its decodings are its files' names
        configured["decoding"] = list(sample_files(params["models"][w["system"]], w.get("lang")))
    return all(w[k] in configured[k] for k in w.keys() & configured.keys())


class _Hashes(dict):
    """sha256 of each input path (relative to ``root``) hashed so far; None when it is missing."""

    def __init__(self, root: Path):
        super().__init__()
        self.root = root

    def __missing__(self, path: str) -> str | None:
        full = self.root / path
        self[path] = path_sha256(full) if full.exists() else None
        return self[path]


def _upstream(stamp: dict | None, rebuilt: set[str]) -> list[str]:
    """Why an artifact is stale although its own stamp agrees: an input it recorded is rebuilt first."""
    return [f"input {name} {recorded['path']} is rebuilt first" for name, recorded in
            sorted(((stamp or {}).get("inputs") or {}).items()) if recorded["path"] in rebuilt]


def _reasons(stamp: dict | None, current: dict, hashes: _Hashes, code: bool) -> list[str]:
    if stamp is None:
        return ["no provenance stamp: what it was built from is unknown"]
    reasons = [f"params: {d}" for d in param_diffs(stamp.get("params") or {}, current)[0]]
    for name, recorded in sorted((stamp.get("inputs") or {}).items()):
        now = hashes[recorded["path"]]   # a missing input is Snakemake's to report (or, outside the run, not ours)
        if now is not None and now != recorded["sha256"]:
            reasons.append(f"input {name} {recorded['path']} changed since it was built")
    if code and stamp.get("code") != code_revision():
        reasons.append(f"code: built by {stamp.get('code')}, running {code_revision()}")
    return reasons


def stale_outputs(config: dict, root: str | os.PathLike = ".", rules: list[str] | None = None,
                  code: bool = False) -> list[Stale]:
    """The stamped outputs under ``root`` of ``rules`` (default: every rule that stamps) whose stamp
    disagrees with the job its step would be given now (``config``: params.yaml + overlays as
    :func:`poeval.config.read` gives them, resolved here once, as the workflow resolves them) or with its
    inputs as they are now, or one of whose recorded inputs another of them rebuilds (the steps are in DAG
    order: a changed sample file makes its import stale, and so the metric cells that read the import);
    ``code``: also those built by another code revision."""
    known = by_rule()
    unknown = sorted(set(rules or ()) - set(known))
    if unknown:
        raise PoevalError(f"no stamped outputs for rule(s) {', '.join(unknown)}; rules: {', '.join(known)}")
    params = fill(config)   # the params step's resolution (poeval.params.resolve), without its checks of the run's inputs
    root = Path(root)
    hashes = _Hashes(root)
    stale, rebuilt = [], set()
    for step in steps():
        for stamped, w in _matches(step, root):
            if not (_in_run(params, w) and step.applies(params, w)):
                continue
            current = step.job(params, w).recorded()
            stamp = read_json(root / stamped).get("provenance")
            reasons = _reasons(stamp, current, hashes, code) + _upstream(stamp, rebuilt)
            if not reasons:
                continue
            rebuilt.update((step.forced(**w), *step.products(**w)))
            if rules is None or step.rule in rules:
                stale.append(Stale(step.rule, step.forced(**w), stamped, reasons))
    return stale


def run_stage(rules: list[str], configfiles: tuple[str, ...] = (), snakemake_args: tuple[str, ...] = (),
              code: bool = False, report: Callable[[str], None] = print) -> int:
    """Run Snakemake in the current directory for the rules of one stage (none: the whole DAG), forcing
    the stale stamped outputs of each (:func:`stale_outputs`). One ``--until`` run per rule, in the order
    given (the DAG's): Snakemake never releases the jobs that depend on a job of an ``--until`` rule, so
    rules that feed each other cannot share one run. Returns the first non-zero exit status."""
    from poeval import config as poeval_config

    config = poeval_config.read("params.yaml", tuple(configfiles))
    stale = stale_outputs(config, ".", [r for r in rules if r in by_rule()] if rules else None, code)
    for item in stale:
        report(f"poeval repro: {item.rule}: rebuilding {item.output} ({item.stamped}: {'; '.join(item.reasons)})")
    for rule in rules or [None]:
        forced = [item.output for item in stale if rule in (None, item.rule)]
        cmd = [sys.executable, "-m", "snakemake", *snakemake_args]
        cmd += ["--until", rule] if rule else []
        cmd += ["--configfile", *configfiles] if configfiles else []
        cmd += ["--forcerun", *forced] if forced else []
        status = subprocess.run(cmd).returncode
        if status:
            return status
    return 0
