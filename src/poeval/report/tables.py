"""Tables of the paper, assembled from per-cell JSON files. Formatting is fixed so that the same
cells always give byte-identical TSVs."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from poeval.errors import PoevalError
from poeval.generators.checkpoint import port_arch
from poeval.generators.endpoint import read
from poeval.generators.endpoint.connection import public_url
from poeval.io import read_json, read_jsonl
from poeval.metrics.families import FAMILIES, family as family_record
from poeval.metrics.present import Present
from poeval.paths import HUMAN, TRAIN        # TRAIN: decoding label of the HUMAN cell of the whole training set
from poeval.render import NA, fmt, write_tsv
from poeval.text import tokens

HUMAN_TRAIN = f"{HUMAN} ({TRAIN})"
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
    """Table 4: one row per (lang, system, model directory) from its ``training_log.json``; a samples
    system's item names the ``.stats.json`` of one imported file instead (:func:`_supplied_row`)."""
    rows = []
    for lang, system, model_dir in models:
        if model_dir.endswith(".stats.json"):
            rows.append(_supplied_row(lang, system, model_dir))
            continue
        if port_arch(model_dir) == "endpoint":
            rows.append(_endpoint_row(lang, system, model_dir))
            continue
        path = Path(model_dir) / "training_log.json"
        if not path.exists():
            raise PoevalError(f"{path}: no training log (is {model_dir} a poeval checkpoint?)")
        log = read_json(path)
        cfg, summary = log.get("model_cfg", {}), log.get("summary", {})
        rows.append([lang, system, str(cfg.get("arch", NA)), str(cfg.get("size", NA)), str(cfg.get("init", NA)),
                     "yes" if cfg.get("conditioned") else "no", fmt(summary.get("n_params"), 0),
                     fmt(summary.get("vocab_size"), 0), fmt(summary.get("steps"), 0),
                     fmt(summary.get("best_dev_loss"), 3), _base_label(cfg, summary)])
    # throughput (tokens/s) stays in training_log.json: a table must not change between identical runs
    write_tsv(out, ["lang", "system", "arch", "size", "init", "conditioned", "parameters", "vocab", "steps",
                    "best_dev_loss", "base"], rows)


SUPPLIED = "samples supplied by the user"


def _supplied_row(lang: str, system: str, stats_path: str) -> list[str]:
    """A samples system's Table 4 row: no checkpoint, so the columns of one are NA; ``base`` says where the
    samples come from (the file, its decoding name and its sha256, as the import stamped them)."""
    stats = read_json(stats_path)
    source = stats["provenance"]["inputs"]["source"]
    decoding = Path(stats_path).name.removesuffix(".stats.json")
    base = f"{SUPPLIED} ({decoding}): {source['path']} sha256 {source['sha256'][:12]}"
    return [lang, system, "samples", NA, NA, NA, NA, NA, NA, NA, base]


def _endpoint_row(lang: str, system: str, model_dir: str) -> list[str]:
    """A model behind an endpoint: no checkpoint here, so the columns of one are NA; ``base`` names the model
    and where it is served, as rule train found it (:mod:`poeval.generators.endpoint`)."""
    endpoint = read(model_dir)
    conditioned = read_json(Path(model_dir) / "training_log.json")["provenance"]["params"]["model"].get("conditioned")
    base = f"{endpoint.model} at {public_url(endpoint.base_url)} ({endpoint.api})"
    return [lang, system, "endpoint", NA, NA, "yes (prompt)" if conditioned else "no", NA, NA, NA, NA, base]


def _base_label(cfg: dict, summary: dict) -> str:
    """What a fine-tuned model started from (``-`` from scratch): its name and, for a model imported from a
    GGUF file, what its weights are (e.g. dequantised 4-bit weights of an instruction-tuned release)."""
    if cfg.get("init") != "pretrained":
        return "-"
    base = summary.get("base") or {}
    name = str(base.get("name_or_path") or cfg.get("name_or_path") or NA)
    lora = " + LoRA" if cfg.get("lora") else ""
    return f"{name}{lora}: {base['weights']}" if base.get("weights") else name + lora


