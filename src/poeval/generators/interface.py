"""The one interface every generator module implements (:data:`poeval.generators.registry.ARCHS` names
them): ``fit`` trains a checkpoint from the split's files, ``sample`` samples one. The signatures are the
same in every module, so that `poeval train` / `poeval sample` call the module the registry picks without
knowing its kind; what a module cannot do with its arguments (a port prompted with a style, a samples
system asked to train) it refuses with a one-line error of its own. tests/unit/test_config.py checks every
module against :class:`Generator`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from poeval.generators.decoding import Decoding
from poeval.generators.prompting import Prompt


@dataclass(frozen=True)
class TrainInputs:
    """The files a training reads: the train and dev splits; the poetry ports train on the split's
    pseudo-sonnets instead (``sonnets``, `poeval sonnets`) with word2vec vectors (`poeval word2vec`); an
    endpoint reads none, and ``served`` names the checkpoint its server serves (params ``serves``)."""

    train: str | None
    dev: str | None
    sonnets: str | None = None
    word2vec: str | None = None
    served: str | None = None


@runtime_checkable
class Generator(Protocol):
    def fit(self, inputs: TrainInputs, out_dir: str, model_cfg: dict, train_cfg: dict | str, *, lang: str | None,
            name: str | None = None, threads: int = 1, progress: bool = True) -> dict:
        """Train params ``model_cfg`` (a ``models`` entry) with ``train_cfg`` (its training block, or
        ``"none"``) into the checkpoint ``out_dir``; return the training log's summary."""

    def sample(self, model_dir: str, decoding: Decoding | dict, sampling: dict, out: str, stats: str, *,
               threads: int = 1, id_prefix: str = "", progress: bool = True, style: str | None = None,
               prompt: Prompt | None = None) -> dict:
        """Sample quatrains from ``model_dir`` under ``decoding`` (a config dict is parsed by
        :func:`~poeval.generators.decoding.parse_decoding`) and the params ``sampling`` block into ``out``
        (JSONL) and ``stats`` (JSON); ``style``: a rhyme scheme to prompt with; ``prompt``: what a prompted
        generator is asked (an endpoint, an in-process chat checkpoint). Return the stats."""


def refuse_style(model_dir: str, style: str | None, prompt: Prompt | None = None) -> None:
    """A generator that cannot be prompted with a style or a prompt says so (`poeval sample --style`)."""
    from poeval.errors import PoevalError

    if style is not None:
        raise PoevalError(f"{model_dir}: --style prompts only the transformer generators and endpoints")
    if prompt is not None:
        raise PoevalError(f"{model_dir}: a prompt (params models.<system>.prompt, api) is for the transformer "
                          "generators and endpoints")
