"""Quatrain language models: train (from scratch or fine-tune) and sample.

A quatrain is modelled as the text ``bos + "\\n".join(lines) + eos``; a style-conditioned model
(``conditioned: true``) sees ``bos + <scheme=abab><meter=iambic> + "\\n".join(lines) + eos`` in training,
the two style tags being single special tokens, and samples unprompted from BOS with the tags stripped,
or prompted with a scheme token (``style``: the style adherence evaluation, :mod:`poeval.metrics.adherence`).

Model families (``arch``): ``gpt2``, ``gptneo`` and ``llama`` are word-level; from scratch they get a
byte-level BPE tokenizer trained on the training split only. ``bygpt5`` is token-free: bytes are the
tokens (transformers' ``ByT5Tokenizer``, nothing trained) and a GPT-2 decoder body; it stands in for
ByGPT5. Pretrained models are loaded with ``from_pretrained`` (a local directory or a hub id; nothing is
downloaded unless the user allows it, :mod:`poeval.hub`), optionally with LoRA adapters (needs ``peft``).

``verse_order: reversed`` writes every verse right to left, character by character, so that a verse
starts with its rhyme: the model chooses the rhyme before the words that lead up to it, as generators that
write verses backwards do (Ghazvininejad et al. 2016, Hafez; Van de Cruys 2020). A BPE tokenizer trained
from scratch then also keeps the rime of each verse's first (reversed) word as a piece of its own, so a
rhyme is the copy of one piece. The checkpoint records the order (``config.json``: ``poeval_verse_order``);
samples and BPoMP scores read it and turn verses back, so nothing downstream sees reversed text.

Training is resumable: after every evaluation the full training state is saved to
``.<out_dir name>.resume/`` next to ``out_dir``; calling :func:`train` again with the same inputs and
config continues from there and ends with the same checkpoint, bit for bit, as an uninterrupted run.

Everything is seeded: the same inputs, config and thread count give identical weights and samples.
"""

from __future__ import annotations

import inspect
import math
import os
from pathlib import Path
from typing import Any

from poeval import config, device
from poeval.errors import PoevalError
from poeval.generators import engine, registry
# what reads a checkpoint lives in .checkpoint (BPoMP's scorer reads it too); re-exported, the loading API
from poeval.generators.checkpoint import (VERSE_ORDER, load, max_positions, orient, param_key,  # noqa: F401
                                         sync_special_ids, text_bounds, verse_order)
from poeval.generators.engine import quiet_transformers, resume_dir  # noqa: F401 - resume_dir: where an interrupted run's state waits
from poeval.generators.sampling import (N_VERSES, PAPER_MIN_NEW_TOKENS, Attempt, check_quatrain, paper_loop,
                                       sample_loop)
from poeval.generators.sampling import resolve as resolve_sampling
from poeval.io import read_jsonl
from poeval.poetry.style import METERS, SCHEMES, STYLE_TOKENS, strip_style, style_tokens  # noqa: F401 - re-exported
from poeval.stamps import train_stamp

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

# per-arch defaults that differ from MODEL_DEFAULTS (JSON schema defaults cannot depend on arch; the
# schema's n_positions description names this one): byte sequences are ~4x longer than BPE ones
ARCH_DEFAULTS: dict[str, dict[str, Any]] = {"bygpt5": {"n_positions": 512}}


# --------------------------------------------------------------------------------------------------
# data


def read_split(
    path: str | os.PathLike, role: str, conditioned: bool = False, name: str | None = None
) -> tuple[list[list[str]], list[list[str]] | None]:
    """The quatrains of a split (each a list of verses) and, when ``conditioned``, each one's style tokens
    (:func:`style_tokens` of its ``scheme`` and ``meter`` fields), else None. ``role`` (train, dev) and
    ``name`` (the system) name the split and the params key in errors: a record without a ``lines`` list,
    a missing or unknown style field, an empty split."""
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
                        f" ({param_key(name, 'conditioned')} is true)"
                    )
                if record[field] not in allowed:
                    raise PoevalError(
                        f"{path}: record {i + 1}: '{field}' is {record[field]!r}, not one of {', '.join(allowed)}"
                    )
            styles.append(style_tokens(record["scheme"], record["meter"]))
    if not out:
        raise PoevalError(f"{role} split {path} contains no quatrains")
    return out, (styles if conditioned else None)


