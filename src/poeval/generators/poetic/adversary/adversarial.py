"""The adversarial phase (the original's ``MainSolver.train`` in ``solvers_merged.py``): the endings model
is trained from scratch, each batch of training quatrains giving

1. one maximum-likelihood step on the batch's end words (``get_loss``, Adam at ``endings_lr``);
2. one generated set of end words per quatrain of the batch, drawn at temperature 1; for each, in turn,
   one discriminator step on (the real quatrain's end words, the generated ones), whose D(generated)
   before the step is the generated set's reward (``update_discriminator``);
3. REINFORCE: the batch's rewards standardised (minus their mean, over their standard deviation), then
   for each generated set one Adam step on ``-reinforce_weight * advantage * log p(its end words)``, the
   gradients taken at the parameters that drew them (the original's per-sample steps on graphs built
   before the first of them).

The line LM is frozen throughout (it is not touched here). The models after the last batch are kept, or,
with ``adv_patience``, those of the epoch with the lowest dev loss of the endings model (the original's
``model_best``), the phase stopping after ``adv_patience`` epochs without a lower one (the paper's early
stopping with patience 5).

The loop is resumable: every :data:`SAVE_EVERY` batches the whole state (both models, both optimisers,
the batch order, every RNG, the log) is saved as the resume part ``adv``, and a rerun with the same
inputs continues from there to the same weights, bit for bit.

It is a loop of its own, not the engine's (:func:`poeval.generators.engine.run`, which the line LM's phases
use), because the engine could not run it without changing what it produces: the engine steps one model with
one optimiser, saves only those in its resume state and always ends on that model's best weights, while this
phase steps two models with two optimisers (the discriminator's state resumes too), ends on the last models
unless ``adv_patience`` is set (then on both models' best), and its summary reads per-batch records (the
rewards of the first and last ten batches, the batches with flat rewards) that the engine sums away.
"""

from __future__ import annotations

import random
import statistics
import time

from poeval.generators import engine
from poeval.generators.poetic.adversary import discriminator, endings
from poeval.generators.poetic.adversary.data import clean_word
from poeval.generators.poetic.adversary.discriminator import CharVocab
from poeval.generators.poetic.common import Vocab

SAVE_EVERY = 20     # batches between resume saves (a batch takes seconds on a CPU core)

# test hook: called with the batch number after every batch (and after any resume save)
_after_batch = None


def advantages(rewards: list[float]) -> list[float]:
    """The rewards standardised over the batch (population standard deviation, as numpy's ``std``);
    all zero when they do not vary (the original would divide by zero)."""
    if len(rewards) < 2:
        return [0.0] * len(rewards)
    mean, std = statistics.fmean(rewards), statistics.pstdev(rewards)
    return [(r - mean) / std if std > 0 else 0.0 for r in rewards]


def reinforce(model, optimizer, bos: int, rows: list[list[int]], n_style: int, adv: list[float],
              weight: float) -> float:
    """One Adam step per generated row on ``-weight * adv * log p(row's end words)``, every gradient
    taken at the parameters before the first step. Returns the summed policy-gradient loss."""
    import torch

    frozen = {name: p.detach().clone().requires_grad_(True) for name, p in model.named_parameters()}
    names = list(frozen)
    params = dict(model.named_parameters())
    total = 0.0
    for row, a in zip(rows, adv):
        if a == 0.0:
            continue
        loss = -weight * a * endings.endings_logprob(model, bos, row, n_style, frozen)
        grads = torch.autograd.grad(loss, [frozen[n] for n in names], allow_unused=True)
        optimizer.zero_grad(set_to_none=True)
        for name, g in zip(names, grads):
            params[name].grad = g
        optimizer.step()
        total += loss.item()
    return total


def dev_loss(model, seqs: list[list[int]], batch_size: int = 256) -> float:
    """The endings model's mean per-quatrain cross-entropy on dev quatrains."""
    import torch

    model.eval()
    with torch.no_grad():
        total = sum(endings.mle_loss(model, seqs[i:i + batch_size])[0].item() for i in range(0, len(seqs), batch_size))
    return total / max(len(seqs), 1)