def sampling_table(samples: list[tuple[str, str, str, str]], out: str) -> None:
    """Sampling table: one row per (lang, system, decoding, stats JSON path) sample, from the stats that
    :func:`poeval.generators.sampling.sample_loop` writes: quatrains requested, generations attempted,
    valid quatrains, the validity rate and the share of distinct quatrains among the valid ones (both in
    percent; a contrastive config that repeats itself shows here below 100), then the failure reasons
    (``reason=count``, space-separated; ``-`` for none), then for a chat sample how many answers each
    clean-up rule changed (``cleaned:<rule>=count``, :mod:`poeval.generators.chat_answers`). A sample drawn
    by the paper's procedure requests no count (``NA``), and its validity is kept chunks per generation
    (``sampling.procedure``)."""
    rows = []
    for lang, system, decoding, path in samples:
        st = read_json(path)
        cleaned = [(f"cleaned:{rule}", k) for rule, k in (st.get("cleaned") or {}).items()]
        counts = sorted(st["reasons"].items()) + cleaned
        reasons = " ".join(f"{reason}={count}" for reason, count in counts) or "-"
        rows.append([lang, system, decoding, fmt(st["requested"], 0), str(st["attempts"]), str(st["valid"]),
                     fmt(_scaled(st["validity_rate"] if st["attempts"] else None, 100), 2),
                     fmt(_scaled(st.get("distinct_share"), 100), 2), reasons])
    write_tsv(out, ["lang", "system", "decoding", "requested", "attempts", "valid", "validity_pct", "distinct_pct",
                    "reasons"], rows)


# The columns of a family table come from the families' records (poeval.metrics.present): a column is
# (key in the cell JSON, column name, digits, scale). A key is read in the table's family section;
# ``family:key`` reads another family's section (Table 8).
Columns = list[tuple[str, str, int, float]]


@dataclass(frozen=True)
class Shows:
    """A family table (data about the table; its columns are the records'): ``family``, whose cells give its
    rows and its tests; ``views``: the column sets it shows, each ``family:view`` of a record's ``views``
    (none: the family's own columns); ``every``: a row per decoding config (the paper's appendix; the others
    show each system under its first decoding config only); ``human_train``: the paper's HUMAN row, the
    whole training set against itself, next to the HUMAN samples; ``repeats``: the table whose rows it
    holds when the run has one decoding config."""

    family: str
    views: tuple[str, ...] = ()
    every: bool = False
    human_train: bool = False
    repeats: str | None = None


# The paper's tables of the metric families, as numbered in the paper. Table 10 shows the poetry-specific
# systems only, Table 11 one system (``tables.table11.system``); the workflow picks their cells.
PAPER_FAMILY_TABLES = {
    "table2": Shows("lexical"), "table3": Shows("semantic"), "table5": Shows("length", human_train=True),
    "memorization": Shows("memorization"), "table6": Shows("rhyme", human_train=True),
    "table10": Shows("rhyme", ("rhyme:real_rhymes",), every=True),
    "table11": Shows("rhyme", ("rhyme:real_rhymes",), every=True),
    "table7": Shows("memorization", every=True, repeats="memorization"),
    # m0.7 (share of memorized quatrains) and the across-sample max similarity
    "table8": Shows("semantic", ("memorization:quatrain", "semantic:across"), every=True),
    "table9": Shows("length", every=True, repeats="table5"), "table12": Shows("lexical", every=True, repeats="table2"),
}