def read_quatrains(path: str | os.PathLike, role: str) -> list[list[str]]:
    return read_split(path, role)[0]


def quatrain_text(lines: list[str], bos: str, eos: str, style: list[str] | tuple[str, ...] = ()) -> str:
    """The training text of one quatrain (``style``: its style tokens, for conditioned models)."""
    return bos + "".join(style) + "\n".join(lines) + eos


def training_texts(tokenizer, quatrains: list[list[str]], styles: list[list[str]] | None = None) -> list[str]:
    """The texts a model is trained on: one per quatrain, with style tokens when ``styles`` is given."""
    styles = styles or [()] * len(quatrains)
    bos, eos = text_bounds(tokenizer)
    return [quatrain_text(q, bos, eos, st) for q, st in zip(quatrains, styles)]


# --------------------------------------------------------------------------------------------------
# tokenizer / model construction and loading


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
    cfg = {**MODEL_DEFAULTS, **ARCH_DEFAULTS.get(arch, {}), **model_cfg}
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
    tokenizer = (byte_tokenizer() if cfg["arch"] == "bygpt5"
                 else train_tokenizer(texts, cfg["vocab_size"], rime_pieces=cfg["verse_order"] == "reversed"))
    if cfg["conditioned"]:
        add_style_tokens(tokenizer)
    config = _scratch_config(cfg, tokenizer)
    cls = {"gpt2": GPT2LMHeadModel, "bygpt5": GPT2LMHeadModel, "gptneo": GPTNeoForCausalLM, "llama": LlamaForCausalLM}
    model = cls[cfg["arch"]](config)
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


# --------------------------------------------------------------------------------------------------
# training


