"""Every rule of the workflow that runs a poeval command with a typed job, as one :class:`poeval.jobs.base.Step`
each, in the DAG's order: the rules call a step's builder for their ``--job`` (workflow/rules/common.smk,
``job_of``), and `poeval stale` and `poeval provenance` call the same builder to know what the step would be
given now, and compare its :meth:`~poeval.jobs.base.Job.recorded` with what the output's stamp recorded."""

from __future__ import annotations

import functools

from poeval.jobs import bpomp, cell, sample, train
from poeval.report import legacy_steps as legacy
from poeval.jobs.base import Step


@functools.cache
def steps() -> tuple[Step, ...]:
    """The steps in DAG order: data, checkpoints, samples, caches, cells, BPoMP, style adherence, tables and figures
    (`poeval stale` relies on it: a step's stale inputs are found before it)."""
    return (*legacy.data_steps(), *train.STEPS, *sample.STEPS, *legacy.supplied_steps(), *legacy.cache_steps(),
            *cell.STEPS, *bpomp.STEPS, *legacy.adherence_steps(), *legacy.report_steps())


def by_rule() -> dict[str, Step]:
    return {step.rule: step for step in steps()}
