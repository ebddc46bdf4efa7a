"""Quatrain language models: train (from scratch or fine-tune) and sample.

A quatrain is modelled as the text ``bos + "\\n".join(lines) + eos``. From-scratch models get a
byte-level BPE tokenizer trained on the training split only and a GPT-2 architecture built from the
config; pretrained models are loaded with ``from_pretrained`` (a hub id or a local directory; no
download is attempted when ``HF_HUB_OFFLINE=1``).

Everything is seeded: the same inputs, config and thread count give identical weights and samples.
"""

from __future__ import annotations

import collections
import contextlib
import math
import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

from .errors import PoevalError
from .io import read_jsonl, write_json, write_jsonl

SPECIAL = "<|endoftext|>"

MODEL_DEFAULTS: dict[str, Any] = {
    "arch": "gpt2",
    "init": "scratch",
    "name_or_path": None,
    "vocab_size": 4000,
    "n_layer": 2,
    "n_embd": 128,
    "n_head": 4,
    "n_positions": 128,
    "dropout": 0.0,  # measured: faster and lower dev loss than 0.1 for the few-epoch CPU budget
}

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


# --------------------------------------------------------------------------------------------------
# data


def _read_quatrains(path: str | os.PathLike, role: str) -> list[list[str]]:
    out = []
    for i, record in enumerate(read_jsonl(path)):
        lines = record.get("lines") if isinstance(record, dict) else None
        if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
            raise PoevalError(f"{path}: record {i + 1} has no 'lines' list of strings")
        out.append(lines)
    if not out:
        raise PoevalError(f"{role} split {path} contains no quatrains")
    return out


def quatrain_text(lines: list[str], bos: str, eos: str) -> str:
    """The training text of one quatrain."""
    return bos + "\n".join(lines) + eos


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


def _param_name(name: str | None) -> str:
    return f"models.{name}.name_or_path" if name else "name_or_path"


