"""Tables of the paper, assembled from per-cell JSON files. Formatting is fixed so that the same
cells always give byte-identical TSVs."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from .errors import PoevalError
from .io import atomic_write, read_json, read_jsonl
from .rhyme import SCHEMES_4
from .text import tokens

HUMAN = "HUMAN"
NA = "NA"


def fmt(value, digits: int) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return NA
    return f"{value:.{digits}f}"


def write_tsv(out: str | Path, header: list[str], rows: list[list[str]]) -> None:
    with atomic_write(out) as handle:
        handle.write("\t".join(header) + "\n")
        for row in rows:
            handle.write("\t".join(row) + "\n")


def _split_size(files: list[str]) -> tuple[list[int], set[str]]:
    """[files, poems, verses, tokens] and the set of lower-cased types of a split's files."""
    poems = verses = n_tokens = 0
    types: set[str] = set()
    for path in files:
        for record in read_jsonl(path):
            poems += 1
            verses += len(record["lines"])
            toks = tokens(" ".join(record["lines"]), lower=True)
            n_tokens += len(toks)
            types.update(toks)
    return [len(files), poems, verses, n_tokens], types


def _size_row(lang: str, split: str, counts: list[int], types: set[str]) -> list[str]:
    files, poems = counts[:2]
    label = split if files == 1 else f"{split} ({files} x {poems // files})"
    return [lang, label] + [str(c) for c in counts[1:]] + [str(len(types))]


def table1(splits: dict[str, dict[str, list[str]]], out: str) -> None:
    """Table 1: sizes per language and split. ``splits[lang][split]`` lists the JSONL files of a split; a poem
    is a quatrain, except in the pseudo-sonnet splits (14 verses each). A split ``X-dev`` (or ``dev``)
    that follows ``X-train`` (``train``) gets a ``X-total`` (``total``) row below it, as in the paper:
    the sum of both, with the union of their types."""
    rows = []
    for lang, by_split in splits.items():
        sizes = {split: _split_size(files) for split, files in by_split.items()}
        for split, (counts, types) in sizes.items():
            rows.append(_size_row(lang, split, counts, types))
            stem = split[: -len("dev")] if split.endswith("dev") else None
            if stem is not None and stem + "train" in sizes:
                train_counts, train_types = sizes[stem + "train"]
                total = [1] + [x + y for x, y in zip(train_counts[1:], counts[1:])]
                rows.append(_size_row(lang, stem + "total", total, train_types | types))
    write_tsv(out, ["lang", "split", "poems", "verses", "tokens", "types"], rows)


def table4(models: list[tuple[str, str, str]], out: str) -> None:
    """Table 4: one row per (lang, system, model directory) from its ``training_log.json``."""
    rows = []
    for lang, system, model_dir in models:
        path = Path(model_dir) / "training_log.json"
        if not path.exists():
            raise PoevalError(f"{path}: no training log (is {model_dir} a poeval checkpoint?)")
        log = read_json(path)
        cfg, summary = log.get("model_cfg", {}), log.get("summary", {})
        rows.append([lang, system, str(cfg.get("arch", NA)), str(cfg.get("size", NA)), str(cfg.get("init", NA)),
                     "yes" if cfg.get("conditioned") else "no", fmt(summary.get("n_params"), 0),
                     fmt(summary.get("vocab_size"), 0), fmt(summary.get("steps"), 0),
                     fmt(summary.get("best_dev_loss"), 3)])
    # throughput (tokens/s) stays in training_log.json: a table must not change between identical runs
    write_tsv(out, ["lang", "system", "arch", "size", "init", "conditioned", "parameters", "vocab", "steps",
                    "best_dev_loss"], rows)


