"""Accuracy on minimal pairs and an error analysis against word-bigram frequency.

* Accuracy per task: the share of pairs with ``score_original > score_corrupted``; a tie counts 0.5.
  The 95 % interval is a percentile bootstrap over pairs (``numpy.random.default_rng(seed)``).
  Length-normalised beside it, as lm-evaluation-harness normalises a choice's log-likelihood (``acc_norm``
  divides by the choice's length): per token, each score divided by the tokens it sums
  (``tokens_original``/``tokens_corrupted``, written by the scorer), and per byte, divided by the UTF-8 bytes
  of the text (its lines joined by newlines). Both are null where the records hold no token counts: they
  mark scores of the texts themselves (an older scores file, or prompted judgements, :mod:`.prompted`, have
  none). The three share the bootstrap's resamples (the same seed draws the same pairs).
* Error analysis: does the model just prefer the text with the more frequent word sequences? For each
  pair, ``freq_diff = F(original) - F(corrupted)`` with ``F(text) = sum over its word bigrams of
  log(count + 1)`` (add-one smoothing, so unseen bigrams add log 1 = 0); words are lower-cased runs of
  letters, digits and inner apostrophes, and bigrams run across line breaks (so a line swap changes
  them). ``score_diff = score_original - score_corrupted``. As in the paper's GPT-2 analysis, the
  correlation is taken on the pairs where the model is most confident and again as less confident ones
  are added: at each confidence cut-off ``q`` (``bpomp.errors.confidence_quantiles``) the pairs with
  ``|score_diff| >= quantile_q(|score_diff|)`` are kept (``q = 0``: all pairs), and Pearson and
  Spearman correlations (scipy) are reported on all kept pairs and on the kept errors only
  (``score_diff < 0``, the model preferred the corrupted text), overall and per task; null where
  undefined (under 3 pairs or a constant variable).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from poeval import config, io
from poeval.errors import PoevalError

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def _check_scored(records: list[dict], where: str) -> None:
    for n, r in enumerate(records, 1):
        for f in ("score_original", "score_corrupted"):
            v = r.get(f)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                raise PoevalError(f"{where}: record {n}: {f!r} must be a finite number (run the scorer first)")


def _load(scores) -> tuple[list[dict], str]:
    records, where = (list(io.read_jsonl(scores)), str(scores)) if isinstance(scores, (str, Path)) \
        else (list(scores), "scores")
    if not records:
        raise io.nothing_usable(where, 0, {}, "scored pairs")
    return records, where


def _by_task(records: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in records:
        out.setdefault(str(r.get("task", "all")), []).append(r)
    return dict(sorted(out.items()))


# --- accuracy ------------------------------------------------------------------------------------

def pair_outcomes(records: Sequence[dict]) -> np.ndarray:
    """1 when the original scores higher, 0.5 on a tie, else 0."""
    so = np.array([r["score_original"] for r in records], float)
    sc = np.array([r["score_corrupted"] for r in records], float)
    return np.where(so > sc, 1.0, np.where(so == sc, 0.5, 0.0))


def bootstrap_ci(values: np.ndarray, reps: int, seed: int, level: float = 0.95) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(reps, len(values)))].mean(axis=1)
    a = (1 - level) / 2
    return float(np.quantile(means, a)), float(np.quantile(means, 1 - a))


def text_bytes(lines: Sequence[str]) -> int:
    """UTF-8 bytes of a text as it is scored: its lines joined by newlines."""
    return max(len("\n".join(lines).encode("utf-8")), 1)   # an empty text (never a limerick) divides by 1


def _token_counts(records: Sequence[dict], where: str) -> bool:
    """Whether every record holds the token counts of both its scores (each a positive integer)."""
    fields = ("tokens_original", "tokens_corrupted")
    if not any(f in r for r in records for f in fields):
        return False
    for n, r in enumerate(records, 1):
        for f in fields:
            v = r.get(f)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise PoevalError(f"{where}: record {n}: {f!r} must be a positive integer (the tokens of its score)")
    return True


def normalised(records: Sequence[dict], by: str) -> list[dict]:
    """The records with each score divided by its length: ``by`` ``token`` (its token count) or ``byte``."""
    def length(r, side):
        return r[f"tokens_{side}"] if by == "token" else text_bytes(r[side])

    return [{"score_original": r["score_original"] / length(r, "original"),
             "score_corrupted": r["score_corrupted"] / length(r, "corrupted")} for r in records]


def _summary_of(v: np.ndarray, reps: int, seed: int) -> dict:
    return {"accuracy": float(v.mean()), "ties": int((v == 0.5).sum()), "ci95": list(bootstrap_ci(v, reps, seed))}


def accuracy(scores_jsonl, bootstrap_reps: int = 1000, seed: int = 1) -> dict:
    """``{task: {"n", "accuracy", "ties", "ci95": [low, high], "per_token", "per_byte"}}`` for a scored pairs
    file (or list); ``per_token``/``per_byte``: ``{"accuracy", "ties", "ci95"}`` of the length-normalised
    scores (null without token counts)."""
    config.check_int(bootstrap_reps, "bootstrap_reps", config.bootstrap_reps_range("bpomp"))
    records, where = _load(scores_jsonl)
    _check_scored(records, where)
    counted = _token_counts(records, where) and all(isinstance(r.get(f), list) for r in records
                                                    for f in ("original", "corrupted"))
    out = {}
    for task, recs in _by_task(records).items():
        v = pair_outcomes(recs)
        per = {f"per_{by}": _summary_of(pair_outcomes(normalised(recs, by)), bootstrap_reps, seed) if counted
               else None for by in ("token", "byte")}
        out[task] = {"n": len(v), **_summary_of(v, bootstrap_reps, seed), **per}
    return out


# --- bigram frequency ----------------------------------------------------------------------------

def words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("’", "'"))


def bigrams(lines: Sequence[str]) -> list[str]:
    """Word bigrams (``"w1 w2"``) of the lines read as one running text."""
    ws = words("\n".join(lines))
    return [f"{a} {b}" for a, b in zip(ws, ws[1:])]


def bigram_counts(lines: Iterable[str]) -> Counter:
    """Counts of word bigrams in a training text given as lines (bigrams cross line breaks)."""
    lines = list(lines)
    if not all(isinstance(x, str) for x in lines):
        raise PoevalError("bigram counts need a list of text lines")
    return Counter(bigrams(lines))


def write_bigram_counts(lines: Iterable[str], out: str) -> int:
    counts = bigram_counts(lines)
    io.write_json(out, dict(counts))
    return len(counts)


def log_freq(lines: Sequence[str], counts: Mapping[str, int]) -> float:
    """Sum over the text's bigrams of log(count + 1)."""
    return float(sum(math.log(counts.get(b, 0) + 1) for b in bigrams(lines)))


