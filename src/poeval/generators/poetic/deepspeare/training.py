"""DeepSpeare's training (package docstring: :mod:`poeval.generators.poetic.deepspeare`): the three
models trained on pseudo-sonnets through the generators' engine, by the original's alternating schedule
(:class:`Alternating`) or poeval's earlier joint one (:func:`joint_loss`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

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

    def step(self, closure=None, part: str | None = None):
        """Step every part, or only ``part`` (the alternating schedule's updates; through here, so that the
        engine's schedule sees the optimiser stepped)."""
        for name, opt in self.parts.items():
            if part in (None, name):
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
    language model, Adam 0.001 for the pentameter and rhyme models; config.py). ``update_schedule:
    alternating``: each over the original's variables (sonnet_model.py: ``tf.trainable_variables()`` when it
    is built, of which those its loss reaches get a gradient): the language model's also steps the character
    embedding and the pentameter encoder it reads, the rhyme model's the character embedding. ``joint``: each
    weight has one owner, which steps it with the summed gradient of the losses that use it (module
    docstring). ``weight_decay`` (0, as the original) applies to every weight."""
    if cfg["update_schedule"] == "alternating":
        owners = {"lm": [model.chars, model.pentameter.encoder, model.lm], "pm": [model.chars, model.pentameter],
                  "rm": [model.chars, model.rhyme]}
    else:   # one step of all three after one backward pass: a weight in two optimisers would be stepped twice
        owners = {"lm": [model.lm], "pm": [model.chars, model.pentameter], "rm": [model.rhyme]}
    wd = float(tcfg["weight_decay"])
    return PartOptimizers({
        part: OPTIMIZERS[cfg[f"{part}_optimizer"]]([p for mod in mods for p in mod.parameters()],
                                                   float(cfg[f"{part}_lr"]), wd)
        for part, mods in owners.items()})


def lm_objective(lm_sum, n_tokens: int, n_poems: int, how: str):
    """The language model's loss to backpropagate (``lm_loss``): ``batch_sum`` divides the summed
    cross-entropy by the number of sonnets, as the original's ``lm_cost`` (sonnet_model.py: reduce_sum /
    batch_size); ``mean`` by the number of predicted tokens."""
    return lm_sum / max(n_poems if how == "batch_sum" else n_tokens, 1)


def share(i: int, total: int, rounds: int) -> int:
    """Round ``i``'s even share of ``total`` updates spread over ``rounds`` rounds (the shares of any
    ``rounds`` consecutive rounds sum to ``total``)."""
    return (i % rounds + 1) * total // rounds - (i % rounds) * total // rounds


class EpochPlan:
    """``update_order: epoch``: the kinds of update of the engine's current epoch, one list per step, kept
    with the engine's streams so that a resumed run goes on with the same plan (:meth:`state`,
    :meth:`restore`)."""

    def __init__(self):
        self.steps: list[list[str]] = []

    def state(self) -> dict:
        return {"steps": [list(kinds) for kinds in self.steps]}

    def restore(self, state: dict) -> None:
        self.steps = [list(kinds) for kinds in state["steps"]]


def cut_epoch(kinds: list[str], chunks_per_batch: list[int]) -> list[list[str]]:
    """An epoch's shuffled ``kinds`` cut into steps, one per batch of sonnets: a step runs the updates after
    the previous batch's last ``lm`` chunk up to its own last one (the original's LM batches come in order,
    a batch's chunks one after the other); the last step also takes the updates after the epoch's last chunk."""
    steps, current, batch, seen = [], [], 0, 0
    for kind in kinds:
        current.append(kind)
        if kind != "lm":
            continue
        seen += 1
        if seen == chunks_per_batch[batch] and batch < len(chunks_per_batch) - 1:
            steps.append(current)
            current, batch, seen = [], batch + 1, 0
    steps.append(current)
    return steps


class Alternating:
    """``update_schedule: alternating``, one engine step: a round of the original's separate updates
    (sonnet_train.py ``run_epoch``), each with its own loss, backward pass, clipping and optimiser step.
    The original draws an epoch's LM batches (``batch_size`` sonnets, each cut into chunks of
    ``bptt_truncate`` verses: 7 for 14 verses), pentameter batches (``batch_size`` verses of the shuffled
    training verses) and rhyme batches (``batch_size`` of the shuffled targets, 12 per sonnet) and shuffles
    the kinds of the whole epoch together (util.py ``create_*_batch``). Here a round takes one batch of
    sonnets from the engine's stream and its chunks, and the round's even share of an epoch's pentameter and
    rhyme batches from their own streams (:func:`share`: 14 and 12 per batch of 14-verse sonnets), in an
    order drawn at random; the LM chunks stay in reading order with the state carried, as the original's.
    ``update_order: epoch`` shuffles the kinds of the whole epoch together instead, as the original, when
    the engine's stream starts an epoch (:func:`cut_epoch` gives each step its part; :class:`EpochPlan`)."""

    # the original clips the LM's and the pentameter model's gradients (sonnet_model.py: clip_by_global_norm
    # before apply_gradients), not the rhyme model's (its AdamOptimizer.minimize)
    CLIPPED = {"lm": True, "pm": True, "rm": False}

    def __init__(self, batcher: Batcher, poems: list[dict], main: engine.BatchStream, cfg: dict, tcfg: dict, rng):
        self.batcher, self.poems, self.main, self.cfg, self.rng = batcher, poems, main, cfg, rng
        self.max_norm = float(tcfg["max_grad_norm"] or 0)
        self.lines = [x for p in poems for x in p["pm"]]
        self.targets = [(q, t) for p in poems for q in p["ends"] for t in range(4)]
        bs, drop = tcfg["batch_size"], cfg["last_batch"] == "drop"
        self.streams = {"pm": engine.BatchStream([1] * len(self.lines), bs, 0, rng, drop),
                        "rm": engine.BatchStream([1] * len(self.targets), bs, 0, rng, drop)}
        self.plan = EpochPlan() if cfg["update_order"] == "epoch" else None
        if self.plan is not None:   # saved and restored with the streams
            self.streams["plan"] = self.plan

    def kinds(self, poems: list[dict]) -> list[str]:
        """This step's updates in their order (after the engine's draw of the step's sonnets)."""
        if self.plan is None:
            return self._round_kinds(poems)
        if self.main.pos == 1:      # the engine's stream has just drawn a new epoch
            self.plan.steps = self._epoch_kinds()
        return self.plan.steps[self.main.pos - 1]

    def _epoch_kinds(self) -> list[list[str]]:
        """The epoch's LM chunks (of every batch of the stream's epoch), pentameter and rhyme batches (an
        epoch of each of their streams), shuffled together and cut into steps (:func:`cut_epoch`)."""
        chunks = [self.batcher.lm_chunk_count([self.poems[i] for i in batch], self.cfg["bptt_verses"])
                  for batch in self.main.chunks]
        kinds = ["lm"] * sum(chunks)
        kinds += ["pm"] * (self.streams["pm"].per_epoch if self.lines else 0)
        kinds += ["rm"] * (self.streams["rm"].per_epoch if self.targets else 0)
        self.rng.shuffle(kinds)
        return cut_epoch(kinds, chunks)

    def _round_kinds(self, poems: list[dict]) -> list[str]:
        """``update_order: round``: this round's updates in a random order."""
        i, rounds = self.main.pos - 1, self.main.per_epoch
        n = {"lm": self.batcher.lm_chunk_count(poems, self.cfg["bptt_verses"]),
             "pm": share(i, self.streams["pm"].per_epoch, rounds) if self.lines else 0,
             "rm": share(i, self.streams["rm"].per_epoch, rounds) if self.targets else 0}
        order = [k for k, c in n.items() for _ in range(c)]
        self.rng.shuffle(order)
        return order

    def __call__(self, batch: list[int], opt: PartOptimizers) -> dict:
        poems = [self.poems[i] for i in batch]
        chunks = self.batcher.lm_chunks(poems, self.cfg["bptt_verses"])
        sums = {"lm": 0.0, "targets": 0, "tokens": 0, "pm": 0.0, "n_pm": 0, "rm": 0.0, "n_rm": 0}
        for kind in self.kinds(poems):
            loss = self._loss(kind, chunks, len(poems), sums)
            loss.backward()
            if self.CLIPPED[kind] and self.max_norm:
                weights = [p for g in opt.parts[kind].param_groups for p in g["params"]]
                torch.nn.utils.clip_grad_norm_(weights, self.max_norm)
            opt.step(part=kind)
            opt.zero_grad(set_to_none=True)
        return sums

    def _loss(self, kind: str, chunks, n_poems: int, sums: dict):
        if kind == "lm":
            lm_sum, n = next(chunks)
            sums["lm"] += float(lm_sum.detach())
            sums["targets"] += n
            sums["tokens"] += n
            return lm_objective(lm_sum, n, n_poems, self.cfg["lm_loss"])
        if kind == "pm":
            loss = self.batcher.pm_lines([self.lines[i] for i in self.streams["pm"].next()]).mean()
        else:
            loss = self.batcher.rm_targets([self.targets[i] for i in self.streams["rm"].next()], self.rng)
        sums[kind] += float(loss.detach())
        sums[f"n_{kind}"] += 1
        return loss


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


