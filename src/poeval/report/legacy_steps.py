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


def _import_json(release: str) -> str:
    return f"{paths.pretrained(release)}/import.json"


def _supplied(params: dict, w: dict) -> bool:
    from poeval.generators.registry import is_supplied

    return is_supplied(params["models"][w["system"]])


def data_steps() -> tuple[Step, ...]:
    from poeval.report import recorded as r

    return (_step("quatrains", lambda c, w: r.corpus_params(c, w["lang"]), paths.corpus_report),
            _step("rhyme_labels", lambda c, w: r.rhyme_label_params(w["lang"]), _in_stamp_file(paths.labelled),
                  paths.labelled),
            _step("split", lambda c, w: r.split_params(c), paths.split_report),
            _step("pseudo_sonnets", lambda c, w: r.sonnets_params(c), paths.sonnets_report, paths.sonnets,
                  products=lambda **w: (paths.dev_sonnets(**w), paths.sonnets_report(**w))),
            _step("word2vec", lambda c, w: r.word2vec_params(c), _in_stamp_file(paths.word2vec), paths.word2vec),
            _step("import_pretrained", lambda c, w: {"source": w["release"]}, _import_json, paths.pretrained))


def supplied_steps() -> tuple[Step, ...]:
    from poeval.report import recorded as r

    return (_step("import_samples", lambda c, w: r.supplied_params(c, w["system"], w["lang"], w["decoding"]),
                  paths.stats, applies=_supplied, products=lambda **w: (paths.samples(**w),)),)


def cache_steps() -> tuple[Step, ...]:
    from poeval.report import recorded as r

    return (_step("embed_reference", lambda c, w: r.embeddings_params(c, w["lang"]), paths.embeddings_meta,
                  paths.embeddings),
            _step("memorization_index", lambda c, w: {}, _cache_meta(paths.memorization_index, "index.json"),
                  paths.memorization_index),
            _step("topic_model", lambda c, w: r.topics_params(c, w["lang"]), _cache_meta(paths.topic_model, "topics.json"),
                  paths.topic_model))


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
