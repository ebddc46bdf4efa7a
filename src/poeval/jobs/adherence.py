"""The jobs of style adherence (:mod:`poeval.metrics.adherence`): the prompted samples (rule adherence_sample,
a :class:`poeval.jobs.sample.SampleJob`), a system's cell (rule adherence_cell, `poeval adherence cell`) and the
table and figure of every pair (rules style_adherence_table and _figure, `poeval adherence table|figure`).

Each is built from the resolved params and the rule's wildcards; its paths stay the rule's inputs and outputs.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

from poeval import paths
from poeval.errors import PoevalError
from poeval.jobs.base import Job, Step, stamp_beside
from poeval.jobs.sample import SampleJob, sample_job
from poeval.metrics.adherence import pairs
from poeval.metrics.schemes import REPETITION_MODES

UNPROMPTED = "none"   # the prompt label of a system's main (unprompted) sample


def adherence_sample_job(params: dict, lang: str, system: str, scheme: str) -> SampleJob:
    """The main sample's job of ``system`` (:func:`poeval.jobs.sample.sample_job`) under params
    ``style_adherence.decoding``, prompted with ``scheme``, at the adherence sample size ``style_adherence.n``."""
    adherence = params["style_adherence"]
    return sample_job(params, lang, system, adherence["decoding"], style=scheme, n=adherence["n"])


@dataclasses.dataclass(frozen=True)
class AdherenceCellJob(Job):
    """The cell of ``system`` in ``lang``: ``prompts`` names each sample the command is given, in order (a
    scheme, or ``none``: the unprompted sample); ``repetition``: params ``metrics.rhyme.repetition``."""

    KIND = "adherence-cell"
    lang: str
    system: str
    prompts: list[str]
    repetition: str

    def __post_init__(self):
        if not self.prompts:
            raise PoevalError(f"{self.KIND} job: no prompt")
        if self.repetition not in REPETITION_MODES:
            raise PoevalError(f"{self.KIND} job: repetition {self.repetition!r} is not one of "
                              f"{', '.join(REPETITION_MODES)}")


def adherence_cell_job(params: dict, lang: str, system: str, prompting: str) -> AdherenceCellJob:
    """The job of rule adherence_cell: a prompted cell reads one sample per scheme of params
    ``style_adherence.schemes``, an unprompted one the system's main sample."""
    prompts = [UNPROMPTED] if prompting == "unprompted" else list(params["style_adherence"]["schemes"])
    return AdherenceCellJob(lang, system, prompts, params["metrics"]["rhyme"]["repetition"])


def cell_samples(job: AdherenceCellJob, decoding: str) -> dict[str, str]:
    """The sample file of each prompt of a workflow cell (the unprompted one: its main sample under ``decoding``)."""
    return {prompt: paths.samples(job.lang, job.system, decoding) if prompt == UNPROMPTED
            else paths.adherence_samples(job.lang, job.system, prompt) for prompt in job.prompts}


def cell_from_options(items: list[tuple[str, str]], lang: str, system: str, repetition: str) -> AdherenceCellJob:
    """The job of `poeval adherence cell PROMPT=SAMPLES... --lang --system [--repetition]` (by hand)."""
    return AdherenceCellJob(lang, system, [prompt for prompt, _ in items], repetition)


@dataclasses.dataclass(frozen=True)
class StyleAdherenceJob(Job):
    """The table or figure of every (conditioned, baseline) pair: ``schemes``, the prompted schemes in row order."""

    KIND = "style-adherence"
    schemes: list[str]

    def __post_init__(self):
        if not self.schemes:
            raise PoevalError(f"{self.KIND} job: no scheme")


def style_adherence_job(params: dict) -> StyleAdherenceJob:
    """The job of rules style_adherence_table and style_adherence_figure: params ``style_adherence.schemes``."""
    return StyleAdherenceJob(list(params["style_adherence"]["schemes"]))


def _adherence(params: dict, w: dict) -> bool:
    compared = pairs(params)
    return bool(compared) and ("system" not in w or w["system"] in {*compared, *compared.values()})


STEPS = (Step("adherence_sample", adherence_sample_job, paths.adherence_stats, applies=_adherence,
              products=lambda **w: (paths.adherence_samples(**w),)),
         Step("adherence_cell", adherence_cell_job, stamp_beside(paths.adherence_cell), paths.adherence_cell,
              applies=_adherence),
         *(Step(f"style_adherence_{action}", style_adherence_job, stamp_beside(functools.partial(path, "style_adherence")),
                functools.partial(path, "style_adherence"), applies=_adherence)
           for action, path in (("table", paths.table), ("figure", paths.figure))))
