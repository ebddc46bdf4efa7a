"""The jobs of the tables and figures: what `poeval table`, `poeval figure` and `poeval n-sensitivity` receive
from their rules (workflow/rules/tables.smk), one typed record each, built from the resolved params.

Table 1, Table 4 and the sampling table read one file per row: the job holds each row's labels (what the
table shows) in row order, and the rule gives the files in the same order (:func:`table1_items`,
:func:`model_items`, :func:`sample_items` pair them). A family table reads cells, which carry their own labels:
its job holds its significance tests' params (none for a common-n companion). A figure's job holds the kinds
of the run's systems (figures 5-9) or its one system and panels (10-15). The n-sensitivity table and figure
read everything from their curves: an empty job.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, ClassVar

from poeval import paths
from poeval.errors import PoevalError
from poeval.generators import registry
from poeval.generators.supplied import sample_files
from poeval.jobs.base import Job, Step, stamp_beside
from poeval.report import figures, table_tests, tables
from poeval.sections import Section
from poeval.stamps import numbered, write_stamp_file


@dataclasses.dataclass(frozen=True)
class SplitRow(Section):
    """A row of Table 1: a split file's language and split (its label)."""

    WHERE = "table1 row"
    lang: str
    split: str


@dataclasses.dataclass(frozen=True)
class SystemRow(Section):
    """A row of Table 4: a system and the language of its checkpoint."""

    WHERE = "table4 row"
    lang: str
    system: str


@dataclasses.dataclass(frozen=True)
class SampleRow(Section):
    """A row of the sampling table: whose sample, under which decoding config."""

    WHERE = "sampling table row"
    lang: str
    system: str
    decoding: str


@dataclasses.dataclass(frozen=True)
class RowsJob(Job):
    """A table of one row per input file: ``rows``, each row's labels in the order of the files."""

    ROW: ClassVar[type[Section]] = Section
    rows: list

    def to_dict(self) -> dict:
        return {"kind": self.KIND, "rows": [row.to_dict() for row in self.rows]}

    @classmethod
    def from_dict(cls, data: dict):
        job = super().from_dict(data)
        if not isinstance(job.rows, list):
            raise PoevalError(f"{cls.KIND} job: rows: expected a list")
        return cls([cls.ROW.from_dict(row) for row in job.rows])

    def paired(self, inputs: list[str]) -> list[tuple]:
        """(labels..., file) of each row."""
        if len(inputs) != len(self.rows):
            raise PoevalError(f"{self.KIND} job: {len(self.rows)} rows but {len(inputs)} input files; give one per row")
        return [(*dataclasses.astuple(row), path) for row, path in zip(self.rows, inputs)]


class SizesTableJob(RowsJob):
    """Table 1: one row per split file (a split named twice, as the HUMAN samples: its files summed)."""
    KIND, ROW = "table1", SplitRow


class ModelsTableJob(RowsJob):
    """Table 4: one row per checkpoint directory (a samples system: per imported file's stats)."""
    KIND, ROW = "table4", SystemRow


class SamplingTableJob(RowsJob):
    """The sampling table: one row per sample's stats."""
    KIND, ROW = "sampling-table", SampleRow


@dataclasses.dataclass(frozen=True)
class Tests(Section):
    """params ``metrics.tests``, resolved."""

    POINTER, WHERE = "#/properties/metrics/properties/tests", "metrics.tests"
    permutations: int
    seed: int


@dataclasses.dataclass(frozen=True)
class FamilyTableJob(Job):
    """A family table from its cells: ``tests``, its significance tests' params (None: no tests table, a
    common-n companion)."""

    KIND = "family-table"
    tests: Tests | None


@dataclasses.dataclass(frozen=True)
class NSensitivityJob(Job):
    """The n-sensitivity table and figure: everything they show is in their curves."""

    KIND = "n-sensitivity"


@dataclasses.dataclass(frozen=True)
class FrontierJob(Job):
    """The quality frontier's table and figure (:mod:`poeval.report.frontier`): ``measure``, the diversity
    family's measure on its x axis (params ``metrics.quality.frontier_diversity``)."""

    KIND = "quality-frontier"
    measure: str

    def __post_init__(self):
        from poeval.report.frontier import MEASURES

        if self.measure not in MEASURES:
            raise PoevalError(f"{self.KIND} job: unknown measure {self.measure!r} (known: {', '.join(MEASURES)})")


