"""The train job: what `poeval train` receives (rule train), one record.

Built by :func:`train_job` from the resolved params and the wildcards: the job carries the system's entry
with its per-language keys resolved, and the training block as the generator takes it
(:func:`poeval.generators.registry.training_params`). `poeval provenance` and `poeval stale` rebuild the job
with the same function to compare it with a checkpoint's training stamp.
"""

from __future__ import annotations

import dataclasses
import sys

from poeval.config import model_for_lang
from poeval.errors import PoevalError
from poeval.generators import registry
from poeval import paths
from poeval.jobs.base import Job, Step


@dataclasses.dataclass(frozen=True)
class TrainJob(Job):
    """``model``: params ``models.<name>`` for ``lang`` without its ``training``/``sampling`` blocks;
    ``training``: the block the generator trains with, or ``"none"`` (an untrained system). ``lang``
    picks a port's pronouncing dictionary (None: not given, by hand)."""

    KIND = "train"
    lang: str | None
    name: str | None
    model: dict
    training: dict | str

    def recorded(self) -> dict:
        """What the checkpoint's training stamp records (:func:`poeval.stamps.train_stamp`)."""
        return {"model": self.model, "training": self.training}


def train_job(params: dict, lang: str, system: str) -> TrainJob:
    """The job of rule train for ``lang`` and ``system`` (``params``: resolved): the
    shared ``training`` block reaches a transformer LM only (a port or an untrained system never takes it,
    so editing it reruns neither)."""
    models = params.get("models") or {}
    if system not in models:
        raise PoevalError(f"system '{system}' is not defined under models")
    entry = models[system]
    shared = registry.shared_training(entry, params.get("training") or {})
    return from_options(model_for_lang(entry, lang), shared, system, lang)


def from_options(model: dict, training: dict, name: str | None, lang: str | None) -> TrainJob:
    """The job of `poeval train --model --training` (by hand; :func:`train_job` builds the rule's the same
    way): the system's own training block over the shared one, or a port's over its arch's defaults."""
    model, training = registry.training_params(model, training)
    return TrainJob(lang=lang, name=name, model=model, training=training)


def note_ignored_training(model: dict, training: dict) -> None:
    """Say on stderr when `poeval train` is given a shared training block that the model's generator never
    takes (a poetry port: its training block is the model's own over the arch's defaults), rather than
    drop it silently."""
    if training and registry.is_poetic(model):
        print(f"poeval train: arch {model['arch']} ignores --training (the transformers' shared block); its "
              "training block is --model's `training` over the arch's own defaults", file=sys.stderr)


STEPS = (Step("train", train_job, paths.training_log, paths.model_dir),)
