"""Every rule of the workflow that runs a poeval command with a typed job, as one :class:`poeval.jobs.base.Step`
each, in the DAG's order: the rules call a step's builder for their ``--job`` (workflow/rules/common.smk,
``job_of``), and `poeval stale` and `poeval provenance` call the same builder to know what the step would be
given now, and compare its :meth:`~poeval.jobs.base.Job.recorded` with what the output's stamp recorded."""

from __future__ import annotations

import functools

from poeval.jobs import adherence, bpomp, caches, cell, data, sample, similarity, train
from poeval.report import table_jobs
from poeval.jobs.base import Step


@functools.cache
def steps() -> tuple[Step, ...]:
    """The steps in DAG order: data, checkpoints, samples, caches, cells, similarity cells, BPoMP, style
    adherence, tables and figures, the similarity table and figure (`poeval stale` relies on it: a step's
    stale inputs are found before it)."""
    return (*data.STEPS, *train.STEPS, *sample.STEPS, *data.SUPPLIED_STEPS, *caches.STEPS,
            *cell.STEPS, *similarity.CELL_STEPS, *bpomp.STEPS, *adherence.STEPS, *table_jobs.STEPS,
            *similarity.REPORT_STEPS)


def by_rule() -> dict[str, Step]:
    return {step.rule: step for step in steps()}


def jobs_by_rule() -> dict[str, Step]:
    """Every rule's step by its name, also of a rule whose output holds no stamp (what ``job_of`` builds from)."""
    return by_rule() | {step.rule: step for step in data.UNSTAMPED}
