"""Quality beside diversity (not in the paper): two quality signals per quatrain, so that a diversity measure
that noise alone could raise is read beside what the noise costs.

* Fluency: the mean natural-log probability per token of the quatrain (its verses joined by newlines, framed
  as the generators frame it: BOS, the verses, EOS; every token after BOS scored,
  :func:`poeval.generators.text_scores.token_logprobs`) under a fixed reference LM that is never a generator
  under test (params ``metrics.quality.reference_lm``; a system fine-tuned from it is marked, :func:`own_model_note`).
* Form: whether the quatrain rhymes (the rhyme detector's scheme is not ``abcd``) and whether it scans
  (:func:`scans`: the metre labeller gives it a metre family and every verse fits that family best), and both.

NoveltyBench's utility (Zhang et al. 2025, "NoveltyBench: Evaluating Language Models for Humanlike
Diversity", section 2) trades the two: a user who reads ``k`` generations, each with patience ``p``, gains a
generation's quality only when it is in an equivalence class not seen before,
``utility_k = (1 - p) / (1 - p^k) * sum_i p^(i-1) * [c_i new] * u_i`` with ``u_i`` on a 1-10 scale. Here the
sample is read in consecutive blocks of ``k`` quatrains; two quatrains are equivalent when their verses are
equal up to case, punctuation and spacing; ``u_i = 1 + 9 * form_i`` with ``form_i`` the mean of the
quatrain's rhymes and scans flags (0, 0.5 or 1): the form signal, which has a fixed scale, maps onto the
benchmark's, while fluency has none.

:func:`pareto_front` gives the decoding configs on the frontier of diversity against quality.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Sequence

import numpy as np

from poeval.errors import PoevalError

NO_RHYME = "abcd"        # the rhyme detector's scheme of a quatrain without a rhyme
NO_METRE = "other"       # the metre labeller's label of a quatrain without a regular metre
KEY = "metrics.quality.reference_lm"


# --- fluency -------------------------------------------------------------------------------------------

def load_reference(path: str):
    """``(model, tokenizer)`` of the reference LM (a folder, a release's short id or a hub id), in eval mode on
    the device poeval picks (:func:`poeval.device.resolve`: a GPU where there is one), as BPoMP's scorers."""
    from poeval import device
    from poeval.generators.checkpoint import load

    model, tok = load(path, key=KEY)
    return model.to(device.resolve()).eval(), tok


def fluency(model, tokenizer, quatrains: Sequence[Sequence[str]], batch_size: int, progress: bool = False) -> np.ndarray:
    """Each quatrain's mean log-probability (nats) per scored token under ``model``."""
    from poeval.generators.text_scores import token_logprobs

    scored = token_logprobs(model, tokenizer, ["\n".join(q) for q in quatrains], batch_size, progress, desc="fluency")
    return np.array([total / n for total, n in scored], dtype=float)


def reference_identity(path: str | None) -> dict:
    """What identifies an imported reference LM: the release and GGUF sha256 its ``import.json`` records (empty
    when the folder has none, e.g. a hub id)."""
    record = Path(path) / "import.json" if path else None
    if record is None or not record.is_file():
        return {}
    source = json.loads(record.read_text(encoding="utf-8")).get("source")
    source = source if isinstance(source, dict) else {}
    return {k: v for k, v in (("reference_lm_release", source.get("release")),
                              ("reference_lm_sha256", source.get("sha256"))) if v}


# --- form ----------------------------------------------------------------------------------------------

def scans(lines: Sequence[str], metre: str, lang: str) -> bool:
    """Whether a quatrain of stanza metre ``metre`` (the labeller's) is regular: the stanza has a metre family
    and each verse fits it best (its cheapest patterns include that family's, :func:`poeval.poetry.feet.
    family_costs`; none too short or too far from every pattern). The stanza label alone is ``other`` for
    almost no quatrain (1 of the main job's 7,000 training quatrains): most verses of a loose quatrain still
    vote for some family."""
    from poeval.poetry import feet

    if metre == NO_METRE:
        return False
    family = "iambic" if metre == "alexandrine" else metre   # the German iambic hexameter
    for line in lines:
        codes = feet.codes_of(line, lang)
        costs = feet.family_costs(codes, lang)
        if feet.scan(codes, lang)[0] == NO_METRE or family not in costs:
            return False
        if costs[family][0] > min(cost for cost, _ in costs.values()):
            return False
    return True


def form_flags(quatrains: Sequence[Sequence[str]], schemes: Sequence[str], metres: Sequence[str],
               lang: str) -> tuple[np.ndarray, np.ndarray]:
    """(rhymes, scans) per quatrain from its verses, rhyme scheme and stanza metre label."""
    return (np.array([s != NO_RHYME for s in schemes], dtype=bool),
            np.array([scans(q, m, lang) for q, m in zip(quatrains, metres)], dtype=bool))


# --- NoveltyBench's utility ------------------------------------------------------------------------------

def _key(lines: Sequence[str]) -> str:
    return "\n".join(" ".join(re.sub(r"[^\w\s]", " ", line.casefold()).split()) for line in lines)


def classes(quatrains: Sequence[Sequence[str]]) -> np.ndarray:
    """Each quatrain's equivalence class (module doc): the index of the first quatrain equal to it."""
    first: dict[str, int] = {}
    return np.array([first.setdefault(_key(q), i) for i, q in enumerate(quatrains)], dtype=np.int64)


def utility(cls: np.ndarray, u: np.ndarray, k: int, p: float) -> float | None:
    """NoveltyBench's ``utility_k`` (module doc), averaged over the consecutive blocks of ``k`` quatrains (a
    shorter last block is left out); None when there is no whole block."""
    blocks = len(cls) // k
    if not blocks:
        return None
    weight = p ** np.arange(k) * (1 - p) / (1 - p ** k)
    total = 0.0
    for b in range(blocks):
        c, v = cls[b * k:(b + 1) * k], u[b * k:(b + 1) * k]
        new = np.array([c[i] not in c[:i] for i in range(k)])
        total += float((weight * new * v).sum())
    return total / blocks


# --- the family's numbers --------------------------------------------------------------------------------

def numbers(flu: np.ndarray, rhymes: np.ndarray, scans: np.ndarray, cls: np.ndarray, idx: np.ndarray,
            k: int, p: float) -> dict:
    """The family's scalars on the quatrains ``idx`` (in that order: a resample reads its blocks in it)."""
    if not len(idx):
        return {key: None for key in ("fluency", "rhymes", "scans", "rhymes_and_scans", "utility")}
    r, s = rhymes[idx], scans[idx]
    u = 1 + 9 * (r.astype(float) + s) / 2
    # a resample's duplicates of one quatrain are one class, as equal verses are
    return {"fluency": float(flu[idx].mean()), "rhymes": float(r.mean()), "scans": float(s.mean()),
            "rhymes_and_scans": float((r & s).mean()), "utility": utility(cls[idx], u, k, p)}


# --- the generator under test --------------------------------------------------------------------------

def own_model_note(params: dict, lang: str, system: str) -> dict[str, str]:
    """``{"note": ...}`` where the system's model is the reference LM's own (its base model, or the model its
    endpoint serves), else {}: the cell and the tables say so rather than score a model on itself silently."""
    from poeval import config

    reference = params["metrics"]["quality"]["reference_lm"]
    model = (params.get("models") or {}).get(system)
    if not isinstance(model, dict):
        return {}
    model = config.model_for_lang(model, lang)
    named = {model.get(key) for key in (*config.PER_LANG_MODEL_KEYS, "serves")}
    if reference not in named:
        return {}
    return {"note": f"the reference LM {reference} is this system's own model: its fluency is scored by itself"}


# --- the frontier ----------------------------------------------------------------------------------------

def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points that no other point dominates, both coordinates higher being better (a point
    equal to another in both is on the front with it), in input order; a point with a missing (None or NaN)
    coordinate is never on it."""
    ok = [i for i, (x, y) in enumerate(points) if x is not None and y is not None and not (np.isnan(x) or np.isnan(y))]
    pts = np.array([points[i] for i in ok], dtype=float).reshape(-1, 2)
    if not len(pts):
        return []
    order = np.lexsort((-pts[:, 1], -pts[:, 0]))   # x descending, then y descending
    front, best = [], -np.inf
    for j in order:
        if pts[j, 1] > best or (front and np.array_equal(pts[j], pts[front[-1]])):
            front.append(j)
            best = max(best, pts[j, 1])
    return sorted(ok[j] for j in front)


def check_measure(measure: str, known: Sequence[str]) -> None:
    if measure not in known:
        raise PoevalError(f"metrics.quality.frontier_diversity: unknown measure {measure!r} "
                          f"(known: {', '.join(known)})")
