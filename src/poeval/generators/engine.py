"""The one training loop of every generator (transformer LMs, the masked LM of BPoMP, DeepSpeare and
Structured Adversary's generator).

An architecture builds its model after :func:`seed` and hands the engine a :class:`Loop`: the model, a
:class:`BatchStream` over its training units, its loss step and its dev evaluation. :func:`run` does the
rest the same way for all: AdamW with weight decay only on matrices (biases and norms excluded; an
architecture may bring its own optimiser instead, ``Loop.optimizer``: DeepSpeare's one per model, and its own
update step, ``Loop.update``: DeepSpeare's round of separate updates, one engine step), linear
warmup (then linear decay or a constant rate), gradient clipping (``max_grad_norm``), an evaluation every
``eval_every`` steps, early stopping after ``patience`` evaluations without a lower dev loss (the best
weights are kept), a budget of ``max_steps`` optimizer steps or ``max_epochs`` passes over the data
(whichever ends first; ``max_epochs: null`` = no epoch budget), a progress bar and the training log.

Resume: after every evaluation the whole state (weights, optimiser, schedule, data position, every RNG,
best weights, early-stopping counters, log) is saved to :func:`resume_dir` (``.<out_dir name>.resume``
next to the checkpoint). Called again with the same inputs and config, training continues from there and
ends with the same weights, bit for bit, as an uninterrupted run; a state saved for other inputs, config,
thread count or library versions is discarded. :func:`write_checkpoint` writes the checkpoint to a
temporary sibling directory and renames it into place, and removes the resume state.

Provenance: :func:`training_log` puts the architecture's stamp (:func:`poeval.stamps.train_stamp`: the
inputs and params as given) into ``training_log.json``, so every checkpoint says what it was built from.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import random
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from poeval.files import check_out_dir, file_sha256
from poeval.io import write_json

# test hook: called with the step number after every optimizer step (and after any resume save)
_after_step: Callable[[int], None] | None = None

STATE = "state.pt"


# --------------------------------------------------------------------------------------------------
# seeding and batching


def seed(value: int, threads: int) -> random.Random:
    """Seed torch's global RNG, set its intra-op threads (results depend on them) and return the Python
    RNG that shuffles the data. Call before building the model: its initial weights use torch's RNG."""
    import torch

    torch.set_num_threads(max(1, int(threads)))
    torch.manual_seed(int(value))
    return random.Random(int(value))


class BatchStream:
    """Endless epochs over the shuffled training units. With ``group`` g > 1, each run of g batches of the
    shuffled order is sorted by length before batching and the batch order is shuffled again ("sortish"
    batching, like HF group_by_length: ~98% instead of ~63% real tokens per padded batch on English
    quatrains). Its position can be saved and restored, so a resumed run sees the same batches. With
    ``drop_last`` an epoch's short batches are skipped (only full ones are made, unless none can be)."""

    def __init__(self, lengths: list[int], batch_size: int, group: int, rng: random.Random,
                 drop_last: bool = False):
        self.lengths, self.bs, self.group, self.rng = lengths, batch_size, group, rng
        self.drop_last = drop_last
        self.order = list(range(len(lengths)))
        self.chunks: list[list[int]] = []
        self.pos = 0

    @property
    def per_epoch(self) -> int:
        """Batches in one pass over the data (the last one may be short, unless ``drop_last``)."""
        if self.drop_last and len(self.lengths) >= self.bs:
            return len(self.lengths) // self.bs
        return max(1, math.ceil(len(self.lengths) / self.bs))

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
        if self.drop_last:   # the same shuffle either way: only the short batches go
            chunks = [c for c in chunks if len(c) == bs] or chunks
        self.chunks, self.pos = chunks, 0

    def state(self) -> dict:
        return {"order": list(self.order), "chunks": [list(c) for c in self.chunks], "pos": self.pos}

    def restore(self, state: dict) -> None:
        self.order = list(state["order"])
        self.chunks = [list(c) for c in state["chunks"]]
        self.pos = int(state["pos"])


def as_tuple(value):
    return tuple(as_tuple(v) for v in value) if isinstance(value, (list, tuple)) else value


def _rng_state(rng) -> Any:
    return rng.getstate() if isinstance(rng, random.Random) else rng.get_state()


def _set_rng_state(rng, state) -> None:
    if isinstance(rng, random.Random):
        rng.setstate(as_tuple(state))
    else:
        rng.set_state(state)


# --------------------------------------------------------------------------------------------------
# the loop


def default_no_decay(name: str, param) -> bool:
    """Biases, norm weights and other vectors get no weight decay."""
    return param.ndim < 2 or "norm" in name.lower() or "ln_" in name


