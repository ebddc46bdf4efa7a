"""Quatrain language models: train (from scratch or fine-tune) and sample.

A quatrain is modelled as the text ``bos + "\\n".join(lines) + eos``; a style-conditioned model
(``conditioned: true``) sees ``bos + <scheme=abab><meter=iambic> + "\\n".join(lines) + eos`` in training,
the two style tags being single special tokens, and samples unprompted from BOS with the tags stripped.

Model families (``arch``): ``gpt2``, ``gptneo`` and ``llama`` are word-level; from scratch they get a
byte-level BPE tokenizer trained on the training split only. ``bygpt5`` is token-free: bytes are the
tokens (transformers' ``ByT5Tokenizer``, nothing trained) and a GPT-2 decoder body; it stands in for
ByGPT5. Pretrained models are loaded with ``from_pretrained`` (a hub id or a local directory; no
download is attempted when ``HF_HUB_OFFLINE=1``), optionally with LoRA adapters (needs ``peft``).

Training is resumable: after every evaluation the full training state is saved to
``.<out_dir name>.resume/`` next to ``out_dir``; calling :func:`train` again with the same inputs and
config continues from there and ends with the same checkpoint, bit for bit, as an uninterrupted run.

Everything is seeded: the same inputs, config and thread count give identical weights and samples.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import itertools
import json
import math
import os
import random
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable

from . import device
from .errors import PoevalError
from .generators.sampling import Attempt, check_counts, check_quatrain, sample_loop
from .io import file_sha256, read_jsonl, write_json
from .provenance import train_stamp

SPECIAL = "<|endoftext|>"

ARCHS = ("gpt2", "gptneo", "llama", "bygpt5")

MODEL_DEFAULTS: dict[str, Any] = {
    "arch": "gpt2",
    "init": "scratch",
    "name_or_path": None,
    "tokenizer": None,  # pretrained only: where the tokenizer lives when not at name_or_path
    "conditioned": False,  # prepend <scheme=..><meter=..> special tokens to training quatrains
    "vocab_size": 4000,  # BPE vocabulary (word-level archs from scratch; ignored by bygpt5)
    "n_layer": 2,
    "n_embd": 128,
    "n_head": 4,
    "n_positions": 128,
    "intermediate_size": None,  # MLP width; null = 4 * n_embd
    "dropout": 0.0,  # measured: faster and lower dev loss than 0.1 for the few-epoch CPU budget
    "lora": None,  # pretrained only: {r, alpha, dropout, target_modules}; needs peft
}

# per-arch defaults that differ from MODEL_DEFAULTS: byte sequences are ~4x longer than BPE ones
ARCH_DEFAULTS: dict[str, dict[str, Any]] = {"bygpt5": {"n_positions": 512}}

LORA_DEFAULTS: dict[str, Any] = {"r": 8, "alpha": 16, "dropout": 0.05, "target_modules": None}

TRAIN_DEFAULTS: dict[str, Any] = {
    "seed": 1,
    "batch_size": 32,
    "max_steps": 1500,
    "lr": 1e-3,
    "warmup_steps": 50,
    "weight_decay": 0.01,
    "eval_every": 100,
    "eval_quatrains": 500,
    "patience": 3,
    "max_grad_norm": 1.0,
    "length_grouping": 50,  # batches per length-sorted group; 0 = plain random batches
}


def _first_appearance(labels: str) -> str:
    seen: dict[str, str] = {}
    return "".join(seen.setdefault(c, "abcd"[len(seen)]) for c in labels)


# the 15 rhyme schemes of four lines, labelled by first appearance ("abab", "aabb", ...)
SCHEMES: tuple[str, ...] = tuple(
    s for s in ("".join(p) for p in itertools.product("abcd", repeat=4)) if _first_appearance(s) == s
)
METERS: tuple[str, ...] = ("iambic", "trochaic", "anapaestic", "dactylic", "amphibrachic", "other")
STYLE_TOKENS: tuple[str, ...] = tuple(f"<scheme={s}>" for s in SCHEMES) + tuple(f"<meter={m}>" for m in METERS)
_STYLE_RE = re.compile(r"<(?:scheme|meter)=[^<>\s]*>")

# test hook: called with the step number after every optimizer step (and after any resume save)
_after_step: Callable[[int], None] | None = None


# --------------------------------------------------------------------------------------------------
# data


def _read_split(
    path: str | os.PathLike, role: str, conditioned: bool = False, name: str | None = None
) -> tuple[list[list[str]], list[list[str]] | None]:
    """The quatrains of a split and, when ``conditioned``, each one's style tokens."""
    out, styles = [], []
    for i, record in enumerate(read_jsonl(path)):
        lines = record.get("lines") if isinstance(record, dict) else None
        if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
            raise PoevalError(f"{path}: record {i + 1} has no 'lines' list of strings")
        out.append(lines)
        if conditioned:
            for field, allowed in (("scheme", SCHEMES), ("meter", METERS)):
                if field not in record:
                    raise PoevalError(
                        f"{path}: record {i + 1} has no '{field}' field, which style-conditioned training needs"
                        f" ({_param_name(name, 'conditioned')} is true)"
                    )
                if record[field] not in allowed:
                    raise PoevalError(
                        f"{path}: record {i + 1}: '{field}' is {record[field]!r}, not one of {', '.join(allowed)}"
                    )
            styles.append(style_tokens(record["scheme"], record["meter"]))
    if not out:
        raise PoevalError(f"{role} split {path} contains no quatrains")
    return out, (styles if conditioned else None)


