"""The metric-cell job: what `poeval evaluate` computes for one cell, as one typed value.

Rule ``metric_cell`` passes :func:`cell_job` as ``--job`` beside its input paths (``--cached NAME=PATH``
for the caches of :mod:`poeval.metrics.families`) and ``--threads``; a hand-run `poeval evaluate` with
``--metrics``/``--options`` builds the same type (:func:`given_job`); both then run :func:`run`.
`poeval provenance` and `poeval stale` rebuild the job with :func:`cell_job` and compare
:meth:`CellJob.recorded` with what the cell's stamp recorded.

Built from the resolved params (:func:`poeval.params.resolve`, the one view every job is built from): the
families' params sections travel filled, as the schema fills them, and the stamp records them
(:meth:`CellJob.recorded`, its one computation). I/O paths, the caches' paths and threads are not part of the
job: they are the rule's inputs and resources, and travel beside it as runtime keys.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from poeval import config as poeval_config
from poeval.errors import PoevalError
from poeval import paths
from poeval.jobs.base import Job, Step
from poeval.metrics import evaluate as runner
from poeval.metrics.families import FAMILIES, read_sections, runtime_options
from poeval.io import write_json
from poeval.paths import HUMAN, TRAIN, human_id
from poeval.sections import Section
from poeval.stamps import stamp


@dataclasses.dataclass(frozen=True)
class CellJob(Job):
    """``families`` of a sample against a reference in ``lang``; ``options``: the params section of each
    family read (:func:`poeval.metrics.families.read_sections`), filled by the schema; ``cell``: the table cell's
    lang/system/decoding label (None for a hand run); ``subsample``: evaluate that many quatrains of the sample,
    drawn with ``subsample_seed`` (a cell of a common-n table; None: all); ``n_curve``: instead of one cell, the
    n-sensitivity curve (params ``tables.n_curve`` as given: sizes, draws, seed)."""

    KIND = "metric-cell"

    families: list[str]
    lang: str
    options: dict[str, Section]
    bootstrap_reps: int
    seed: int
    exclude_sample_from_reference: bool
    allow_empty: bool
    cell: dict[str, str] | None = None
    subsample: int | None = None
    subsample_seed: int = 1
    n_curve: dict | None = None

    def __post_init__(self):
        if not self.families:
            raise PoevalError(f"{self.KIND} job: no metric family")
        for name in self.families:
            if name not in FAMILIES:
                raise PoevalError(f"{self.KIND} job: unknown metric family {name!r} (available: {', '.join(FAMILIES)})")
        langs = poeval_config.languages()
        if self.lang not in langs:
            raise PoevalError(f"{self.KIND} job: unknown lang {self.lang!r} (available: {', '.join(langs)})")
        runner.check_bootstrap(self.bootstrap_reps, self.seed, f"{self.KIND} job: ")
        runner.check_subsample(self.subsample, f"{self.KIND} job: subsample")
        if self.n_curve is not None:
            resolve_curve(self.n_curve)   # checked here, filled where it runs

    # written only where set (a subsample drawn, a curve): a whole-sample cell's command, and so its params
    # trigger, stays what it was before either existed
    OPTIONAL: ClassVar[dict[str, tuple[str, ...]]] = {"subsample": ("subsample", "subsample_seed"),
                                                      "n_curve": ("n_curve",)}

    def to_dict(self) -> dict:
        unset = {k for key, keys in self.OPTIONAL.items() if getattr(self, key) is None for k in keys}
        out = {k: v for k, v in super().to_dict().items() if k not in unset}
        return out | {"options": self.sections()}

    def sections(self) -> dict[str, dict]:
        """The families' sections as params give them (each record's keys)."""
        return {name: record.to_dict() for name, record in self.options.items()}

    @classmethod
    def from_dict(cls, data: dict) -> "CellJob":
        optional = {k for keys in cls.OPTIONAL.values() for k in keys}
        defaults = {f.name: f.default for f in dataclasses.fields(cls) if f.name in optional}
        job = super().from_dict(defaults | data if isinstance(data, dict) else data)
        if not isinstance(job.options, dict):
            raise PoevalError(f"{cls.KIND} job: options: expected a JSON object, got {type(job.options).__name__}")
        return dataclasses.replace(job, options={name: runner.family_record(name, section)
                                                 for name, section in job.options.items()})

    def recorded(self) -> dict:
        """The params the cell's stamp records (:func:`poeval.metrics.evaluate.stamp_params`), and a curve's."""
        recorded = runner.stamp_params(self.families, self.sections(), self.bootstrap_reps, self.seed,
                                       self.exclude_sample_from_reference, self.subsample, self.subsample_seed)
        return recorded if self.n_curve is None else recorded | {"n_curve": self.n_curve}


def given_job(families: list[str], lang: str, options: dict | None = None, bootstrap_reps: int = 0,
              seed: int = 1, exclude_sample_from_reference: bool = False, allow_empty: bool = False,
              cell: dict | None = None, subsample: int | None = None, subsample_seed: int = 1,
              n_curve: dict | None = None) -> CellJob:
    """The job of a hand run (or of the workflow, through :func:`cell_job`): every section of ``options``
    is checked (an unknown family or key is named), and those the families read are kept, filled by the
    schema (:func:`poeval.metrics.evaluate.family_record`)."""
    options = dict(options or {})
    records = {name: runner.family_record(name, section) for name, section in options.items()}
    return CellJob(list(families), lang, {f: records.get(f) or runner.family_record(f, {}) for f in read_sections(families)},
                   bootstrap_reps, seed, exclude_sample_from_reference, allow_empty, cell, subsample, subsample_seed,
                   n_curve)


def cell_job(params: dict, lang: str, system: str, decoding: str, family: str, n: int | None = None) -> CellJob:
    """The job of the workflow's cell ``family`` of ``lang``/``system``/``decoding`` from the resolved params:
    a HUMAN cell gets no bootstrap (its row's spread comes from its samples) and, unless it is the whole
    training set, is compared with the rest of train; an empty sample is a result, not a failure. ``n``: the
    cell of a common-n table, ``n`` quatrains drawn with ``tables.common_n.seed``."""
    metrics = params.get("metrics") or {}
    bootstrap = metrics.get("bootstrap") or {}   # reps and seed: required params, no defaults
    common = resolve_tables_section(params, "common_n")
    hook = FAMILIES[family].cell_labels if family in FAMILIES else None   # the quality family's note
    labels = hook(params, lang, system) if hook else {}
    return given_job([family], lang, {f: metrics.get(f) or {} for f in read_sections([family])},
                     0 if system == HUMAN else bootstrap.get("reps"), bootstrap.get("seed"),
                     exclude_sample_from_reference=system == HUMAN and decoding != TRAIN, allow_empty=True,
                     cell={"lang": lang, "system": system, "decoding": decoding} | labels, subsample=n, subsample_seed=common["seed"])


def run(job: CellJob, samples: str, reference: str, out: str | None, cached: dict[str, str] | None = None,
        threads: int | None = None, progress: bool = False) -> dict:
    """Evaluate ``job`` and write its cell to ``out`` (None: return it only), stamped with :meth:`CellJob.recorded`:
    ``cached`` names the caches of the reference (name -> path) and ``threads`` the CPU threads, runtime keys that
    travel beside the job (:func:`poeval.metrics.families.runtime_options`). A curve job writes its curve (:func:`run_curve`)."""
    if job.n_curve is not None:
        return run_curve(job, samples, reference, out, cached, threads, progress)
    return runner.write_evaluation(samples, reference, job.lang, job.families, out, job.cell, recorded=job.recorded(),
                                   options=job.options, runtime=runtime_options(job.families, cached or {}, threads, job.cell),
                                   bootstrap_reps=job.bootstrap_reps, seed=job.seed, progress=progress,
                                   exclude_sample_from_reference=job.exclude_sample_from_reference,
                                   allow_empty=job.allow_empty, subsample=job.subsample,
                                   subsample_seed=job.subsample_seed)


def resolve_curve(given: dict | None) -> dict:
    """A curve job's ``n_curve`` (params ``tables.n_curve`` as given: sizes, draws, seed) with the schema's defaults."""
    return resolve_tables_section({"tables": {"n_curve": given}}, "n_curve")


def resolve_tables_section(params: dict, name: str) -> dict:
    """params ``tables.<name>`` (common_n, n_curve) of ``params`` as written, with the schema's defaults."""
    given = (params.get("tables") or {}).get(name) or {}
    return poeval_config.resolve_section(given, f"#/properties/tables/properties/{name}", f"tables.{name}")


def curve_job(params: dict, lang: str, family: str) -> CellJob:
    """The job of the n-sensitivity curve of ``family`` in ``lang``: the first HUMAN sample's cell job with
    params ``tables.n_curve`` as written."""
    given = (params.get("tables") or {}).get("n_curve") or {}
    return dataclasses.replace(cell_job(params, lang, HUMAN, human_id(0), family), n_curve=given)


def run_curve(job: CellJob, samples: str, reference: str, out: str | None, cached: dict[str, str] | None = None,
              threads: int | None = None, progress: bool = False) -> dict:
    """The n-sensitivity curve (:func:`poeval.metrics.evaluate.n_curve`) of a curve job's families on ``samples``,
    written to ``out`` (None: returned only) with a stamp of its inputs and params."""
    curve = resolve_curve(job.n_curve)
    result = runner.n_curve(samples, reference, job.lang, job.families, curve["sizes"], curve["draws"],
                            curve["seed"], progress, options=job.options,
                            runtime=runtime_options(job.families, cached or {}, threads),
                            exclude_sample_from_reference=job.exclude_sample_from_reference)
    result["provenance"] = stamp({"samples": samples, "reference": reference}, job.recorded())
    if out is not None:
        write_json(out, result)
    return result


def _cell_at_n_job(params: dict, lang: str, system: str, decoding: str, family: str, n: str) -> CellJob:
    return cell_job(params, lang, system, decoding, family, int(n))


STEPS = (Step("metric_cell", cell_job, paths.cell),
         Step("metric_cell_at_n", _cell_at_n_job, paths.cell_at_n,
              applies=lambda params, w: w["n"].isdigit() and params["tables"]["common_n"]["n"] is not None),
         Step("n_curve", curve_job, paths.n_curve, applies=lambda params, w: bool(params["tables"]["n_curve"]["sizes"])))