def _own_tables() -> dict[str, Shows]:
    """A table named after each family whose columns no paper table shows (not in the paper: docs/beyond-the-paper.md
    "Beyond the paper"), and ``<family>_decodings`` beside it where its record asks for one."""
    shown = {s.family for s in PAPER_FAMILY_TABLES.values() if not s.views and not s.every}
    out: dict[str, Shows] = {}
    for name, record in FAMILIES.items():
        if name not in shown and record.present is not None:
            out[name] = Shows(name)
            if record.present.decodings_table:
                out[f"{name}_decodings"] = Shows(name, every=True, repeats=name)
    return out


FAMILY_TABLES = PAPER_FAMILY_TABLES | _own_tables()
# Table file name -> metric family; the tables with a row for every decoding config, with the HUMAN (train) row,
# and those that repeat another table's rows at one decoding config
FAMILY_OF_TABLE = {name: s.family for name, s in FAMILY_TABLES.items()}
DECODING_TABLES = {name for name, s in FAMILY_TABLES.items() if s.every}
HUMAN_TRAIN_TABLES = {name for name, s in FAMILY_TABLES.items() if s.human_train}
REPEATS_AT_ONE_DECODING = {name: s.repeats for name, s in FAMILY_TABLES.items() if s.repeats}


def _present(name: str) -> Present:
    present = family_record(name).present
    if present is None:
        raise PoevalError(f"metric family {name!r}: its record shows nothing (no `present`): no table of it")
    return present


def own_columns(name: str, view: str | None = None, prefix: str = "") -> Columns:
    """The columns of family ``name``'s table (with ``view``: that column set of its record), keys after ``prefix``."""
    present = _present(name)
    return [(prefix + c.key, c.header, c.decimals, c.scale) for c in (present.views[view] if view else present.columns)]


def table_columns(table: str) -> Columns:
    """The columns of a family table: each view's from its family's record, or the family's own."""
    shows = FAMILY_TABLES[table]
    if not shows.views:
        return own_columns(shows.family)
    columns: Columns = []
    for item in shows.views:
        name, view = item.split(":")
        columns += own_columns(name, view, "" if name == shows.family else f"{name}:")
    return columns


def caption_params(table: str) -> dict[str, str]:
    """A table named after a family whose record carries caption text: ``{"caption": text}``, which its rule
    passes to the generic caption (``workflow/report/family.rst``); {} for a table with a caption file of its
    own (``workflow/report/<table>.rst``: the paper's and those whose record carries none)."""
    caption = "" if table in PAPER_FAMILY_TABLES else _present(FAMILY_TABLES[table].family).caption
    return {"caption": caption} if caption else {}


def is_pooled(key: str, family: str) -> bool:
    """Whether a column key of a family's table depends on n by definition (its record's ``pooled``)."""
    section, key = family_key(key, family)
    return key in _present(section).pooled


def pooled_columns(table: str) -> list[str]:
    """The column names of a family table whose numbers depend on n by definition (the records' ``pooled``)."""
    return [name for key, name, *_ in table_columns(table) if is_pooled(key, FAMILY_OF_TABLE[table])]


def common_n(sizes: list[int | None], given: int | str | None) -> int | None:
    """The n of a table's common-n companion (params ``tables.common_n.n`` as ``given``): a number as given;
    ``auto``: the smallest of the rows' configured sample sizes (``sizes``; None where a row's size is not
    configured: the training set, a samples system's files, the paper's sampling procedure); null: None (no
    companion). An ``auto`` table without any configured size gets None too."""
    if given != "auto":
        return given
    known = [size for size in sizes if size is not None]
    return min(known) if known else None


COMMON_N = "_common_n"   # the suffix of a family table's companion at a common n


def common_n_name(table: str) -> str:
    """The file name of a family table's common-n companion: ``<table>_common_n`` (:data:`COMMON_N`)."""
    return f"{table}{COMMON_N}"


def family_key(key: str, family: str) -> tuple[str, str]:
    """(family section, key in it) of a column key."""
    other, sep, rest = key.partition(":")
    return (other, rest) if sep else (family, key)


def _families(family: str, columns: list[tuple]) -> list[str]:
    return list(dict.fromkeys([family] + [family_key(key, family)[0] for key, *_ in columns]))


