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

import functools
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

from poeval import paths
from poeval.config import fill
from poeval.errors import PoevalError
from poeval.io import read_json
from poeval.generators.registry import is_supplied
from poeval.generators.supplied import sample_files
from poeval.jobs.cell import cell_job, curve_job, resolve_tables_section
from poeval.report.recorded import (adherence_cell_params, adherence_table_params, bpomp_params, corpus_params,
                                    dotted, embeddings_params, figure_record, param_diffs, rhyme_label_params,
                                    sample_params, sonnets_params, split_params, supplied_params, table_params,
                                    topics_params, training_params, word2vec_params)
from poeval.stamps import code_revision, path_sha256


def _import_json(release: str) -> str:
    return f"{paths.pretrained(release)}/import.json"   # written by poeval.generators.pretrained.import_gguf


@dataclass(frozen=True)
class Kind:
    """A rule whose outputs carry a stamp: the stamped side file, the output to force, and the params
    the rule would pass now, from the config and the path's wildcards."""

    rule: str
    stamped: Callable[..., str]
    output: Callable[..., str]
    current: Callable[[dict, dict], dict]
    applies: Callable[[dict, dict], bool] = lambda c, w: True   # whether a matched file is this rule's
    # what the rule writes besides ``output``, which the stamps of later steps name as their inputs
    products: Callable[..., tuple[str, ...]] = lambda **w: ()
    resolved: bool = False   # ``current`` reads the params with the schema's defaults filled in


def _supplied(config: dict, w: dict) -> bool:
    return is_supplied(config.get("models", {}).get(w["system"]) or {})


def _families(config: dict) -> set[str]:
    return set(dotted(config, "metrics.families") or ())


def _common_n(config: dict):
    """params ``tables.common_n.n`` (None: no companion tables)."""
    return resolve_tables_section(config, "common_n")["n"]


def _n_curve(config: dict) -> dict:
    return resolve_tables_section(config, "n_curve")


def _in_stamp_file(output: Callable[..., str]) -> Callable[..., str]:
    """The stamp file beside ``output``'s path, a function of the same wildcards (paths.pattern reads them)."""
    @functools.wraps(output)
    def stamped(*args: str, **wildcards: str) -> str:
        return paths.stamp_file(output(*args, **wildcards))
    return stamped


def _cache_meta(directory: Callable[..., str], name: str) -> Callable[..., str]:
    """The file ``name`` inside the directory ``directory`` gives, a function of the same wildcards."""
    @functools.wraps(directory)
    def inside(*args: str, **wildcards: str) -> str:
        return f"{directory(*args, **wildcards)}/{name}"
    return inside


def _bpomp(config: dict, w: dict) -> bool:
    """Whether BPoMP runs, with the scorer of the path (a scorer dropped from params is not rebuilt)."""
    bpomp = config.get("bpomp") or {}
    return bool(bpomp.get("enabled")) and ("scorer" not in w or w["scorer"] in {s["name"] for s in bpomp["scorers"]})


def _bpomp_kinds() -> tuple[Kind, ...]:
    """The BPoMP steps (their rule passes what they record as --stamp) and the scratch masked LMs."""
    steps = {"bpomp_corpus": paths.limericks, "bpomp_pairs": paths.bpomp_pairs, "bpomp_score": paths.bpomp_scores,
             "bpomp_accuracy": paths.bpomp_accuracy, "bpomp_errors": paths.bpomp_errors}
    mlm = Kind("train_mlm", _cache_meta(paths.mlm_dir, "training_log.json"),
               paths.mlm_dir, lambda c, w: {"mlm": ((c.get("bpomp") or {}).get("mlm") or {}).get(w["mlm"])},
               lambda c, w: bool((c.get("bpomp") or {}).get("enabled")))
    return (mlm, *(Kind(rule, _in_stamp_file(path), path, lambda c, w, r=rule: bpomp_params(c, r, w.get("scorer")),
                        _bpomp, resolved=True) for rule, path in steps.items()))


def _adherence(config: dict, w: dict) -> bool:
    """Whether style adherence compares a pair (with the system of the path in it)."""
    from poeval.metrics.adherence import pairs

    compared = pairs(config)
    return bool(compared) and ("system" not in w or w["system"] in {*compared, *compared.values()})