def _read_quatrains(path: str | os.PathLike, role: str) -> list[list[str]]:
    return _read_split(path, role)[0]


def style_tokens(scheme: str, meter: str) -> list[str]:
    """The special tokens that condition a quatrain on its rhyme scheme and metre."""
    return [f"<scheme={scheme}>", f"<meter={meter}>"]


def strip_style(text: str) -> str:
    """Remove any style tokens from a decoded text."""
    return _STYLE_RE.sub("", text)


def quatrain_text(lines: list[str], bos: str, eos: str, style: list[str] | tuple[str, ...] = ()) -> str:
    """The training text of one quatrain (``style``: its style tokens, for conditioned models)."""
    return bos + "".join(style) + "\n".join(lines) + eos


def training_texts(tokenizer, quatrains: list[list[str]], styles: list[list[str]] | None = None) -> list[str]:
    """The texts a model is trained on: one per quatrain, with style tokens when ``styles`` is given."""
    styles = styles or [()] * len(quatrains)
    return [quatrain_text(q, tokenizer.bos_token, tokenizer.eos_token, st) for q, st in zip(quatrains, styles)]


# --------------------------------------------------------------------------------------------------
# tokenizer / model construction and loading


def train_tokenizer(texts: list[str], vocab_size: int):
    """Train a byte-level BPE tokenizer (GPT-2 style) on ``texts``; ``<|endoftext|>`` is bos/eos/pad."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
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


def _param_name(name: str | None, field: str = "name_or_path") -> str:
    return f"models.{name}.{field}" if name else field


def _check_ref(value, name: str | None, field: str, what: str) -> str:
    """A hub id or an existing local directory, else one PoevalError naming ``models.<name>.<field>``."""
    if not value or not isinstance(value, str):
        raise PoevalError(f"model {name or '?'}: {_param_name(name, field)} must be a hub id or a local path")
    looks_local = value.startswith(("/", "./", "../", "~"))
    if looks_local and not Path(value).expanduser().is_dir():
        raise PoevalError(f"cannot load {what} {value!r} given by {_param_name(name, field)}: no such directory")
    return str(Path(value).expanduser()) if looks_local else value


def load(name_or_path: str, *, name: str | None = None, tokenizer: str | None = None):
    """Load ``(model, tokenizer)`` from a hub id or a local directory, offline-friendly.

    ``tokenizer`` (default: ``name_or_path``) is where the tokenizer lives. Any loading failure becomes
    one PoevalError that names the model and the config parameter (``models.<name>.name_or_path`` or
    ``models.<name>.tokenizer``) so the user knows what to fix.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_ref = _check_ref(name_or_path, name, "name_or_path", "model")
    tok_field = "tokenizer" if tokenizer else "name_or_path"
    tok_ref = _check_ref(tokenizer, name, "tokenizer", "tokenizer") if tokenizer else model_ref

    def fail(ref: str, field: str, what: str, err: Exception):
        hint = " (HF_HUB_OFFLINE is set: it must already be downloaded or be a local directory)" if _offline() else ""
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return PoevalError(f"cannot load {what} {ref!r} given by {_param_name(name, field)}{hint}: {first}")

    try:
        tok = AutoTokenizer.from_pretrained(tok_ref)
    except (OSError, ValueError, KeyError, ImportError, RuntimeError) as err:
        raise fail(tok_ref, tok_field, "model" if tok_field == "name_or_path" else "tokenizer", err) from None
    try:
        model = AutoModelForCausalLM.from_pretrained(model_ref)
    except (OSError, ValueError, KeyError, ImportError, RuntimeError) as err:
        raise fail(model_ref, "name_or_path", "model", err) from None
    if tok.eos_token_id is None:
        raise PoevalError(f"model {tok_ref!r} ({_param_name(name, tok_field)}): its tokenizer has no EOS token")
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    if tok.bos_token_id is None:
        tok.bos_token = tok.eos_token
    _sync_special_ids(model, tok)
    return model, tok


def _offline() -> bool:
    try:
        from huggingface_hub import constants

        return bool(constants.is_offline_mode())
    except (ImportError, AttributeError):
        return os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")