def encode_quatrains(
    tokenizer, quatrains: list[list[str]], max_len: int | None, styles: list[list[str]] | None = None
) -> tuple[list[list[int]], int]:
    """The token ids a model is trained on, one list per quatrain (:func:`training_texts` tokenized with no
    special tokens added), each cut to ``max_len`` tokens when given, and how many were cut."""
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
    """Train a causal LM on the quatrains of ``train`` through :func:`poeval.generators.engine.run`; keep
    the checkpoint with the best dev loss.

    ``out_dir`` receives the best model and its tokenizer (``save_pretrained``) and ``training_log.json``,
    written atomically. ``name`` is the model's key in the config, used in error messages. An interrupted
    run called again with the same arguments resumes (:func:`resume_dir`) and gives the same checkpoint,
    bit for bit. Returns the log's summary.

    ``train_cfg`` ``"none"`` (params ``models.<system>.training: none``) trains nothing: the pretrained
    model is saved as loaded, with the dev loss it has (measured once, with the schema's training defaults
    for the dev quatrains and batch) and 0 steps in the log.
    """
    untrained = train_cfg == config.UNTRAINED
    tcfg = TRAIN_DEFAULTS if untrained else resolve_train_cfg(train_cfg)
    # an untrained model's entry meets the rules of training: none (config.RULES: pretrained, no style, no LoRA)
    cfg = resolve_model_cfg({**model_cfg, "training": train_cfg} if untrained else model_cfg, name)
    init, conditioned = cfg["init"], cfg["conditioned"]
    train_q, train_styles = read_split(train, "train", conditioned, name)
    dev_q, dev_styles = read_split(dev, "dev", conditioned, name)
    order = cfg["verse_order"]
    train_q, dev_q = [orient(q, order) for q in train_q], [orient(q, order) for q in dev_q]
    dev_q = dev_q[: tcfg["eval_quatrains"]]
    dev_styles = dev_styles[: tcfg["eval_quatrains"]] if dev_styles is not None else None

    rng = engine.seed(tcfg["seed"], threads)
    base = None
    if init == "pretrained":
        # fail before any training work if the model cannot be loaded
        with quiet_transformers(progress):
            model, tokenizer = load(cfg["name_or_path"], name=name, tokenizer=cfg["tokenizer"])
        if conditioned and add_style_tokens(tokenizer):
            model.resize_token_embeddings(len(tokenizer))
            sync_special_ids(model, tokenizer)
        base = _base(cfg["name_or_path"])
        recorded = getattr(model.config, VERSE_ORDER, None)   # a hub model records none: either order is fine
        if untrained:   # ...to fine-tune; kept as it is, it writes forward
            recorded = recorded or "forward"
        if recorded is not None and recorded != order:
            raise PoevalError(f"{param_key(name, 'verse_order')} is {order!r}, but {cfg['name_or_path']} was "
                              f"trained {recorded!r}")
    else:
        texts = [quatrain_text(q, "", "") for q in train_q]  # tokenizer sees TRAIN text only, no style tokens
        model, tokenizer = _build_scratch(cfg, texts)
    if order != "forward":
        setattr(model.config, VERSE_ORDER, order)   # saved in config.json: the sampler turns verses back
    if cfg["lora"] is not None:   # pretrained only (config.RULES)
        model = _apply_lora(model, cfg["lora"], conditioned)
    model.to(device.resolve())

    max_len = max_positions(model)
    train_ids, n_trunc = encode_quatrains(tokenizer, train_q, max_len, train_styles)
    dev_ids, n_trunc_dev = encode_quatrains(tokenizer, dev_q, max_len, dev_styles)
    pad_id = tokenizer.pad_token_id

    def loss(batch: list[int]):
        input_ids, mask, labels = _collate([train_ids[i] for i in batch], pad_id)
        loss_sum, n_tok = _loss_sum(model, input_ids, mask, labels)
        return loss_sum / max(n_tok, 1), {"loss": loss_sum.item(), "targets": n_tok, "tokens": int(mask.sum())}

    def evaluate() -> dict:
        return {"dev_loss": _dev_loss(model, dev_ids, pad_id, 2 * tcfg["batch_size"])}

    if untrained:
        result = engine.untouched(evaluate)
    else:
        loop = engine.Loop(
            model=model,
            stream=engine.BatchStream([len(s) for s in train_ids], tcfg["batch_size"],
                                      int(tcfg["length_grouping"] or 0), rng),
            loss=loss,
            evaluate=evaluate,
            train_entry=lambda run: {"train_loss": run.get("loss", 0.0) / max(run.get("targets", 0), 1)},
        )
        key = engine.fingerprint({"train": train, "dev": dev}, {"model_cfg": cfg, "train_cfg": tcfg,
                                                                "threads": int(threads)})
        result = engine.run(loop, tcfg, engine.Resume(out_dir, key), progress)

    trainable = 0 if untrained else sum(p.numel() for p in model.parameters() if p.requires_grad)
    if cfg["lora"] is not None and hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()  # a plain checkpoint that load() reads without peft
    summary = {
        "n_params": sum(p.numel() for p in model.parameters()),
        "trainable_params": trainable,
        "n_train": len(train_ids),
        "n_dev_eval": len(dev_ids),
        "mean_tokens_per_quatrain": sum(map(len, train_ids)) / len(train_ids),
        "truncated_train": n_trunc,
        "truncated_dev": n_trunc_dev,
        "vocab_size": len(tokenizer),
        "threads": int(threads),
        **({"base": base} if base else {}),
    }

    def write(tmp: Path) -> None:
        with quiet_transformers(progress):
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)

    log = engine.training_log(result, summary, train_stamp(train, dev, model_cfg, train_cfg,
                                                                 base=base and base["path"]),
                              model_cfg=model_cfg, train_cfg=train_cfg if untrained else tcfg)
    engine.write_checkpoint(out_dir, write, log)
    return log["summary"]


# --------------------------------------------------------------------------------------------------
# sampling


DECODING_NODE = "#/$defs/decoding"   # the params schema's decoding config: its checks and defaults


def decoding_kwargs(decoding: dict) -> dict:
    """Map a decoding config to ``model.generate`` keyword arguments: ancestral sampling
    ``{temperature, top_p, top_k}`` or a contrastive config ``{top_k, penalty_alpha, mode, score_temperature}``
    (:func:`_contrastive_kwargs`). The config is checked and its defaults filled by the params schema."""
    full = config.resolve_section(decoding, DECODING_NODE, "decoding")
    if "penalty_alpha" in full:
        return _contrastive_kwargs(full, tau_given="score_temperature" in decoding)
    # top_k=0 disables top-k filtering; it is passed explicitly to override generation_config defaults
    return {"do_sample": True, "temperature": float(full["temperature"]), "top_p": float(full["top_p"]),
            "top_k": full["top_k"]}