@dataclass
class Loop:
    """What an architecture hands the engine.

    ``loss(indices)`` computes one training batch's loss (the tensor to backpropagate) and the running
    sums to log (floats: e.g. summed loss and predicted tokens); ``tokens`` among them counts input
    tokens for the tokens/s figure. ``train_entry(sums)`` turns the sums since the last evaluation into
    the log entry's training figures; ``evaluate()`` returns at least ``dev_loss``. ``rngs`` are further
    RNGs (``random.Random`` or ``torch.Generator``) the loss step draws from; their state is saved with
    the rest so a resumed run draws the same numbers.

    ``update(indices, opt)``, when given, replaces the loss step (``loss`` may then be None): it does one
    step's forward, backward, clipping and optimiser steps itself (several updates, as DeepSpeare's
    alternating schedule) and returns the sums; the engine still counts the step, steps the schedule and
    zeroes the gradients. ``streams``: further :class:`BatchStream` s it draws from, whose positions are saved
    with the rest (their RNG must be the main stream's or one of ``rngs``), or other objects with the same
    ``state()`` and ``restore(state)`` (DeepSpeare's plan of an epoch's updates), saved alike."""

    model: Any
    stream: BatchStream
    loss: Callable[[list[int]], tuple[Any, dict[str, float]]] | None
    evaluate: Callable[[], dict]
    train_entry: Callable[[dict], dict]
    rngs: dict[str, Any] = field(default_factory=dict)
    update: Callable[[list[int], Any], dict[str, float]] | None = None
    streams: dict[str, Any] = field(default_factory=dict)   # BatchStream or any state() / restore() holder
    no_decay: Callable[[str, Any], bool] = default_no_decay
    lr_decay: bool = True          # linear decay to 0 at the budget's end after warmup; False: constant
    # the architecture's own optimiser(s) (model, tcfg) -> torch Optimizer; None: AdamW at tcfg["lr"]
    optimizer: Callable[[Any, dict], Any] | None = None
    eval_at_start: bool = False    # evaluate the untrained model too (the baseline to beat)
    desc: str = "train"


def budget(tcfg: dict, per_epoch: int) -> int:
    """Optimizer steps: ``max_steps``, or fewer when ``max_epochs`` passes over the data end first."""
    steps = int(tcfg["max_steps"])
    if tcfg.get("max_epochs") is not None:
        steps = min(steps, math.ceil(float(tcfg["max_epochs"]) * per_epoch))
    return max(1, steps)


def optimizer(model, tcfg: dict, no_decay: Callable[[str, Any], bool] = default_no_decay):
    """AdamW with two parameter groups: ``weight_decay`` on the rest, none where ``no_decay``."""
    import torch

    decay, plain = [], []
    for name, param in model.named_parameters():
        if param.requires_grad:
            (plain if no_decay(name, param) else decay).append(param)
    return torch.optim.AdamW([{"params": decay, "weight_decay": float(tcfg["weight_decay"])},
                              {"params": plain, "weight_decay": 0.0}], lr=float(tcfg["lr"]))


def schedule(opt, warmup: int, total: int, decay: bool):
    """Linear warmup over ``warmup`` steps, then linear decay to 0 at ``total`` (``decay``) or constant."""
    import torch

    def factor(step: int) -> float:
        if step < warmup:
            return step / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup)) if decay else 1.0

    return torch.optim.lr_scheduler.LambdaLR(opt, factor)


