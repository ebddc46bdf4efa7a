"""Training (:func:`train`): the line LM by maximum likelihood (optionally after Gutenberg verse), the
discriminator's rhyme encoder (on a pronouncing dictionary, or as a spelling autoencoder: ``rhyme_pretrain``),
then the adversarial phase, in which the endings model and the discriminator train together while the line LM
stays frozen. Every phase resumes after an interruption (the engine's loop for the LM; saved phase ends; the
adversarial loop's own saves), and the checkpoint is written atomically with its provenance stamp."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from poeval.errors import PoevalError
from poeval.generators import engine
from poeval.generators.poetic import common
from poeval.generators.poetic.adversary import (adversarial, autoencoder, data, discriminator, endings, linelm,
                                                pretraining)
from poeval.generators.poetic.adversary.settings import (ARCH, SERIAL_THREADS, adv_batches, mle_steps,
                                                        resolve_model_cfg, resolve_train_cfg, torch_threads)
from poeval.generators.poetic.common import Vocab
from poeval.poetry.style import STYLE_TOKENS
from poeval.stamps import train_stamp


def _units(path: str, role: str, conditioned: bool, name: str | None, limit: int | None = None):
    """The usable quatrains of a file (verses cut after their end words), their styles, the record count,
    how many quatrains had a verse without a word (skipped) and how many verses of the kept quatrains lost
    marks after their end word."""
    units, styles, n_records = data.read_units(path, role, conditioned, name)
    tokens = [data.unit_tokens(q) for q in units]
    pairs = [(data.usable(t), s, t) for t, s in zip(tokens, styles)]
    kept = [(q, s, t) for q, s, t in pairs if q is not None][:limit]
    if not kept:
        raise PoevalError(f"{role} file {path}: no quatrain whose four verses all have a word")
    cut = sum(len(c) < len(v) for q, _, t in kept for c, v in zip(q, t))
    return [q for q, _, _ in kept], [s for _, s, _ in kept], n_records, sum(q is None for q, _, _ in pairs), cut


def _phase(resume: engine.Resume, part: str, run, models: dict, rng) -> dict:
    """Run a phase once: its saved end (models' weights, RNG states, result) when there is one, else
    ``run()`` and save that end, so a rerun after a later interruption continues exactly as then."""
    import torch

    saved = resume.load(part)
    if saved is not None:
        for key, model in models.items():
            model.load_state_dict(saved["models"][key])
        rng.setstate(engine.as_tuple(saved["rng"]))
        torch.set_rng_state(saved["torch_rng"])
        return saved["result"]
    result = run()
    resume.save({"result": result, "models": {k: m.state_dict() for k, m in models.items()},
                 "rng": rng.getstate(), "torch_rng": torch.get_rng_state()}, part)
    return result


def prepare(sonnets: str, dev: str, cfg: dict, tcfg: dict, name: str | None) -> SimpleNamespace:
    """The run's data: vocabulary (every training word, style tokens when conditioned), the line LM's and
    the endings model's sequences of the training and dev quatrains, the real (and dev) end words, and the
    words and characters of the rhyme encoder."""
    conditioned = cfg["conditioned"]
    train_q, train_s, n_sonnets, n_skipped, n_cut = _units(sonnets, "sonnets", conditioned, name)
    dev_q, dev_s, _, _, _ = _units(dev, "dev", conditioned, name, tcfg["eval_quatrains"])
    vocab = Vocab.build((v for q in train_q for v in q), min_count=cfg["vocab_min_count"],
                        max_size=cfg["vocab_max_size"], extra=STYLE_TOKENS if conditioned else ())
    real_endings = [data.endings_of(q) for q in train_q]
    pron_words = sorted({data.clean_word(w) for w in vocab.itos if common.is_word(w) and not w.startswith("<")}
                        - {""} | {w for e in real_endings for w in e})
    return SimpleNamespace(
        vocab=vocab, n_sonnets=n_sonnets, n_skipped=n_skipped, n_cut=n_cut, real_endings=real_endings,
        pron_words=pron_words,
        dev_endings=[data.endings_of(q) for q in dev_q],
        chars=discriminator.CharVocab.from_words(pron_words, cfg["max_word_chars"]),
        lm_ids=[data.line_lm_ids(vocab, q, s) for q, s in zip(train_q, train_s)],
        dev_lm_ids=[data.line_lm_ids(vocab, q, s) for q, s in zip(dev_q, dev_s)],
        end_ids=[data.endings_ids(vocab, q, s) for q, s in zip(train_q, train_s)],
        dev_end_ids=[data.endings_ids(vocab, q, s) for q, s in zip(dev_q, dev_s)])


def train(sonnets: str, dev: str, out_dir: str, model_cfg: dict, train_cfg: dict, *, lang: str,
          word2vec: str | None = None, threads: int = 1, name: str | None = None, progress: bool = True) -> dict:
    """Train the Structured Adversary generator and write ``out_dir`` (common.save_checkpoint); returns
    the log's summary."""
    import torch

    cfg, tcfg = resolve_model_cfg(model_cfg, name), resolve_train_cfg(train_cfg)
    if lang not in ("en", "de"):
        raise PoevalError(f"unsupported language {lang!r} for {ARCH}; use en or de")
    if word2vec is not None and not Path(word2vec).is_file():
        raise PoevalError(f"word2vec file not found: {word2vec}")
    d = prepare(sonnets, dev, cfg, tcfg, name)
    vocab, lm_ids, dev_lm_ids, chars = d.vocab, d.lm_ids, d.dev_lm_ids, d.chars
    ae_src = None
    if cfg["rhyme_pretrain"] == "autoencoder":
        # the characters of the autoencoder's words too, as the original indexes CMUdict's (models.py CNN)
        ae_src = autoencoder.source_words(cfg["ae_words"], lang, d.real_endings, d.dev_endings)
        chars = discriminator.CharVocab.from_words([*d.pron_words, *ae_src["words"]], cfg["max_word_chars"])
    t_start = time.perf_counter()
    threads_used = int(threads) if tcfg["max_threads"] is None else min(int(threads), tcfg["max_threads"])
    rng = engine.seed(tcfg["seed"], threads_used)

    lm, ends, disc = linelm.build(cfg, len(vocab)), endings.build(cfg, len(vocab)), discriminator.build(cfg, len(chars))
    w2v = common.init_embedding(lm.emb, vocab, word2vec)
    fp = engine.fingerprint({"sonnets": sonnets, "dev": dev, "word2vec": word2vec},
                            {"model_cfg": cfg, "train_cfg": tcfg, "lang": lang, "threads": threads_used})
    resume = engine.Resume(out_dir, fp)
    gutenberg = pretraining.pretrain_resume(out_dir, fp)

    # ---- 0. optional pretraining of the line LM on Gutenberg verse (its own engine loop and resume dir)
    def pretrain() -> dict:
        t0 = time.perf_counter()
        rec = pretraining.run_pretraining(lm, vocab, cfg["pretrain"], lang, (sonnets, dev), tcfg, dev_lm_ids, rng,
                                          gutenberg, progress)
        return {**rec, "time_s": time.perf_counter() - t0}

    pre = _phase(resume, "gutenberg", pretrain, {"lm": lm}, rng) if cfg["pretrain"] is not None else None

    # ---- 1. the line LM on the quatrains (the engine), then frozen
    def lm_phase() -> dict:
        t0 = time.perf_counter()
        res = pretraining.run_mle(lm, lm_ids, dev_lm_ids, tcfg | {"max_steps": mle_steps(tcfg, len(lm_ids))}, rng,
                                  resume, "quatrains", progress)
        return {**res, "mle_time_s": time.perf_counter() - t0}

    mle = _phase(resume, "mle", lm_phase, {"lm": lm}, rng)
    lm.requires_grad_(False)

    # ---- 2. the discriminator's rhyme encoder: on the pronouncing dictionary, or as a spelling autoencoder
    def pron_phase() -> dict:
        t0 = time.perf_counter()
        with torch_threads(SERIAL_THREADS):
            pron = discriminator.pretrain_encoder(disc.encoder, chars, d.pron_words, lang, steps=cfg["pron_steps"],
                                                  pairs=cfg["pron_pairs"], lr=float(cfg["pron_lr"]), rng=rng,
                                                  progress=progress)
        return {**pron, "pron_time_s": time.perf_counter() - t0}

    def ae_phase() -> dict:
        t0 = time.perf_counter()
        with torch_threads(SERIAL_THREADS):
            rec = autoencoder.pretrain(disc.encoder, chars, ae_src, char_emb=cfg["char_emb"], epochs=cfg["ae_epochs"],
                                       steps=cfg["ae_steps"], batch_size=cfg["ae_batch_size"], lr=float(cfg["ae_lr"]),
                                       rng=rng, progress=progress)
        return {**rec, "ae_time_s": time.perf_counter() - t0}

    if ae_src is None:
        rhyme = _phase(resume, "pron", pron_phase, {"disc": disc}, rng)
    else:
        rhyme = _phase(resume, "ae", ae_phase, {"disc": disc}, rng)

    # ---- 3. the adversarial phase: the endings model and the discriminator
    with torch_threads(SERIAL_THREADS):
        adv = adversarial.run(ends, disc, chars, vocab, cfg, d.end_ids, d.real_endings, d.dev_end_ids,
                              adv_batches(cfg, len(d.end_ids)), rng, resume, progress)
    gutenberg.clear()

    step = mle["summary"]["steps"]
    evals = [*mle["evals"], *({**e, "step": step + e["adv_batch"]} for e in adv["evals"])]
    summary = {
        "mle_step_budget": mle_steps(tcfg, len(lm_ids)), "pretrain": pre,
        "line_lm_dev_loss": linelm.dev_loss(lm, dev_lm_ids),
        **adv["summary"], "elapsed_s": time.perf_counter() - t_start, "mle_time_s": mle["mle_time_s"],
        "n_params_line_lm": _count(lm), "n_params_endings": _count(ends), "n_params_discriminator": _count(disc),
        "n_params": _count(lm) + _count(ends) + _count(disc), "n_train": len(lm_ids),
        "n_train_skipped_no_word": d.n_skipped, "n_train_verses_marks_dropped": d.n_cut, "n_sonnets": d.n_sonnets,
        "n_dev_eval": len(dev_lm_ids),
        "vocab_size": len(vocab), "char_vocab_size": len(chars), "threads": int(threads),
        "threads_used": torch.get_num_threads(), **w2v, "rhyme_pretrain": cfg["rhyme_pretrain"], **rhyme,
    }
    summary.pop("vocab", None)
    config = {"model": cfg, "lang": lang, "chars": chars.itos, "max_word_chars": chars.max_len}
    states = {"lm": lm.state_dict(), "endings": ends.state_dict(), "disc": disc.state_dict()}
    log = engine.training_log({**mle, "evals": evals}, summary,
                              train_stamp(sonnets, dev, model_cfg, train_cfg, word2vec=word2vec),
                              model_cfg=model_cfg, train_cfg=tcfg)
    common.save_checkpoint(out_dir, ARCH, config, vocab, states, log)
    return log["summary"]


def _count(model) -> int:
    return sum(p.numel() for p in model.parameters())