def dotted_get(result: dict, key: str):
    """``result[key]``, where ``a.b`` reads ``result["a"]["b"]``."""
    for part in key.split("."):
        result = result[part]
    return result


def cell_value(cell: dict, family: str, key: str):
    """A column's number in a (merged) cell document (key ``n_poems``: its valid quatrains); None for a
    sample without valid quatrains (its scheme shares, say, would otherwise read 0)."""
    if key == "n_poems":
        return cell["n_poems"]
    section, key = family_key(key, family)
    if section not in cell:
        raise PoevalError(f"no '{section}' cell for {'/'.join(cell['cell'].values())} among the inputs")
    return None if cell["n_poems"] == 0 else dotted_get(cell[section], key)


def column_values(cells: list[dict], family: str, key: str, scale: float = 1) -> list:
    """A column's scaled number in each cell of one row (several for the HUMAN samples)."""
    return [_scaled(cell_value(cell, family, key), scale) for cell in cells]


def row_number(values: list, digits: int) -> str:
    """A row's number as the table prints it: the mean of its cells' values."""
    return fmt(_mean(values), digits)


def n_range(values: list[int]) -> str:
    """The n column: a cell's valid quatrains; for several samples (HUMAN) their range when they differ
    ("999-1000"), so that a sample short of the sample size is never hidden by a rounded mean."""
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"


def _load_cells(paths: list[str], families: list[str]) -> list[dict]:
    """Cell documents in input order; the cells of one sample (same lang, system, decoding) from
    different families are merged into one document."""
    merged: dict[tuple, dict] = {}
    for path in paths:
        cell = read_json(path)
        family = next((f for f in families if f in cell), None)
        if family is None or "cell" not in cell:
            raise PoevalError(f"{path}: not a metric cell of {' or '.join(repr(f) for f in families)}")
        c = cell["cell"]
        merged.setdefault((c["lang"], c["system"], c["decoding"]), {"cell": c, "n_poems": cell["n_poems"]})[family] = \
            cell[family]
    return list(merged.values())


def load_table_cells(paths: list[str], family: str, columns: list[tuple] | None = None) -> list[dict]:
    """The cells of a family table (``columns`` as for :func:`family_table`: which families' cells are
    among ``paths``), one merged document per sample, in input order."""
    return _load_cells(paths, _families(family, columns or own_columns(family)))


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def _scaled(value, scale):
    return None if value is None else value * scale


def _row_of(cell: dict) -> tuple[str, str, str]:
    """(lang, system label group, decoding) of a cell's row: a language's HUMAN samples share one row;
    the whole training set (decoding ``train``) is a row of its own, the paper's HUMAN."""
    c = cell["cell"]
    if c["system"] != HUMAN:
        return c["lang"], c["system"], c["decoding"]
    return c["lang"], HUMAN_TRAIN if c["decoding"] == TRAIN else HUMAN, "-"


