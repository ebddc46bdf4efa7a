"""The distinct_k family (poeval.metrics.distinct, not in the paper): NoveltyBench's partition against a brute
force over pairs, D(k) and the slope against a hand-computed case, through `poeval.evaluate`, and its figure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from poeval import evaluate
from poeval.errors import PoevalError
from poeval.io import read_json, write_json
from poeval.metrics import distinct
from poeval.report import figures


def brute_force_partition(vectors: list[list[float]], threshold: float) -> list[int]:
    """NoveltyBench's loop, with plain Python: each unassigned item opens a class and takes every later
    unassigned item whose cosine with it reaches the threshold."""
    def cosine(a, b):
        dot = sum(x * y for x, y in zip(a, b))
        return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))

    labels = [-1] * len(vectors)
    classes = 0
    for i in range(len(vectors)):
        if labels[i] >= 0:
            continue
        labels[i] = classes
        for j in range(i + 1, len(vectors)):
            if labels[j] == -1 and cosine(vectors[i], vectors[j]) >= threshold:
                labels[j] = classes
        classes += 1
    return labels


def test_partition_is_novelty_bench_partition_on_clustered_vectors():
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(4, 6))
    # 40 items around 4 centres, noisy enough that some join another class or open one of their own
    raw = centres[rng.integers(4, size=40)] + rng.normal(scale=0.45, size=(40, 6))
    emb = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    for threshold in (0.6, 0.8, 0.9):
        expected = brute_force_partition(raw.tolist(), threshold)
        assert distinct.partition(emb, threshold).tolist() == expected
    assert 4 < max(expected) + 1 < 40   # merges and new classes both happen


def _quatrain(*words):
    return [f"{w} {w}{i} light" for i, w in enumerate(words)]


A, B, C = _quatrain("sun", "sea", "shore", "wave"), _quatrain("night", "star", "song", "moon"), _quatrain(
    "rose", "thorn", "bloom", "leaf")


def test_evaluate_gives_the_hand_computed_curve_share_and_slope(fake):
    # A, A in capitals (the fake encoder folds case: the same vector), B, A, C, B: classes 0 0 1 0 2 1
    sample = [A, [v.upper() for v in A], B, A, C, B]
    out = evaluate(sample, reference=[A, B], metrics=["distinct_k"], options={"distinct_k": {"threshold": 0.99}},
                   bootstrap_reps=20)
    d = out["distinct_k"]
    assert d["per_poem"]["class"] == [0, 0, 1, 0, 2, 1]
    assert d["curve"] == [1, 1, 2, 2, 3, 3]
    # D(6) = 3, D(6)/6, and (D(6) - D(3)) / (6 - 3) = (3 - 2) / 3
    assert (d["distinct"], d["distinct_share"], d["slope"], d["half"]) == (3, 0.5, pytest.approx(1 / 3), 3)
    assert {"distinct", "distinct_share", "slope"} <= set(d["ci"])
    # every quatrain its own class at a threshold no two distinct ones reach
    low = evaluate([A, B, C], reference=[A], metrics=["distinct_k"], options={"distinct_k": {"threshold": 0.99}})
    assert low["distinct_k"]["curve"] == [1, 2, 3] and low["distinct_k"]["slope"] == 1.0


def test_a_resample_keeps_each_quatrain_s_role_in_the_full_partition():
    emb = np.eye(3)[[0, 0, 1, 0, 2, 1]]   # the classes of the hand case: opened 1 0 1 0 1 0
    result, resample = distinct.compute(emb, 0.99)
    assert result["per_poem"]["opened"] == [1, 0, 1, 0, 1, 0]
    drawn = resample(np.array([0, 0, 4, 5]))
    # the share over the draws (1 + 1 + 1 + 0) / 4; the slope over the draws from positions >= 3: (1 + 0) / 2
    assert drawn == {"distinct": pytest.approx(4.5), "distinct_share": 0.75, "slope": 0.5}
    assert distinct.compute(np.zeros((1, 3)) + 1, 0.5)[0]["slope"] is None   # n = 1: no second half


def test_the_figure_draws_one_curve_per_row_and_refuses_another_family(tmp_path):
    cells = []
    for system, decoding, curve in (("HUMAN", "human0", [1, 2, 3]), ("HUMAN", "human1", [1, 2, 2]),
                                    ("gpt2-s", "vanilla", [1, 1, 2])):
        path = tmp_path / f"{system}-{decoding}.json"
        write_json(path, {"cell": {"lang": "en", "system": system, "decoding": decoding},
                          "distinct_k": {"curve": curve}})
        cells.append(str(path))
    out = tmp_path / "distinct.png"
    data = figures.make("distinct_k_figure", cells, str(out))
    assert data == {"en": {"HUMAN/human0": [1, 2, 3], "HUMAN/human1": [1, 2, 2], "gpt2-s/vanilla": [1, 1, 2]}}
    assert out.read_bytes().startswith(b"\x89PNG")
    write_json(tmp_path / "other.json", {"cell": read_json(cells[0])["cell"], "length": {}})
    with pytest.raises(PoevalError, match="not a 'distinct_k' metric cell"):
        figures.make("distinct_k_figure", [str(tmp_path / "other.json")], str(tmp_path / "x.png"))
