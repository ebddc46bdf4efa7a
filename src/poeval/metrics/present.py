"""What a metric family shows: its record's ``present`` (:class:`Present`). The family tables
(:mod:`poeval.report.tables`), their significance tests (:mod:`poeval.report.table_tests`), the n-sensitivity
table and `poeval evaluate`'s summary read it, so a new family brings its columns, tests and summary lines
with its record (docs/metrics.md "Adding a metric family")."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Column:
    """One number of a family as a table or the summary shows it: ``key`` in the family's cell section
    (``a.b`` reads ``section["a"]["b"]``), ``header`` (a table's column name, or the summary's label),
    ``decimals``, and ``percent``: shown times 100 (the cells keep fractions)."""

    key: str
    header: str
    decimals: int
    percent: bool = False

    @property
    def scale(self) -> int:
        return 100 if self.percent else 1


@dataclass(frozen=True)
class Test:
    """One significance test of a table row against HUMAN (:mod:`poeval.report.table_tests`): ``measure``
    names it in the tests table; ``kind`` ``per_poem`` reads a list of per-poem values at ``key`` (null: none
    for that poem; a permutation test of the difference in means), ``counts`` a ``{label: count}`` (a
    chi-square test of homogeneity)."""

    measure: str
    kind: str
    key: str


@dataclass(frozen=True)
class Present:
    """What the tables, the tests and `poeval evaluate`'s summary show of a family.

    ``title``: its place in the Snakemake report (the subcategory of its tables). ``columns``: its table's
    columns (the paper's table of the family, or the table named after the family). ``views``: further named
    column sets that a paper table shows (Table 8, Tables 10 and 11). ``pooled``: the measure keys whose
    expected value depends on the sample size n by definition (they read the sample as a whole: an extreme,
    a histogram, a distribution's entropy, n-grams or embeddings of the whole set, each quatrain's nearest
    neighbour among the n - 1 others), rather than average a per-quatrain value, whose n only widens the
    interval; the captions and the common-n companions name them, the n-sensitivity table flags them.
    ``summary``: the headline lines of `poeval evaluate` (label, decimals, percent). ``tests``: its
    significance tests. ``caption``: the caption of its table in the Snakemake report where
    ``workflow/report`` has no ``<table>.rst`` of its own. ``decodings_table``: a table named after the
    family also gets ``<family>_decodings``, one row per decoding config."""

    title: str
    columns: tuple[Column, ...]
    views: dict[str, tuple[Column, ...]] = field(default_factory=dict)
    pooled: frozenset[str] = frozenset()
    summary: tuple[Column, ...] = ()
    tests: tuple[Test, ...] = ()
    caption: str = ""
    decodings_table: bool = False
