"""The jobs of the data stage and of what the workflow imports: what `poeval quatrains`, `rhyme`, `split`,
`sonnets`, `word2vec`, `import`, `import-samples` and `curve` receive (rules quatrains, rhyme_labels, split,
pseudo_sonnets, word2vec, import_pretrained, import_samples, training_curve), one record each.

Built from the resolved params (:func:`poeval.params.resolve`): each params section a job holds is its typed
record (:class:`poeval.sections.Section`), defaults filled, and the command hands that record to the library
function, which records :meth:`~poeval.jobs.base.Job.recorded` in the output's stamp. `poeval stale` and
`poeval provenance` rebuild the job with the same builder to compare it with the stamp.
"""

from __future__ import annotations

import dataclasses

from poeval import paths
from poeval.config import PER_LANG_MODEL_KEYS
from poeval.data.quatrains import Corpus, QuatrainRules
from poeval.data.split import Human, Split
from poeval.errors import PoevalError
from poeval.generators import pretrained, registry, supplied
from poeval.generators.poetic.common import Word2Vec
from poeval.generators.poetic.sonnets import Sonnets
from poeval.jobs.base import Job, Step, stamp_beside


@dataclasses.dataclass(frozen=True)
class QuatrainsJob(Job):
    """``corpus``: params ``corpus.<lang>``; ``quatrains``: the window filters and de-duplication."""

    KIND = "quatrains"
    lang: str
    corpus: Corpus
    quatrains: QuatrainRules


def quatrains_job(params: dict, lang: str) -> QuatrainsJob:
    """The job of rule quatrains for ``lang``."""
    if lang not in params["corpus"]:
        raise PoevalError(f"corpus.{lang}: not in the params; give the corpus of every language")
    return quatrains_from_options(lang, params["corpus"][lang], params["quatrains"])


def quatrains_from_options(lang: str, corpus: dict, quatrains: dict | None) -> QuatrainsJob:
    """The job of `poeval quatrains --lang --corpus [--quatrains]` (by hand; the rule's the same way)."""
    return QuatrainsJob(lang, Corpus.from_dict(corpus, f"corpus.{lang}"), QuatrainRules.from_dict(quatrains))


@dataclasses.dataclass(frozen=True)
class RhymeJob(Job):
    """What `poeval rhyme` labels: stanzas of ``lang``, their rhyme scheme in ``field`` (and their metre with
    ``meter``); ``poem``: the field that groups the stanzas of one poem (None: each stanza alone)."""

    KIND = "rhyme"
    lang: str
    meter: bool
    field: str
    poem: str | None

    def recorded(self) -> dict:
        """The fields; ``poem`` only where it is set (a stamp without it stays as it was)."""
        fields = super().recorded()
        return fields if self.poem is not None else {k: v for k, v in fields.items() if k != "poem"}


def rhyme_labels_job(params: dict, lang: str) -> RhymeJob:
    """The job of rule rhyme_labels: every quatrain of ``lang`` labelled alone, scheme and metre."""
    return rhyme_from_options(lang, True, None, None)


def rhyme_from_options(lang: str, meter: bool | None, field: str | None, poem: str | None) -> RhymeJob:
    """The job of `poeval rhyme --lang [--meter] [--field] [--poem]` (by hand): labels in ``scheme`` unless
    ``field`` names another."""
    return RhymeJob(lang, bool(meter), field or "scheme", poem)


@dataclasses.dataclass(frozen=True)
class SplitJob(Job):
    """The train/dev split and the HUMAN samples drawn from train (their count: ``human.n_samples``)."""

    KIND = "split"
    split: Split
    human: Human


def split_job(params: dict, lang: str | None = None) -> SplitJob:
    """The job of rule split (the same for every language)."""
    return split_from_options(params["split"], params["human"])


def split_from_options(split: dict, human: dict) -> SplitJob:
    """The job of `poeval split --split --human` (by hand; the rule's the same way)."""
    return SplitJob(Split.from_dict(split), Human.from_dict(human))


@dataclasses.dataclass(frozen=True)
class SonnetsJob(Job):
    """The pseudo-sonnets of the train and dev splits (params ``poetic.sonnets``)."""

    KIND = "sonnets"
    sonnets: Sonnets


def sonnets_job(params: dict, lang: str | None = None) -> SonnetsJob:
    """The job of rule pseudo_sonnets (the same for every language)."""
    return sonnets_from_options(params["poetic"]["sonnets"])


def sonnets_from_options(sonnets: dict | None) -> SonnetsJob:
    """The job of `poeval sonnets --sonnets` (by hand; the rule's the same way): a key left out the schema's default."""
    return SonnetsJob(Sonnets.from_dict(sonnets))


@dataclasses.dataclass(frozen=True)
class Word2VecJob(Job):
    """The word2vec vectors of the train split; ``sonnets``: its recipe picks the sentences (recipe paper: the
    paper's background sonnets)."""

    KIND = "word2vec"
    word2vec: Word2Vec
    sonnets: Sonnets


