"""The jobs of the similarity between rows (:mod:`poeval.metrics.similarity`): one cell per pair of rows of a
language (rule similarity_cell, `poeval similarity cell`), and the table and heatmap of every cell (rules
similarity_table and similarity_figure, `poeval similarity table|figure`).

A row is HUMAN (its first sample) or a system under the first decoding config, in table order: HUMAN, then
the run's systems in params order. Every unordered pair of different rows is a cell; the diagonal holds one
cell, HUMAN against HUMAN: the first sample against the second, less the quatrains the first also holds (the
baseline). Built from the resolved params and the rule's wildcards; the paths stay the rule's inputs and outputs.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from poeval import paths
from poeval.config import for_lang
from poeval.errors import PoevalError
from poeval.generators import registry
from poeval.jobs.base import Job, Step, stamp_beside
from poeval.paths import HUMAN, human_id
from poeval.sections import Section


@dataclasses.dataclass(frozen=True)
class Row(Section):
    """One side of a cell: ``row`` (HUMAN or a system) and the sample it reads (a HUMAN sample or a decoding)."""

    WHERE = "similarity row"
    row: str
    decoding: str


@dataclasses.dataclass(frozen=True)
class SimilarityCellJob(Job):
    """Rows ``a`` and ``b`` of ``lang``; ``baseline``: b less the quatrains a holds (HUMAN against HUMAN);
    ``ngram``, ``seed``: params ``metrics.similarity``; ``tokens``: the lexical family's tokenizer;
    ``threshold``, ``autojunk``: the memorization family's quatrain match; ``encoder``, ``backend``,
    ``batch_size``: the semantic family's; ``bootstrap_reps``, ``bootstrap_seed``: params ``metrics.bootstrap``."""

    KIND = "similarity-cell"
    lang: str
    a: Row
    b: Row
    baseline: bool
    ngram: int
    seed: int
    tokens: str
    threshold: float
    autojunk: bool
    encoder: str
    backend: str
    batch_size: int
    bootstrap_reps: int
    bootstrap_seed: int


def rows(params: dict, lang: str) -> list[Row]:
    """The rows of ``lang`` in table order: HUMAN's first sample, then each system (of params
    ``metrics.similarity.systems`` where it names some) that runs the first decoding config there (a samples
    system: its first file of that name, or its first file)."""
    out = [Row(HUMAN, human_id(0))]
    for system in _systems(params):
        if not registry.has_lang(params, system, lang):
            continue
        decodings = registry.system_decodings(params, system, params["decodings"][:1], lang)
        if decodings:
            out.append(Row(system, decodings[0]))
    return out


def _systems(params: dict) -> list[str]:
    """The run's systems that get a row: all of them, or those params ``metrics.similarity.systems`` names (a
    grid's 136 pairs of 17 rows cost an encoder run each); a name that is no system of ``models`` is refused."""
    chosen = params["metrics"]["similarity"]["systems"]
    if chosen is None:
        return list(params["systems"])
    unknown = [name for name in chosen if name not in params["models"]]
    if unknown:
        raise PoevalError(f"metrics.similarity.systems: {', '.join(map(repr, unknown))} is no system of `models` "
                          f"(systems of this run: {', '.join(params['systems'])})")
    return [system for system in params["systems"] if system in chosen]


def pairs(params: dict, lang: str) -> list[tuple[str, str]]:
    """(row a, row b) of every cell of ``lang``: HUMAN against HUMAN (with two HUMAN samples), then each pair
    of different rows, a before b in table order."""
    names = [row.row for row in rows(params, lang)]
    diagonal = [(HUMAN, HUMAN)] if params["human"]["n_samples"] >= 2 else []
    return diagonal + [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]


def cell_rows(params: dict, lang: str, row_a: str, row_b: str) -> tuple[Row, Row]:
    """The two sides of a cell: on the diagonal HUMAN's first and second samples."""
    by_name = {row.row: row for row in rows(params, lang)}
    for name in (row_a, row_b):
        if name not in by_name:
            raise PoevalError(f"similarity cell {lang}/{row_a}~{row_b}: {name!r} is not a row of this run "
                              f"(rows: {', '.join(by_name)})")
    if row_a == row_b:
        if row_a != HUMAN:
            raise PoevalError(f"similarity cell {lang}/{row_a}~{row_b}: only HUMAN has a diagonal cell")
        return by_name[HUMAN], Row(HUMAN, human_id(1))
    return by_name[row_a], by_name[row_b]


def similarity_cell_job(params: dict, lang: str, row_a: str, row_b: str) -> SimilarityCellJob:
    """The job of rule similarity_cell for ``lang`` and its two rows."""
    a, b = cell_rows(params, lang, row_a, row_b)
    metrics = params["metrics"]
    semantic, memorization = metrics["semantic"], metrics["memorization"]
    return SimilarityCellJob(lang, a, b, row_a == row_b, metrics["similarity"]["ngram"], metrics["similarity"]["seed"],
                             metrics["lexical"]["tokens"], memorization["quatrain"], memorization["autojunk"],
                             for_lang(semantic["encoder"], lang), semantic["backend"], semantic["batch_size"],
                             metrics["bootstrap"]["reps"], metrics["bootstrap"]["seed"])


