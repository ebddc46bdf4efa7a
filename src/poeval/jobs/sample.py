"""The sample job: what `poeval sample` receives (rules sample and adherence_sample), one record.

Built by :func:`sample_job` from the resolved params and the wildcards. Its decoding is typed
(:func:`poeval.generators.decoding.parse_decoding`) and its sampling block resolved
(:func:`poeval.generators.sampling.resolve`), both by the schema. `poeval provenance` and `poeval stale` rebuild the job to
compare it with a sample's stamp (:meth:`SampleJob.recorded`).
"""

from __future__ import annotations

import dataclasses

from poeval.errors import PoevalError
from poeval.generators import registry
from poeval.config import model_for_lang
from poeval.generators.decoding import Decoding, parse_decoding
from poeval.generators.prompting import Prompt, prompt_for
from poeval.generators.sampling import resolve as resolve_sampling
from poeval import paths
from poeval.jobs.base import Job, Step


@dataclasses.dataclass(frozen=True)
class SampleJob(Job):
    """``decoding``: the typed decoding; ``sampling``: the params ``sampling`` block resolved, the system's
    own keys over the shared block; ``style``: a rhyme scheme that prompts a style-conditioned model
    (style adherence), else None; ``id_prefix``: what each quatrain's id starts with; ``prompt``: what a
    prompted system is asked (an endpoint, an in-process chat checkpoint; :mod:`poeval.generators.prompting`),
    else None, and then left out of the JSON, so that every other job reads as before."""

    KIND = "sample"
    decoding: Decoding
    sampling: dict
    style: str | None
    id_prefix: str
    prompt: Prompt | None = None

    def to_dict(self) -> dict:
        out = super().to_dict()
        return out if self.prompt is not None else {k: v for k, v in out.items() if k != "prompt"}

    @classmethod
    def from_dict(cls, data: dict) -> "SampleJob":
        return super().from_dict({"prompt": None} | data if isinstance(data, dict) else data)

    def recorded(self) -> dict:
        """What the sample's stats stamp records (:func:`poeval.stamps.sample_stamp`)."""
        prompt = {"prompt": self.prompt.to_dict()} if self.prompt is not None else {}
        return {"decoding": self.decoding.to_dict(), "sampling": self.sampling} | prompt


def sample_job(params: dict, lang: str, system: str, decoding: str, *, style: str | None = None,
               n: int | None = None) -> SampleJob:
    """The job of rule sample for ``lang``, ``system`` and the decoding config named ``decoding``; rule
    adherence_sample adds the prompted ``style`` and its own sample size ``n``. Ids start with
    ``<lang>-<system>-<decoding>-`` (a prompted sample: its scheme for the decoding), unique in a run."""
    for section, name in (("models", system), ("decoding", decoding)):
        if name not in (params.get(section) or {}):
            raise PoevalError(f"'{name}' is not defined under {section}")
    model = params["models"][system]
    sampling = registry.sampling_params(model, params.get("sampling") or {})
    return from_options(params["decoding"][decoding], sampling | ({"n": n} if n is not None else {}), style,
                        f"{lang}-{system}-{style or decoding}-", where=f"decoding.{decoding}",
                        prompt=prompt_for(model_for_lang(model, lang), lang))


def from_options(decoding: dict, sampling: dict, style: str | None, id_prefix: str,
                 where: str = "decoding", prompt: Prompt | None = None) -> SampleJob:
    """The job of `poeval sample --decoding --sampling [--style] [--id-prefix]` (by hand; :func:`sample_job`
    builds the rule's the same way): the decoding and the sampling block filled and checked by the schema."""
    return SampleJob(decoding=parse_decoding(decoding, where), sampling=resolve_sampling(sampling), style=style,
                     id_prefix=id_prefix, prompt=prompt)


STEPS = (Step("sample", sample_job, paths.stats,
              applies=lambda params, w: not registry.is_supplied(params["models"][w["system"]]),
              products=lambda **w: (paths.samples(**w),)),)