def _sync_special_ids(model, tokenizer) -> None:
    for cfg in (model.config, getattr(model, "generation_config", None)):
        if cfg is None:
            continue
        cfg.bos_token_id = tokenizer.bos_token_id
        cfg.eos_token_id = tokenizer.eos_token_id
        cfg.pad_token_id = tokenizer.pad_token_id


def _max_positions(model) -> int | None:
    cfg = model.config
    for key in ("n_positions", "max_position_embeddings"):
        value = getattr(cfg, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def resolve_model_cfg(model_cfg: dict, name: str | None = None) -> dict:
    """``model_cfg`` with defaults filled in, checked; raises PoevalError naming the bad parameter."""
    arch = model_cfg.get("arch", MODEL_DEFAULTS["arch"])
    if arch not in ARCHS:
        raise PoevalError(
            f"model arch {arch!r} ({_param_name(name, 'arch')}) is not supported; known: {', '.join(ARCHS)}"
        )
    cfg = {**MODEL_DEFAULTS, **ARCH_DEFAULTS.get(arch, {}), **model_cfg}
    if cfg["init"] not in ("scratch", "pretrained"):
        raise PoevalError(f"model init must be 'scratch' or 'pretrained', got {cfg['init']!r}")
    if not isinstance(cfg["conditioned"], bool):
        raise PoevalError(f"{_param_name(name, 'conditioned')} must be true or false, got {cfg['conditioned']!r}")
    if cfg["init"] == "scratch":
        for key in ("tokenizer", "lora"):
            if cfg[key] is not None:
                raise PoevalError(f"{_param_name(name, key)} is only used with init: pretrained")
        if cfg["n_embd"] % cfg["n_head"]:
            raise PoevalError(f"model n_embd ({cfg['n_embd']}) must be divisible by n_head ({cfg['n_head']})")
    if cfg["lora"] is not None:
        if not isinstance(cfg["lora"], dict) or set(cfg["lora"]) - set(LORA_DEFAULTS):
            raise PoevalError(
                f"{_param_name(name, 'lora')} must be null or a mapping with keys {sorted(LORA_DEFAULTS)}"
            )
        try:
            import peft  # noqa: F401
        except ImportError:
            raise PoevalError(
                f"model {name or '?'}: {_param_name(name, 'lora')} asks for LoRA fine-tuning, which needs the "
                "'peft' package: install peft (pip install peft) or set lora to null"
            ) from None
    return cfg


def _scratch_config(cfg: dict, tokenizer):
    from transformers import GPT2Config, GPTNeoConfig, LlamaConfig

    arch, drop = cfg["arch"], float(cfg["dropout"])
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
    return LlamaConfig(  # llama
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
    from transformers import GPT2LMHeadModel, GPTNeoForCausalLM, LlamaForCausalLM

    cfg = resolve_model_cfg(model_cfg)
    if cfg["init"] != "scratch":
        raise PoevalError("_build_scratch needs init: scratch")
    tokenizer = byte_tokenizer() if cfg["arch"] == "bygpt5" else train_tokenizer(texts, cfg["vocab_size"])
    if cfg["conditioned"]:
        add_style_tokens(tokenizer)
    config = _scratch_config(cfg, tokenizer)
    cls = {"gpt2": GPT2LMHeadModel, "bygpt5": GPT2LMHeadModel, "gptneo": GPTNeoForCausalLM, "llama": LlamaForCausalLM}
    model = cls[cfg["arch"]](config)
    _sync_special_ids(model, tokenizer)
    return model, tokenizer


def _apply_lora(model, lora_cfg: dict, conditioned: bool):
    """Wrap ``model`` with LoRA adapters (peft); with style tokens the embeddings are trained in full."""
    from peft import LoraConfig, get_peft_model

    lcfg = {**LORA_DEFAULTS, **lora_cfg}
    extra = {}
    if conditioned:
        emb = {id(model.get_input_embeddings()), id(model.get_output_embeddings())}
        extra["modules_to_save"] = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules() if id(m) in emb})
    config = LoraConfig(
        task_type="CAUSAL_LM",
        r=int(lcfg["r"]),
        lora_alpha=float(lcfg["alpha"]),
        lora_dropout=float(lcfg["dropout"]),
        target_modules=lcfg["target_modules"],
        **extra,
    )
    return get_peft_model(model, config)


# --------------------------------------------------------------------------------------------------
# training


def _encode(
    tokenizer, quatrains: list[list[str]], max_len: int | None, styles: list[list[str]] | None = None
) -> tuple[list[list[int]], int]:
    texts = training_texts(tokenizer, quatrains, styles)
    ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
    truncated = 0
    if max_len:
        for i, seq in enumerate(ids):
            if len(seq) > max_len:
                ids[i] = seq[:max_len]
                truncated += 1
    return ids, truncated