def _cpu_copy(model) -> dict:
    # kept on the CPU: a copy on the GPU would double the model's memory there
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def run(loop: Loop, tcfg: dict, resume: "Resume | None" = None, progress: bool = True) -> dict:
    """Train ``loop.model`` under ``tcfg`` (seed, batch_size, max_steps, max_epochs, lr, warmup_steps,
    weight_decay, max_grad_norm, eval_every, patience); leave the best weights in the model. Returns
    ``{"evals": [...], "summary": {...}}``; the summary has best_step, best_dev_loss, stopped_early,
    steps, epochs, tokens_per_s, train_tokens, elapsed_s and resumed_from_step."""
    import torch
    from poeval.progress import progress_bar

    model, stream = loop.model, loop.stream
    max_steps = budget(tcfg, stream.per_epoch)
    opt = loop.optimizer(model, tcfg) if loop.optimizer else optimizer(model, tcfg, loop.no_decay)
    sched = schedule(opt, int(tcfg["warmup_steps"]), max_steps, loop.lr_decay)
    patience = int(tcfg["patience"])
    s: dict[str, Any] = {"step": 0, "best_loss": math.inf, "best_step": 0, "best_state": None, "bad_evals": 0,
                         "log": [], "run": {}, "run_time": 0.0, "total_tokens": 0, "total_time": 0.0,
                         "elapsed": 0.0}
    resumed_from, stopped_early = None, False

    saved = resume.load() if resume is not None else None
    if saved is not None:
        model.load_state_dict(saved.pop("model"))
        opt.load_state_dict(saved.pop("optimizer"))
        sched.load_state_dict(saved.pop("scheduler"))
        stream.restore(saved.pop("stream"))
        for key, state in saved.pop("streams", {}).items():
            loop.streams[key].restore(state)
        torch.set_rng_state(saved.pop("torch_rng"))
        cuda = saved.pop("cuda_rng")
        if cuda is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(cuda)
        _set_rng_state(stream.rng, saved.pop("stream_rng"))
        for key, state in saved.pop("rngs").items():
            _set_rng_state(loop.rngs[key], state)
        s.update(saved)
        resumed_from = s["step"]
        if progress:
            print(f"poeval train: resuming from step {resumed_from} ({resume.dir})", file=sys.stderr)
    t_start = time.perf_counter() - s["elapsed"]

    def save_state() -> None:
        resume.save({**s, "elapsed": time.perf_counter() - t_start, "model": model.state_dict(),
                     "optimizer": opt.state_dict(), "scheduler": sched.state_dict(), "stream": stream.state(),
                     "streams": {k: st.state() for k, st in loop.streams.items()},
                     "stream_rng": _rng_state(stream.rng), "torch_rng": torch.get_rng_state(),
                     "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
                     "rngs": {k: _rng_state(r) for k, r in loop.rngs.items()}})

    def evaluate() -> bool:
        """Log one evaluation; True when early stopping says stop."""
        res = loop.evaluate()
        model.train()
        run_, run_time = s["run"], s["run_time"]
        entry = {"step": s["step"], "epoch": round(s["step"] / stream.per_epoch, 4), **loop.train_entry(run_),
                 **res, "tokens_per_s": run_.get("tokens", 0) / run_time if run_time else None,
                 "elapsed_s": time.perf_counter() - t_start, "lr": sched.get_last_lr()[0]}
        s["log"].append(entry)
        s["run"], s["run_time"] = {}, 0.0
        bar.set_postfix(dev=f"{res['dev_loss']:.3f}")
        if res["dev_loss"] < s["best_loss"]:
            s["best_loss"], s["best_step"], s["bad_evals"] = res["dev_loss"], s["step"], 0
            s["best_state"] = _cpu_copy(model)
            return False
        s["bad_evals"] += 1
        return bool(patience) and s["bad_evals"] >= patience

    model.train()
    bar = progress_bar(total=max_steps, initial=s["step"], desc=loop.desc, unit="step", progress=progress, leave=False)
    try:
        if loop.eval_at_start and s["step"] == 0:
            evaluate()
        while s["step"] < max_steps:
            t0 = time.perf_counter()
            if loop.update is not None:
                sums = loop.update(stream.next(), opt)
            else:
                loss, sums = loop.loss(stream.next())
                loss.backward()
                if tcfg["max_grad_norm"]:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), float(tcfg["max_grad_norm"]))
                opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            s["step"] += 1
            dt = time.perf_counter() - t0
            for key, value in sums.items():
                s["run"][key] = s["run"].get(key, 0) + value
            s["run_time"] += dt
            s["total_tokens"] += int(sums.get("tokens", 0))
            s["total_time"] += dt
            bar.update(1)
            if s["step"] % tcfg["eval_every"] == 0 or s["step"] == max_steps:
                if evaluate():
                    stopped_early = s["step"] < max_steps
                    break
                if resume is not None and s["step"] < max_steps:
                    save_state()
            if _after_step is not None:
                _after_step(s["step"])
    finally:
        bar.close()

    if s["best_state"] is not None:
        model.load_state_dict(s["best_state"])
    return {"evals": s["log"], "summary": _summary(s, stream.per_epoch, t_start, stopped_early, resumed_from)}


def _summary(s: dict, per_epoch: int, t_start: float, stopped_early: bool = False,
             resumed_from: int | None = None) -> dict:
    """The summary of a run's result, from its state ``s`` (:func:`run`, :func:`untouched`)."""
    return {
        "best_step": s["best_step"],
        "best_dev_loss": s["best_loss"] if math.isfinite(s["best_loss"]) else None,
        "stopped_early": stopped_early,
        "steps": s["step"],
        "epochs": round(s["step"] / per_epoch, 4),
        "tokens_per_s": s["total_tokens"] / s["total_time"] if s["total_time"] else None,
        "train_tokens": s["total_tokens"],
        "elapsed_s": time.perf_counter() - t_start,
        "resumed_from_step": resumed_from,
    }


