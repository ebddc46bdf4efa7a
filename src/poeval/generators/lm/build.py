"""Tokenizers and models of the transformer LMs: a BPE or byte tokenizer, a model from scratch or loaded
pretrained (optionally with LoRA adapters), and the model and training params with the schema's defaults."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from poeval import config
from poeval.errors import PoevalError
from poeval.generators import registry
from poeval.generators.checkpoint import param_key, sync_special_ids
from poeval.poetry.style import STYLE_TOKENS


SPECIAL = "<|endoftext|>"

# A reversed verse's first word up to the end of its first vowel group: the (reversed) rime of its rhyme
# word, kept as one tokenizer piece. "night," -> ",thgin" -> pieces ",", "thgi", "n". Letters of English and
# German; y counts as a vowel (day -> "ya" + "d").
RIME = r"(?i)(?:^|(?<=\n))[^a-zäöüß\n]*[b-df-hj-np-tv-xzß]*[aeiouyäöü]+"

ARCHS = registry.names("llm")

# Defaults come from the params schema (the one holder of defaults): a models entry, its lora block, the
# training block.
MODEL_DEFAULTS: dict[str, Any] = config.defaults("#/$defs/transformer_model")
LORA_DEFAULTS: dict[str, Any] = config.defaults("#/$defs/lora")
TRAIN_DEFAULTS: dict[str, Any] = config.defaults("#/$defs/train")




def train_tokenizer(texts: list[str], vocab_size: int, rime_pieces: bool = False):
    """Train a byte-level BPE tokenizer (GPT-2 style) on ``texts``; ``<|endoftext|>`` is bos/eos/pad.
    ``rime_pieces``: no piece crosses the end of a verse's leading :data:`RIME` (reversed verses)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.pre_tokenizer = (pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(RIME), "isolated"), byte_level])
                         if rime_pieces else byte_level)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=int(vocab_size),
        min_frequency=2,
        special_tokens=[SPECIAL],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=SPECIAL, eos_token=SPECIAL, pad_token=SPECIAL, unk_token=None
    )


def _special(token: str):
    from tokenizers import AddedToken

    return AddedToken(token, lstrip=False, rstrip=False, single_word=False, normalized=False, special=True)


def byte_tokenizer():
    """A token-free tokenizer: every UTF-8 byte is a token (ids 3..258), plus ``<pad>`` (0), ``</s>``
    (1, also BOS) and ``<unk>`` (2). Nothing is trained; it is transformers' ``ByT5Tokenizer`` (the one
    ByGPT5 uses) without sentinel ids, saved with the checkpoint like any tokenizer."""
    from transformers import ByT5Tokenizer

    # explicit AddedTokens: ByT5's defaults strip whitespace around </s>, which would eat a verse's
    # leading or trailing spaces next to BOS/EOS
    return ByT5Tokenizer(
        extra_ids=0,
        eos_token=_special("</s>"),
        bos_token=_special("</s>"),
        pad_token=_special("<pad>"),
        unk_token=_special("<unk>"),
    )


def add_style_tokens(tokenizer) -> int:
    """Add the rhyme-scheme and metre tokens as special tokens; return how many were new."""
    tokens = [_special(t) for t in STYLE_TOKENS]
    params = inspect.signature(tokenizer.add_special_tokens).parameters
    if "replace_extra_special_tokens" in params:  # transformers >= 5
        return tokenizer.add_special_tokens({"extra_special_tokens": tokens}, replace_extra_special_tokens=False)
    return tokenizer.add_special_tokens(
        {"additional_special_tokens": tokens}, replace_additional_special_tokens=False
    )


def has_style_tokens(tokenizer) -> bool:
    return any(t in tokenizer.get_added_vocab() for t in STYLE_TOKENS)


def _base(name_or_path: str) -> dict | None:
    """What a fine-tuned model starts from, when it is a local folder or a GGUF file: its path (hashed into
    the training stamp) and, for an imported release or a GGUF file, what its weights are (Table 4 says it)."""
    from poeval.generators import pretrained

    if pretrained.is_gguf(name_or_path):   # load() has read it: it exists
        return pretrained.base_of_file(name_or_path, Path(name_or_path).expanduser())
    folder = pretrained.checkpoint(name_or_path)
    if not Path(folder).is_dir():
        return None   # a hub id: its files live in the Hugging Face cache
    imported = pretrained.stamp_of(folder)
    return {"name_or_path": name_or_path, "path": folder, "weights": imported["weights"] if imported else None}


def resolve_model_cfg(model_cfg: dict, name: str | None = None) -> dict:
    """``model_cfg`` with the schema's defaults filled in, checked against the schema (unknown keys
    rejected) and its rules (:data:`poeval.config.RULES`); raises PoevalError naming the bad parameter."""
    arch = model_cfg.get("arch", MODEL_DEFAULTS["arch"])
    if arch not in ARCHS:
        raise PoevalError(
            f"model arch {arch!r} ({param_key(name, 'arch')}) is not supported; known: {', '.join(ARCHS)}"
        )
    # the schema fills an entry by its arch (bygpt5's context is longer: byte sequences are ~4x BPE ones)
    cfg = {**config.fill({"arch": arch}, "#/$defs/transformer_model"), **model_cfg}
    config.check(cfg, "#/$defs/transformer_model", f"models.{name}" if name else "model")
    if cfg["lora"] is not None:   # an environment check, not a params one: `poeval validate` does not need peft
        try:
            import peft  # noqa: F401
        except ImportError:
            raise PoevalError(
                f"model {name or '?'}: {param_key(name, 'lora')} asks for LoRA fine-tuning, which needs the "
                "'peft' package: install peft (pip install peft) or set lora to null"
            ) from None
    return cfg


