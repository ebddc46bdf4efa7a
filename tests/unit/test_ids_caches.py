"""Ids, the sample left out of the reference, and the caches' sidecars (issue 39, points 6, 7 and 9).
docs/inputs-errors.md "Inputs and errors" and docs/metrics.md (memorization) describe the same behaviour."""

import json

import numpy as np
import pytest

import poeval
from poeval import paths
from poeval.cli import main
from poeval.files import file_sha256

WORDS = ["".join(chr(97 + (i * 7 + k * 3) % 26) for k in range(3 + i % 4)) for i in range(200)]


def _quatrains(n, seed=0):
    """n quatrains of random words, far apart (no level's threshold is reached between two of them)."""
    rng = np.random.default_rng(seed)
    return [[" ".join(rng.choice(WORDS, 5)) for _ in range(4)] for _ in range(n)]


def _jsonl(path, quatrains, ids=None):
    """A JSONL file of quatrains, with the given ids (None: records without an id)."""
    if ids is None:
        records = [{"lines": q} for q in quatrains]
    else:
        records = [{"id": i, "lines": q} for i, q in zip(ids, quatrains)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def _evaluate(tmp_path, samples, reference, metrics, *extra):
    """``poeval evaluate`` through main: (exit status, the written cell or None)."""
    out = tmp_path / "cell.json"
    out.unlink(missing_ok=True)   # an earlier call's cell
    status = main(["evaluate", str(samples), "--reference", str(reference), "--lang", "en", "--metrics", metrics,
                   "--out", str(out), "--quiet", *extra])
    return status, json.loads(out.read_text()) if out.exists() else None


# --- 6: ids are strings; per-poem counts are keyed by position ----------------------------------------------

def test_integer_ids_are_read_as_strings_and_hits_map_back_to_their_poem(tmp_path):
    """`"id": 10` once raised KeyError '10' (a couplet hit's id "10#0" split back to the string "10")."""
    reference = _quatrains(6)
    samples = _jsonl(tmp_path / "s.jsonl", [reference[0], reference[1], _quatrains(1, seed=9)[0]], ids=[10, 11, 12])
    status, cell = _evaluate(tmp_path, samples, _jsonl(tmp_path / "r.jsonl", reference), "memorization",
                             "--bootstrap-reps", "50")
    assert status == 0
    mem = cell["memorization"]
    assert mem["hits"]["quatrain"][0]["sample"] == "10" and mem["hits"]["couplet"][0]["sample"] == "10#0"
    assert mem["per_poem"] == {"quatrain": [1, 1, 0], "couplet": [2, 2, 0], "verse": [4, 4, 0]}
    assert mem["quatrain"] == pytest.approx(2 / 3)
    for level in ("quatrain", "couplet", "verse"):   # a rate's interval lies in [0, 1]
        low, high = mem["ci"][level]
        assert 0.0 <= low <= high <= 1.0


def test_integer_ids_of_in_memory_poems_are_strings_too():
    reference = _quatrains(3)
    result = poeval.evaluate([{"id": 7, "lines": reference[2]}], reference=reference, metrics=["memorization"])
    assert result["memorization"]["hits"]["verse"][0]["sample"] == "7#0"
    assert result["memorization"]["per_poem"]["verse"] == [4]


def test_ids_1_and_quoted_1_are_one_repeated_id(tmp_path, capsys):
    """ids 1 and "1" once passed the uniqueness check and gave a rate an interval reaching past 1."""
    reference = _quatrains(4)
    samples = _jsonl(tmp_path / "s.jsonl", reference[:3], ids=[1, "1", "2"])
    status, cell = _evaluate(tmp_path, samples, _jsonl(tmp_path / "r.jsonl", reference), "memorization",
                             "--bootstrap-reps", "50")
    err = capsys.readouterr().err
    assert status == 2 and cell is None
    assert err.count("\n") == 1 and "s.jsonl: id '1' occurs more than once" in err


# --- 7: --exclude-sample-from-reference leaves out the sample's own quatrains ------------------------------------

@pytest.fixture
def human(tmp_path):
    """A reference of 8 distinct quatrains, as a file without ids and one with; a HUMAN sample of its rows 5 and
    2 from each."""
    reference = _quatrains(8)
    rows = [5, 2]
    return {
        "no ids": (_jsonl(tmp_path / "r.jsonl", reference), _jsonl(tmp_path / "s.jsonl", [reference[r] for r in rows])),
        "ids": (_jsonl(tmp_path / "ri.jsonl", reference, [f"q{i}" for i in range(8)]),
                _jsonl(tmp_path / "si.jsonl", [reference[r] for r in rows], [f"q{r}" for r in rows])),
        "quatrains": reference,
    }


@pytest.mark.parametrize("ids", ["no ids", "ids"])
@pytest.mark.parametrize("cached", [False, True])
def test_a_human_sample_is_compared_with_the_other_quatrains(tmp_path, human, ids, cached):
    """Without ids the flag once dropped reference rows 0 and 1 (the sample's positions): memorization 1.0."""
    reference, samples = human[ids]
    extra = []
    if cached:
        assert main(["index", reference, "--out", str(tmp_path / "index")]) == 0
        extra = ["--memorization-index", str(tmp_path / "index")]
    status, cell = _evaluate(tmp_path, samples, reference, "memorization,length", "--exclude-sample-from-reference",
                             *extra)
    assert status == 0
    assert cell["n_reference"] == 6
    assert {level: cell["memorization"][level] for level in ("quatrain", "couplet", "verse")} == {
        "quatrain": 0.0, "couplet": 0.0, "verse": 0.0}
    status, cell = _evaluate(tmp_path, samples, reference, "memorization", *extra)   # without the flag: itself
    assert status == 0 and cell["memorization"]["quatrain"] == 1.0


def test_a_duplicate_of_a_human_quatrain_elsewhere_in_the_reference_is_still_found(tmp_path, human):
    """Only one row per sample quatrain is left out: a copy at another row is part of the rest of train."""
    reference = human["quatrains"] + [human["quatrains"][5]]
    samples = _jsonl(tmp_path / "s.jsonl", [human["quatrains"][5]])
    status, cell = _evaluate(tmp_path, samples, _jsonl(tmp_path / "r.jsonl", reference), "memorization",
                             "--exclude-sample-from-reference")
    assert status == 0 and cell["n_reference"] == 8
    assert cell["memorization"]["hits"]["quatrain"] == [{"sample": "0", "train": "8", "score": 1.0}]


def test_a_sample_not_drawn_from_the_reference_is_refused_with_the_flag(tmp_path, human, capsys):
    """A generated sample given the flag by mistake once excluded nothing (ids) or the first rows (no ids)."""
    reference, _ = human["ids"]
    samples = _jsonl(tmp_path / "gen.jsonl", [human["quatrains"][1], _quatrains(1, seed=5)[0]], ids=["q1", "g1"])
    status, cell = _evaluate(tmp_path, samples, reference, "length", "--exclude-sample-from-reference")
    err = capsys.readouterr().err
    assert status == 2 and cell is None and err.count("\n") == 1
    assert "gen.jsonl: poem 2 (id 'g1') is not a quatrain of the reference" in err and "ri.jsonl" in err


# --- 9: a cache whose files do not match its sidecar is refused ------------------------------------------------

def test_embeddings_that_do_not_match_their_sidecar_are_refused(tmp_path, fake, capsys):
    """Random embeddings of the right shape were once used (across 1.0 became another number)."""
    reference = _quatrains(5)
    ref = _jsonl(tmp_path / "r.jsonl", reference)
    npy = tmp_path / "r.npy"
    assert main(["embed", ref, "--out", str(npy)]) == 0
    side = json.loads((tmp_path / "r.npy.json").read_text())
    assert side["sha256"] == file_sha256(npy)
    samples = _jsonl(tmp_path / "s.jsonl", reference[:2])
    status, good = _evaluate(tmp_path, samples, ref, "semantic", "--reference-embeddings", str(npy))
    assert status == 0 and good["semantic"]["across_min"] == pytest.approx(1.0, abs=1e-6)

    shape = np.load(npy).shape
    np.save(npy, np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    status, cell = _evaluate(tmp_path, samples, ref, "semantic", "--reference-embeddings", str(npy))
    err = capsys.readouterr().err
    assert status == 2 and cell is None and err.count("\n") == 1
    assert f"{npy}: does not match its sidecar r.npy.json (sha256 " in err and "`poeval embed" in err


def test_embeddings_whose_sidecar_records_no_sha256_are_refused(tmp_path, fake, capsys):
    ref = _jsonl(tmp_path / "r.jsonl", _quatrains(3))
    npy = tmp_path / "r.npy"
    assert main(["embed", ref, "--out", str(npy)]) == 0
    side = tmp_path / "r.npy.json"
    side.write_text(json.dumps({k: v for k, v in json.loads(side.read_text()).items() if k != "sha256"}))
    status, _ = _evaluate(tmp_path, ref, ref, "semantic", "--reference-embeddings", str(npy))
    err = capsys.readouterr().err
    assert status == 2 and "records no sha256" in err and "`poeval embed" in err


def _forge(npy, rows):
    """``rows`` written as the cache, its sidecar's sha256, n and dim rewritten to match (what a forger does)."""
    np.save(npy, rows)
    side = npy.parent / f"{npy.name}.json"
    meta = json.loads(side.read_text())
    side.write_text(json.dumps(meta | {"sha256": file_sha256(npy), "n": rows.shape[0], "dim": rows.shape[1]}))


def _unit(rows):
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


FORGERIES = {   # the honest rows -> the forged ones, and the error they must give
    "random unit rows": (lambda e: _unit(np.random.default_rng(1).standard_normal(e.shape)),
                         "row 0 is not the encoder's embedding of reference quatrain 0 (cosine "),
    "NaN": (lambda e: np.where(np.arange(len(e))[:, None] == 2, np.float32("nan"), e), "holds NaN or infinite values"),
    "int8 zeros": (lambda e: np.zeros(e.shape, dtype=np.int8), "its values are int8, not the float32 that `poeval embed`"),
    "a row short": (lambda e: e[:-1], "4 rows for the 5 usable quatrains of the reference"),
    "another dimension": (lambda e: _unit(np.random.default_rng(1).standard_normal((len(e), 16))),
                          "rows of 16 values, but the encoder gives 32"),
    "rows not of norm 1": (lambda e: e * np.float32(0.5), "row 0 has norm 0.5, not 1"),
}


@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_forged_embeddings_cache_is_refused_whatever_its_sidecar_says(tmp_path, fake, capsys, forgery):
    """Rows that `poeval embed` did not write, with the sidecar's sha256 (and shape) rewritten to match: each
    gave a number (semantic across 0.141 instead of 0.456, NaN, 0.0) before the rows themselves were checked."""
    forge, message = FORGERIES[forgery]
    reference = _quatrains(5)
    ref = _jsonl(tmp_path / "r.jsonl", reference)
    npy = tmp_path / "r.npy"
    assert main(["embed", ref, "--out", str(npy)]) == 0
    samples = _jsonl(tmp_path / "s.jsonl", _quatrains(2, seed=1))
    _forge(npy, forge(np.load(npy)))
    capsys.readouterr()
    status, cell = _evaluate(tmp_path, samples, ref, "semantic", "--cached", f"embeddings={npy}")
    err = capsys.readouterr().err
    assert status == 2 and cell is None and err.count("\n") == 1, err
    assert err.startswith(f"poeval: error: {npy}: ") and message in err and "recreate it with `poeval embed`" in err, err


def test_the_honest_cache_passes_the_same_checks_and_gives_the_same_numbers(tmp_path, fake, capsys):
    reference = _quatrains(5)
    ref = _jsonl(tmp_path / "r.jsonl", reference)
    npy = tmp_path / "r.npy"
    assert main(["embed", ref, "--out", str(npy)]) == 0
    samples = _jsonl(tmp_path / "s.jsonl", _quatrains(2, seed=1))
    status, cached = _evaluate(tmp_path, samples, ref, "semantic", "--cached", f"embeddings={npy}")
    assert status == 0
    status, fresh = _evaluate(tmp_path, samples, ref, "semantic")
    assert status == 0 and cached["semantic"]["across"] == pytest.approx(fresh["semantic"]["across"], abs=1e-6)


def test_a_forged_workflow_cache_is_refused_when_reused(tmp_path, fake, capsys, monkeypatch):
    """A hand run reuses the workflow's embeddings of this very reference: forged rows there are refused too."""
    monkeypatch.chdir(tmp_path)
    reference = _quatrains(5)
    ref = _jsonl(tmp_path / "r.jsonl", reference)
    npy = tmp_path / paths.embeddings("en")
    assert main(["embed", ref, "--out", str(npy)]) == 0
    _forge(npy, FORGERIES["random unit rows"][0](np.load(npy)))
    capsys.readouterr()
    status, cell = _evaluate(tmp_path, _jsonl(tmp_path / "s.jsonl", _quatrains(2, seed=1)), ref, "semantic")
    err = capsys.readouterr().err
    assert status == 2 and cell is None and f"poeval: error: {paths.embeddings('en')}: row 0 is not the encoder" in err, err


def _change_bytes(path):
    """Same length, other bytes: a cache file edited or swapped without its sidecar."""
    text = path.read_text("utf-8")
    path.write_text(text[::-1], encoding="utf-8", newline="")


def test_a_memorization_index_that_does_not_match_its_sidecar_is_refused(tmp_path, capsys):
    reference = _quatrains(5)
    ref = _jsonl(tmp_path / "r.jsonl", reference)
    index = tmp_path / "index"
    assert main(["index", ref, "--out", str(index)]) == 0
    samples = _jsonl(tmp_path / "s.jsonl", reference[:1])
    status, cell = _evaluate(tmp_path, samples, ref, "memorization", "--memorization-index", str(index))
    assert status == 0 and cell["memorization"]["quatrain"] == 1.0

    _change_bytes(index / "quatrain.units.txt")
    capsys.readouterr()   # the index's progress bar
    status, cell = _evaluate(tmp_path, samples, ref, "memorization", "--memorization-index", str(index))
    err = capsys.readouterr().err
    assert status == 2 and cell is None and err.count("\n") == 1
    assert f"{index / 'quatrain.units.txt'}: does not match its sidecar index.json (sha256 " in err
    assert "`poeval index" in err


def test_a_memorization_index_from_before_file_hashes_is_refused(tmp_path, capsys):
    ref = _jsonl(tmp_path / "r.jsonl", _quatrains(3))
    index = tmp_path / "index"
    assert main(["index", ref, "--out", str(index)]) == 0
    meta = json.loads((index / "index.json").read_text())
    del meta["sha256"]
    (index / "index.json").write_text(json.dumps(meta))
    status, _ = _evaluate(tmp_path, ref, ref, "memorization", "--memorization-index", str(index))
    err = capsys.readouterr().err
    assert status == 2 and "records no sha256" in err and "`poeval index" in err


SEA = "wave tide sail ship anchor harbour ocean shore storm gull".split()
WOOD = "tree leaf branch root forest moss acorn bark fern glade".split()
TOPICS = {"num_topics": 2, "passes": 5, "no_below": 1, "no_above": 1.0, "seed": 1}


def test_a_topic_model_that_does_not_match_its_sidecar_is_refused(tmp_path, capsys):
    rng = np.random.default_rng(0)
    ref = _jsonl(tmp_path / "r.jsonl", [[" ".join(rng.choice(SEA if i < 10 else WOOD, 4)) for _ in range(4)]
                                        for i in range(20)])
    model = tmp_path / "model"
    options = json.dumps(TOPICS)
    assert main(["topics", ref, "--lang", "en", "--options", options, "--out", str(model)]) == 0
    extra = ["--options", json.dumps({"topics": TOPICS}), "--topic-model", str(model)]
    assert _evaluate(tmp_path, ref, ref, "topics", *extra)[0] == 0

    with np.load(model / "train.npz") as arrays:
        theta = arrays["theta"]
    np.savez(model / "train.npz", theta=theta[::-1].copy())   # same shape, other rows: silently wrong before
    status, cell = _evaluate(tmp_path, ref, ref, "topics", *extra)
    err = capsys.readouterr().err
    assert status == 2 and cell is None and err.count("\n") == 1
    assert f"{model / 'train.npz'}: does not match its sidecar topics.json (sha256 " in err
    assert "`poeval topics" in err
