"""Steps whose rule does not pass a typed job yet: what their outputs record, rebuilt from the resolved
params by the functions of :mod:`poeval.report.recorded` (a transition: each moves to a job of its own)."""

from __future__ import annotations

import dataclasses
import functools
from functools import partial
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


def _families(params: dict) -> set[str]:
    return set(params["metrics"]["families"])


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


def _adherence(params: dict, w: dict) -> bool:
    from poeval.metrics.adherence import pairs

    compared = pairs(params)
    return bool(compared) and ("system" not in w or w["system"] in {*compared, *compared.values()})


def adherence_steps() -> tuple[Step, ...]:
    from poeval.report import recorded as r

    return (_step("adherence_cell", lambda c, w: r.adherence_cell_params(c), _in_stamp_file(paths.adherence_cell),
                  paths.adherence_cell, applies=_adherence),
            *(_step(f"style_adherence_{action}", lambda c, w: r.adherence_table_params(c),
                    _in_stamp_file(partial(path, "style_adherence")), partial(path, "style_adherence"), applies=_adherence)
              for action, path in (("table", paths.table), ("figure", paths.figure))))


def report_steps() -> tuple[Step, ...]:
    from poeval.report import recorded as r
    from poeval.report.figures import FIGURES
    from poeval.report.tables import FAMILY_OF_TABLE, common_n_name, table_families

    def table(name, current, applies):
        return _step(name, current, _in_stamp_file(partial(paths.table, name)), partial(paths.table, name),
                     applies=applies)

    tables = [table(name, lambda c, w, n=name: r.table_params(c, n),
                    lambda c, w, n=name: n not in FAMILY_OF_TABLE or set(table_families(n)) <= _families(c))
              for name in ("table1", "table4", "sampling", *FAMILY_OF_TABLE)]
    tables += [table(common_n_name(name), lambda c, w: {},
                     lambda c, w, n=name: set(table_families(n)) <= _families(c) and c["tables"]["common_n"]["n"] is not None)
               for name in FAMILY_OF_TABLE]
    tables += [_step(f"n_sensitivity_{kind}", lambda c, w: {}, _in_stamp_file(partial(path, "n_sensitivity")),
                     partial(path, "n_sensitivity"), applies=lambda c, w: bool(c["tables"]["n_curve"]["sizes"]))
               for kind, path in (("table", paths.table), ("figure", paths.figure))]
    figures = [_step(name, lambda c, w, n=name: r.figure_record(c, n), _in_stamp_file(partial(paths.figure, name)),
                     partial(paths.figure, name), applies=lambda c, w, n=name: FIGURES[n].family in _families(c))
               for name in FIGURES]
    return (*tables, *figures)