def samples_of(job: SimilarityCellJob) -> tuple[str, str]:
    """The sample files of a workflow cell's two rows."""
    return tuple(paths.cell_samples(job.lang, row.row, row.decoding) for row in (job.a, job.b))


def _embeddings(poems: list[dict], job: SimilarityCellJob, cached: np.ndarray | None, train_rows: dict,
                model) -> np.ndarray:
    """Embeddings of ``poems``: a quatrain of the training split from its cached row, the others encoded."""
    from poeval.metrics import semantic

    found = [train_rows.get(tuple(p["lines"])) if cached is not None else None for p in poems]
    todo = [i for i, row in enumerate(found) if row is None]
    out = np.zeros((len(poems), cached.shape[1] if cached is not None else 0), dtype=np.float32)
    if todo:
        fresh = semantic.embed_quatrains([poems[i]["lines"] for i in todo], model(), batch_size=job.batch_size,
                                         progress=False)
        out = out if out.shape[1] else np.zeros((len(poems), fresh.shape[1]), dtype=np.float32)
        out[todo] = fresh
    kept = [i for i, row in enumerate(found) if row is not None]
    if kept:
        out[kept] = cached[[found[i] for i in kept]]
    return out


def run(job: SimilarityCellJob, a_path: str, b_path: str, reference: str | None, embeddings: str | None,
        out: str, threads: int | None = None) -> dict:
    """Compare the samples ``a_path`` and ``b_path`` (:func:`poeval.metrics.similarity.compare`) and write the cell
    to ``out`` with its stamp. ``embeddings``: the training split ``reference``'s cached embeddings (the rule's),
    which give a HUMAN quatrain's embedding without an encoder run."""
    from poeval.io import write_json
    from poeval.metrics import lexical, semantic, similarity
    from poeval.poem_files import read_poems
    from poeval.stamps import stamp

    if threads:
        import torch

        torch.set_num_threads(threads)
    a, _ = read_poems(a_path, allow_empty=True, name="a")
    b, _ = read_poems(b_path, allow_empty=True, name="b")
    b = similarity.without(b, a) if job.baseline else b
    a, b = similarity.common_draw(a, b, job.seed)
    model = functools.cache(lambda: semantic.load_encoder(job.encoder, backend=job.backend))
    cached, train_rows = None, {}
    if embeddings and reference:
        usable, _ = read_poems(reference, name="reference")
        cached = semantic.load_embeddings(embeddings, encoder=job.encoder, backend=job.backend, input_path=reference)
        semantic.check_rows(cached, embeddings, [p["lines"] for p in usable], model(), backend=job.backend)
        for i, p in enumerate(usable):
            train_rows.setdefault(tuple(p["lines"]), i)
    emb_a, emb_b = (_embeddings(side, job, cached, train_rows, model) for side in (a, b))
    result = similarity.compare([p["lines"] for p in a], [p["lines"] for p in b], emb_a, emb_b,
                                tokenize=lexical.TOKENIZERS[job.tokens], ngram=job.ngram, threshold=job.threshold,
                                autojunk=job.autojunk, reps=job.bootstrap_reps, seed=job.bootstrap_seed,
                                workers=threads or 1)
    result = {"lang": job.lang, "a": job.a.to_dict(), "b": job.b.to_dict(), "baseline": job.baseline,
              "encoder": semantic.canonical_encoder_name(job.encoder)} | result
    result["provenance"] = stamp({"a": a_path, "b": b_path, "reference": reference, "embeddings": embeddings},
                                 job.recorded())
    write_json(out, result)
    return result


@dataclasses.dataclass(frozen=True)
class SimilarityTableJob(Job):
    """The table or heatmap of every cell: ``rows``, each language's rows in table order."""

    KIND = "similarity-table"
    rows: dict[str, list[str]]


def similarity_table_job(params: dict) -> SimilarityTableJob:
    """The job of rules similarity_table and similarity_figure."""
    return SimilarityTableJob({lang: [row.row for row in rows(params, lang)] for lang in params["languages"]})


def cells(params: dict) -> list[str]:
    """Every cell of the run, per language in :func:`pairs` order."""
    return [paths.similarity_cell(lang, a, b) for lang in params["languages"] for a, b in pairs(params, lang)]


def enabled(params: dict, w: dict | None = None) -> bool:
    return bool(params["metrics"]["similarity"]["enabled"])


CELL_STEPS = (Step("similarity_cell", similarity_cell_job, paths.similarity_cell, applies=enabled),)
REPORT_STEPS = tuple(Step(f"similarity_{kind}", similarity_table_job, stamp_beside(functools.partial(path, "similarity")),
                          functools.partial(path, "similarity"), applies=enabled)
                     for kind, path in (("table", paths.table), ("figure", paths.figure)))
