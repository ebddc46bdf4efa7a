"""Is a table row's difference from HUMAN real? ``<table>_tests.tsv`` next to every family table: one row
per (table row, measure) with the test, its statistic, p and the Holm-adjusted p (poeval.metrics.significance).

A model row is tested against the pooled HUMAN samples of its language (the table's HUMAN row is their
mean): their per-poem values joined, their label counts summed. Each HUMAN sample is tested against the
other HUMAN samples pooled (leave one out), a calibration check: those rows should rarely be significant.
The ``HUMAN (train)`` row (the training set against itself) is not tested."""

from __future__ import annotations

from collections import defaultdict

from poeval.errors import PoevalError
from poeval.metrics import significance
from poeval.metrics.families import family as family_record
from poeval.paths import HUMAN, TRAIN
from poeval.render import NA, fmt, write_tsv
from poeval.report.tables import dotted_get, load_table_cells

# permutations: how many random permutations gave p (all: every split was enumerated; NA: an asymptotic
# p), so that a tests table says what it was built with
COLUMNS = ["lang", "system", "decoding", "measure", "test", "statistic", "p", "p_holm", "n", "n_human", "permutations"]


def _values(cell: dict, family: str, kind: str, key: str):
    """A sample's per-poem values (list) or label counts (dict); None for a sample without valid quatrains."""
    if cell["n_poems"] == 0:
        return None
    try:
        value = dotted_get(cell[family], key)
    except (KeyError, TypeError):
        c = cell["cell"]
        raise PoevalError(f"{family} cell of {c['lang']}/{c['system']}/{c['decoding']} has no '{key}' "
                          "(written by an older poeval: rerun its metric cell)") from None
    if kind == "counts":   # no labelled quatrain (e.g. none with a topic-model word): nothing to test
        return value if value and any(value.values()) else None
    return None if value is None else [v for v in value if v is not None]


def _pool(kind: str, parts: list) -> list | dict | None:
    parts = [p for p in parts if p]
    if not parts:
        return None
    if kind == "per_poem":
        return [v for part in parts for v in part]
    pooled: dict[str, float] = defaultdict(float)
    for counts in parts:
        for label, count in counts.items():
            pooled[label] += count
    return dict(pooled)


def run_test(kind: str, sample, human, permutations: int, seed: int) -> dict:
    """One test of a sample's values against HUMAN's (both as :func:`_values` returns them)."""
    if kind == "per_poem":
        return significance.permutation_test(sample, human, permutations, seed)
    labels = sorted(set(sample) | set(human))
    return significance.chi2_homogeneity([sample.get(s, 0) for s in labels], [human.get(s, 0) for s in labels],
                                         permutations, seed)


def _p(value) -> str:
    # significant digits, not decimals: an asymptotic chi-square p can be 1e-50
    return NA if value is None else f"{value:.4g}"


def _permutations(result: dict, permutations: int) -> str:
    if result.get("test") == "chi2-permutation" or (result.get("test") == "permutation" and not result["exact"]):
        return str(permutations)
    return "all" if result.get("test") == "permutation" else NA


def tests_rows(cells: list[dict], family: str, permutations: int, seed: int) -> list[list[str]]:
    """The rows of the tests table for merged cell documents in input order: each test of the family's
    record (:class:`poeval.metrics.present.Test`; none for a family that its record shows no test of)."""
    present = family_record(family).present
    humans: dict[str, list[dict]] = defaultdict(list)
    for cell in cells:
        if cell["cell"]["system"] == HUMAN and cell["cell"]["decoding"] != TRAIN:
            humans[cell["cell"]["lang"]].append(cell)
    tested = [c for c in cells if not (c["cell"]["system"] == HUMAN and c["cell"]["decoding"] == TRAIN)]
    rows = []
    for test in present.tests if present else ():
        kind, key = test.kind, test.key
        results = []
        for cell in tested:
            c = cell["cell"]
            others = [h for h in humans[c["lang"]] if h is not cell]
            sample = _values(cell, family, kind, key)
            human = _pool(kind, [_values(h, family, kind, key) for h in others])
            results.append((c, None if not sample or not human else run_test(kind, sample, human, permutations, seed)))
        counts = [_permutations(r or {}, permutations) for _, r in results]
        rows += [row + [count] for row, count in zip(_holm_rows(test.measure, results), counts)]
    return rows


def _holm_rows(measure: str, results: list[tuple[dict, dict | None]]) -> list[list[str]]:
    """Rows of one measure; Holm's adjustment runs over the model rows, and separately over the HUMAN
    (calibration) rows, so that the number of HUMAN samples does not change a model row's p_holm."""
    adjusted: dict[int, float] = {}
    for is_human in (False, True):
        picked = [i for i, (c, r) in enumerate(results) if r is not None and (c["system"] == HUMAN) == is_human]
        adjusted |= dict(zip(picked, significance.holm([results[i][1]["p"] for i in picked]))) if picked else {}
    rows = []
    for i, (c, r) in enumerate(results):
        r = r or {}
        rows.append([c["lang"], c["system"], c["decoding"], measure, r.get("test", NA), fmt(r.get("statistic"), 4),
                     _p(r.get("p")), _p(adjusted.get(i)), str(r.get("n", NA)), str(r.get("n_human", NA))])
    return rows


def tests_table(paths: list[str], family: str, out: str, permutations: int, seed: int,
                columns: list[tuple] | None = None) -> None:
    """``<table>_tests.tsv`` from the table's cell files (``columns`` as for
    :func:`poeval.report.tables.family_table`: which families' cells are among ``paths``)."""
    cells = load_table_cells(paths, family, columns)
    write_tsv(out, COLUMNS, tests_rows(cells, family, permutations, seed))