def prepare(sonnets: str, dev: str, cfg: dict, tcfg: dict, word2vec: str | None,
            name: str | None) -> SimpleNamespace:
    """Seed, read and encode the data, build the tables, the model (word2vec-initialised) and its batcher."""
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
    return SimpleNamespace(rng=rng, model=model, batcher=Batcher(model, tables, cfg), vocab=vocab, chars=chars,
                           train_poems=train_poems, scheme_counts=scheme_counts, train_enc=train_enc,
                           dev_enc=dev_enc, w2v=w2v)


def joint_loss(batcher: Batcher, poems: list[dict], rng):
    """``update_schedule: joint``: the three losses of one batch of sonnets, summed, and the sums to log."""
    lm_sum, n_tok = batcher.lm_loss(poems)
    pm = batcher.pm_loss(poems)
    rm = batcher.rm_loss(poems, rng)
    return lm_objective(lm_sum, n_tok, len(poems), batcher.cfg["lm_loss"]) + pm + rm, {
        "lm": float(lm_sum.detach()), "targets": n_tok, "tokens": n_tok, "pm": float(pm.detach()), "n_pm": 1,
        "rm": float(rm.detach()), "n_rm": 1}


def train(sonnets: str, dev: str, out_dir: str, model_cfg: dict, train_cfg: dict, *, lang: str,
          word2vec: str | None = None, threads: int = 1, name: str | None = None, progress: bool = True) -> dict:
    """Train DeepSpeare's language, pentameter and rhyme models on pseudo-sonnets (``update_schedule``);
    keep the weights with the best dev LM loss; write ``out_dir`` atomically
    (:func:`.common.save_checkpoint`). Returns the log's summary."""
    cfg = resolve_model_cfg(model_cfg, name)
    tcfg = resolve_train_cfg(train_cfg)
    if not isinstance(lang, str) or not lang:
        raise PoevalError("train: lang must be a language code such as 'en' or 'de'")
    if word2vec is not None and not Path(word2vec).is_file():
        raise PoevalError(f"word2vec file not found: {word2vec}")
    d = prepare(sonnets, dev, cfg, tcfg, word2vec, name)
    model, batcher, train_enc, dev_enc, rng = d.model, d.batcher, d.train_enc, d.dev_enc, d.rng

    def train_entry(run: dict) -> dict:
        return {"train_loss": run["lm"] / run["targets"] if run.get("targets") else None,
                "train_pm_loss": run["pm"] / run["n_pm"] if run.get("n_pm") else None,
                "train_rm_loss": run["rm"] / run["n_rm"] if run.get("n_rm") else None}

    # last_batch drop: only full batches of sonnets, as the original's create_word_batch
    stream = engine.BatchStream([1] * len(train_enc), tcfg["batch_size"], 0, rng, cfg["last_batch"] == "drop")
    alternating = (Alternating(batcher, train_enc, stream, cfg, tcfg, rng)
                   if cfg["update_schedule"] == "alternating" else None)
    loop = engine.Loop(
        model=model, stream=stream, update=alternating, streams=alternating.streams if alternating else {},
        loss=None if alternating else lambda batch: joint_loss(batcher, [train_enc[i] for i in batch], rng),
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

    config = {**cfg, "lang": lang, "chars": d.chars, "scheme_counts": dict(sorted(d.scheme_counts.items()))}
    summary = {
        "best_dev_pm_loss": best["dev_pm_loss"],
        "best_dev_rm_loss": best["dev_rm_loss"],
        "final_train_loss": last("train_loss"),
        "final_train_pm_loss": last("train_pm_loss"),
        "final_train_rm_loss": last("train_rm_loss"),
        "n_params": sum(p.numel() for p in model.parameters()),
        "n_train": len(train_enc),
        "n_train_verses": sum(sum(p["verse"]) for p in d.train_poems),
        "n_dev_eval": len(dev_enc),
        "vocab_size": len(d.vocab),
        "n_chars": len(d.chars),
        "word2vec_covered": d.w2v["word2vec_covered"],
        "threads": int(threads),
    }
    log = engine.training_log(result, summary, train_stamp(sonnets, dev, model_cfg, train_cfg, word2vec=word2vec),
                              model_cfg=model_cfg, train_cfg=tcfg)
    save_checkpoint(out_dir, ARCH, config, d.vocab, model.states(), log)
    return log["summary"]