TABLE_JOBS: dict[str, type[Job]] = {"table1": SizesTableJob, "table4": ModelsTableJob, "sampling": SamplingTableJob}


def table_job_type(name: str) -> type[Job]:
    return TABLE_JOBS.get(name, FamilyTableJob)


def table_from_options(name: str, items: list[str], tests: dict | None, tests_out: str | None) -> tuple[Job, list[str]]:
    """The job and the files of `poeval table NAME ITEMS...` by hand: table1 ``LANG:SPLIT:PATH``, table4
    ``LANG:SYSTEM:PATH``, sampling ``LANG:SYSTEM:DECODING:PATH`` items; a family table's cells, with its tests
    (``--tests``, the schema's defaults filled) when it writes their table."""
    cls = TABLE_JOBS.get(name)
    if cls is None:
        return FamilyTableJob(resolve_tests(tests or {}) if tests_out else None), list(items)
    fields = len(dataclasses.fields(cls.ROW))
    split = [item.split(":", fields) for item in items]
    bad = next((item for item, parts in zip(items, split) if len(parts) <= fields), None)
    if bad is not None:
        raise PoevalError(f"{name}: expected {':'.join(f.name.upper() for f in dataclasses.fields(cls.ROW))}:PATH "
                          f"items, got {bad!r}")
    return cls([cls.ROW(*parts[:fields]) for parts in split]), [parts[fields] for parts in split]


def resolve_tests(given: dict) -> Tests:
    return Tests.from_dict(given)


def write_table(name: str, job: Job, inputs: list[str], out: str, ci_out: str | None = None,
                tests_out: str | None = None) -> None:
    """Table ``name`` of ``job`` from ``inputs`` into ``out`` (a family table: its intervals into ``ci_out`` and
    its tests into ``tests_out``), with the stamp of its inputs and :meth:`Job.recorded`."""
    if isinstance(job, SizesTableJob):
        splits: dict = {}
        for lang, split, path in job.paired(inputs):
            splits.setdefault(lang, {}).setdefault(split, []).append(path)
        tables.table1(splits, out)
    elif isinstance(job, ModelsTableJob):
        tables.table4(job.paired(inputs), out)
    elif isinstance(job, SamplingTableJob):
        tables.sampling_table(job.paired(inputs), out)
    else:
        _family_table(name, job, inputs, out, ci_out, tests_out)
    write_stamp_file(out, numbered(inputs), job.recorded())


def _family_table(name: str, job: FamilyTableJob, cells: list[str], out: str, ci_out: str | None,
                  tests_out: str | None) -> None:
    if (job.tests is None) != (tests_out is None):
        raise PoevalError(f"{name}: --tests-out and the job's tests go together (the job's tests: {job.tests})")
    columns = tables.table_columns(name)
    tables.family_table(cells, tables.FAMILY_OF_TABLE[name], out, ci_out, columns)
    if job.tests is not None:
        table_tests.tests_table(cells, tables.FAMILY_OF_TABLE[name], tests_out, job.tests.permutations,
                                job.tests.seed, columns)


# --- figures -------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SystemKind(Section):
    """What figures 5-9 group a system by (:func:`poeval.report.figures.system_kind`): the keys of its params
    ``models`` entry that it has."""

    WHERE = "figure job: models entry"
    arch: str | None = None
    conditioned: bool | None = None
    kind: str | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in super().to_dict().items() if v is not None}

    @classmethod
    def from_dict(cls, data: Any, where: str | None = None) -> "SystemKind":
        names = [f.name for f in dataclasses.fields(cls)]
        return super().from_dict({k: None for k in names} | data if isinstance(data, dict) else data, where)


@dataclasses.dataclass(frozen=True)
class FigureSelection(Section):
    """The one system of figures 10-15 (params ``figures.<name>``) and its panels' decoding configs, in order."""

    WHERE = "figure job: selection"
    system: str
    lang: str
    decodings: list[str]

    def selection(self) -> figures.Selection:
        return figures.Selection(self.system, self.lang, tuple(self.decodings))