# Contrastive configs (``mode``): ``stochastic`` draws each token among the top-k from softmax(contrastive
# score / score_temperature) (poeval's default: a diverse sample); ``argmax`` is Su et al.'s deterministic
# search after a first token drawn by ancestral sampling (poeval before this switch); ``paper`` is what the
# paper's code ran: its sampling script passes do_sample=True (the default of its --do_sample flag, a
# store_false) with penalty_alpha and top_k, and transformers 4 then chose plain sampling
# (GenerationConfig.get_generation_mode: contrastive search only when do_sample is False), so penalty_alpha
# had no effect and the "contrastive" cells are top-k sampling at temperature 1.

def _contrastive_kwargs(full: dict, tau_given: bool) -> dict:
    from poeval.generators.contrastive import contrastive_generate

    mode = full["mode"]
    if tau_given and mode != "stochastic":   # the schema cannot tell a given tau from its filled default
        raise PoevalError(f"score_temperature applies to mode stochastic only, not {mode!r}")
    if mode == "paper":
        return {"do_sample": True, "temperature": 1.0, "top_p": 1.0, "top_k": full["top_k"]}
    return {"custom_generate": contrastive_generate, "do_sample": False, "top_k": full["top_k"],
            "penalty_alpha": float(full["penalty_alpha"]),
            "score_temperature": float(full["score_temperature"]) if mode == "stochastic" else 0.0}


