"""`poeval provenance --recompute`: rerun the evaluation of the cells behind table numbers from the inputs
and params their stamps record, and report every number that comes out otherwise."""

from __future__ import annotations

import math
import os
import random
from pathlib import Path
from typing import Any

from poeval.errors import PoevalError
from poeval.io import read_json
from poeval.report.checks import _stamp
from poeval.report.provenance import _default_root
from poeval.report.param_diff import show as _show
from poeval.report.table_cell import _cell_samples, _cell_value, _read_tsv, resolve
from poeval.stamps import path_sha256

# Rerunning an evaluation on the same inputs repeats the same float operations; the tolerance only
# absorbs last-bit differences of multithreaded sums (the encoder), far below any printed digit.
RECOMPUTE_RTOL = 1e-9


def _number_diffs(recorded: Any, now: Any, key: str) -> list[str]:
    """Every leaf (number, string, list item) of ``now`` that ``recorded`` does not hold, by dotted key."""
    if isinstance(now, dict):
        if not isinstance(recorded, dict):
            return [f"{key}: recorded {_show(recorded)}, recomputed an object"]
        return [d for k, v in now.items() for d in _number_diffs(recorded.get(k), v, f"{key}.{k}" if key else k)]
    if isinstance(now, list) and isinstance(recorded, list) and len(now) == len(recorded):
        return [d for i, (r, v) in enumerate(zip(recorded, now)) for d in _number_diffs(r, v, f"{key}[{i}]")]
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (recorded, now))
    same = math.isclose(recorded, now, rel_tol=RECOMPUTE_RTOL) if numbers else recorded == now
    return [] if same else [f"{key}: recorded {_show(recorded)}, recomputed {_show(now)}"]


def recompute_cell(path: str | os.PathLike, root: str | os.PathLike = ".") -> tuple[list[str], dict | None]:
    """(differences, recomputed cell) of a metric cell file: :func:`poeval.metrics.evaluate.evaluate`
    rerun on the inputs and params its stamp records. An input that changed since is a difference
    (nothing is recomputed from other inputs than the cell's)."""
    from poeval.metrics.evaluate import evaluate
    from poeval.metrics.families import runtime_options

    root, path = Path(root), Path(path)
    full = path if path.is_absolute() else root / path
    if not full.is_file():
        raise PoevalError(f"metric cell not found: {full}")
    doc = read_json(full)
    st = _stamp(doc)
    if not st or "metrics" not in st.get("params", {}):
        return [f"{path}: no metric cell provenance stamp: cannot recompute"], None
    inputs = {name: root / rec["path"] for name, rec in st["inputs"].items()}
    changed = [f"{path}: input {name} {st['inputs'][name]['path']} is missing or changed since the cell was built"
               for name, p in inputs.items() if not p.exists() or path_sha256(p) != st["inputs"][name]["sha256"]]
    if changed:
        return changed, None
    params = st["params"]
    families = [f for f in params["metrics"] if f in doc]   # a diversity cell's stamp also has the semantic options
    # the caches the stamp records as inputs (the reference embeddings), handed over as the families' records say
    cached = {name: str(p) for name, p in inputs.items() if name not in ("samples", "reference")}
    now = evaluate(inputs["samples"], inputs["reference"], doc["lang"], families, options=params["metrics"],
                   runtime=runtime_options(families, cached, None),
                   bootstrap_reps=params["bootstrap_reps"], seed=params["seed"],
                   exclude_sample_from_reference=params["exclude_sample_from_reference"],
                   **{key: params[key] for key in ("subsample", "subsample_seed") if key in params})
    compared = {k: now[k] for k in ("n_poems", "n_reference", "skipped", *families)}   # not the input paths
    return [f"{path}: {d}" for d in _number_diffs(doc, compared, "")], doc | compared


def recompute(table: str | os.PathLike, row: str, column: str, *, lang: str | None = None,
              decoding: str | None = None, root: str | os.PathLike | None = None) -> list[str]:
    """Differences found by recomputing the cell files behind one table number, and the number itself
    from the recomputed cells (a hand-edited table)."""
    cell = resolve(table, row, column, lang, decoding)
    base = Path(root) if root is not None else _default_root(Path(table))
    diffs, docs = [], []
    for path, _ in _cell_samples(cell):
        found, doc = recompute_cell(path, base)
        diffs += found
        docs += [doc] if doc else []
    if docs and len(docs) == len(_cell_samples(cell)) and (value := _cell_value(cell, docs)) != cell.value:
        diffs.append(f"{cell.table}: {cell.lang}/{cell.system}/{cell.decoding} {cell.column} shows {cell.value}, "
                     f"recomputed {value}")
    return diffs


def sample_cells(table: str | os.PathLike, k: int, seed: int) -> list[tuple[str, str, str, str]]:
    """``k`` table numbers drawn at random (seeded) as (row, column, lang, decoding)."""
    path = Path(table)
    header, rows = _read_tsv(path)
    if k < 1:
        raise PoevalError(f"--sample must be at least 1, not {k}")
    cells = [(r[1], column, r[0], r[2]) for r in rows for column in header[3:]]
    return random.Random(seed).sample(cells, min(k, len(cells)))