def word2vec_job(params: dict, lang: str | None = None) -> Word2VecJob:
    """The job of rule word2vec (the same for every language)."""
    return word2vec_from_options(params["poetic"]["word2vec"], params["poetic"]["sonnets"])


def word2vec_from_options(word2vec: dict | None, sonnets: dict | None) -> Word2VecJob:
    """The job of `poeval word2vec --word2vec [--sonnets]` (by hand; the rule's the same way)."""
    return Word2VecJob(Word2Vec.from_dict(word2vec), Sonnets.from_dict(sonnets))


@dataclasses.dataclass(frozen=True)
class ImportJob(Job):
    """A pretrained release (``source``: its short id, or a .gguf file by hand) and, for a release, its files by
    content (``digest``: ``wheel:file:sha256`` from its wheels' RECORDs; another wheel reruns the import)."""

    KIND = "import"
    source: str
    digest: list[str] | None


def import_job(params: dict, release: str) -> ImportJob:
    """The job of rule import_pretrained for ``release``."""
    return import_from_options(release)


def import_from_options(source: str) -> ImportJob:
    """The job of `poeval import SOURCE` (by hand; the rule's the same way): a .gguf file has no digest."""
    return ImportJob(source, pretrained.release_digests(source) if pretrained.is_release(source) else None)


@dataclasses.dataclass(frozen=True)
class ImportSamplesJob(Job):
    """A samples system's file (``source``, as the params give it; None: they no longer name one) imported as a
    sample of ``lang``, each id prefixed with ``id_prefix``; ``param``: the params key that names the file."""

    KIND = "import-samples"
    source: str | None
    lang: str
    param: str
    id_prefix: str

    def recorded(self) -> dict:
        """The file as the params name it: the rest follows from the output's path (its wildcards)."""
        return {"source": self.source}


def import_samples_job(params: dict, lang: str, system: str, decoding: str) -> ImportSamplesJob:
    """The job of rule import_samples: ids start with ``<lang>-<system>-<decoding>-``, as a sampled system's."""
    files = supplied.sample_files(params["models"].get(system) or {}, lang)
    return import_samples_from_options(files.get(decoding), lang, supplied.param_key(system, lang, decoding),
                                       f"{lang}-{system}-{decoding}-")


def import_samples_from_options(source: str | None, lang: str, param: str | None = None,
                                id_prefix: str | None = None) -> ImportSamplesJob:
    """The job of `poeval import-samples SOURCE --lang [--param] [--id-prefix]` (by hand; the rule's the same
    way): the file named as ``samples`` in errors, ids as the file gives them, unless given."""
    return ImportSamplesJob(source, lang, param or "samples", id_prefix or "")


@dataclasses.dataclass(frozen=True)
class CurveJob(Job):
    """The training curve of the checkpoint of ``system`` in ``lang`` (read from its folder)."""

    KIND = "curve"
    lang: str | None
    system: str | None


def curve_job(params: dict, lang: str, system: str) -> CurveJob:
    """The job of rule training_curve."""
    return CurveJob(lang, system)


def _release_used(params: dict, w: dict) -> bool:
    """Whether a system of the run starts from, or serves, the release (another import is not this run's)."""
    def names(model: dict) -> list:
        values = [model.get(key) for key in (*PER_LANG_MODEL_KEYS, "serves")]
        return [n for v in values for n in (v.values() if isinstance(v, dict) else [v])]

    return any(w["release"] in names(params["models"][s]) for s in params["systems"])


def _supplied(params: dict, w: dict) -> bool:
    return registry.is_supplied(params["models"][w["system"]])


# products: the files that later stamps record as inputs (the rhyme labels read the quatrains, every cell and
# checkpoint the training split), so that a stale corpus report or split makes everything built from it stale too
STEPS = (Step("quatrains", quatrains_job, paths.corpus_report, products=lambda **w: (paths.quatrains(**w),)),
         Step("rhyme_labels", rhyme_labels_job, stamp_beside(paths.labelled), paths.labelled),
         Step("split", split_job, paths.split_report, products=lambda **w: (paths.train(**w), paths.dev(**w))),
         Step("pseudo_sonnets", sonnets_job, paths.sonnets_report, paths.sonnets,
              products=lambda **w: (paths.dev_sonnets(**w), paths.sonnets_report(**w))),
         Step("word2vec", word2vec_job, stamp_beside(paths.word2vec), paths.word2vec),
         Step("import_pretrained", import_job, lambda release: f"{paths.pretrained(release)}/import.json",
              paths.pretrained, applies=_release_used))
SUPPLIED_STEPS = (Step("import_samples", import_samples_job, paths.stats, applies=_supplied,
                       products=lambda **w: (paths.samples(**w),)),)
# Rules with a job but no stamp: a curve has none (`dvc plots` draws every file of its folder), so `poeval stale`
# and `poeval provenance` have nothing of it to compare (report.steps: not among the steps, only the rules' jobs).
UNSTAMPED = (Step("training_curve", curve_job, paths.curve),)