def stop_ids(tokenizer) -> list[int]:
    """The tokens that end a generation: the EOS first, then every other special token of the tokenizer
    except the style tokens (``<|endoftext|>`` or ``<|im_start|>`` of a chat model's tokenizer, a byte
    model's ``<pad>``). A text is never silently cut or stripped at one of these: only the EOS makes a
    quatrain valid, any other gives ``special_token``."""
    eos = tokenizer.convert_tokens_to_ids(text_bounds(tokenizer)[1])
    special = set(tokenizer.all_special_ids) | {i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
    special -= {tokenizer.convert_tokens_to_ids(t) for t in STYLE_TOKENS}
    return [eos] + sorted(special - {eos})


def newline_counts(tokenizer, size: int):
    """Per token id (``size``: the model's vocabulary), how many newlines its text holds."""
    import torch

    counts = torch.zeros(size, dtype=torch.long)
    texts = tokenizer.batch_decode([[i] for i in range(min(size, len(tokenizer)))])
    counts[: len(texts)] = torch.tensor([t.count("\n") for t in texts])
    return counts


def _fifth_verse(counts, start: int):
    """A stopping criterion: a row whose generated text holds four newlines has begun a fifth verse and
    can no longer be a quatrain, so it stops there (``extra_verse``) instead of running to the budget."""
    from transformers import StoppingCriteria

    class FifthVerse(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            return counts.to(input_ids.device)[input_ids[:, start:]].sum(dim=1) >= N_VERSES

    return FifthVerse()


def generate_batch(model, prompt, gen_kwargs: dict, max_new_tokens: int, stops: list[int], pad: int, counts=None,
                   min_new_tokens: int = 0):
    """One batch of generations from ``prompt``; a row ends at any of ``stops`` (:func:`stop_ids`) and, with
    ``counts`` (:func:`newline_counts`), at the start of a fifth verse. Contrastive search with the argmax
    (score_temperature 0) is deterministic, so from the same BOS prompt every attempt would give the same
    quatrain: its first token is drawn by ancestral sampling (temperature 1), and the search continues.
    ``gen_kwargs``: :func:`decoding_kwargs`. Returns the (B, prompt + new) ids, rows padded with ``pad`` after
    they end; :func:`sample` runs it on each batch of attempts. ``min_new_tokens``: the EOS (``stops[0]``) is
    barred for that many first tokens (the paper's procedure, as transformers' min-length processor)."""
    import torch
    from transformers import StoppingCriteriaList

    if gen_kwargs.get("score_temperature") == 0.0:
        with torch.no_grad():
            logits = model(input_ids=prompt).logits[:, -1].float()
        if min_new_tokens > 0:
            logits[:, stops[0]] = -math.inf
        prompt = torch.cat([prompt, torch.multinomial(torch.softmax(logits, dim=-1), 1)], dim=1)
        max_new_tokens, min_new_tokens = max_new_tokens - 1, max(min_new_tokens - 1, 0)
        if max_new_tokens < 1:
            return prompt
        done = torch.isin(prompt[:, -1], torch.tensor(stops, device=prompt.device))   # nothing to continue
        if bool(done.all()):
            return prompt
    if "custom_generate" not in gen_kwargs:
        return _ancestral(model, prompt, gen_kwargs, max_new_tokens, stops, pad, counts, min_new_tokens)
    criteria = StoppingCriteriaList([_fifth_verse(counts, prompt.shape[1])] if counts is not None else [])
    minimum = {"min_new_tokens": min_new_tokens} if min_new_tokens > 0 else {}
    return model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=max_new_tokens,
                          eos_token_id=stops, pad_token_id=pad, stopping_criteria=criteria, **minimum, **gen_kwargs)


def _warpers(gen_kwargs: dict):
    """transformers' own temperature, top-k and top-p warpers, in the order its ``generate`` applies them."""
    from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    warpers = LogitsProcessorList()
    if gen_kwargs["temperature"] != 1.0:
        warpers.append(TemperatureLogitsWarper(gen_kwargs["temperature"]))
    if gen_kwargs["top_k"]:
        warpers.append(TopKLogitsWarper(gen_kwargs["top_k"]))
    if gen_kwargs["top_p"] < 1.0:
        warpers.append(TopPLogitsWarper(gen_kwargs["top_p"]))
    return warpers


def _ancestral(model, prompt, gen_kwargs: dict, max_new_tokens: int, stops: list[int], pad: int, counts=None,
               min_new_tokens: int = 0):
    """Ancestral sampling as transformers' ``generate`` does it (the same warpers, then a multinomial draw
    from the softmax), except that a row that has ended (one of ``stops``, or with ``counts`` a fifth
    verse begun) leaves the batch and its key/value cache: the batch shrinks as rows end, instead of
    every row running until the longest has ended. Rows leave in groups (a tenth of the batch or more),
    so that the cache is not copied at every step. Returns ``prompt`` with the generated tokens, each row
    padded with ``pad`` after its end, as ``generate`` returns it. The EOS (``stops[0]``) gets no probability
    in the first ``min_new_tokens`` steps, set before the warpers as ``generate``'s min-length processor does."""
    import torch

    warpers, dev = _warpers(gen_kwargs), prompt.device
    stop = torch.tensor(stops, device=dev)
    counts = counts.to(dev) if counts is not None else None
    out = torch.full((prompt.shape[0], max_new_tokens), pad, dtype=torch.long, device=dev)
    rows = torch.arange(prompt.shape[0], device=dev)          # the batch rows still in the cache
    ended = torch.zeros(prompt.shape[0], dtype=torch.bool, device=dev)
    newlines = torch.zeros(prompt.shape[0], dtype=torch.long, device=dev)
    cache, step_input = None, prompt
    for step in range(max_new_tokens):
        output = model(input_ids=step_input, cache=cache, use_cache=True)
        cache = output.cache
        logits = output.logits[:, -1].float()
        if step < min_new_tokens:
            logits[:, stops[0]] = -math.inf
        probs = torch.softmax(warpers(None, logits), dim=-1)
        token = torch.multinomial(probs, num_samples=1).squeeze(1)
        live = ~ended
        out[rows[live], step] = token[live]
        if counts is not None:
            newlines += counts[token]
        ended |= torch.isin(token, stop) | (newlines >= N_VERSES if counts is not None else False)
        if bool(ended.all()):
            break
        if int(ended.sum()) * 10 >= len(rows):   # drop the ended rows from the batch and the cache
            keep = torch.nonzero(~ended).squeeze(1)
            cache.batch_select_indices(keep)
            rows, token, newlines, ended = rows[keep], token[keep], newlines[keep], ended[keep]
        step_input = token[:, None]
    return torch.cat([prompt, out], dim=1)


def is_byte_level(tokenizer) -> bool:
    return type(tokenizer).__name__.startswith("ByT5")


def parse_quatrain(text: str, finished: bool = True) -> tuple[list[str] | None, str | None]:
    """Return ``(lines, None)`` for a valid quatrain, else ``(None, reason)``: the text's lines (split on
    newlines) under :func:`poeval.generators.sampling.check_quatrain` (ended with EOS, exactly four lines,
    each with a word, :func:`poeval.text.verse_problem`; reasons ``extra_verse``, ``truncated``, ``wrong_line_count:<k>``, ``empty_line``)."""
    return check_quatrain(text.split("\n"), finished)


def _attempt(tokenizer, row: list[int], stops: list[int], styled: bool, order: str = "forward") -> Attempt:
    """A generated row (after the prompt) as an attempt: its text up to the first of ``stops`` (the EOS
    first), split into verses (turned back to forward for a model of ``verse_order`` reversed). A row
    that a special token other than the EOS ended is ``special_token``, unless it already has more verses
    than a quatrain (``extra_verse``, :func:`poeval.generators.sampling.check_quatrain`)."""
    end = next((i for i, token in enumerate(row) if token in stops), None)
    text = tokenizer.decode(row if end is None else row[:end], skip_special_tokens=True)
    if styled:  # style tokens are special, so decode skipped them; make sure of it
        text = strip_style(text)
    verses = orient(text.split("\n"), order)
    foreign = end is not None and row[end] != stops[0] and len(verses) <= N_VERSES
    return Attempt(verses, end is not None, reason="special_token" if foreign else None)


def style_prompt(tokenizer, style: str | None) -> list[int]:
    """The prompt ids: BOS, then with ``style`` (a scheme such as ``"abab"``) the model's
    ``<scheme=abab>`` token. The metre token that training put after it is left to the model, which
    draws it from what it learned to follow that scheme (training always had one, so it comes next)."""
    ids = [tokenizer.convert_tokens_to_ids(text_bounds(tokenizer)[0])]
    if style is None:
        return ids
    if style not in SCHEMES:
        raise PoevalError(f"style {style!r} is not a four-line rhyme scheme (one of {', '.join(SCHEMES)})")
    if not has_style_tokens(tokenizer):
        raise PoevalError(f"style {style!r}: the model was not trained style-conditioned (it has no style tokens)")
    return ids + [tokenizer.convert_tokens_to_ids(f"<scheme={style}>")]


def _budget(sampling: dict, tokenizer, limit: int | None, prompt: int) -> int:
    """Tokens a generation may add after a ``prompt``-token prompt: ``max_new_bytes`` for a byte-level
    model when the block gives it (a byte-level model needs ~3x the steps of a BPE one), else
    ``max_new_tokens``; capped by the model's positions (``limit``)."""
    budget = sampling["max_new_tokens"]
    if sampling.get("max_new_bytes") is not None and is_byte_level(tokenizer):
        budget = sampling["max_new_bytes"]
    return budget if limit is None else min(budget, limit - prompt)


def sample(model_dir: str, decoding: dict, sampling: dict, out: str, stats: str, *, threads: int = 1,
           id_prefix: str = "", progress: bool = True, style: str | None = None) -> dict:
    """Sample until ``n`` valid quatrains or ``max_attempts`` generations; write JSONL + stats JSON.

    ``sampling`` is a params ``sampling`` block (:func:`poeval.generators.sampling.resolve`). Each
    generation starts from BOS, followed with ``style`` (a rhyme scheme such as ``"abab"``) by a
    style-conditioned model's scheme token (:func:`style_prompt`). It is a valid quatrain iff it ends with
    EOS within its budget (:func:`_budget`) and its text splits on newlines into exactly four lines, each
    with a word (:func:`poeval.text.verse_problem`, the rule evaluate's reader applies too); anything else is counted under its reason (``truncated``: no EOS within
    the budget; ``wrong_line_count:<k>``; ``empty_line``), never written and never repaired, and sampling
    goes on (:func:`poeval.generators.sampling.sample_loop`). Generations are parsed in order; counting
    stops at the one that yields the n-th valid quatrain, so ``valid`` equals the number of records
    written. The stats record ``validity_rate`` and ``distinct_share``. Deterministic for equal seed,
    batch_size and threads. ``procedure: paper`` samples as the paper's code instead (:func:`_sample_paper`).
    """
    import torch

    gen_kwargs = decoding_kwargs(decoding)
    sampling = resolve_sampling(sampling)
    if not Path(model_dir).is_dir():
        raise PoevalError(f"model directory not found: {model_dir}")
    torch.set_num_threads(int(threads))
    with quiet_transformers(progress):
        model, tokenizer = load(model_dir)
    model.to(device.resolve())
    model.eval()
    prefix = style_prompt(tokenizer, style)
    max_new_tokens = _budget(sampling, tokenizer, max_positions(model), len(prefix))
    if sampling["procedure"] == "paper":
        return _sample_paper(model, tokenizer, prefix, gen_kwargs, max_new_tokens, out, stats, style,
                             model_dir=model_dir, decoding=decoding, sampling=sampling, id_prefix=id_prefix,
                             progress=progress)
    stops, pad = stop_ids(tokenizer), tokenizer.pad_token_id
    counts = newline_counts(tokenizer, model.get_output_embeddings().weight.shape[0])
    styled = has_style_tokens(tokenizer)  # a style-conditioned model: style tokens are stripped from its output
    order = verse_order(model)

    def generate(size: int) -> list[Attempt]:
        prompt = torch.tensor([prefix] * size, dtype=torch.long, device=device.of(model))
        with torch.no_grad(), quiet_transformers(progress):
            seqs = generate_batch(model, prompt, gen_kwargs, max_new_tokens, stops, pad, counts)
        return [_attempt(tokenizer, row, stops, styled, order) for row in seqs[:, len(prefix):].tolist()]

    return sample_loop(generate, out, stats, model_dir=model_dir, decoding=decoding, sampling=sampling,
                       id_prefix=id_prefix, progress=progress,
                       extra=lambda _: {"max_new_tokens": max_new_tokens, "byte_level": is_byte_level(tokenizer),
                                        **({"style": style} if style is not None else {})})


def paper_text(tokenizer, row: list[int], eos: int, order: str = "forward") -> tuple[str, bool]:
    """A generated row (after the prompt) as the paper's pipeline returned it, and whether the EOS ended it:
    decoded up to the EOS with every special token skipped (style tokens too), then transformers 4's
    tokenization-space clean-up (`` ,`` -> ``,``, `` 's`` -> ``'s``...), which its text-generation pipeline
    applied by default and transformers 5 no longer applies to a BPE tokenizer. A reversed model's verses
    are turned back."""
    end = row.index(eos) if eos in row else None
    text = tokenizer.decode(row[:end], skip_special_tokens=True, clean_up_tokenization_spaces=False)
    text = tokenizer.clean_up_tokenization(text)
    return "\n".join(orient(text.split("\n"), order)), end is not None


def _sample_paper(model, tokenizer, prefix: list[int], gen_kwargs: dict, max_new_tokens: int, out: str, stats: str,
                  style: str | None, **loop) -> dict:
    """``sampling.procedure: paper`` (:func:`poeval.generators.sampling.paper_loop`): generations from BOS
    (the paper's ``<|endoftext|>`` prefix) that only the EOS ends, not before
    :data:`~poeval.generators.sampling.PAPER_MIN_NEW_TOKENS` new tokens, and that run on past a fourth verse
    to the budget (the paper's ``max_length``: params ``max_new_tokens``, or ``max_new_bytes`` for a
    byte-level model); other special tokens neither end a generation nor appear in its text."""
    import torch

    eos = tokenizer.convert_tokens_to_ids(text_bounds(tokenizer)[1])
    order = verse_order(model)

    def generate(size: int) -> list[tuple[str, bool]]:
        prompt = torch.tensor([prefix] * size, dtype=torch.long, device=device.of(model))
        with torch.no_grad(), quiet_transformers(loop["progress"]):
            seqs = generate_batch(model, prompt, gen_kwargs, max_new_tokens, [eos], tokenizer.pad_token_id,
                                  min_new_tokens=PAPER_MIN_NEW_TOKENS)
        return [paper_text(tokenizer, row, eos, order) for row in seqs[:, len(prefix):].tolist()]

    return paper_loop(generate, out, stats, **loop,
                      extra={"max_new_tokens": max_new_tokens, "byte_level": is_byte_level(tokenizer),
                             **({"style": style} if style is not None else {})})
