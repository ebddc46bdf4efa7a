"""DeepSpeare's training (package docstring: :mod:`poeval.generators.poetic.deepspeare`): the three
models trained jointly on pseudo-sonnets through the generators' engine."""

from __future__ import annotations

from pathlib import Path

import torch

from poeval.errors import PoevalError
from poeval.generators import engine
from poeval.generators.poetic.common import Vocab, init_embedding, save_checkpoint
from poeval.generators.poetic.deepspeare.data import (ARCH, Tables, _encode_poem, read_dev, read_sonnets,
                                                      resolve_model_cfg, resolve_train_cfg)
from poeval.generators.poetic.deepspeare.model import Batcher, DeepSpeare
from poeval.poetry import style as _style
from poeval.stamps import train_stamp


# the original's optimisers (sonnet_model.py): tf.train.AdagradOptimizer, whose accumulators start at 0.1
# (torch's at 0: a first step of lr per weight, 0.2, would wreck the word2vec embeddings), and AdamOptimizer
OPTIMIZERS = {
    "adagrad": lambda params, lr, wd: torch.optim.Adagrad(params, lr=lr, weight_decay=wd,
                                                          initial_accumulator_value=0.1),
    "adam": lambda params, lr, wd: torch.optim.Adam(params, lr=lr, weight_decay=wd),
    "adamw": lambda params, lr, wd: torch.optim.AdamW(params, lr=lr, weight_decay=wd),
    "sgd": lambda params, lr, wd: torch.optim.SGD(params, lr=lr, weight_decay=wd),
}


class PartOptimizers(torch.optim.Optimizer):
    """One optimiser per model, stepped as the engine's one: the language model's (``lm_optimizer`` at
    ``lm_lr``), the pentameter model's, which also owns the character embedding and so the character
    encoder the language model shares (``pm_``), and the rhyme model's (``rm_``). The engine's schedule
    scales each one's learning rate alike (DeepSpeare's: constant after ``warmup_steps``, none by default)."""

    def __init__(self, parts: dict[str, torch.optim.Optimizer]):   # no super().__init__: the parts hold the state
        self.parts = parts
        self.defaults = {}
        self.state = {}

    @property
    def param_groups(self) -> list[dict]:   # the parts' own groups, so that the schedule sets their rates
        return [group for opt in self.parts.values() for group in opt.param_groups]

    def step(self, closure=None):
        for opt in self.parts.values():
            opt.step()

    def zero_grad(self, set_to_none: bool = True):
        for opt in self.parts.values():
            opt.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict:
        return {name: opt.state_dict() for name, opt in self.parts.items()}

    def load_state_dict(self, state_dict: dict) -> None:
        for name, opt in self.parts.items():
            opt.load_state_dict(state_dict[name])


def optimizers(model: DeepSpeare, cfg: dict, tcfg: dict) -> PartOptimizers:
    """The original's three optimisers (``<part>_optimizer`` at ``<part>_lr``; defaults: Adagrad 0.2 for the
    language model, Adam 0.001 for the pentameter and rhyme models; config.py). Each weight has one owner,
    which steps it with the summed gradient of the losses that use it (module docstring); ``weight_decay``
    (0, as the original) applies to every weight."""
    owners = {"lm": [model.lm], "pm": [model.chars, model.pentameter], "rm": [model.rhyme]}
    wd = float(tcfg["weight_decay"])
    return PartOptimizers({
        part: OPTIMIZERS[cfg[f"{part}_optimizer"]]([p for mod in mods for p in mod.parameters()],
                                                   float(cfg[f"{part}_lr"]), wd)
        for part, mods in owners.items()})


def _evaluate(batcher: Batcher, dev: list[dict], batch_size: int) -> dict:
    model = batcher.model
    model.eval()
    total, count, pm, rm, n_pm, n_rm = 0.0, 0, 0.0, 0.0, 0, 0
    with torch.no_grad():
        for start in range(0, len(dev), batch_size):
            part = dev[start:start + batch_size]
            loss, n = batcher.lm_loss(part)
            total += float(loss)
            count += n
            lines = [x for p in part for x in p["pm"]]
            if lines:
                pm += float(batcher.pm_lines(lines).sum())
                n_pm += len(lines)
            nq = sum(len(p["ends"]) for p in part)
            if nq:
                rm += float(batcher.rm_loss(part, None)) * nq
                n_rm += nq
    model.train()
    return {"dev_loss": total / max(count, 1), "dev_pm_loss": pm / n_pm if n_pm else None,
            "dev_rm_loss": rm / n_rm if n_rm else None}