# Columns of each family's table: (key in the cell JSON, column name, digits, scale). Fractions are
# shown in percent, as in the paper.
TABLES = {
    "length": [("mean", "mean", 2, 1), ("median", "median", 2, 1), ("std", "std", 2, 1), ("min", "min", 2, 1),
               ("max", "max", 2, 1), ("hist_intersection", "hist_intersection", 4, 1),
               ("wasserstein", "wasserstein", 3, 1)],
    "lexical": [("attr", "attr_pct", 2, 100), ("mattr", "mattr_pct", 2, 100), ("mtld", "mtld", 2, 1)],
    "semantic": [("within", "within_pct", 2, 100), ("across", "across_pct", 2, 100)],
    "memorization": [("quatrain", "quatrain_pct", 2, 100), ("couplet", "couplet_pct", 2, 100),
                     ("verse", "verse_pct", 2, 100)],
    "rhyme": [("entropy", "entropy", 3, 1), ("kl", "kl", 3, 1), ("cross_entropy", "cross_entropy", 3, 1)]
             + [(f"distribution.{s}", f"{s}_pct", 2, 100) for s in SCHEMES_4],
}
# Tables that show other columns of a family than its main table.
TABLE_COLUMNS = {
    "table10": [("rhyme_pairs_per_poem", "rhyme_pairs_per_poem", 3, 1), ("real_rhymes", "real_rhymes_pct", 2, 100),
                ("repetitions", "repetitions_pct", 2, 100)],
}


def _get(result: dict, key: str):
    """``result[key]``, where ``a.b`` reads ``result["a"]["b"]``."""
    for part in key.split("."):
        result = result[part]
    return result


def _load_cells(paths: list[str], family: str) -> list[dict]:
    cells = []
    for path in paths:
        cell = read_json(path)
        if family not in cell or "cell" not in cell:
            raise PoevalError(f"{path}: not a '{family}' metric cell")
        cells.append(cell)
    return cells


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def _scaled(value, scale):
    return None if value is None else value * scale


def family_table(paths: list[str], family: str, out: str, ci_out: str | None = None,
                 columns: list[tuple] | None = None) -> None:
    """One row per (lang, system, decoding) in input order; the HUMAN cells of a language are averaged
    into one row, as in the paper. ``ci_out``: long-form table with, per number, the bootstrap 95 %
    interval of a model cell, or the spread (std, min, max) over the HUMAN samples. ``columns``
    defaults to the family's main table (:data:`TABLES`)."""
    columns = columns or TABLES[family]
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for cell in _load_cells(paths, family):
        c = cell["cell"]
        groups[(c["lang"], c["system"], "-" if c["system"] == HUMAN else c["decoding"])].append(cell)
    rows, long_rows = [], []
    for (lang, system, decoding), cells in groups.items():
        label = f"{system} (mean of {len(cells)})" if system == HUMAN and len(cells) > 1 else system
        row = [lang, label, decoding, fmt(_mean([cell["n_poems"] for cell in cells]), 0)]
        for key, name, digits, scale in columns:
            values = [_scaled(_get(cell[family], key), scale) for cell in cells]
            row.append(fmt(_mean(values), digits))
            long_rows.append([lang, system, decoding, name, fmt(_mean(values), digits)]
                             + _spread(cells, family, key, values, scale, digits))
        rows.append(row)
    write_tsv(out, ["lang", "system", "decoding", "n"] + [name for _, name, _, _ in columns], rows)
    if ci_out:
        write_tsv(ci_out, ["lang", "system", "decoding", "metric", "value", "ci_low", "ci_high", "sd", "min", "max"],
                  long_rows)


def _spread(cells, family, key, values, scale, digits) -> list[str]:
    """[ci_low, ci_high, sd, min, max]: a single cell gives its bootstrap interval, several (HUMAN)
    samples their spread."""
    if len(cells) == 1:
        ci = cells[0][family].get("ci", {}).get(key)
        low, high = (ci[0] * scale, ci[1] * scale) if ci else (None, None)
        return [fmt(low, digits), fmt(high, digits), NA, NA, NA]
    present = [v for v in values if v is not None]
    if not present:
        return [NA] * 5
    return [NA, NA, fmt(float(np.std(present)), digits), fmt(min(present), digits), fmt(max(present), digits)]


# Table file name -> metric family, as numbered in the paper.
FAMILY_OF_TABLE = {"table2": "lexical", "table3": "semantic", "table5": "length", "memorization": "memorization",
                   "table6": "rhyme", "table10": "rhyme",
                   "table7": "memorization", "table8": "semantic", "table9": "length", "table12": "lexical"}
# Tables with a row for every decoding config (the paper's appendix); the others show each system under
# its first decoding config only.
DECODING_TABLES = {"table7", "table8", "table9", "table12"}