def _adherence_kinds() -> tuple[Kind, ...]:
    """The style-adherence cells, table and figure (when params name a pair to compare)."""
    return (Kind("adherence_cell", _in_stamp_file(paths.adherence_cell), paths.adherence_cell,
                 lambda c, w: adherence_cell_params(c), _adherence, resolved=True),
            *(Kind(f"style_adherence_{action}", _in_stamp_file(partial(path, "style_adherence")),
                   partial(path, "style_adherence"), lambda c, w: adherence_table_params(c), _adherence,
                   resolved=True)
              for action, path in (("table", paths.table), ("figure", paths.figure))))


def _report_kinds() -> tuple[Kind, ...]:
    """One kind per table and figure rule (each is a rule of its own, named after it)."""
    from poeval.report.figures import FIGURES
    from poeval.report.tables import FAMILY_OF_TABLE, common_n_name, table_families

    tables = [Kind(name, _in_stamp_file(partial(paths.table, name)), partial(paths.table, name),
                   lambda c, w, n=name: table_params(c, n),
                   lambda c, w, n=name: n not in FAMILY_OF_TABLE or set(table_families(n)) <= _families(c))
              for name in ("table1", "table4", "sampling", *FAMILY_OF_TABLE)]
    # a common-n companion records no params of its own: its n is in its cells' paths and stamps
    tables += [Kind(common_n_name(name), _in_stamp_file(partial(paths.table, common_n_name(name))),
                    partial(paths.table, common_n_name(name)), lambda c, w: {},
                    lambda c, w, n=name: set(table_families(n)) <= _families(c) and _common_n(c) is not None)
               for name in FAMILY_OF_TABLE]
    tables += [Kind(f"n_sensitivity_{kind}", _in_stamp_file(partial(path, "n_sensitivity")),
                    partial(path, "n_sensitivity"), lambda c, w: {}, lambda c, w: bool(_n_curve(c)["sizes"]))
               for kind, path in (("table", paths.table), ("figure", paths.figure))]
    figures = [Kind(name, _in_stamp_file(partial(paths.figure, name)), partial(paths.figure, name),
                    lambda c, w, n=name: figure_record(c, n), lambda c, w, n=name: FIGURES[n].family in _families(c),
                    resolved=True)
               for name in FIGURES]
    return (*tables, *figures)


# in DAG order (stale_outputs): the data steps, checkpoints, samples, caches, cells, then tables and figures
KINDS = (
    Kind("quatrains", paths.corpus_report, paths.corpus_report, lambda c, w: corpus_params(c, w["lang"])),
    Kind("rhyme_labels", _in_stamp_file(paths.labelled), paths.labelled, lambda c, w: rhyme_label_params(w["lang"])),
    Kind("split", paths.split_report, paths.split_report, lambda c, w: split_params(c)),
    Kind("pseudo_sonnets", paths.sonnets_report, paths.sonnets, lambda c, w: sonnets_params(c),
         products=lambda **w: (paths.dev_sonnets(**w), paths.sonnets_report(**w)), resolved=True),
    Kind("word2vec", _in_stamp_file(paths.word2vec), paths.word2vec, lambda c, w: word2vec_params(c)),
    Kind("import_pretrained", _import_json, paths.pretrained, lambda c, w: {"source": w["release"]}),
    Kind("train", paths.training_log, paths.model_dir, lambda c, w: training_params(c, w["system"], w["lang"])),
    Kind("sample", paths.stats, paths.stats, lambda c, w: sample_params(c, w["lang"], w["system"], w["decoding"]),
         lambda c, w: not _supplied(c, w), lambda **w: (paths.samples(**w),)),
    Kind("import_samples", paths.stats, paths.stats,
         lambda c, w: supplied_params(c, w["system"], w["lang"], w["decoding"]), _supplied,
         lambda **w: (paths.samples(**w),)),
    Kind("embed_reference", paths.embeddings_meta, paths.embeddings,
         lambda c, w: embeddings_params(c, w["lang"]), resolved=True),
    Kind("memorization_index", _cache_meta(paths.memorization_index, "index.json"), paths.memorization_index,
         lambda c, w: {}),
    Kind("topic_model", _cache_meta(paths.topic_model, "topics.json"), paths.topic_model,
         lambda c, w: topics_params(c, w["lang"])),
    Kind("metric_cell", paths.cell, paths.cell,   # the job the rule would pass now, as its stamp records it
         lambda c, w: cell_job(c, w["lang"], w["system"], w["decoding"], w["family"]).recorded()),
    Kind("metric_cell_at_n", paths.cell_at_n, paths.cell_at_n,
         lambda c, w: cell_job(c, w["lang"], w["system"], w["decoding"], w["family"], int(w["n"])).recorded(),
         lambda c, w: w["n"].isdigit() and _common_n(c) is not None),
    Kind("n_curve", paths.n_curve, paths.n_curve, lambda c, w: curve_job(c, w["lang"], w["family"]).recorded(),
         lambda c, w: bool(_n_curve(c)["sizes"])),
    *_bpomp_kinds(),
    *_adherence_kinds(),
    *_report_kinds(),
)
RULES = {kind.rule: kind for kind in KINDS}