def load(name_or_path: str, *, name: str | None = None):
    """Load ``(model, tokenizer)`` from a hub id or a local directory, offline-friendly.

    Any loading failure becomes one PoevalError that names the model and the config parameter
    (``models.<name>.name_or_path``) so the user knows what to fix.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not name_or_path or not isinstance(name_or_path, str):
        raise PoevalError(f"model {name or '?'}: {_param_name(name)} must be a hub id or a local path")
    looks_local = name_or_path.startswith(("/", "./", "../", "~"))
    if looks_local and not Path(name_or_path).expanduser().is_dir():
        raise PoevalError(f"cannot load model {name_or_path!r} given by {_param_name(name)}: no such directory")
    name_or_path = str(Path(name_or_path).expanduser()) if looks_local else name_or_path
    try:
        tokenizer = AutoTokenizer.from_pretrained(name_or_path)
        model = AutoModelForCausalLM.from_pretrained(name_or_path)
    except (OSError, ValueError, KeyError, ImportError, RuntimeError) as err:
        offline = _offline()
        hint = " (HF_HUB_OFFLINE is set: it must already be downloaded or be a local directory)" if offline else ""
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise PoevalError(
            f"cannot load model {name_or_path!r} given by {_param_name(name)}{hint}: {first}"
        ) from None
    if tokenizer.eos_token_id is None:
        raise PoevalError(f"model {name_or_path!r} ({_param_name(name)}): its tokenizer has no EOS token")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.bos_token_id is None:
        tokenizer.bos_token = tokenizer.eos_token
    _sync_special_ids(model, tokenizer)
    return model, tokenizer


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


def _build_scratch(model_cfg: dict, texts: list[str]):
    from transformers import GPT2Config, GPT2LMHeadModel

    arch = model_cfg.get("arch", "gpt2")
    if arch != "gpt2":
        raise PoevalError(f"model arch {arch!r} is not supported for init: scratch (only 'gpt2')")
    cfg = {**MODEL_DEFAULTS, **model_cfg}
    if cfg["n_embd"] % cfg["n_head"]:
        raise PoevalError(f"model n_embd ({cfg['n_embd']}) must be divisible by n_head ({cfg['n_head']})")
    tokenizer = train_tokenizer(texts, cfg["vocab_size"])
    drop = float(cfg["dropout"])
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=int(cfg["n_positions"]),
        n_embd=int(cfg["n_embd"]),
        n_layer=int(cfg["n_layer"]),
        n_head=int(cfg["n_head"]),
        resid_pdrop=drop,
        embd_pdrop=drop,
        attn_pdrop=drop,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = GPT2LMHeadModel(config)
    _sync_special_ids(model, tokenizer)
    return model, tokenizer


# --------------------------------------------------------------------------------------------------
# training


def _encode(tokenizer, quatrains: list[list[str]], max_len: int | None) -> tuple[list[list[int]], int]:
    texts = [quatrain_text(q, tokenizer.bos_token, tokenizer.eos_token) for q in quatrains]
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
    """
    import torch
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    tcfg = {**TRAIN_DEFAULTS, **train_cfg}
    init = model_cfg.get("init", "scratch")
    if init not in ("scratch", "pretrained"):
        raise PoevalError(f"model init must be 'scratch' or 'pretrained', got {init!r}")
    unknown = set(train_cfg) - set(TRAIN_DEFAULTS)
    if unknown:
        raise PoevalError(f"unknown train parameter(s) {sorted(unknown)}; known: {sorted(TRAIN_DEFAULTS)}")
    for key in ("batch_size", "max_steps", "eval_every", "eval_quatrains"):
        if not isinstance(tcfg[key], int) or tcfg[key] < 1:
            raise PoevalError(f"train {key} must be a positive integer, got {tcfg[key]!r}")
    train_q = _read_quatrains(train, "train")
    dev_q = _read_quatrains(dev, "dev")[: tcfg["eval_quatrains"]]

    torch.set_num_threads(int(threads))
    seed = int(tcfg["seed"])
    torch.manual_seed(seed)
    rng = random.Random(seed)

    if init == "pretrained":
        # fail before any training work if the model cannot be loaded
        with _quiet_transformers(progress):
            model, tokenizer = load(model_cfg.get("name_or_path"), name=name)
    else:
        texts = [quatrain_text(q, "", "") for q in train_q]  # tokenizer sees TRAIN text only
        model, tokenizer = _build_scratch(model_cfg, texts)
    model.train()

    max_len = _max_positions(model)
    train_ids, n_trunc = _encode(tokenizer, train_q, max_len)
    dev_ids, n_trunc_dev = _encode(tokenizer, dev_q, max_len)
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

    bs, group = tcfg["batch_size"], int(tcfg["length_grouping"] or 0)

    def batches():
        """Endless epochs over the shuffled train split. With length_grouping g > 1, each run of g
        batches of the shuffled order is sorted by length before batching and the batch order is
        shuffled again ("sortish" batching, like HF group_by_length): ~98% instead of ~63% real
        tokens per padded batch on English quatrains."""
        order = list(range(len(train_ids)))
        while True:
            rng.shuffle(order)
            if group > 1:
                chunks = []
                for c in range(0, len(order), bs * group):
                    part = sorted(order[c : c + bs * group], key=lambda i: len(train_ids[i]))
                    chunks.extend(part[s : s + bs] for s in range(0, len(part), bs))
                rng.shuffle(chunks)
            else:
                chunks = [order[s : s + bs] for s in range(0, len(order), bs)]
            for chunk in chunks:
                yield [train_ids[i] for i in chunk]

    patience = tcfg["patience"]
    log: list[dict] = []
    best_loss, best_step, best_state = math.inf, 0, None
    bad_evals, stopped_early = 0, False
    run_loss, run_tokens, run_input_tokens, run_time = 0.0, 0, 0, 0.0
    total_input_tokens, total_train_time = 0, 0.0
    t_start = time.perf_counter()
    bar = tqdm(total=max_steps, desc="train", unit="step", disable=not progress, leave=False)
    stream = batches()
    step = 0
    try:
        while step < max_steps:
            t0 = time.perf_counter()
            input_ids, mask, labels = _collate(next(stream), pad_id)
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
                    best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                else:
                    bad_evals += 1
                    if patience and bad_evals >= patience:
                        stopped_early = step < max_steps
                        break
    finally:
        bar.close()

    if best_state is not None:
        model.load_state_dict(best_state)
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
    }
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = _make_sibling_dir(out)
    try:
        with _quiet_transformers(progress):
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
        write_json(
            tmp / "training_log.json",
            {"evals": log, "summary": summary, "model_cfg": model_cfg, "train_cfg": tcfg},
        )
        _replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return summary


