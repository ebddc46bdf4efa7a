"""The metric-cell job: what `poeval evaluate` computes for one cell, as one typed value.

Rule ``metric_cell`` passes :func:`cell_job` as ``--job`` beside its input paths (``--cached NAME=PATH``
for the caches of :mod:`poeval.metrics.families`) and ``--threads``; a hand-run `poeval evaluate` with
``--metrics``/``--options`` builds the same type (:func:`given_job`); both then run :func:`run`.
`poeval provenance` and `poeval stale` rebuild the job with :func:`cell_job` and compare
:meth:`CellJob.recorded` with what the cell's stamp recorded.

Built from the params *as written* (Snakemake's ``config``, not the resolved ``P``): the families' params
sections travel as given and `poeval evaluate` fills their defaults (:func:`poeval.metrics.evaluate.family_options`),
so a default filled by the params step never changes a command, its params trigger or the stamp (which
records the sections as given). The bootstrap settings are required params (no defaults to fill).
I/O paths and threads are not part of the job: they are the rule's inputs and resources.
"""

from __future__ import annotations

import dataclasses

from poeval import config as poeval_config
from poeval.errors import PoevalError
from poeval.jobs.base import Job
from poeval.metrics import evaluate as runner
from poeval.metrics.families import FAMILIES, read_sections, runtime_options
from poeval.paths import HUMAN, TRAIN


@dataclasses.dataclass(frozen=True)
class CellJob(Job):
    """``families`` of a sample against a reference in ``lang``; ``options``: the params section of each
    family read (:func:`poeval.metrics.families.read_sections`), as given; ``cell``: the table cell's
    lang/system/decoding label (None for a hand run)."""

    KIND = "metric-cell"

    families: list[str]
    lang: str
    options: dict[str, dict]
    bootstrap_reps: int
    seed: int
    exclude_sample_from_reference: bool
    allow_empty: bool
    cell: dict[str, str] | None = None

    def __post_init__(self):
        if not self.families:
            raise PoevalError(f"{self.KIND} job: no metric family")
        for name in self.families:
            if name not in FAMILIES:
                raise PoevalError(f"{self.KIND} job: unknown metric family {name!r} (available: {', '.join(FAMILIES)})")
        langs = poeval_config.languages()
        if self.lang not in langs:
            raise PoevalError(f"{self.KIND} job: unknown lang {self.lang!r} (available: {', '.join(langs)})")
        if not isinstance(self.bootstrap_reps, int) or self.bootstrap_reps < 0:
            raise PoevalError(f"{self.KIND} job: bootstrap_reps must be an integer >= 0, got {self.bootstrap_reps!r}")
        if not isinstance(self.seed, int):
            raise PoevalError(f"{self.KIND} job: seed must be an integer, got {self.seed!r}")

    def recorded(self) -> dict:
        """The params the cell's stamp records (:func:`poeval.metrics.evaluate.stamp_params`)."""
        return runner.stamp_params(self.families, self.options, self.bootstrap_reps, self.seed,
                                   self.exclude_sample_from_reference)


def given_job(families: list[str], lang: str, options: dict | None = None, bootstrap_reps: int = 0,
              seed: int = 1, exclude_sample_from_reference: bool = False, allow_empty: bool = False,
              cell: dict | None = None) -> CellJob:
    """The job of a hand run (or of the workflow, through :func:`cell_job`): every section of ``options``
    is checked (an unknown family or key is named), and those the families read are kept as given
    (defaults as :func:`poeval.metrics.evaluate.evaluate`'s)."""
    options = dict(options or {})
    for name, section in options.items():
        runner.family_options(name, section)
    return CellJob(list(families), lang, {f: options.get(f, {}) for f in read_sections(families)}, bootstrap_reps,
                   seed, exclude_sample_from_reference, allow_empty, cell)


def cell_job(params: dict, lang: str, system: str, decoding: str, family: str) -> CellJob:
    """The job of the workflow's cell ``family`` of ``lang``/``system``/``decoding`` from params as written:
    a HUMAN cell gets no bootstrap (its row's spread comes from its samples) and, unless it is the whole
    training set, is compared with the rest of train; an empty sample is a result, not a failure."""
    metrics = params.get("metrics") or {}
    bootstrap = metrics.get("bootstrap") or {}   # reps and seed: required params, no defaults
    return given_job([family], lang, {f: metrics.get(f) or {} for f in read_sections([family])},
                     0 if system == HUMAN else bootstrap.get("reps"), bootstrap.get("seed"),
                     exclude_sample_from_reference=system == HUMAN and decoding != TRAIN, allow_empty=True,
                     cell={"lang": lang, "system": system, "decoding": decoding})


def run(job: CellJob, samples: str, reference: str, out: str | None, cached: dict[str, str] | None = None,
        threads: int | None = None, progress: bool = False) -> dict:
    """Evaluate ``job`` and write its cell to ``out`` (None: return it only): ``cached`` names the caches of the reference
    (name -> path, :func:`poeval.metrics.families.runtime_options`), ``threads`` the CPU threads."""
    runtime = runtime_options(job.families, cached or {}, threads)
    options = {f: dict(job.options.get(f, {})) | runtime.get(f, {}) for f in job.options.keys() | runtime.keys()}
    return runner.write_evaluation(samples, reference, job.lang, job.families, out, job.cell, options=options,
                                   bootstrap_reps=job.bootstrap_reps, seed=job.seed, progress=progress,
                                   exclude_sample_from_reference=job.exclude_sample_from_reference,
                                   allow_empty=job.allow_empty)
