"""Quatrain language models: train (from scratch or fine-tune) and sample.

A quatrain is modelled as the text ``bos + "\\n".join(lines) + eos``; a style-conditioned model
(``conditioned: true``) sees ``bos + <scheme=abab><meter=iambic> + "\\n".join(lines) + eos`` in training,
the two style tags being single special tokens, and samples unprompted from BOS with the tags stripped,
or prompted with a scheme token (``style``: the style adherence evaluation, :mod:`poeval.metrics.adherence`).

Archs (``arch``): ``gpt2``, ``gptneo`` and ``llama`` are word-level; from scratch they get a
byte-level BPE tokenizer trained on the training split only. ``bygpt5`` is token-free: bytes are the
tokens (transformers' ``ByT5Tokenizer``, nothing trained) and a GPT-2 decoder body; it stands in for
ByGPT5. Pretrained models are loaded with ``from_pretrained`` (a local directory or a hub id; nothing is
downloaded unless the user allows it, :mod:`poeval.hub`), optionally with LoRA adapters (needs ``peft``).
``gemma3`` names a pretrained Gemma 3 checkpoint (``Gemma3ForCausalLM``, e.g. the release ``gemma3-270m``),
trained and sampled like any pretrained model; it has no scratch build (``init: scratch`` is refused).

``verse_order: reversed`` writes every verse right to left, character by character, so that a verse
starts with its rhyme: the model chooses the rhyme before the words that lead up to it, as generators that
write verses backwards do (Ghazvininejad et al. 2016, Hafez; Van de Cruys 2020). A BPE tokenizer trained
from scratch then also keeps the rime of each verse's first (reversed) word as a piece of its own, so a
rhyme is the copy of one piece. ``verse_order: words`` turns each verse's words instead (the end word
first, each word as spelt), the reversed order a pretrained tokenizer can read. The checkpoint records the order (``config.json``: ``poeval_verse_order``);
samples and BPoMP scores read it and turn verses back, so nothing downstream sees reversed text.

Training is resumable: after every evaluation the full training state is saved to
``.<out_dir name>.resume/`` next to ``out_dir``; calling :func:`.training.train` again with the same inputs and
config continues from there and ends with the same checkpoint, bit for bit, as an uninterrupted run.

Everything is seeded: the same inputs, config and thread count give identical weights and samples.

Modules, as :mod:`poeval.generators.poetic.deepspeare` is split: :mod:`.data` (the quatrains of a split),
:mod:`.build` (tokenizers, models, the params with their defaults), :mod:`.training`, :mod:`.generation`
(sampling under a typed decoding, :mod:`poeval.generators.decoding`); what reads a checkpoint is in
:mod:`poeval.generators.checkpoint` (BPoMP's scorer reads it too). This package implements the generator
interface (:mod:`poeval.generators.interface`), :func:`fit` and :func:`sample`, and exports nothing else.
"""

from __future__ import annotations

from poeval.generators.interface import TrainInputs
from poeval.generators.lm.generation import sample   # the generator interface's sampling
from poeval.generators.lm.training import train

# the generator interface only: everything else is imported from the module that defines it
__all__ = ["fit", "sample"]


def fit(inputs: TrainInputs, out_dir: str, model_cfg: dict, train_cfg: dict | str, *, lang: str | None,
        name: str | None = None, threads: int = 1, progress: bool = True) -> dict:
    """The generator interface's training (:mod:`poeval.generators.interface`): :func:`train` on the train
    and dev splits (a transformer needs no language; pseudo-sonnets and word2vec are the ports')."""
    return train(inputs.train, inputs.dev, out_dir, model_cfg, train_cfg, threads=threads, progress=progress, name=name)
