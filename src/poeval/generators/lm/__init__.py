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
``.<out_dir name>.resume/`` next to ``out_dir``; calling :func:`train` again with the same inputs and
config continues from there and ends with the same checkpoint, bit for bit, as an uninterrupted run.

Everything is seeded: the same inputs, config and thread count give identical weights and samples.

Modules, as :mod:`poeval.generators.poetic.deepspeare` is split: :mod:`.data` (the quatrains of a split),
:mod:`.build` (tokenizers, models, the params with their defaults), :mod:`.training`, :mod:`.generation`
(sampling under a typed decoding, :mod:`poeval.generators.decoding`). This package implements the
generator interface (:mod:`poeval.generators.interface`): :func:`fit` and :func:`sample`.
"""

from __future__ import annotations

# what reads a checkpoint lives in ..checkpoint (BPoMP's scorer reads it too); re-exported, the loading API
from poeval.generators.checkpoint import (VERSE_ORDER, load, max_positions, orient, param_key, sync_special_ids,
                                         text_bounds, verse_order)
from poeval.generators.engine import quiet_transformers, resume_dir  # resume_dir: where an interrupted run's state waits
from poeval.generators.interface import TrainInputs
from poeval.generators.lm.build import (ARCH_DEFAULTS, ARCHS, LORA_DEFAULTS, MODEL_DEFAULTS, RIME, SPECIAL,
                                        TRAIN_DEFAULTS, add_style_tokens, byte_tokenizer, has_style_tokens,
                                        resolve_model_cfg, resolve_train_cfg, train_tokenizer)
from poeval.generators.lm.data import quatrain_text, read_quatrains, read_split, training_texts
from poeval.generators.lm.generation import (generate_batch, generate_kwargs, is_byte_level, newline_counts,
                                             paper_text, parse_quatrain, sample, stop_ids, style_prompt)
from poeval.generators.lm.training import encode_quatrains, train
from poeval.poetry.style import METERS, SCHEMES, STYLE_TOKENS, strip_style, style_tokens

__all__ = ["ARCHS", "ARCH_DEFAULTS", "LORA_DEFAULTS", "METERS", "MODEL_DEFAULTS", "RIME", "SCHEMES", "SPECIAL",
           "STYLE_TOKENS", "TRAIN_DEFAULTS", "VERSE_ORDER", "add_style_tokens", "byte_tokenizer", "encode_quatrains",
           "fit", "generate_batch", "generate_kwargs", "has_style_tokens", "is_byte_level", "load", "max_positions",
           "newline_counts", "orient", "paper_text", "param_key", "parse_quatrain", "quatrain_text",
           "quiet_transformers", "read_quatrains", "read_split", "resolve_model_cfg", "resolve_train_cfg",
           "resume_dir", "sample", "stop_ids", "strip_style", "style_prompt", "style_tokens", "sync_special_ids",
           "text_bounds", "train", "train_tokenizer", "training_texts", "verse_order"]


def fit(inputs: TrainInputs, out_dir: str, model_cfg: dict, train_cfg: dict | str, *, lang: str | None,
        name: str | None = None, threads: int = 1, progress: bool = True) -> dict:
    """The generator interface's training (:mod:`poeval.generators.interface`): :func:`train` on the train
    and dev splits (a transformer needs no language; pseudo-sonnets and word2vec are the ports')."""
    return train(inputs.train, inputs.dev, out_dir, model_cfg, train_cfg, threads=threads, progress=progress, name=name)