@dataclass
class Stale:
    rule: str
    output: str               # what --forcerun gets
    stamped: str              # the file whose stamp disagrees
    reasons: list[str] = field(default_factory=list)


def _matches(kind: Kind, root: Path) -> list[tuple[str, dict]]:
    """(stamped path, wildcards) of every stamped file of ``kind`` under ``root``."""
    pattern = paths.pattern(kind.stamped)
    regex = re.compile(re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(pattern)) + "$")
    found = []
    for path in sorted(root.glob(re.sub(r"\{\w+\}", "*", pattern))):
        rel = path.relative_to(root).as_posix()
        if match := regex.match(rel):
            found.append((rel, match.groupdict()))
    return found


def _in_run(config: dict, w: dict) -> bool:
    """Whether the wildcards name something this config runs (a checkpoint of a system dropped from
    ``systems`` is not the workflow's to rebuild)."""
    configured = {"lang": config["languages"], "system": [*config["systems"], paths.HUMAN],
                  "decoding": config["decodings"], "family": config["metrics"]["families"]}
    if w.get("system") == paths.HUMAN:   # a HUMAN cell's decoding is its sample
        configured["decoding"] = [paths.TRAIN] + [paths.human_id(k) for k in range(config["human"]["n_samples"])]
    elif "decoding" in w and _supplied(config, w):   # a samples system's decodings are its files' names
        configured["decoding"] = list(sample_files(config["models"][w["system"]], w.get("lang")))
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
    disagrees with ``config`` (params.yaml + overlays, as :func:`poeval.config.read` gives them) or with
    its inputs as they are now, or one of whose recorded inputs another of them rebuilds (KINDS is in DAG
    order: a changed sample file makes its import stale, and so the metric cells that read the import);
    ``code``: also those built by another code revision."""
    unknown = sorted(set(rules or ()) - set(RULES))
    if unknown:
        raise PoevalError(f"no stamped outputs for rule(s) {', '.join(unknown)}; rules: {', '.join(RULES)}")
    root = Path(root)
    hashes = _Hashes(root)
    stale, rebuilt = [], set()
    filled = None
    for kind in KINDS:
        for stamped, w in _matches(kind, root):
            if not (_in_run(config, w) and kind.applies(config, w)):
                continue
            if kind.resolved and filled is None:
                filled = fill(config)
            current = kind.current(filled if kind.resolved else config, w)
            stamp = read_json(root / stamped).get("provenance")
            reasons = _reasons(stamp, current, hashes, code) + _upstream(stamp, rebuilt)
            if not reasons:
                continue
            rebuilt.update((kind.output(**w), *kind.products(**w)))
            if rules is None or kind.rule in rules:
                stale.append(Stale(kind.rule, kind.output(**w), stamped, reasons))
    return stale


def run_stage(rules: list[str], configfiles: tuple[str, ...] = (), snakemake_args: tuple[str, ...] = (),
              code: bool = False, report: Callable[[str], None] = print) -> int:
    """Run Snakemake in the current directory for the rules of one stage (none: the whole DAG), forcing
    the stale stamped outputs of each (:func:`stale_outputs`). One ``--until`` run per rule, in the order
    given (the DAG's): Snakemake never releases the jobs that depend on a job of an ``--until`` rule, so
    rules that feed each other cannot share one run. Returns the first non-zero exit status."""
    from poeval import config as poeval_config

    config = poeval_config.read("params.yaml", tuple(configfiles))
    stale = stale_outputs(config, ".", [r for r in rules if r in RULES] if rules else None, code)
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
