"""Steps whose rule does not pass a typed job yet: what their outputs record, rebuilt from the resolved
params by the functions of :mod:`poeval.report.recorded` (a transition: each moves to a job of its own)."""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

from poeval import paths
from poeval.jobs.base import Job, Step


@dataclasses.dataclass(frozen=True)
class Recorded(Job):
    """What an output of a step without a job of its own records."""

    KIND = "recorded"
    params: dict

    def recorded(self) -> dict:
        return self.params


def _step(rule: str, current: Callable[[dict, dict], dict], stamped, output=None, **kwargs) -> Step:
    return Step(rule, lambda params, **w: Recorded(current(params, w)), stamped, output, **kwargs)


def _in_stamp_file(output: Callable[..., str]) -> Callable[..., str]:
    @functools.wraps(output)
    def stamped(*args: str, **wildcards: str) -> str:
        return paths.stamp_file(output(*args, **wildcards))
    return stamped


def _cache_meta(directory: Callable[..., str], name: str) -> Callable[..., str]:
    @functools.wraps(directory)
    def inside(*args: str, **wildcards: str) -> str:
        return f"{directory(*args, **wildcards)}/{name}"
    return inside


def _bpomp(params: dict, w: dict) -> bool:
    bpomp = params.get("bpomp") or {}
    return bool(bpomp.get("enabled")) and ("scorer" not in w or w["scorer"] in {s["name"] for s in bpomp["scorers"]})


def bpomp_steps() -> tuple[Step, ...]:
    from poeval.report import recorded as r

    steps = {"bpomp_corpus": paths.limericks, "bpomp_pairs": paths.bpomp_pairs, "bpomp_score": paths.bpomp_scores,
             "bpomp_accuracy": paths.bpomp_accuracy, "bpomp_errors": paths.bpomp_errors}
    mlm = _step("train_mlm", lambda c, w: {"mlm": ((c.get("bpomp") or {}).get("mlm") or {}).get(w["mlm"])},
                _cache_meta(paths.mlm_dir, "training_log.json"), paths.mlm_dir,
                applies=lambda c, w: bool((c.get("bpomp") or {}).get("enabled")))
    return (mlm, *(_step(rule, lambda c, w, r_=rule: r.bpomp_params(c, r_, w.get("scorer")), _in_stamp_file(path),
                         path, applies=_bpomp) for rule, path in steps.items()))
