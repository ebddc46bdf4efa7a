"""The train/dev split of the quatrains and the HUMAN reference samples drawn from train (the data stage's
``split`` step)."""

from __future__ import annotations

import dataclasses
import random

from poeval import io
from poeval.data.readers import bad_record
from poeval.errors import PoevalError
from poeval.sections import Section
from poeval.stamps import stamp


@dataclasses.dataclass(frozen=True)
class Split(Section):
    """Params ``split``: the share of the quatrains that goes to dev, and the seed of the draw."""

    POINTER, WHERE = "#/properties/split", "split"
    dev_fraction: float
    seed: int


@dataclasses.dataclass(frozen=True)
class Human(Section):
    """Params ``human``: how many HUMAN reference samples are drawn from train, of what size, with what seed."""

    POINTER, WHERE = "#/properties/human", "human"
    n_samples: int
    size: int
    seed: int


def split_train_dev(quatrains: list[dict], dev_fraction: float, seed: int) -> tuple[list[dict], list[dict]]:
    """Seeded random split; dev gets round(n * dev_fraction) quatrains. Both keep the input order."""
    if not 0 < dev_fraction < 1:
        raise PoevalError(f"dev_fraction must be in (0, 1), got {dev_fraction}")
    n = len(quatrains)
    n_dev = round(n * dev_fraction)
    if n_dev < 1 or n_dev >= n:
        raise PoevalError(f"cannot split {n} quatrains with dev_fraction {dev_fraction}: "
                          f"train and dev must both be non-empty")
    dev_idx = set(random.Random(seed).sample(range(n), n_dev))
    train = [q for i, q in enumerate(quatrains) if i not in dev_idx]
    dev = [q for i, q in enumerate(quatrains) if i in dev_idx]
    return train, dev


def draw_human_samples(train: list[dict], n_samples: int, size: int, seed: int) -> list[list[dict]]:
    """``n_samples`` samples of ``size`` quatrains from train, each without replacement (samples may
    share quatrains with each other). Each sample is in the seeded draw order, not train order: MATTR
    and MTLD read the concatenated sample, and neighbouring quatrains of one book share words, so corpus
    order would lower HUMAN's diversity against the randomly ordered model samples."""
    if n_samples < 1 or size < 1:
        raise PoevalError(f"n_samples and size must be positive, got {n_samples} and {size}")
    if size > len(train):
        raise PoevalError(f"human sample size {size} is larger than the training set ({len(train)} quatrains)")
    rng = random.Random(seed)
    return [[train[i] for i in rng.sample(range(len(train)), size)] for _ in range(n_samples)]


def _read_quatrain_records(path: str) -> list[dict]:
    records = list(io.read_jsonl(path))
    for recno, rec in enumerate(records, 1):
        lines = rec.get("lines") if isinstance(rec, dict) else None
        if not (isinstance(lines, list) and len(lines) == 4 and all(isinstance(v, str) for v in lines)
                and "id" in rec):
            raise bad_record(path, recno, "expected a quatrain record {'id', 'lines': [4 strings], ...}")
    if not records:
        raise PoevalError(f"{path}: no quatrains")
    return records


def write_split(quatrains: str, split: Split, human: Human, train: str, dev: str, human_out: list[str],
                report: str, recorded: dict | None = None) -> dict:
    """Split a quatrains file into train/dev and draw the human samples; write all atomically. ``recorded``:
    the params the report's stamp records (the rule's: its job's; default: both sections)."""
    if len(human_out) != human.n_samples:
        raise PoevalError(f"got {len(human_out)} human sample paths for n_samples={human.n_samples}")
    records = _read_quatrain_records(quatrains)
    tr, dv = split_train_dev(records, split.dev_fraction, split.seed)
    samples = draw_human_samples(tr, human.n_samples, human.size, human.seed)
    io.write_jsonl(train, tr)
    io.write_jsonl(dev, dv)
    for path, sample in zip(human_out, samples):
        io.write_jsonl(path, sample)
    if recorded is None:
        recorded = {"split": split.to_dict(), "human": human.to_dict()}
    rep = {
        "quatrains": len(records), "train": len(tr), "dev": len(dv),
        "split": split.to_dict(), "human": human.to_dict() | {"sizes": [len(s) for s in samples]},
        "provenance": stamp({"quatrains": quatrains}, recorded),
    }
    io.write_json(report, rep)
    return rep