def untouched(evaluate: Callable[[], dict]) -> dict:
    """:func:`run`'s result for a model kept as it is (params ``training: none``): no step, one evaluation
    (``evaluate()``, at least ``dev_loss``) at step 0, which is the best by definition."""
    t_start = time.perf_counter()
    res = evaluate()
    s = {"step": 0, "best_step": 0, "best_loss": res["dev_loss"], "total_tokens": 0, "total_time": 0.0}
    entry = {"step": 0, "epoch": 0.0, **res, "elapsed_s": time.perf_counter() - t_start}
    return {"evals": [entry], "summary": _summary(s, 1, t_start)}


# --------------------------------------------------------------------------------------------------
# resume state


def resume_dir(out_dir: str | os.PathLike) -> Path:
    """Where the resume state of checkpoint ``out_dir`` is kept: ``.<name>.resume`` next to it."""
    out = Path(out_dir)
    return out.parent / f".{out.name}.resume"


def fingerprint(files: dict[str, str | os.PathLike | None], config: dict) -> str:
    """What must be equal for a saved state to be resumed: input files, config (with thread count),
    torch and transformers versions."""
    import torch

    try:
        import transformers

        tf_version = transformers.__version__
    except ImportError:  # pragma: no cover - transformers is a dependency
        tf_version = None
    meta = {"format": 2, "config": config, "torch": torch.__version__, "transformers": tf_version,
            "files": {k: file_sha256(p) for k, p in files.items() if p is not None}}
    return hashlib.sha256(json.dumps(meta, sort_keys=True, default=str).encode()).hexdigest()


class Resume:
    """The resume states of one checkpoint: named parts (``loop`` for :func:`run`; an architecture may
    save more, e.g. the end of a phase), each saved atomically, all tagged with the run's fingerprint."""

    def __init__(self, out_dir: str | os.PathLike, fingerprint_: str):
        self.dir, self.fingerprint = resume_dir(out_dir), fingerprint_

    def save(self, state: dict, part: str = "loop") -> None:
        """Atomically replace a part (a killed process leaves the previous one intact)."""
        import torch

        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / (STATE if part == "loop" else f"{part}.pt")
        tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
        torch.save({**state, "fingerprint": self.fingerprint}, tmp)
        os.replace(tmp, path)

    def load(self, part: str = "loop") -> dict | None:
        """The saved part if it belongs to this very run; a foreign or unreadable state removes them all."""
        import torch

        path = self.dir / (STATE if part == "loop" else f"{part}.pt")
        if not path.is_file():
            return None
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as err:  # noqa: BLE001 - a corrupt or foreign file is discarded, never fatal
            print(f"poeval train: discarding unreadable resume state {path}: {err}", file=sys.stderr)
            state = None
        if state is not None and state.pop("fingerprint", None) != self.fingerprint:
            print(f"poeval train: discarding resume state {path}: inputs or config changed", file=sys.stderr)
            state = None
        if state is None:
            self.clear()
        return state

    def clear(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


# --------------------------------------------------------------------------------------------------
# checkpoint and log


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


TRAINING_LOG = "training_log.json"   # every trained checkpoint has one: the mark of an earlier `poeval train`


def write_checkpoint(out_dir: str | os.PathLike, write: Callable[[Path], None], log: dict | None = None, *,
                     command: str = "poeval train", marker: str | None = None, inputs=(),
                     force: bool = False) -> None:
    """Write a checkpoint atomically: ``write(tmp)`` fills a temporary sibling directory (plus
    ``training_log.json`` from ``log``), which then replaces ``out_dir``; the resume state is removed.
    Given ``marker``, ``out_dir`` must be one :func:`poeval.files.check_out_dir` allows; without it (the
    trainers: ``poeval train`` checks the folder before hours of training) only the checks ``force`` cannot
    lift apply."""
    out = Path(out_dir)
    check_out_dir(out, command, marker or "", inputs, force or marker is None)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = _make_sibling_dir(out)
    try:
        write(tmp)
        if log is not None:
            write_json(tmp / TRAINING_LOG, log)
        _replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(resume_dir(out), ignore_errors=True)


def training_log(result: dict, summary: dict, provenance: dict, **extra) -> dict:
    """``training_log.json``: the evaluations, the summary (the engine's, then the architecture's
    figures), ``extra`` (configs) and the ``provenance`` stamp (:func:`poeval.stamps.train_stamp`)."""
    return {"evals": result["evals"], "summary": {**result["summary"], **summary}, **extra,
            "provenance": provenance}


@contextlib.contextmanager
def quiet_transformers(progress: bool):
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
