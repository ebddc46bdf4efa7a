"""The params each stamped artifact records, as the workflow would pass them now (workflow/rules/*.smk;
a stage with a typed job, :mod:`poeval.jobs`: the job rebuilt by the rule's own builder):
what `poeval provenance` (:mod:`poeval.report.provenance`) and `poeval stale` (:mod:`poeval.report.stale`)
compare a stamp's recorded params with, and how (:func:`param_diffs`). A metric cell's are its typed job's
(:meth:`poeval.jobs.cell.CellJob.recorded`), rebuilt with the rule's own builder."""

from __future__ import annotations


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