# --------------------------------------------------------------------------------------------------
# sampling


def decoding_kwargs(decoding: dict) -> dict:
    """Map a decoding config to ``model.generate`` keyword arguments (ancestral sampling)."""
    known = {"temperature", "top_p", "top_k"}
    unknown = set(decoding) - known
    if unknown:
        raise PoevalError(f"unknown decoding parameter(s) {sorted(unknown)}; known: {sorted(known)}")
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


def parse_quatrain(text: str, finished: bool = True) -> tuple[list[str] | None, str | None]:
    """Return ``(lines, None)`` for a valid quatrain, else ``(None, reason)``.

    Valid iff generation ended with EOS (``finished``) and splitting on newlines gives exactly four
    lines that are non-empty after stripping. Reasons: ``truncated``, ``wrong_line_count:<k>``,
    ``empty_line``.
    """
    if not finished:
        return None, "truncated"
    lines = [line.strip() for line in text.split("\n")]
    if len(lines) != 4:
        return None, f"wrong_line_count:{len(lines)}"
    if not all(lines):
        return None, "empty_line"
    return lines, None


def sample(
    model_dir: str,
    decoding: dict,
    n: int,
    out: str,
    stats: str,
    *,
    batch_size: int = 100,
    max_new_tokens: int = 100,
    max_attempts: int = 3000,
    seed: int = 1,
    threads: int = 1,
    id_prefix: str = "",
    progress: bool = True,
) -> dict:
    """Sample until ``n`` valid quatrains or ``max_attempts`` generations; write JSONL + stats JSON.

    Generations are parsed in order; counting stops at the one that yields the n-th valid quatrain, so
    ``valid`` equals the number of records written. Deterministic for equal seed, batch_size and threads.
    """
    import torch
    from tqdm.auto import tqdm

    gen_kwargs = decoding_kwargs(decoding)
    if n < 0 or max_attempts < 1 or batch_size < 1 or max_new_tokens < 1:
        raise PoevalError("sample: n must be >= 0 and batch_size, max_new_tokens, max_attempts >= 1")
    if not Path(model_dir).is_dir():
        raise PoevalError(f"model directory not found: {model_dir}")
    torch.set_num_threads(int(threads))
    with _quiet_transformers(progress):
        model, tokenizer = load(model_dir)
    model.eval()
    limit = _max_positions(model)
    if limit is not None:
        max_new_tokens = min(max_new_tokens, limit - 1)
    bos, eos, pad = tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id

    torch.manual_seed(int(seed))
    records: list[dict] = []
    reasons: collections.Counter = collections.Counter()
    attempts = 0
    t0 = time.perf_counter()
    bar = tqdm(total=n, desc="sample", unit="quatrain", disable=not progress, leave=False)
    try:
        while len(records) < n and attempts < max_attempts:
            size = min(batch_size, max_attempts - attempts)
            prompt = torch.full((size, 1), bos, dtype=torch.long)
            with torch.no_grad(), _quiet_transformers(progress):
                seqs = model.generate(
                    input_ids=prompt,
                    attention_mask=torch.ones_like(prompt),
                    max_new_tokens=max_new_tokens,
                    eos_token_id=eos,
                    pad_token_id=pad,
                    **gen_kwargs,
                )
            for row in seqs[:, 1:].tolist():
                attempts += 1
                finished = eos in row
                text = tokenizer.decode(row[: row.index(eos)] if finished else row, skip_special_tokens=True)
                lines, reason = parse_quatrain(text, finished)
                if lines is None:
                    reasons[reason] += 1
                else:
                    records.append({"id": f"{id_prefix}{len(records):05d}", "lines": lines})
                    bar.update(1)
                if len(records) >= n:
                    break
    finally:
        bar.close()

    write_jsonl(out, records)
    result = {
        "attempts": attempts,
        "valid": len(records),
        "requested": n,
        "validity_rate": len(records) / attempts if attempts else 0.0,
        "reasons": dict(sorted(reasons.items())),
        "decoding": decoding,
        "seed": int(seed),
        "batch_size": batch_size,
        "max_new_tokens": max_new_tokens,
        "max_attempts": max_attempts,
        "elapsed_s": time.perf_counter() - t0,
    }
    write_json(stats, result)
    return result