def run(model, disc, chars: CharVocab, vocab: Vocab, cfg: dict, end_seqs: list[list[int]],
        real_endings: list[tuple[str, ...]], dev_seqs: list[list[int]], n_batches: int, rng: random.Random,
        resume: engine.Resume | None, progress: bool = False) -> dict:
    """Train ``model`` (the endings model) and ``disc`` in place for ``n_batches`` batches of
    ``adv_batch_size`` training quatrains (``end_seqs[i]`` the endings sequence of quatrain i,
    ``real_endings[i]`` its cleaned end words). Returns the log: per-epoch evaluations and a summary."""
    import torch
    from poeval.progress import progress_bar

    n_style = len(end_seqs[0]) - 6
    slots = endings.style_slots(vocab, n_style > 0)
    opt = torch.optim.Adam(model.parameters(), lr=float(cfg["endings_lr"]))
    disc_params = disc.parameters() if cfg["disc_finetune_encoder"] else [
        p for n, p in disc.named_parameters() if not n.startswith("encoder.")]
    dopt = torch.optim.Adam(disc_params, lr=float(cfg["disc_lr"]))
    stream = engine.BatchStream([len(s) for s in end_seqs], cfg["adv_batch_size"], 0, rng)
    s = {"batch": 0, "log": [], "evals": [], "elapsed": 0.0, "best": None, "stale": 0}
    patience = cfg.get("adv_patience")

    saved = resume.load("adv") if resume is not None else None
    if saved is not None:
        model.load_state_dict(saved["model"])
        disc.load_state_dict(saved["disc"])
        opt.load_state_dict(saved["opt"])
        dopt.load_state_dict(saved["dopt"])
        stream.restore(saved["stream"])
        rng.setstate(engine.as_tuple(saved["rng"]))
        torch.set_rng_state(saved["torch_rng"])
        s = saved["s"]
    t_start = time.perf_counter() - s["elapsed"]

    def save() -> None:
        resume.save({"model": model.state_dict(), "disc": disc.state_dict(), "opt": opt.state_dict(),
                     "dopt": dopt.state_dict(), "stream": stream.state(), "rng": rng.getstate(),
                     "torch_rng": torch.get_rng_state(), "s": {**s, "elapsed": time.perf_counter() - t_start}},
                    "adv")

    bar = progress_bar(total=n_batches, initial=s["batch"], desc="sa: endings model (MLE + REINFORCE)", unit="batch",
                       progress=progress, leave=False)
    try:
        while s["batch"] < n_batches:
            batch = stream.next()
            s["log"].append(_batch(model, disc, chars, vocab, cfg, opt, dopt, batch, end_seqs, real_endings,
                                   slots, n_style))
            s["batch"] += 1
            bar.update(1)
            if stream.pos == len(stream.chunks) or s["batch"] == n_batches:
                recent = s["log"][-stream.per_epoch:]
                s["evals"].append({"phase": "adv", "adv_batch": s["batch"], "dev_loss": dev_loss(model, dev_seqs),
                                   "endings_mle_loss": _mean(r["mle_loss"] for r in recent),
                                   "reward": _mean(r["reward"] for r in recent),
                                   "disc_loss": _mean(r["disc_loss"] for r in recent),
                                   "disc_acc": _mean(r["disc_acc"] for r in recent),
                                   "elapsed_s": time.perf_counter() - t_start})
                if patience is not None and _keep_best(s, model, disc) >= patience:
                    break
            if resume is not None and s["batch"] % SAVE_EVERY == 0 and s["batch"] < n_batches:
                save()
            if _after_batch is not None:
                _after_batch(s["batch"])
    finally:
        bar.close()
    if s["best"] is not None:
        model.load_state_dict(s["best"]["model"])
        disc.load_state_dict(s["best"]["disc"])
    head, tail = s["log"][:10], s["log"][-10:]
    best = {} if s["best"] is None else {"adv_best_batch": s["best"]["adv_batch"],
                                         "adv_stopped_early": s["batch"] < n_batches}
    return {"evals": s["evals"], "summary": best | {
        "adv_batches": s["batch"], "adv_batches_flat_rewards": sum(r.get("flat_rewards", False) for r in s["log"]),
        "adv_reward_first": _mean(r["reward"] for r in head),
        "adv_reward_last": _mean(r["reward"] for r in tail), "adv_disc_acc_last": _mean(r["disc_acc"] for r in tail),
        "endings_dev_loss": (s["best"] or s["evals"][-1])["dev_loss"] if s["evals"] else None,
        "adv_time_s": time.perf_counter() - t_start}}


def _keep_best(s: dict, model, disc) -> int:
    """After an epoch's evaluation: keep copies of both models when the endings model's dev loss is the lowest
    yet (in ``s["best"]``, saved with the resume state); the number of epochs since the best."""
    dev = s["evals"][-1]["dev_loss"]
    if s["best"] is None or dev < s["best"]["dev_loss"]:
        s["best"] = {"dev_loss": dev, "adv_batch": s["batch"], "model": _copy(model), "disc": _copy(disc)}
        s["stale"] = 0
    else:
        s["stale"] += 1
    return s["stale"]


def _copy(module) -> dict:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _batch(model, disc, chars, vocab, cfg, opt, dopt, batch, end_seqs, real_endings, slots, n_style) -> dict:
    """One batch: the endings model's MLE step, the generated sets with their discriminator steps and
    rewards, then the REINFORCE steps."""
    model.train()
    loss, _ = endings.mle_loss(model, [end_seqs[i] for i in batch])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    rows = endings.sample(model, vocab, len(batch), slots=slots).tolist()
    rewards, d_loss, d_acc = [], [], []
    for i, row in zip(batch, rows):
        fake = tuple(clean_word(vocab[t]) for t in row[n_style:])
        d = discriminator.update(disc, dopt, chars, [real_endings[i]], [fake])
        rewards.append(d["reward"][0])
        d_loss.append(d["disc_loss"])
        d_acc.append(d["disc_acc"])
    adv = advantages(rewards)
    pg = reinforce(model, opt, vocab.bos, rows, n_style, adv, float(cfg["reinforce_weight"]))
    # flat: the rewards did not vary, so no REINFORCE step (the original divides by their zero std)
    return {"mle_loss": loss.item() / len(batch), "pg_loss": pg, "reward": _mean(rewards),
            "disc_loss": _mean(d_loss), "disc_acc": _mean(d_acc), "flat_rewards": not any(adv)}


def _mean(values) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None