def resolve_train_cfg(train_cfg: dict) -> dict:
    """``train_cfg`` over the schema's training defaults, checked against the schema (unknown keys rejected)."""
    tcfg = {**TRAIN_DEFAULTS, **train_cfg}
    config.check(tcfg, "#/$defs/train", "training")
    return tcfg


# the archs built from scratch, each by its transformers model class (gemma3 is fine-tuned only)
SCRATCH = {"gpt2": "GPT2LMHeadModel", "bygpt5": "GPT2LMHeadModel", "gptneo": "GPTNeoForCausalLM",
           "llama": "LlamaForCausalLM"}


def scratch_config(cfg: dict, tokenizer):
    """The transformers config of a model built from scratch by the resolved ``cfg`` (a params ``models``
    entry) with ``tokenizer``; raises PoevalError for an arch that has no scratch build."""
    from transformers import GPT2Config, GPTNeoConfig, LlamaConfig

    arch, drop = cfg["arch"], float(cfg["dropout"])
    if arch not in SCRATCH:
        raise PoevalError(f"model arch {arch!r}: no model is built from scratch for it; known: {', '.join(SCRATCH)}")
    n_layer, n_embd, n_head, n_pos = (int(cfg[k]) for k in ("n_layer", "n_embd", "n_head", "n_positions"))
    inner = int(cfg["intermediate_size"]) if cfg["intermediate_size"] else None
    ids = {
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    if arch in ("gpt2", "bygpt5"):
        return GPT2Config(
            vocab_size=len(tokenizer),
            n_positions=n_pos,
            n_embd=n_embd,
            n_layer=n_layer,
            n_head=n_head,
            n_inner=inner,
            resid_pdrop=drop,
            embd_pdrop=drop,
            attn_pdrop=drop,
            **ids,
        )
    if arch == "gptneo":  # GPT-Neo's alternating global/local attention layers
        types = [[["global", "local"], n_layer // 2]] if n_layer // 2 else []
        if n_layer % 2:
            types.append([["global"], 1])
        return GPTNeoConfig(
            vocab_size=len(tokenizer),
            max_position_embeddings=n_pos,
            hidden_size=n_embd,
            num_layers=n_layer,
            attention_types=types,
            num_heads=n_head,
            intermediate_size=inner,
            resid_dropout=drop,
            embed_dropout=drop,
            attention_dropout=drop,
            tie_word_embeddings=True,
            **ids,
        )
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=n_embd,
        intermediate_size=inner or 4 * n_embd,
        num_hidden_layers=n_layer,
        num_attention_heads=n_head,
        num_key_value_heads=n_head,
        max_position_embeddings=n_pos,
        attention_dropout=drop,
        tie_word_embeddings=True,
        **ids,
    )


def _build_scratch(model_cfg: dict, texts: list[str]):
    """A freshly initialised model of ``model_cfg["arch"]`` and its tokenizer (BPE trained on ``texts``,
    or the byte tokenizer for bygpt5), with style tokens when ``conditioned``."""
    import transformers

    cfg = resolve_model_cfg(model_cfg)
    if cfg["init"] != "scratch":
        raise PoevalError("_build_scratch needs init: scratch")
    tokenizer = (byte_tokenizer() if cfg["arch"] == "bygpt5"
                 else train_tokenizer(texts, cfg["vocab_size"], rime_pieces=cfg["verse_order"] == "reversed"))
    if cfg["conditioned"]:
        add_style_tokens(tokenizer)
    config = scratch_config(cfg, tokenizer)
    model = getattr(transformers, SCRATCH[cfg["arch"]])(config)
    sync_special_ids(model, tokenizer)
    return model, tokenizer


def _apply_lora(model, lora_cfg: dict, conditioned: bool):
    """Wrap ``model`` with LoRA adapters (peft): in every decoder layer or the last ``layers`` ones, with
    ``modules_to_save`` trained in full; with style tokens the embeddings are trained in full too."""
    from peft import LoraConfig, get_peft_model
    from transformers.pytorch_utils import Conv1D

    lcfg = {**LORA_DEFAULTS, **lora_cfg}
    extra = {}
    full = set(lcfg["modules_to_save"] or ())
    if conditioned:
        emb = {id(model.get_input_embeddings()), id(model.get_output_embeddings())}
        full |= {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if id(m) in emb}
    if full:
        extra["modules_to_save"] = sorted(full)
    if lcfg["layers"]:
        n_layers = int(model.config.num_hidden_layers)
        extra["layers_to_transform"] = list(range(max(0, n_layers - int(lcfg["layers"])), n_layers))
    config = LoraConfig(
        task_type="CAUSAL_LM",
        r=int(lcfg["r"]),
        lora_alpha=float(lcfg["alpha"]),
        lora_dropout=float(lcfg["dropout"]),
        target_modules=lcfg["target_modules"],
        # GPT-2's Conv1D stores its weight transposed (in, out); peft would warn and set this itself
        fan_in_fan_out=any(isinstance(m, Conv1D) for m in model.modules()),
        **extra,
    )
    return get_peft_model(model, config)