def train(sonnets: str, dev: str, out_dir: str, model_cfg: dict, train_cfg: dict, *, lang: str,
          word2vec: str | None = None, threads: int = 1, name: str | None = None, progress: bool = True) -> dict:
    """Train DeepSpeare's language, pentameter and rhyme models jointly on pseudo-sonnets; keep the weights
    with the best dev LM loss; write ``out_dir`` atomically (:func:`.common.save_checkpoint`). Returns the
    log's summary."""
    cfg = resolve_model_cfg(model_cfg, name)
    tcfg = resolve_train_cfg(train_cfg)
    if not isinstance(lang, str) or not lang:
        raise PoevalError("train: lang must be a language code such as 'en' or 'de'")
    if word2vec is not None and not Path(word2vec).is_file():
        raise PoevalError(f"word2vec file not found: {word2vec}")
    conditioned = cfg["conditioned"]
    train_poems, scheme_counts = read_sonnets(sonnets, conditioned, name)
    dev_poems = read_dev(dev, conditioned, tcfg["eval_quatrains"], name)

    # one thread whatever `threads` says: torch's multithreaded CPU kernels for these small LSTM ops
    # sum in a varying order, so two identical runs gave different weights with 2 threads
    rng = engine.seed(tcfg["seed"], 1)

    style = _style.STYLE_TOKENS if conditioned else ()
    verse_tokens = [row for p in train_poems for row, v in zip(p["rows"], p["verse"]) if v]
    vocab = Vocab.build(verse_tokens, min_count=cfg["min_count"], max_size=cfg["max_vocab"], extra=style)
    chars = Tables.char_list([t for row in verse_tokens for t in row] +
                             [x for p in train_poems for x, v in zip(p["text"], p["verse"]) if v])
    tables = Tables(vocab, chars, cfg["max_word_chars"], style)
    train_enc = [_encode_poem(p, tables, cfg, True) for p in train_poems]
    dev_enc = [_encode_poem(p, tables, cfg, True) for p in dev_poems]

    model = DeepSpeare(cfg, len(vocab), len(chars), vocab.pad)
    w2v = init_embedding(model.lm.embed, vocab, word2vec)
    batcher = Batcher(model, tables, cfg)

    def loss(batch: list[int]):
        poems = [train_enc[i] for i in batch]
        lm_sum, n_tok = batcher.lm_loss(poems)
        pm = batcher.pm_loss(poems)
        rm = batcher.rm_loss(poems, rng)
        return lm_sum / max(n_tok, 1) + pm + rm, {"lm": float(lm_sum.detach()), "targets": n_tok, "tokens": n_tok,
                                                   "pm": float(pm.detach()), "rm": float(rm.detach()), "n": 1}

    def train_entry(run: dict) -> dict:
        return {"train_loss": run["lm"] / run["targets"] if run.get("targets") else None,
                "train_pm_loss": run["pm"] / run["n"] if run.get("n") else None,
                "train_rm_loss": run["rm"] / run["n"] if run.get("n") else None}

    loop = engine.Loop(
        model=model, stream=engine.BatchStream([1] * len(train_enc), tcfg["batch_size"], 0, rng), loss=loss,
        evaluate=lambda: _evaluate(batcher, dev_enc, 2 * tcfg["batch_size"]), train_entry=train_entry,
        optimizer=lambda model, tcfg: optimizers(model, cfg, tcfg),
        lr_decay=False, eval_at_start=True, desc="train deepspeare",
    )
    key = engine.fingerprint({"sonnets": sonnets, "dev": dev, "word2vec": word2vec},
                             {"model_cfg": cfg, "train_cfg": tcfg, "lang": lang})
    result = engine.run(loop, tcfg, engine.Resume(out_dir, key), progress)
    evals = result["evals"]
    best = next(e for e in evals if e["step"] == result["summary"]["best_step"])

    def last(key: str):
        return next((e[key] for e in reversed(evals) if e[key] is not None), None)

    config = {**cfg, "lang": lang, "chars": chars, "scheme_counts": dict(sorted(scheme_counts.items()))}
    summary = {
        "best_dev_pm_loss": best["dev_pm_loss"],
        "best_dev_rm_loss": best["dev_rm_loss"],
        "final_train_loss": last("train_loss"),
        "final_train_pm_loss": last("train_pm_loss"),
        "final_train_rm_loss": last("train_rm_loss"),
        "n_params": sum(p.numel() for p in model.parameters()),
        "n_train": len(train_enc),
        "n_train_verses": sum(sum(p["verse"]) for p in train_poems),
        "n_dev_eval": len(dev_enc),
        "vocab_size": len(vocab),
        "n_chars": len(chars),
        "word2vec_covered": w2v["word2vec_covered"],
        "threads": int(threads),
    }
    log = engine.training_log(result, summary, train_stamp(sonnets, dev, model_cfg, train_cfg, word2vec=word2vec),
                              model_cfg=model_cfg, train_cfg=tcfg)
    save_checkpoint(out_dir, ARCH, config, vocab, model.states(), log)
    return log["summary"]