def _collate(seqs: list[list[int]], pad_id: int):
    import torch

    width = max(len(s) for s in seqs)
    input_ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        input_ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[i, : len(s)] = 1
    labels = input_ids.masked_fill(mask == 0, -100)
    return input_ids, mask, labels


def _loss_sum(model, input_ids, mask, labels):
    """Summed next-token cross-entropy and the number of predicted tokens."""
    import torch.nn.functional as F

    dev = device.of(model)
    input_ids, mask, labels = input_ids.to(dev), mask.to(dev), labels.to(dev)
    logits = model(input_ids=input_ids, attention_mask=mask).logits[:, :-1, :]
    target = labels[:, 1:]
    loss = F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(), target.reshape(-1), ignore_index=-100, reduction="sum"
    )
    return loss, int((target != -100).sum())


def _dev_loss(model, dev_ids: list[list[int]], pad_id: int, batch_size: int) -> float:
    import torch

    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(dev_ids), batch_size):
            loss, n = _loss_sum(model, *_collate(dev_ids[start : start + batch_size], pad_id))
            total += float(loss)
            count += n
    model.train()
    return total / max(count, 1)


@contextlib.contextmanager
def _quiet_transformers(progress: bool):
    """Silence transformers' info/warning chatter (and its progress bars unless ``progress``)."""
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    if not progress and bars:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def _make_sibling_dir(out_dir: Path) -> Path:
    """A fresh, empty temp directory next to ``out_dir`` (same filesystem, so rename is atomic)."""
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    return tmp


