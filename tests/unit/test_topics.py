"""The topics family (not in the paper): preprocessing, an LDA model that separates two obvious topics, its
storage as arrays (round trip, stale model refused), the cell's numbers against scipy, and `poeval topics`."""

import json

import numpy as np
import pytest
from scipy.stats import entropy as scipy_entropy

from poeval.cli import main
from poeval.errors import PoevalError
from poeval.metrics import topics
from poeval.metrics.evaluate import evaluate

SEA = "wave tide sail ship anchor harbour ocean shore storm gull".split()
WOOD = "tree leaf branch root forest moss acorn bark fern glade".split()
OPTIONS = {"num_topics": 2, "passes": 20, "no_below": 1, "no_above": 1.0, "seed": 1}


def _quatrain(words, rng):
    return [" ".join(rng.choice(words, 4)) for _ in range(4)]


def _corpus(n=40, seed=0):
    """n quatrains, the first half all about the sea, the second about the wood."""
    rng = np.random.default_rng(seed)
    return [_quatrain(SEA if i < n // 2 else WOOD, rng) for i in range(n)]


def _write(path, quatrains, prefix="q"):
    path.write_text("".join(json.dumps({"id": f"{prefix}{i}", "lines": q}) + "\n" for i, q in enumerate(quatrains)))
    return path


def test_documents_follow_the_papers_filters():
    quatrains = [["The Ship's sails, o'er the WAVES!", "and thee and thy ship", "in 1914 a sea-gull", "cat"]]
    assert topics.documents(quatrains, "en", 3) == [["ships", "sails", "waves", "ship", "gull"]]
    assert topics.documents(quatrains, "en", 2) == [["ships", "sails", "waves", "ship", "sea", "gull", "cat"]]
    with pytest.raises(PoevalError, match="no stopwords for language 'fr'"):
        topics.documents(quatrains, "fr", 3)


@pytest.fixture(scope="module")
def toy():
    quatrains = _corpus()
    return quatrains, topics.train(quatrains, "en", OPTIONS)


def test_two_obvious_topics_are_separated(toy):
    quatrains, model = toy
    dominant = np.nanargmax(model.train_theta, axis=1)
    sea, wood = dominant[:20], dominant[20:]
    assert len(set(sea)) == 1 and len(set(wood)) == 1 and sea[0] != wood[0]
    assert model.train_theta[:20, sea[0]].min() > 0.8
    words = model.topic_words()
    top_sea = {model.vocabulary[w] for w in np.argsort(-words[sea[0]])[:10]}
    assert top_sea == set(SEA)


def test_inference_depends_on_the_quatrain_only(toy):
    quatrains, model = toy
    alone = model.theta(quatrains[:1])
    assert np.array_equal(alone[0], model.theta(quatrains[5:] + quatrains[:1])[-1])
    assert np.array_equal(model.theta(quatrains), model.train_theta)
    empty = model.theta([["the and of", "a", "it is", "so"]])
    assert np.isnan(empty).all()


def test_saved_arrays_rebuild_the_same_model_without_pickle(toy, tmp_path):
    quatrains, model = toy
    train = _write(tmp_path / "train.jsonl", quatrains)
    meta = topics.save_model(model, tmp_path / "model", train)
    assert meta["input_sha256"] and meta["params"] == topics.resolve(OPTIONS)
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == [
        "model.npz", "top_words.tsv", "topics.json", "train.npz", "vocabulary.json"]
    loaded = topics.load_model(tmp_path / "model", input_path=train, options=OPTIONS)
    probe = _corpus(10, seed=7)
    assert np.array_equal(loaded.theta(probe), model.theta(probe))
    assert np.array_equal(loaded.topic_words(), model.topic_words())
    assert np.array_equal(loaded.train_theta, model.train_theta)
    rows = (tmp_path / "model" / "top_words.tsv").read_text().splitlines()
    assert rows[0] == "topic\trank\tword\tprobability" and len(rows) == 1 + 2 * 10


def test_a_stale_or_foreign_model_is_refused(toy, tmp_path):
    quatrains, model = toy
    train = _write(tmp_path / "train.jsonl", quatrains)
    topics.save_model(model, tmp_path / "model", train)
    with pytest.raises(PoevalError, match="trained with params"):
        topics.load_model(tmp_path / "model", input_path=train, options=OPTIONS | {"num_topics": 3})
    _write(train, quatrains[1:])
    with pytest.raises(PoevalError, match="built from another file, or another version of it"):
        topics.load_model(tmp_path / "model", input_path=train)
    with pytest.raises(PoevalError, match="topic model not found"):
        topics.load_model(tmp_path / "nothing")


def test_cell_numbers_against_scipy_and_the_cached_model(toy, tmp_path):
    """A sample of sea quatrains: Q is the mean of its quatrains' distributions, P the training quatrains'
    (the whole file, as the workflow's model); KL(Q || P) and H(Q) as scipy computes them; the cell is the
    same with the cached model (`--topic-model`) and without (trained in the cell)."""
    quatrains, model = toy
    train = _write(tmp_path / "train.jsonl", quatrains)
    sample = _write(tmp_path / "s.jsonl", _corpus(10, seed=3)[:5], prefix="s")
    assert main(["topics", str(train), "--lang", "en", "--options", json.dumps(OPTIONS), "--out",
                 str(tmp_path / "model")]) == 0
    with_model = OPTIONS | {"topic_model": str(tmp_path / "model")}
    cached = evaluate(sample, train, "en", ["topics"], options={"topics": with_model}, bootstrap_reps=20)["topics"]
    fresh = evaluate(sample, train, "en", ["topics"], options={"topics": OPTIONS}, bootstrap_reps=20)["topics"]
    assert cached == fresh
    theta = model.theta(_corpus(10, seed=3)[:5])
    q, p = theta.mean(axis=0), model.train_theta.mean(axis=0)
    assert [cached["distribution"][str(t)] for t in range(2)] == pytest.approx(q)
    assert cached["kl"] == pytest.approx(scipy_entropy(q, p, base=2))
    assert cached["entropy"] == pytest.approx(scipy_entropy(q, base=2))
    sea = int(np.argmax(q))
    assert cached["counts"] == {str(sea): 5, str(1 - sea): 0} and cached["dominant_entropy"] == 0.0
    assert cached["n_empty"] == 0 and cached["num_topics"] == 2 and set(cached["ci"]) == {"entropy", "kl",
                                                                                           "dominant_entropy"}
    with pytest.raises(PoevalError, match="trained with params"):
        evaluate(sample, train, "en", ["topics"], options={"topics": {"topic_model": str(tmp_path / "model")}})


def test_a_human_sample_is_compared_with_the_rest_of_train(toy, tmp_path):
    """With --exclude-sample-from-reference P is the mean over the training quatrains outside the sample: the
    sea half against the wood half is far; against the whole file half as far in probability."""
    quatrains, model = toy
    train = _write(tmp_path / "train.jsonl", quatrains)
    sample = _write(tmp_path / "s.jsonl", quatrains[:20])
    rest = evaluate(sample, train, "en", ["topics"], options={"topics": OPTIONS},
                    exclude_sample_from_reference=True)["topics"]
    whole = evaluate(sample, train, "en", ["topics"], options={"topics": OPTIONS})["topics"]
    q = model.train_theta[:20].mean(axis=0)
    assert rest["kl"] == pytest.approx(scipy_entropy(q, model.train_theta[20:].mean(axis=0), base=2))
    assert whole["kl"] == pytest.approx(scipy_entropy(q, model.train_theta.mean(axis=0), base=2))
    assert rest["kl"] > 2 > whole["kl"]