@dataclasses.dataclass(frozen=True)
class FigureJob(Job):
    """``models``: the run's systems and their kinds (figures 5-9); ``selection``: the one system (10-15);
    ``same_as``: the earlier figure this one repeats in the run (a note naming it is drawn instead)."""

    KIND = "figure"
    models: dict[str, SystemKind] | None
    selection: FigureSelection | None
    same_as: str | None

    def models_dict(self) -> dict[str, dict] | None:
        return None if self.models is None else {s: kind.to_dict() for s, kind in self.models.items()}

    def to_dict(self) -> dict:
        return super().to_dict() | {"models": self.models_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> "FigureJob":
        job = super().from_dict(data)
        if job.models is not None and not isinstance(job.models, dict):
            raise PoevalError(f"{cls.KIND} job: models: expected an object")
        models = None if job.models is None else {s: SystemKind.from_dict(k) for s, k in job.models.items()}
        return dataclasses.replace(job, models=models)

    def recorded(self) -> dict:
        """What a figure's stamp records (:func:`poeval.report.figures.figure_params`)."""
        selection = self.selection.selection() if self.selection else None
        return figures.figure_params(self.models_dict(), selection, self.same_as)


def figure_from_options(models: dict | None, system: str | None, lang: str | None, decodings: list[str],
                        same_as: str | None) -> FigureJob:
    """The job of `poeval figure NAME CELLS... [--models | --system --lang --decodings] [--same-as]` by hand."""
    if bool(system) != bool(lang):
        raise PoevalError("--system and --lang go together (the one system of figures 10-15)")
    kinds = {s: SystemKind.from_dict(k) for s, k in models.items()} if models else None
    return FigureJob(kinds, FigureSelection(system, lang, list(decodings)) if system else None, same_as)


def draw_figure(name: str, job: FigureJob, cells: list[str], out: str) -> None:
    """Figure ``name`` of ``job`` from ``cells`` into ``out``, with the stamp of its cells and :meth:`FigureJob.recorded`."""
    selection = job.selection.selection() if job.selection else None
    figures.make(name, cells, out, models=job.models_dict() or {}, selection=selection, same=job.same_as)
    write_stamp_file(out, numbered(cells), job.recorded())


# --- builders: the jobs the rules pass, from the resolved params ---------------------------------------------


def table1_items(params: dict) -> list[tuple[SplitRow, str]]:
    """Table 1's rows and files: per language train, dev, each HUMAN sample and the pseudo-sonnets' splits
    (labelled ``sonnets-paper`` under the paper's recipe, which counts other sonnets)."""
    sonnets = "sonnets-paper" if params["poetic"]["sonnets"].get("recipe") == "paper" else "sonnets"
    items = []
    for lang in params["languages"]:
        items += [(SplitRow(lang, "train"), paths.train(lang)), (SplitRow(lang, "dev"), paths.dev(lang))]
        items += [(SplitRow(lang, "human"), paths.human(lang, paths.human_id(i)))
                  for i in range(params["human"]["n_samples"])]
        items += [(SplitRow(lang, f"{sonnets}-train"), paths.sonnets(lang)),
                  (SplitRow(lang, f"{sonnets}-dev"), paths.dev_sonnets(lang))]
    return items


def model_items(params: dict) -> list[tuple[SystemRow, str]]:
    """Table 4's rows and files: each checkpoint directory, or each imported file's stats of a samples system."""
    items = []
    for lang in params["languages"]:
        for system in params["systems"]:
            model = params["models"][system]
            if not registry.is_supplied(model):
                items.append((SystemRow(lang, system), paths.model_dir(lang, system)))
            else:
                items += [(SystemRow(lang, system), paths.stats(lang, system, d)) for d in sample_files(model, lang)]
    return items


def sample_items(params: dict) -> list[tuple[SampleRow, str]]:
    """The sampling table's rows and files: every sample's stats of the run."""
    return [(SampleRow(lang, system, decoding), paths.stats(lang, system, decoding))
            for lang in params["languages"] for system in params["systems"] if registry.has_lang(params, system, lang)
            for decoding in registry.system_decodings(params, system, params["decodings"], lang, every=True)]


def table1_job(params: dict) -> SizesTableJob:
    return SizesTableJob([row for row, _ in table1_items(params)])


def table4_job(params: dict) -> ModelsTableJob:
    return ModelsTableJob([row for row, _ in model_items(params)])


def sampling_table_job(params: dict) -> SamplingTableJob:
    return SamplingTableJob([row for row, _ in sample_items(params)])


def family_table_job(params: dict) -> FamilyTableJob:
    """A family table's job: params ``metrics.tests``."""
    return FamilyTableJob(Tests(**params["metrics"]["tests"]))


def common_n_job(params: dict) -> FamilyTableJob:
    """A common-n companion's job: no tests table."""
    return FamilyTableJob(None)


def figure_job(params: dict, name: str) -> FigureJob:
    """Figure ``name``'s job: the kinds of the run's systems, or its one system and panels and the earlier
    figure it repeats in this run (:func:`poeval.report.figures.repeats`)."""
    models, sel = figures.figure_args(params, name)
    if sel is not None:
        return FigureJob(None, FigureSelection(sel.system, sel.lang, list(sel.decodings)), figures.repeats(params, name))
    return FigureJob({s: SystemKind.from_dict(k) for s, k in models.items()} if models else None, None, None)


def n_sensitivity_job(params: dict) -> NSensitivityJob:
    return NSensitivityJob()


def frontier_job(params: dict) -> FrontierJob:
    return FrontierJob(params["metrics"]["quality"]["frontier_diversity"])


def has_frontier(params: dict) -> bool:
    """Whether the run draws the quality frontier: the quality and diversity families both computed."""
    return {"quality", "diversity"} <= _families(params)


def caption_metrics(params: dict, table: str) -> dict:
    """The ``metrics`` sections a family table's caption names switches of (its rule's caption params): those of
    the families it reads and of its tests, so that a param of another family does not rerun it."""
    metrics = params.get("metrics", {})
    return {name: metrics[name] for name in [*tables.table_families(table), "tests"] if name in metrics}


# --- steps -----------------------------------------------------------------------------------------------------


def _families(params: dict) -> set[str]:
    return set(params["metrics"]["families"])


def _step(name: str, build, output, **kwargs) -> Step:
    out = functools.partial(output, name)
    return Step(name, build, stamp_beside(out), out, **kwargs)


def _table_steps() -> list[Step]:
    def has(table):
        return lambda params, w: set(tables.table_families(table)) <= _families(params)

    out = [Step(rule, build, stamp_beside(functools.partial(paths.table, name)), functools.partial(paths.table, name))
           for rule, name, build in (("table1", "table1", table1_job), ("table4", "table4", table4_job),
                                     ("sampling_table", "sampling", sampling_table_job))]
    out += [_step(name, family_table_job, paths.table, applies=has(name)) for name in tables.FAMILY_OF_TABLE]
    out += [_step(tables.common_n_name(name), common_n_job, paths.table,
                  applies=lambda p, w, h=has(name): h(p, w) and p["tables"]["common_n"]["n"] is not None)
            for name in tables.FAMILY_OF_TABLE]
    return out


def _n_sensitivity_steps() -> list[Step]:
    return [Step(f"n_sensitivity_{kind}", n_sensitivity_job, stamp_beside(functools.partial(path, "n_sensitivity")),
                 functools.partial(path, "n_sensitivity"), applies=lambda p, w: bool(p["tables"]["n_curve"]["sizes"]))
            for kind, path in (("table", paths.table), ("figure", paths.figure))]


def _frontier_steps() -> list[Step]:
    return [Step(f"quality_frontier_{kind}", frontier_job, stamp_beside(functools.partial(path, "quality_frontier")),
                 functools.partial(path, "quality_frontier"), applies=lambda p, w: has_frontier(p))
            for kind, path in (("table", paths.table), ("figure", paths.figure))]


def _figure_steps() -> list[Step]:
    return [_step(name, functools.partial(figure_job, name=name), paths.figure,
                  applies=lambda p, w, n=name: figures.FIGURES[n].family in _families(p)) for name in figures.FIGURES]


STEPS = (*_table_steps(), *_n_sensitivity_steps(), *_frontier_steps(), *_figure_steps())