def _replace_dir(tmp: Path, out_dir: Path) -> None:
    """Move the finished ``tmp`` directory to ``out_dir``, replacing any previous one."""
    umask = os.umask(0)
    os.umask(umask)
    for path in tmp.iterdir():  # some writers create 0600 files; give the checkpoint normal permissions
        if path.is_file():
            os.chmod(path, 0o666 & ~umask)
    old = None
    if out_dir.exists():
        old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
        if old.exists():
            shutil.rmtree(old)
        os.replace(out_dir, old)
    os.replace(tmp, out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


class _BatchStream:
    """Endless epochs over the shuffled train split. With length_grouping g > 1, each run of g batches
    of the shuffled order is sorted by length before batching and the batch order is shuffled again
    ("sortish" batching, like HF group_by_length): ~98% instead of ~63% real tokens per padded batch on
    English quatrains. Its position (order, current epoch's batches, index, RNG) can be saved and
    restored, so a resumed run sees exactly the batches an uninterrupted one would."""

    def __init__(self, lengths: list[int], batch_size: int, group: int, rng: random.Random):
        self.lengths, self.bs, self.group, self.rng = lengths, batch_size, group, rng
        self.order = list(range(len(lengths)))
        self.chunks: list[list[int]] = []
        self.pos = 0

    def next(self) -> list[int]:
        if self.pos >= len(self.chunks):
            self._new_epoch()
        self.pos += 1
        return self.chunks[self.pos - 1]

    def _new_epoch(self) -> None:
        bs, group, order = self.bs, self.group, self.order
        self.rng.shuffle(order)
        if group > 1:
            chunks = []
            for c in range(0, len(order), bs * group):
                part = sorted(order[c : c + bs * group], key=lambda i: self.lengths[i])
                chunks.extend(part[s : s + bs] for s in range(0, len(part), bs))
            self.rng.shuffle(chunks)
        else:
            chunks = [order[s : s + bs] for s in range(0, len(order), bs)]
        self.chunks, self.pos = chunks, 0

    def state(self) -> dict:
        return {"order": list(self.order), "chunks": [list(c) for c in self.chunks], "pos": self.pos,
                "rng": self.rng.getstate()}

    def restore(self, state: dict) -> None:
        self.order = list(state["order"])
        self.chunks = [list(c) for c in state["chunks"]]
        self.pos = int(state["pos"])
        self.rng.setstate(_as_tuple(state["rng"]))


def _as_tuple(value):
    return tuple(_as_tuple(v) for v in value) if isinstance(value, (list, tuple)) else value


def resume_dir(out_dir: str | os.PathLike) -> Path:
    """Where :func:`train` keeps the resume state of ``out_dir``: ``.<name>.resume`` next to it."""
    out = Path(out_dir)
    return out.parent / f".{out.name}.resume"


def _fingerprint(train: str, dev: str, cfg: dict, tcfg: dict, threads: int) -> str:
    """What must be equal for a saved training state to be resumed: inputs, config, threads, versions."""
    import torch
    import transformers

    meta = {
        "format": 1,
        "model_cfg": cfg,
        "train_cfg": tcfg,
        "threads": int(threads),
        "train": file_sha256(train),
        "dev": file_sha256(dev),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    return hashlib.sha256(json.dumps(meta, sort_keys=True, default=str).encode()).hexdigest()


def _save_resume(rdir: Path, state: dict) -> None:
    """Atomically replace the resume state (a killed process leaves the previous one intact)."""
    import torch

    rdir.mkdir(parents=True, exist_ok=True)
    tmp = rdir / f"state.pt.tmp-{os.getpid()}"
    torch.save(state, tmp)
    os.replace(tmp, rdir / "state.pt")


def _load_resume(rdir: Path, fingerprint: str) -> dict | None:
    """The saved state if it belongs to this very run (same fingerprint); otherwise discard it."""
    import torch

    path = rdir / "state.pt"
    if not path.is_file():
        if rdir.exists():
            shutil.rmtree(rdir, ignore_errors=True)
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - a corrupt or foreign file is discarded, never fatal
        print(f"poeval train: discarding unreadable resume state {path}: {err}", file=sys.stderr)
        state = None
    if state is not None and state.get("fingerprint") != fingerprint:
        print(f"poeval train: discarding resume state {path}: inputs or config changed", file=sys.stderr)
        state = None
    if state is None:
        shutil.rmtree(rdir, ignore_errors=True)
    return state


def train(
    train: str,
    dev: str,
    out_dir: str,
    model_cfg: dict,
    train_cfg: dict,
    threads: int = 1,
    progress: bool = True,
    *,
    name: str | None = None,
) -> dict:
    """Train a causal LM on the quatrains of ``train``; keep the checkpoint with the best dev loss.

    ``out_dir`` receives the best model and its tokenizer (``save_pretrained``) and ``training_log.json``;
    it is written to a temporary sibling directory and renamed into place at the end. ``name`` is the
    model's key in the config, used in error messages. Returns the log's summary.

    After every evaluation the whole training state (weights, optimizer, scheduler, RNGs, data position,
    best weights, early-stopping counters, log) is saved to :func:`resume_dir`; an interrupted run called
    again with the same arguments continues from there and gives the same final checkpoint, bit for bit.
    A saved state whose inputs, config or thread count differ is discarded. It is removed on success.
    """
    import torch
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    tcfg = {**TRAIN_DEFAULTS, **train_cfg}
    cfg = resolve_model_cfg(model_cfg, name)
    init, conditioned = cfg["init"], cfg["conditioned"]
    unknown = set(train_cfg) - set(TRAIN_DEFAULTS)
    if unknown:
        raise PoevalError(f"unknown train parameter(s) {sorted(unknown)}; known: {sorted(TRAIN_DEFAULTS)}")
    for key in ("batch_size", "max_steps", "eval_every", "eval_quatrains"):
        if not isinstance(tcfg[key], int) or tcfg[key] < 1:
            raise PoevalError(f"train {key} must be a positive integer, got {tcfg[key]!r}")
    train_q, train_styles = _read_split(train, "train", conditioned, name)
    dev_q, dev_styles = _read_split(dev, "dev", conditioned, name)
    dev_q = dev_q[: tcfg["eval_quatrains"]]
    dev_styles = dev_styles[: tcfg["eval_quatrains"]] if dev_styles is not None else None

    torch.set_num_threads(int(threads))
    seed = int(tcfg["seed"])
    torch.manual_seed(seed)
    rng = random.Random(seed)

    if init == "pretrained":
        # fail before any training work if the model cannot be loaded
        with _quiet_transformers(progress):
            model, tokenizer = load(cfg["name_or_path"], name=name, tokenizer=cfg["tokenizer"])
        if conditioned and add_style_tokens(tokenizer):
            model.resize_token_embeddings(len(tokenizer))
            _sync_special_ids(model, tokenizer)
        if cfg["lora"] is not None:
            model = _apply_lora(model, cfg["lora"], conditioned)
    else:
        texts = [quatrain_text(q, "", "") for q in train_q]  # tokenizer sees TRAIN text only, no style tokens
        model, tokenizer = _build_scratch(cfg, texts)
    model.to(device.resolve())
    model.train()

    max_len = _max_positions(model)
    train_ids, n_trunc = _encode(tokenizer, train_q, max_len, train_styles)
    dev_ids, n_trunc_dev = _encode(tokenizer, dev_q, max_len, dev_styles)
    pad_id = tokenizer.pad_token_id

    decay, no_decay = [], []
    for pname, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (no_decay if param.ndim < 2 or "ln_" in pname or "norm" in pname.lower() else decay).append(param)
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": float(tcfg["weight_decay"])},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=float(tcfg["lr"]),
    )
    max_steps = tcfg["max_steps"]
    scheduler = get_linear_schedule_with_warmup(optimizer, int(tcfg["warmup_steps"]), max_steps)
    n_params = sum(p.numel() for p in model.parameters())

    stream = _BatchStream([len(s) for s in train_ids], tcfg["batch_size"], int(tcfg["length_grouping"] or 0), rng)
    patience = tcfg["patience"]
    log: list[dict] = []
    best_loss, best_step, best_state = math.inf, 0, None
    bad_evals, stopped_early = 0, False
    run_loss, run_tokens, run_input_tokens, run_time = 0.0, 0, 0, 0.0
    total_input_tokens, total_train_time = 0, 0.0
    step, resumed_from, elapsed_before = 0, None, 0.0

    out = Path(out_dir)
    rdir = resume_dir(out)
    fingerprint = _fingerprint(train, dev, cfg, tcfg, threads)
    saved = _load_resume(rdir, fingerprint)
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        stream.restore(saved["stream"])
        torch.set_rng_state(saved["torch_rng"])
        if saved.get("cuda_rng") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(saved["cuda_rng"])
        step = resumed_from = int(saved["step"])
        best_loss, best_step, best_state = float(saved["best_loss"]), int(saved["best_step"]), saved["best_state"]
        bad_evals, log = int(saved["bad_evals"]), list(saved["log"])
        run_loss, run_tokens, run_input_tokens, run_time = saved["run"]
        total_input_tokens, total_train_time, elapsed_before = saved["totals"]
        del saved
        if progress:
            print(f"poeval train: resuming from step {step} ({rdir})", file=sys.stderr)

    def save_state() -> None:
        _save_resume(
            rdir,
            {
                "fingerprint": fingerprint,
                "step": step,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "stream": stream.state(),
                "torch_rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
                "best_loss": best_loss,
                "best_step": best_step,
                "best_state": best_state,
                "bad_evals": bad_evals,
                "log": log,
                "run": (run_loss, run_tokens, run_input_tokens, run_time),
                "totals": (total_input_tokens, total_train_time, time.perf_counter() - t_start),
            },
        )

    t_start = time.perf_counter() - elapsed_before
    bar = tqdm(total=max_steps, initial=step, desc="train", unit="step", disable=not progress, leave=False)
    try:
        while step < max_steps:
            t0 = time.perf_counter()
            input_ids, mask, labels = _collate([train_ids[i] for i in stream.next()], pad_id)
            loss_sum, n_tok = _loss_sum(model, input_ids, mask, labels)
            (loss_sum / max(n_tok, 1)).backward()
            if tcfg["max_grad_norm"]:
                torch.nn.utils.clip_grad_norm_(model.parameters(), float(tcfg["max_grad_norm"]))
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            dt = time.perf_counter() - t0
            n_in = int(mask.sum())
            run_loss += loss_sum.item()
            run_tokens += n_tok
            run_input_tokens += n_in
            run_time += dt
            total_input_tokens += n_in
            total_train_time += dt
            bar.update(1)

            if step % tcfg["eval_every"] == 0 or step == max_steps:
                dev_loss = _dev_loss(model, dev_ids, pad_id, 2 * tcfg["batch_size"])
                entry = {
                    "step": step,
                    "train_loss": run_loss / max(run_tokens, 1),
                    "dev_loss": dev_loss,
                    "tokens_per_s": run_input_tokens / run_time if run_time else None,
                    "elapsed_s": time.perf_counter() - t_start,
                    "lr": scheduler.get_last_lr()[0],
                }
                log.append(entry)
                bar.set_postfix(train=f"{entry['train_loss']:.3f}", dev=f"{dev_loss:.3f}")
                run_loss, run_tokens, run_input_tokens, run_time = 0.0, 0, 0, 0.0
                if dev_loss < best_loss:
                    best_loss, best_step, bad_evals = dev_loss, step, 0
                    # kept on the CPU: a copy on the GPU would double the model's memory there
                    best_state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
                else:
                    bad_evals += 1
                    if patience and bad_evals >= patience:
                        stopped_early = step < max_steps
                        break
                if step < max_steps:
                    save_state()
            if _after_step is not None:
                _after_step(step)
    finally:
        bar.close()

    if best_state is not None:
        model.load_state_dict(best_state)
    if cfg["lora"] is not None and hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()  # a plain checkpoint that load() reads without peft
    summary = {
        "best_step": best_step,
        "best_dev_loss": best_loss if math.isfinite(best_loss) else None,
        "stopped_early": stopped_early,
        "steps": step,
        "tokens_per_s": total_input_tokens / total_train_time if total_train_time else None,
        "train_tokens": total_input_tokens,
        "elapsed_s": time.perf_counter() - t_start,
        "n_params": n_params,
        "n_train": len(train_ids),
        "n_dev_eval": len(dev_ids),
        "mean_tokens_per_quatrain": sum(map(len, train_ids)) / len(train_ids),
        "truncated_train": n_trunc,
        "truncated_dev": n_trunc_dev,
        "vocab_size": len(tokenizer),
        "threads": int(threads),
        "resumed_from_step": resumed_from,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = _make_sibling_dir(out)
    try:
        with _quiet_transformers(progress):
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
        write_json(
            tmp / "training_log.json",
            {"evals": log, "summary": summary, "model_cfg": model_cfg, "train_cfg": tcfg,
             "provenance": train_stamp(train, dev, model_cfg, train_cfg)},
        )
        _replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(rdir, ignore_errors=True)
    return summary


# --------------------------------------------------------------------------------------------------
# sampling


def decoding_kwargs(decoding: dict) -> dict:
    """Map a decoding config to ``model.generate`` keyword arguments: ancestral sampling
    ``{temperature, top_p, top_k}`` or a contrastive config ``{top_k, penalty_alpha, mode, score_temperature}``
    (:func:`_contrastive_kwargs`)."""
    if "penalty_alpha" in decoding:
        return _contrastive_kwargs(decoding)
    known = {"temperature", "top_p", "top_k"}
    unknown = set(decoding) - known
    if unknown:
        raise PoevalError(f"unknown decoding parameter(s) {sorted(unknown)}; known: {sorted(known)} "
                          "(or top_k and penalty_alpha for contrastive search)")
    temperature = float(decoding.get("temperature", 1.0))
    top_p = float(decoding.get("top_p", 1.0))
    top_k = decoding.get("top_k", 0)
    if not temperature > 0:
        raise PoevalError(f"decoding temperature must be > 0, got {temperature}")
    if not 0 < top_p <= 1:
        raise PoevalError(f"decoding top_p must be in (0, 1], got {top_p}")
    if not isinstance(top_k, int) or top_k < 0:
        raise PoevalError(f"decoding top_k must be an integer >= 0 (0 = off), got {top_k!r}")
    # top_k=0 disables top-k filtering; it is passed explicitly to override generation_config defaults
    return {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": top_k}


# Contrastive configs (``mode``): ``stochastic`` draws each token among the top-k from softmax(contrastive
# score / score_temperature) (poeval's default: a diverse sample); ``argmax`` is Su et al.'s deterministic
# search after a first token drawn by ancestral sampling (poeval before this switch); ``paper`` is what the
# paper's code ran: its sampling script passes do_sample=True (the default of its --do_sample flag, a
# store_false) with penalty_alpha and top_k, and transformers 4 then chose plain sampling
# (GenerationConfig.get_generation_mode: contrastive search only when do_sample is False), so penalty_alpha
# had no effect and the "contrastive" cells are top-k sampling at temperature 1.
CONTRASTIVE_MODES = ("stochastic", "argmax", "paper")
SCORE_TEMPERATURE = 0.1   # default tau of the stochastic mode (README: distinct share vs tau)


def _contrastive_kwargs(decoding: dict) -> dict:
    from .contrastive import contrastive_generate

    unknown = set(decoding) - {"top_k", "penalty_alpha", "mode", "score_temperature"}
    if unknown:
        raise PoevalError(f"contrastive search takes only top_k, penalty_alpha, mode and score_temperature, "
                          f"not {sorted(unknown)}")
    top_k, alpha = decoding.get("top_k"), decoding["penalty_alpha"]
    mode = decoding.get("mode", "stochastic")
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
        raise PoevalError(f"contrastive search top_k must be an integer >= 1, got {top_k!r}")
    if not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
        raise PoevalError(f"contrastive search penalty_alpha must be in [0, 1], got {alpha!r}")
    if mode not in CONTRASTIVE_MODES:
        raise PoevalError(f"contrastive mode must be one of {list(CONTRASTIVE_MODES)}, got {mode!r}")
    if "score_temperature" in decoding and mode != "stochastic":
        raise PoevalError(f"score_temperature applies to mode stochastic only, not {mode!r}")
    if mode == "paper":
        return {"do_sample": True, "temperature": 1.0, "top_p": 1.0, "top_k": top_k}
    tau = 0.0   # argmax
    if mode == "stochastic":
        tau = decoding.get("score_temperature", SCORE_TEMPERATURE)
        if not isinstance(tau, (int, float)) or isinstance(tau, bool) or not 0 < tau < math.inf:
            raise PoevalError(f"contrastive score_temperature must be a finite number > 0, got {tau!r}")
    return {"custom_generate": contrastive_generate, "do_sample": False, "top_k": top_k,
            "penalty_alpha": float(alpha), "score_temperature": float(tau)}


def _generate(model, prompt, gen_kwargs: dict, max_new_tokens: int, eos: int, pad: int):
    """One batch of generations from ``prompt``. Contrastive search with the argmax (score_temperature 0)
    is deterministic, so from the same BOS prompt every attempt would give the same quatrain: its first
    token is drawn by ancestral sampling (temperature 1), and the search continues from there."""
    import torch

    if gen_kwargs.get("score_temperature") == 0.0:
        with torch.no_grad():
            probs = torch.softmax(model(input_ids=prompt).logits[:, -1].float(), dim=-1)
        prompt = torch.cat([prompt, torch.multinomial(probs, 1)], dim=1)
        max_new_tokens -= 1
        if max_new_tokens < 1:
            return prompt
        done = prompt[:, -1] == eos   # a first token of EOS ends the row: nothing to continue
        if bool(done.all()):
            return prompt
    return model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=max_new_tokens,
                          eos_token_id=eos, pad_token_id=pad, **gen_kwargs)


def is_byte_level(tokenizer) -> bool:
    return type(tokenizer).__name__.startswith("ByT5")


def parse_quatrain(text: str, finished: bool = True) -> tuple[list[str] | None, str | None]:
    """Return ``(lines, None)`` for a valid quatrain, else ``(None, reason)``: the text's lines (split on
    newlines) under :func:`poeval.generators.sampling.check_quatrain` (ended with EOS, exactly four lines,
    none empty after stripping; reasons ``truncated``, ``wrong_line_count:<k>``, ``empty_line``)."""
    return check_quatrain(text.split("\n"), finished)


def _attempt(tokenizer, row: list[int], eos: int, styled: bool) -> Attempt:
    """A generated row (after BOS) as an attempt: its text up to EOS, split into verses."""
    finished = eos in row
    text = tokenizer.decode(row[: row.index(eos)] if finished else row, skip_special_tokens=True)
    if styled:  # style tokens are special, so decode skipped them; make sure of it
        text = strip_style(text)
    return Attempt(text.split("\n"), finished)


def sample(
    model_dir: str,
    decoding: dict,
    n: int,
    out: str,
    stats: str,
    *,
    batch_size: int = 100,
    max_new_tokens: int | None = 100,
    max_new_bytes: int | None = None,
    max_attempts: int = 3000,
    seed: int = 1,
    threads: int = 1,
    id_prefix: str = "",
    progress: bool = True,
) -> dict:
    """Sample until ``n`` valid quatrains or ``max_attempts`` generations; write JSONL + stats JSON.

    Each generation starts from BOS alone. It is a valid quatrain iff it ends with EOS within
    ``max_new_tokens`` and its text splits on newlines into exactly four lines, each non-empty after
    stripping; anything else is counted under its reason (``truncated``: no EOS within the budget;
    ``wrong_line_count:<k>``; ``empty_line``), never written and never repaired, and sampling goes on
    (:func:`poeval.generators.sampling.sample_loop`). Generations are parsed in order; counting stops at
    the one that yields the n-th valid quatrain, so ``valid`` equals the number of records written. The
    stats record ``validity_rate`` and ``distinct_share``. Deterministic for equal seed, batch_size and
    threads. ``max_new_tokens`` is capped by the model's positions; ``None`` means all of them
    (n_positions - 1). Byte-level models use ``max_new_bytes`` instead when it is given.
    """
    import torch

    gen_kwargs = decoding_kwargs(decoding)
    sampling = {"n": n, "batch_size": batch_size, "max_new_tokens": max_new_tokens, "max_new_bytes": max_new_bytes,
                "max_attempts": max_attempts, "seed": seed}   # as given (params sampling), for provenance
    check_counts(n, batch_size, max_attempts)
    if max_new_tokens is not None and max_new_tokens < 1:
        raise PoevalError("sample: max_new_tokens must be >= 1 or null")
    if not Path(model_dir).is_dir():
        raise PoevalError(f"model directory not found: {model_dir}")
    torch.set_num_threads(int(threads))
    with _quiet_transformers(progress):
        model, tokenizer = load(model_dir)
    model.to(device.resolve())
    model.eval()
    limit = _max_positions(model)
    if max_new_bytes is not None and is_byte_level(tokenizer):
        max_new_tokens = max_new_bytes   # a byte-level model needs ~3x the steps of a BPE one
    if max_new_tokens is None:  # as many as fit: byte-level models need ~4x the tokens of BPE ones
        if limit is None:
            raise PoevalError(f"sample: {model_dir} has no position limit; give max_new_tokens")
        max_new_tokens = limit - 1
    elif limit is not None:
        max_new_tokens = min(max_new_tokens, limit - 1)
    bos, eos, pad = tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id
    styled = has_style_tokens(tokenizer)  # a style-conditioned model: generation is still unprompted

    def generate(size: int) -> list[Attempt]:
        prompt = torch.full((size, 1), bos, dtype=torch.long, device=device.of(model))
        with torch.no_grad(), _quiet_transformers(progress):
            seqs = _generate(model, prompt, gen_kwargs, max_new_tokens, eos, pad)
        return [_attempt(tokenizer, row, eos, styled) for row in seqs[:, 1:].tolist()]

    return sample_loop(generate, n, out, stats, model_dir=model_dir, decoding=decoding, sampling=sampling,
                       batch_size=batch_size, max_attempts=max_attempts, seed=seed, id_prefix=id_prefix,
                       progress=progress, extra=lambda _: {"max_new_tokens": max_new_tokens,
                                                           "byte_level": is_byte_level(tokenizer)})
