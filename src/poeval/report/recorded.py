"""The params each stamped artifact records, as the workflow would pass them now (workflow/rules/*.smk;
a stage with a typed job, :mod:`poeval.jobs`: the job rebuilt by the rule's own builder):
what `poeval provenance` (:mod:`poeval.report.provenance`) and `poeval stale` (:mod:`poeval.report.stale`)
compare a stamp's recorded params with, and how (:func:`param_diffs`). A metric cell's are its typed job's
(:meth:`poeval.jobs.cell.CellJob.recorded`), rebuilt with the rule's own builder."""

from __future__ import annotations


def table_caption_metrics(resolved: dict, table: str) -> dict:
    """The ``metrics`` sections a family table's caption names switches of (its rule's ``params``): those of
    the families it reads and of its tests, so that a param of another family does not rerun it."""
    from poeval.report.tables import table_families

    metrics = resolved.get("metrics", {})
    return {name: metrics[name] for name in [*table_families(table), "tests"] if name in metrics}


def table_params(config: dict, table: str) -> dict:
    """What a table records (its rule): a family table its significance tests' params."""
    from poeval.report.tables import FAMILY_OF_TABLE

    return {"tests": config.get("metrics", {}).get("tests", {})} if table in FAMILY_OF_TABLE else {}


def figure_record(resolved: dict, figure: str) -> dict:
    """What a figure records (its rule): the systems' kinds, or its one system and panels."""
    from poeval.report import figures

    return figures.figure_params(*figures.figure_args(resolved, figure))


# the sections of params bpomp that each BPoMP rule builds its command from
BPOMP_SECTIONS = {"bpomp_corpus": ("corpus",), "bpomp_pairs": ("pairs",), "bpomp_score": ("score",),
                  "bpomp_accuracy": ("bootstrap",), "bpomp_errors": ("errors",)}


def bpomp_params(resolved: dict, rule: str, scorer: str | None = None) -> dict:
    """What a BPoMP step records (its rule passes it as ``--stamp``): the sections of params ``bpomp`` (resolved)
    that the rule reads, and the entry of its scorer."""
    bpomp = resolved["bpomp"]
    out = {name: bpomp[name] for name in BPOMP_SECTIONS[rule]}
    if scorer is not None:
        out["scorer"] = next((s for s in bpomp["scorers"] if s["name"] == scorer), None)
    return out


def adherence_cell_params(resolved: dict) -> dict:
    """What a style-adherence cell records (rule adherence_cell)."""
    return {"repetition": resolved["metrics"]["rhyme"]["repetition"]}


def adherence_table_params(resolved: dict) -> dict:
    """What the style-adherence table and figure record (rules style_adherence_table, _figure)."""
    return {"schemes": resolved["style_adherence"]["schemes"]}