def _corr(x: np.ndarray, y: np.ndarray) -> dict:
    from scipy import stats

    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"n": len(x), "pearson": None, "pearson_p": None, "spearman": None, "spearman_p": None}
    p = stats.pearsonr(x, y)
    s = stats.spearmanr(x, y)
    return {"n": len(x), "pearson": float(p.statistic), "pearson_p": float(p.pvalue),
            "spearman": float(s.statistic), "spearman_p": float(s.pvalue)}


DEFAULT_QUANTILES = (0.9, 0.75, 0.5, 0.25, 0.0)


def check_quantiles(quantiles) -> list[float]:
    q = list(quantiles)
    if not q or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < 1 for x in q):
        raise PoevalError(f"confidence quantiles must be a non-empty list of numbers in [0, 1), got {quantiles!r}")
    return [float(x) for x in q]


def _summary(score_diff: np.ndarray, freq_diff: np.ndarray, quantiles: Sequence[float]) -> list[dict]:
    """Per cut-off: the correlation on the kept pairs (``all``) and on the kept errors (``errors``)."""
    conf = np.abs(score_diff)
    out = []
    for q in quantiles:
        kept = conf >= np.quantile(conf, q) if len(conf) else conf.astype(bool)
        err = kept & (score_diff < 0)
        out.append({"quantile": q, "all": _corr(score_diff[kept], freq_diff[kept]),
                    "errors": _corr(score_diff[err], freq_diff[err])})
    return out


def error_analysis(scores_jsonl, bigram_counts, quantiles: Sequence[float] = DEFAULT_QUANTILES) -> dict:
    """Correlation of ``score_diff`` with ``freq_diff`` at each confidence cut-off (see the module doc),
    overall and per task, plus per-pair values. ``bigram_counts``: a mapping ``"w1 w2" -> count`` or a
    JSON file of one."""
    quantiles = check_quantiles(quantiles)
    if isinstance(bigram_counts, (str, Path)):
        bigram_counts = io.read_json(bigram_counts)
    if not isinstance(bigram_counts, Mapping):
        raise PoevalError("bigram_counts must be a mapping 'w1 w2' -> count or a JSON file holding one")
    records, where = _load(scores_jsonl)
    _check_scored(records, where)
    per_pair = [{"id": r.get("id"), "task": r.get("task"),
                 "score_diff": r["score_original"] - r["score_corrupted"],
                 "freq_diff": log_freq(r["original"], bigram_counts) - log_freq(r["corrupted"], bigram_counts)}
                for r in records]

    def arrays(rows):
        return (np.array([p["score_diff"] for p in rows], float), np.array([p["freq_diff"] for p in rows], float))

    out = {"quantiles": quantiles, "overall": _summary(*arrays(per_pair), quantiles), "tasks": {}}
    for task in sorted({str(p["task"]) for p in per_pair}):
        out["tasks"][task] = _summary(*arrays([p for p in per_pair if str(p["task"]) == task]), quantiles)
    out["pairs"] = per_pair
    return out