def family_table(paths: list[str], family: str, out: str, ci_out: str | None = None,
                 columns: list[tuple] | None = None) -> None:
    """One row per (lang, system, decoding) in input order; the HUMAN sample cells of a language are
    averaged into one row, and a HUMAN cell of the whole training set gets the row ``HUMAN (train)``.
    ``ci_out``: long-form table with, per number, the bootstrap 95 % interval of a model cell, or the
    spread (std, min, max) over the HUMAN samples. ``columns`` defaults to the family's own (its record's);
    a ``family:key`` column reads cells of that family, given among ``paths``."""
    columns = columns or own_columns(family)
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for cell in load_table_cells(paths, family, columns):
        groups[_row_of(cell)].append(cell)
    rows, long_rows = [], []
    for (lang, system, decoding), cells in groups.items():
        label = f"{system} (mean of {len(cells)})" if system == HUMAN and len(cells) > 1 else system
        row = [lang, label, decoding, n_range(column_values(cells, family, "n_poems"))]
        for key, name, digits, scale in columns:
            values = column_values(cells, family, key, scale)
            row.append(row_number(values, digits))
            long_rows.append([lang, system, decoding, name, row_number(values, digits)]
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
        section, key = family_key(key, family)
        ci = cells[0][section].get("ci", {}).get(key)
        low, high = (ci[0] * scale, ci[1] * scale) if ci else (None, None)
        return [fmt(low, digits), fmt(high, digits), NA, NA, NA]
    present = [v for v in values if v is not None]
    if not present:
        return [NA] * 5
    return [NA, NA, fmt(float(np.std(present)), digits), fmt(min(present), digits), fmt(max(present), digits)]


def scope_note(table: str, decodings: list[str], systems: list[str]) -> str:
    """A caption's sentence on what a table holds in this run when that is less than its title says: Table 10
    without a poetry-specific system holds HUMAN only; a decoding table with one decoding config repeats
    another table (``decodings``: the run's; ``systems``: those the table shows). Empty otherwise."""
    if table == "table10" and not systems:
        return ("In this run no system is poetry-specific (arch deepspeare or sa in ``systems``): the table holds "
                "only the HUMAN rows.")
    other = REPEATS_AT_ONE_DECODING.get(table)
    if other is None or len(decodings) != 1:
        return ""
    name = f"Table {other.removeprefix('table')}" if other.startswith("table") else f"the {other} table"
    train = ", less its HUMAN (train) row" if other in HUMAN_TRAIN_TABLES else ""
    return (f"This run has one decoding config ({decodings[0]}): the rows are {name}'s (``{other}.tsv``{train}); "
            f"a row per decoding config needs more in ``decodings`` (config/systems/grid.yaml runs all twelve).")


def table_families(table: str) -> list[str]:
    """The metric families whose cells a table reads: its own, then those of its ``family:key`` columns."""
    return _families(FAMILY_OF_TABLE[table], table_columns(table))


# --- places in the Snakemake report ---------------------------------------------------------------------
# Snakemake sorts categories by name: the numbers put the paper's tables and figures first.
REPORT_CATEGORIES = ("1 · The paper's tables", "2 · The paper's figures", "3 · Beyond the paper",
                     "4 · Intervals, tests, common n", "5 · BPoMP", "6 · Training curves")
PAPER_TABLES = ("table1", "table2", "table3", "table4", "table5", "table6", "table7", "table8", "table9", "table10",
                "table11", "table12", "memorization")


OTHER_SUBCATEGORIES = {"sampling": "Samples", "style_adherence": "Style adherence", "n_sensitivity": "Sample size",
                       "similarity": "Similarity between rows", "quality_frontier": "Quality"}


def numbered_label(name: str) -> str:
    """A label that sorts by number as text does: ``Table 02`` before ``Table 10``."""
    stem, digits = re.fullmatch(r"(.*?)(\d*)", name).groups()
    return f"{stem.capitalize()} {int(digits):02d}" if digits else name.replace("_", " ").capitalize()


def report_place(name: str, kind: str = "table") -> dict:
    """``category``, ``subcategory`` and ``labels`` of a table (``kind`` table, intervals, tests or common n) in
    the Snakemake report: the paper's tables in its category by metric family, the others beyond the paper,
    the companions of a table (any other kind) in their own; labels numbered so that Table 2 comes before
    Table 10."""
    family = FAMILY_OF_TABLE.get(name)
    subcategory = _present(family).title if family else OTHER_SUBCATEGORIES.get(name, "Data and models")
    if kind != "table":
        return {"category": REPORT_CATEGORIES[3], "subcategory": subcategory, "labels": {"table": numbered_label(name),
                                                                                       "kind": kind}}
    category = REPORT_CATEGORIES[0] if name in PAPER_TABLES else REPORT_CATEGORIES[2]
    return {"category": category, "subcategory": subcategory, "labels": {"table": numbered_label(name)}}
