"""Structured Adversary (poeval.generators.poetic.adversary): the rhyme discriminator, pronouncing-dictionary
pretraining, REINFORCE, MLE, and train()/sample() end to end on tiny data."""

import json
import random
from pathlib import Path

import pytest
import torch

from conftest import Interrupted, assert_stamped, sampling
from poeval import params as poeval_params
from poeval.errors import PoevalError
from poeval.generators.poetic import adversary as sa, common
from poeval.io import read_json
from poeval.poetry.style import STYLE_TOKENS

# rhyme groups (all in CMUdict; each group shares its rhyme part)
GROUPS = [
    ["night", "light", "bright", "sight", "flight", "white", "delight", "might"],
    ["day", "way", "play", "stay", "gray", "away", "say", "may"],
    ["sea", "free", "tree", "me", "thee", "key"],
    ["heart", "part", "art", "apart", "start", "dart"],
    ["fire", "desire", "higher", "tire", "liar", "wire"],
    ["love", "above", "dove", "glove", "shove", "of"],
    ["moon", "soon", "tune", "june", "noon", "spoon"],
    ["rain", "pain", "again", "plain", "vain", "chain"],
]
OPENINGS = ["I saw the", "and all the", "she sang of", "we walked the", "upon the", "so sweet the",
            "beneath the", "he dreamt of", "they fled the", "behold the"]

SMALL = {  # tiny sizes for the tests
    "emb_dim": 16, "hidden": 32, "char_emb": 8, "char_hidden": 24, "rhyme_dim": 16, "disc_channels": 4,
    "disc_hidden": 8, "pron_steps": 20, "pron_pairs": 16, "adv_steps": 3, "adv_batch_size": 8,
    "disc_pre_steps": 2, "adv_max_tokens": 40, "vocab_min_count": 1, "dropout": 0.0,
}
TRAIN = {"seed": 3, "batch_size": 8, "max_steps": 80, "max_epochs": 30, "lr": 0.02, "eval_every": 20, "eval_quatrains": 6,
         "patience": 5, "warmup_steps": 0}
VANILLA = {"temperature": 1.0, "top_p": 1.0, "top_k": 0}


@pytest.fixture(autouse=True)
def one_thread():
    # two intra-op threads on a loaded 2-core machine are many times slower than one
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def toy_quatrain(rng: random.Random, scheme: str = "abab") -> list[str]:
    ga, gb = rng.sample(GROUPS, 2)
    wa, wb = rng.sample(ga, 2), rng.sample(gb, 2)
    words = {"abab": [wa[0], wb[0], wa[1], wb[1]], "aabb": [wa[0], wa[1], wb[0], wb[1]]}[scheme]
    return [f"{rng.choice(OPENINGS)} {w}," for w in words]


def toy_sonnets(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        schemes = [rng.choice(["abab", "aabb"]) for _ in range(3)]
        quatrains = [toy_quatrain(rng, s) for s in schemes]
        couplet = toy_quatrain(rng, "aabb")[:2]
        out.append({"id": f"s{i}", "lines": [v for q in quatrains for v in q] + couplet, "quatrains": quatrains,
                    "couplet": couplet, "schemes": schemes, "meters": ["iambic", "trochaic", "other"],
                    "sources": []})
    return out


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("sa_data")
    rng = random.Random(7)
    dev = []
    for i in range(6):
        scheme = rng.choice(["abab", "aabb"])
        dev.append({"id": f"d{i}", "lines": toy_quatrain(rng, scheme), "scheme": scheme, "meter": "iambic"})
    words = sorted({t for s in toy_sonnets(12) for v in s["lines"] for t in common.tokenize(v)})
    vec_rng = random.Random(1)
    w2v = d / "w2v.txt"
    w2v.write_text(f"{len(words)} 16\n" + "".join(
        w + " " + " ".join(f"{vec_rng.uniform(-0.5, 0.5):.4f}" for _ in range(16)) + "\n" for w in words))
    return {"sonnets": write_jsonl(d / "sonnets.jsonl", toy_sonnets(12)), "dev": write_jsonl(d / "dev.jsonl", dev),
            "w2v": str(w2v), "dir": d}


@pytest.fixture(scope="module")
def trained(data):
    out = data["dir"] / "model"
    summary = sa.train(data["sonnets"], data["dev"], str(out), {"arch": "sa", **SMALL}, TRAIN, lang="en",
                       word2vec=data["w2v"], threads=1, progress=False)
    return out, summary


# --------------------------------------------------------------------------------------------------
# discriminator and its rhyme encoder


def test_pronouncing_pretraining_counts_and_skips_missing_words():
    words = ["night", "light", "bright", "day", "way", "stay", "blorptak", "heart", "part"]
    parts, missing = sa.pronunciations(words, "en")
    assert missing == ["blorptak"]
    assert parts["night"] == parts["light"] == parts["bright"] == "AY T"
    assert parts["day"] != parts["night"]

    torch.manual_seed(0)
    chars = sa.CharVocab.from_words(words, 16)
    enc = sa.build_disc(sa.resolve_model_cfg(SMALL), len(chars)).encoder
    summary = sa.pretrain_encoder(enc, chars, words, "en", steps=60, pairs=8, lr=0.01, rng=random.Random(0))
    assert summary["pron_words"] == 9 and summary["pron_covered"] == 8 and summary["pron_missing"] == 1
    assert summary["pron_missing_examples"] == ["blorptak"]
    assert summary["pron_rhyme_groups"] == 3            # AY T, EY, AA R T (all with >= 2 words)
    assert summary["pron_steps"] == 60
    # the objective worked: rhyming pairs end up more similar than non-rhyming ones
    assert summary["pron_pos_cos"] > summary["pron_neg_cos"] + 0.3


def _endings(quatrains):
    return [tuple(common.end_word(common.tokenize(v)).lower() for v in q) for q in quatrains]


def test_discriminator_separates_real_from_shuffled_endings():
    rng = random.Random(0)
    real = _endings([toy_quatrain(rng, rng.choice(["abab", "aabb"])) for _ in range(160)])

    def shuffled(quatrains, r):  # the same end words, swapped across quatrains
        pool = [w for q in quatrains for w in q]
        r.shuffle(pool)
        return [tuple(pool[i:i + 4]) for i in range(0, len(pool), 4)]

    train_real, test_real = real[:120], real[120:]
    train_fake, test_fake = shuffled(train_real, rng), shuffled(test_real, rng)
    words = sorted({w for g in GROUPS for w in g})
    torch.manual_seed(0)
    cfg = sa.resolve_model_cfg(SMALL)
    chars = sa.CharVocab.from_words(words, 16)
    disc = sa.build_disc(cfg, len(chars))
    sa.pretrain_encoder(disc.encoder, chars, words, "en", steps=100, pairs=16, lr=0.01, rng=random.Random(0))
    opt = torch.optim.Adam(disc.parameters(), lr=0.01)
    for step in range(150):
        i = (step * 16) % 120
        sa.disc_step(disc, opt, chars, train_real[i:i + 16], train_fake[i:i + 16])
    p_real = sa.disc_prob_real(disc, chars, test_real)
    p_fake = sa.disc_prob_real(disc, chars, test_fake)
    acc = (float((p_real > 0.5).float().sum()) + float((p_fake <= 0.5).float().sum())) / (len(p_real) + len(p_fake))
    assert acc >= 0.85, acc
    assert float(p_real.mean()) > float(p_fake.mean()) + 0.4


def test_draw_never_picks_zero_probability_tokens():
    torch.manual_seed(0)
    probs = torch.zeros(500, 10)
    probs[:, 3] = 0.2
    probs[:, 7] = 0.8
    tok = common.draw(probs).squeeze(1)
    assert set(tok.tolist()) == {3, 7}
    assert 0.7 < float((tok == 7).float().mean()) < 0.9


def test_draw_takes_the_last_positive_token_when_the_uniform_rounds_up(monkeypatch):
    """A uniform of exactly 1.0 times the row total makes ``searchsorted`` overflow; clamping would pick the
    last column, of probability zero (the old DeepSpeare sampler did). Every one of ``k`` draws is checked."""
    probs = torch.tensor([[0.0, 0.5, 0.5, 0.0, 0.0], [0.3, 0.0, 0.0, 0.7, 0.0]])
    monkeypatch.setattr(torch, "rand", lambda *shape, **kw: torch.ones(*shape, **kw))
    assert common.draw(probs, k=3).tolist() == [[2, 2, 2], [3, 3, 3]]


def test_draw_k_follows_the_distribution():
    torch.manual_seed(1)
    probs = torch.tensor([[0.1, 0.0, 0.6, 0.3]])
    tok = common.draw(probs, k=20000)[0]
    freq = torch.bincount(tok, minlength=4).double() / 20000
    assert freq[1] == 0
    assert torch.allclose(freq, probs[0].double(), atol=0.015)


# --------------------------------------------------------------------------------------------------
# generator: MLE and REINFORCE


def _toy_lm(seed=0, **cfg):
    sonnets = toy_sonnets(6, seed=seed)
    units = [q for s in sonnets for q in s["quatrains"]]
    toks = [sa.unit_tokens(q) for q in units]
    vocab = common.Vocab.build((t for q in toks for t in q), min_count=1)
    ids = [sa.encode_unit(vocab, q, []) for q in toks]
    torch.manual_seed(seed)
    lm = sa.build_lm(sa.resolve_model_cfg({**SMALL, **cfg}), len(vocab))
    return lm, vocab, ids


@pytest.mark.parametrize("softmax", ["full", "adaptive"])
def test_output_distribution_is_normalised(softmax):
    lm, vocab, ids = _toy_lm(softmax=softmax, cutoffs=[20, 50])
    assert (lm.ada is not None) == (softmax == "adaptive") and len(vocab) > 60
    h, _ = lm(torch.tensor([ids[0][:-1]]))
    h = h[0]
    logp = lm.log_probs(h)
    assert logp.shape == (len(ids[0]) - 1, len(vocab))
    assert torch.allclose(logp.exp().sum(-1), torch.ones(len(h)), atol=1e-5)
    targets = torch.tensor(ids[0][1:])
    assert torch.allclose(lm.target_log_probs(h, targets), logp.gather(-1, targets[:, None])[:, 0], atol=1e-5)


@pytest.mark.parametrize("softmax", ["full", "adaptive"])
def test_lm_loss_decreases(softmax):
    lm, _, ids = _toy_lm(softmax=softmax, cutoffs=[20, 50])
    opt = torch.optim.Adam(lm.parameters(), lr=0.02)
    before = sa.dev_loss(lm, ids)
    for step in range(40):
        lm.train()
        loss, n = sa.nll(lm, ids[(step * 6) % 18: (step * 6) % 18 + 6])
        opt.zero_grad()
        (loss / n).backward()
        opt.step()
    after = sa.dev_loss(lm, ids)
    assert after < before - 1.0, (before, after)


def test_reinforce_moves_the_generator_towards_the_reward():
    lm, vocab, _ = _toy_lm()
    target = vocab.stoi["she"]
    bos = torch.tensor([[vocab.bos]])

    def p_target():
        lm.eval()
        with torch.no_grad():
            return float(lm.log_probs(lm(bos)[0][:, -1])[0, target].exp())

    p0 = p_target()
    before = {k: v.clone() for k, v in lm.state_dict().items()}
    opt = torch.optim.Adam(lm.parameters(), lr=0.02)
    baseline = None
    torch.manual_seed(1)
    for step in range(25):
        g = sa.generate(lm, vocab, 16, 12, banned=[vocab.pad, vocab.unk, vocab.bos])
        rewards = [1.0 if row and row[0] == target else 0.0 for row in g.rows]
        mean = sum(rewards) / len(rewards)
        baseline = mean if baseline is None else 0.8 * baseline + 0.2 * mean
        stats = sa.reinforce_step(lm, opt, vocab.bos, g.rows, rewards, baseline)
        assert stats["mle_loss"] is None
    changed = [k for k, v in lm.state_dict().items() if not torch.equal(v, before[k])]
    assert "emb.weight" in changed and "lstm.weight_hh_l0" in changed
    p1 = p_target()
    assert p1 > p0 + 0.2, (p0, p1)


def test_reinforce_with_zero_advantage_and_no_mle_term_changes_nothing():
    lm, vocab, ids = _toy_lm()
    before = {k: v.clone() for k, v in lm.state_dict().items()}
    opt = torch.optim.SGD(lm.parameters(), lr=0.1)
    g = sa.generate(lm, vocab, 4, 10, banned=[vocab.pad, vocab.unk, vocab.bos])
    sa.reinforce_step(lm, opt, vocab.bos, g.rows, [0.5] * 4, 0.5)
    assert all(torch.equal(v, before[k]) for k, v in lm.state_dict().items())
    # ... while the MLE term alone does move it
    sa.reinforce_step(lm, opt, vocab.bos, g.rows, [0.5] * 4, 0.5, mle_seqs=ids[:4], mle_weight=1.0)
    assert not all(torch.equal(v, before[k]) for k, v in lm.state_dict().items())


# --------------------------------------------------------------------------------------------------
# train() and sample()


def test_train_writes_a_loadable_checkpoint_with_its_log(trained, data):
    out, summary = trained
    assert common.is_checkpoint(out)
    arch, config, vocab, states = common.load_checkpoint(out)
    assert arch == "sa" and set(states) == {"lm", "disc"}
    assert config["lang"] == "en" and config["model"]["conditioned"] is False
    log = json.loads((out / "training_log.json").read_text())
    assert set(log) == {"evals", "summary", "model_cfg", "train_cfg", "provenance"}
    for key in ("best_step", "best_dev_loss", "stopped_early", "steps", "elapsed_s", "n_params", "n_train",
                "n_dev_eval", "vocab_size", "threads", "pron_covered", "pron_missing", "adv_steps",
                "final_dev_loss", "word2vec_covered"):
        assert key in log["summary"], key
    s = log["summary"]
    assert s == json.loads(json.dumps(summary))
    assert s["n_train"] == 36 and s["n_sonnets"] == 12 and s["n_dev_eval"] == 6 and s["adv_steps"] == 3
    assert s["word2vec_covered"] > 20 and s["pron_missing"] == 0 and s["pron_covered"] > 40
    mle = [e for e in log["evals"] if e["phase"] == "mle"]
    assert [e["step"] for e in mle] == [20, 40, 60, 80]
    assert all({"step", "epoch", "dev_loss", "train_loss"} <= set(e) for e in log["evals"])
    assert mle[-1]["dev_loss"] < mle[0]["dev_loss"]
    assert log["evals"][-1]["phase"] == "adv" and "reward" in log["evals"][-1]
    assert not list(data["dir"].glob(".model*"))      # no temporary directory left behind


def test_sample_writes_n_valid_quatrains_and_stats(trained, tmp_path):
    out, _ = trained
    res = sa.sample(str(out), VANILLA, sampling(12, batch_size=10, max_attempts=400, seed=5),
                    str(tmp_path / "s.jsonl"), str(tmp_path / "s.stats.json"), id_prefix="en-sa-", progress=False)
    records = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert len(records) == 12 == res["valid"]
    assert [r["id"] for r in records] == [f"en-sa-{k:05d}" for k in range(12)]
    for r in records:
        assert len(r["lines"]) == 4 and all(any(c.isalpha() for c in line) for line in r["lines"])
        assert not any("<" in line for line in r["lines"])
    stats = json.loads((tmp_path / "s.stats.json").read_text())
    for key in ("attempts", "valid", "requested", "validity_rate", "reasons", "decoding", "seed", "batch_size",
                "max_new_tokens", "max_attempts", "elapsed_s", "arch", "distinct_share", "provenance"):
        assert key in stats, key
    assert stats["arch"] == "sa" and stats["requested"] == 12 and stats["decoding"] == VANILLA
    assert stats["attempts"] == 12 + sum(stats["reasons"].values())
    # one set of failure reasons (poeval.generators.sampling): an early <eos> is a wrong line count
    assert all(r in ("truncated", "empty_line") or r.startswith("wrong_line_count:") for r in stats["reasons"])
    assert stats["distinct_share"] == len({"\n".join(r["lines"]) for r in records}) / 12
    assert stats["provenance"]["params"]["decoding"] == VANILLA   # stamped by the shared loop
    # the toy poems' words come back (a trained model, not noise)
    text = " ".join(line for r in records for line in r["lines"])
    assert sum(text.count(o) for o in ("the", "of")) >= 12


def test_sample_stops_at_max_attempts_and_respects_max_new_tokens(trained, tmp_path):
    out, _ = trained
    # 4 tokens cannot hold four verses with words: every attempt is truncated or empty
    res = sa.sample(str(out), VANILLA, sampling(5, batch_size=7, max_new_tokens=4, max_attempts=20),
                    str(tmp_path / "s.jsonl"), str(tmp_path / "st.json"), progress=False)
    assert res["attempts"] == 20 and res["valid"] == 0
    assert (tmp_path / "s.jsonl").read_text() == ""


def test_training_and_sampling_are_deterministic(trained, data, tmp_path):
    out, _ = trained
    again = tmp_path / "again"
    sa.train(data["sonnets"], data["dev"], str(again), {"arch": "sa", **SMALL}, TRAIN, lang="en",
             word2vec=data["w2v"], threads=1, progress=False)
    a, b = common.load_checkpoint(out)[3], common.load_checkpoint(again)[3]
    for part in ("lm", "disc"):
        assert a[part].keys() == b[part].keys()
        assert all(torch.equal(a[part][k], b[part][k]) for k in a[part]), part
    files = []
    for name in ("x", "y"):
        sa.sample(str(out), {"temperature": 0.9, "top_p": 0.95, "top_k": 20}, sampling(8, batch_size=6, seed=11),
                  str(tmp_path / f"{name}.jsonl"), str(tmp_path / f"{name}.json"), progress=False)
        files.append((tmp_path / f"{name}.jsonl").read_text())
    assert files[0] == files[1] and files[0]
    sa.sample(str(out), VANILLA, sampling(8, batch_size=6, seed=12), str(tmp_path / "z.jsonl"),
              str(tmp_path / "z.json"), progress=False)
    assert (tmp_path / "z.jsonl").read_text() != files[0]


def test_checkpoint_stamps_its_provenance(trained, data):
    log = read_json(trained[0] / "training_log.json")
    assert_stamped(log, {"train": data["sonnets"], "dev": data["dev"], "word2vec": data["w2v"]},
                   {"model": {"arch": "sa", **SMALL}, "training": TRAIN})


def test_resume_after_interruption_is_bit_identical(data, tmp_path, interrupt, monkeypatch):
    # 36 training quatrains in batches of 8: 5 steps an epoch; interrupted once in the MLE phase (step 10,
    # resumed from the state saved at step 8) and once in the adversarial phase (rerun from the MLE's end)
    cfg, model = {**TRAIN, "max_steps": 12, "eval_every": 4}, {"arch": "sa", **SMALL}

    def run(name: str) -> dict:
        return sa.train(data["sonnets"], data["dev"], str(tmp_path / name), model, cfg, lang="en",
                        word2vec=data["w2v"], threads=1, progress=False)

    run("full")
    interrupt(10)
    with pytest.raises(Interrupted):
        run("cut")
    interrupt(None)
    finetune = sa.adversarial_finetune

    def killed(*args, **kwargs):
        finetune(*args, **kwargs)
        raise Interrupted("adversarial phase")

    monkeypatch.setattr(sa, "adversarial_finetune", killed)
    with pytest.raises(Interrupted):
        run("cut")
    monkeypatch.setattr(sa, "adversarial_finetune", finetune)
    summary = run("cut")
    assert summary["resumed_from_step"] == 8 and not (tmp_path / ".cut.resume").exists()
    a, b = common.load_checkpoint(tmp_path / "full")[3], common.load_checkpoint(tmp_path / "cut")[3]
    assert all(torch.equal(a[part][k], b[part][k]) for part in ("lm", "disc") for k in a[part])


def test_contrastive_decoding_is_refused(trained, tmp_path):
    out, _ = trained
    with pytest.raises(PoevalError, match="contrastive"):
        sa.sample(str(out), {"top_k": 10, "penalty_alpha": 0.6}, sampling(5), str(tmp_path / "s.jsonl"),
                  str(tmp_path / "s.json"), progress=False)
    assert not (tmp_path / "s.jsonl").exists() and not (tmp_path / "s.json").exists()


def test_conditioned_training_has_style_tokens_and_samples_none(data, tmp_path):
    out = tmp_path / "cond"
    cfg = {"arch": "sa", "conditioned": True, **SMALL, "adv_steps": 1, "pron_steps": 5}
    summary = sa.train(data["sonnets"], data["dev"], str(out), cfg, {**TRAIN, "max_steps": 60}, lang="en",
                       threads=2, progress=False)
    assert summary["threads"] == 2 and summary["threads_used"] == 1     # train max_threads (default 1)
    _, config, vocab, _ = common.load_checkpoint(out)
    assert all(t in vocab.stoi for t in STYLE_TOKENS)
    assert config["model"]["conditioned"] is True
    # the model learnt to open with its style slots: sampling draws them there, then strips them
    lm, _, vocab, _ = sa.load(out)
    slots, banned = sa.generation_setup(vocab, True)
    assert len(slots) == 2 and set(slots[0]) | set(slots[1]) <= set(banned)
    torch.manual_seed(0)
    g = sa.generate(lm, vocab, 20, 40, style_slots=slots, banned=banned)
    assert all(vocab[r[0]].startswith("<scheme=") and vocab[r[1]].startswith("<meter=") for r in g.rows)
    assert not any(vocab[t] in STYLE_TOKENS for r in g.rows for t in r[2:])
    res = sa.sample(str(out), VANILLA, sampling(6, batch_size=10, max_attempts=300), str(tmp_path / "s.jsonl"),
                    str(tmp_path / "s.json"), progress=False)
    assert res["valid"] == 6 and res["conditioned"] is True
    text = (tmp_path / "s.jsonl").read_text()
    assert "<scheme=" not in text and "<meter=" not in text


def test_conditioned_training_needs_style_labels(tmp_path, data):
    sonnets = toy_sonnets(3)
    for s in sonnets:
        del s["schemes"]
    path = write_jsonl(tmp_path / "nolabels.jsonl", sonnets)
    with pytest.raises(PoevalError, match="scheme"):
        sa.train(path, data["dev"], str(tmp_path / "m"), {"arch": "sa", "conditioned": True, **SMALL}, TRAIN,
                 lang="en", progress=False)


def test_bad_input_raises_clear_errors_and_writes_nothing(data, tmp_path):
    out = tmp_path / "m"
    with pytest.raises(PoevalError, match="hidden_size"):
        sa.train(data["sonnets"], data["dev"], str(out), {"arch": "sa", "hidden_size": 3}, TRAIN, lang="en",
                 name="sa-s", progress=False)
    with pytest.raises(PoevalError, match="epochz"):
        sa.train(data["sonnets"], data["dev"], str(out), {"arch": "sa"}, {"epochz": 2}, lang="en", progress=False)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(PoevalError, match="no poems"):
        sa.train(str(empty), data["dev"], str(out), {"arch": "sa", **SMALL}, TRAIN, lang="en", progress=False)
    with pytest.raises(PoevalError, match="not found"):
        sa.train(str(tmp_path / "missing.jsonl"), data["dev"], str(out), {"arch": "sa"}, TRAIN, lang="en",
                 progress=False)
    with pytest.raises(PoevalError, match="word2vec"):
        sa.train(data["sonnets"], data["dev"], str(out), {"arch": "sa", **SMALL}, TRAIN, lang="en",
                 word2vec=str(tmp_path / "nope.txt"), progress=False)
    with pytest.raises(PoevalError, match="language"):
        sa.train(data["sonnets"], data["dev"], str(out), {"arch": "sa", **SMALL}, TRAIN, lang="fr", progress=False)
    assert not out.exists() and list(tmp_path.iterdir()) == [empty]


def test_sample_bad_input(trained, tmp_path):
    out, _ = trained
    with pytest.raises(PoevalError, match="sampling.n"):
        sa.sample(str(out), VANILLA, sampling(-1), str(tmp_path / "s.jsonl"), str(tmp_path / "s.json"),
                  progress=False)
    with pytest.raises(PoevalError, match="not found"):
        sa.sample(str(tmp_path / "nomodel"), VANILLA, sampling(1), str(tmp_path / "s.jsonl"),
                  str(tmp_path / "s.json"), progress=False)
    with pytest.raises(PoevalError, match="temperature"):
        sa.sample(str(out), {"temperature": 0}, sampling(1), str(tmp_path / "s.jsonl"), str(tmp_path / "s.json"),
                  progress=False)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------------
# training budget in epochs, LM pretraining on Gutenberg verse


def test_epoch_budget_converts_to_steps():
    # 36 quatrains in batches of 8: 5 batches per epoch (the last one holds 4)
    assert sa.steps_for_epochs(36, 8, 30) == 150
    assert sa.steps_for_epochs(32, 32, 1) == 1 and sa.steps_for_epochs(33, 32, 2) == 4
    with pytest.raises(PoevalError, match="batch_size"):
        sa.steps_for_epochs(36, 0, 1)
    tcfg = sa.resolve_train_cfg({"batch_size": 8, "max_steps": 7, "max_epochs": 30})
    assert sa.mle_steps(tcfg, 36) == 7                                  # max_steps ends before 150
    assert sa.mle_steps({**tcfg, "max_steps": 100, "max_epochs": 3}, 36) == 15   # 3 epochs end first
    cfg = sa.resolve_model_cfg({"adv_steps": 9, "adv_batch_size": 16})
    assert sa.adv_steps(cfg, 36) == 9 and sa.adv_steps({**cfg, "adv_epochs": 2}, 36) == 6
    with pytest.raises(PoevalError, match="max_epochs"):
        sa.resolve_train_cfg({"max_epochs": 0})


def test_pretrain_verses_skip_the_runs_verses(data):
    exclude = sa.run_verses(data["sonnets"], data["dev"])
    dev_line = json.loads(open(data["dev"]).readline())["lines"][1]
    sonnet_couplet = json.loads(open(data["sonnets"]).readline())["couplet"][0]
    assert len(exclude) > 100 and dev_line.casefold() in exclude and sonnet_couplet.casefold() in exclude
    source = ["A far fresh verse of old", "  " + dev_line.upper() + " ", "...", sonnet_couplet,
              "Another verse unseen", "And a third one here"]
    verses, skipped = sa.pretrain_verses(source, 2, exclude)
    assert verses == ["A far fresh verse of old", "Another verse unseen"] and skipped == 2


def test_lm_pretraining_changes_the_weights():
    lm, vocab, _ = _toy_lm()
    before = {k: v.clone() for k, v in lm.state_dict().items()}
    verses = ["I saw the night,", "and all the day", "she sang of love above", "upon the sea"]
    stats = sa.pretrain_lm(lm, vocab, verses, epochs=3, batch_size=3, lr=0.01, rng=random.Random(0))
    assert stats["pretrain_steps"] == 6
    assert stats["pretrain_loss_last_epoch"] < stats["pretrain_loss_first_epoch"]
    changed = {k for k, v in lm.state_dict().items() if not torch.equal(v, before[k])}
    assert {"emb.weight", "lstm.weight_ih_l0"} <= changed


def test_train_with_pretraining_records_it_and_never_sees_a_dev_verse(data, tmp_path, monkeypatch):
    dev_line = json.loads(open(data["dev"]).readline())["lines"][0]
    gutenberg = ["The woods are lovely, dark and deep,", dev_line, "But I have promises to keep,",
                 "And miles to go before I sleep,", "Whose woods these are I think I know."]
    monkeypatch.setattr(sa, "gutenberg_verses", lambda n: gutenberg[:n])
    seen = []
    real_pretrain_lm = sa.pretrain_lm
    monkeypatch.setattr(sa, "pretrain_lm", lambda lm, vocab, verses, **kw: (
        seen.extend(verses), real_pretrain_lm(lm, vocab, verses, **kw))[1])
    from poeval.cli import main

    model = {"arch": "sa", "size": "S", **SMALL, "adv_steps": 1, "pron_steps": 2,
             "pretrain": {"lines": 3, "epochs": 2}}
    out = tmp_path / "model"
    assert main(["train", "--train", data["sonnets"], "--dev", data["dev"], "--out", str(out),
                 "--model", json.dumps(model), "--training", json.dumps({**TRAIN, "max_epochs": 2}),
                 "--sonnets", data["sonnets"], "--lang", "en", "--threads", "1"]) == 0
    assert seen == [gutenberg[0], gutenberg[2], gutenberg[3]]
    log = json.loads((out / "training_log.json").read_text())
    summary, pre = log["summary"], log["summary"]["pretrain"]
    assert pre["done"] and pre["n_verses"] == 3 and pre["excluded_run_verses"] == 1 and pre["verses_sha256"]
    assert pre["pretrain_steps"] == 2                                    # 3 verses in batches of 8, twice
    assert summary["steps"] == summary["mle_step_budget"] == 10          # 2 epochs of 36 quatrains in 8s
    assert [e["step"] for e in log["evals"] if e["phase"] == "mle"] == [5, 10]    # validated once per epoch
    _, config, _, _ = common.load_checkpoint(out)
    assert config["model"]["pretrain"] == log["provenance"]["params"]["model"]["pretrain"] == {"lines": 3,
                                                                                              "epochs": 2}


def test_repeated_run_verses_in_the_source_do_not_shorten_the_pretraining_data(tmp_path, monkeypatch):
    run = write_jsonl(tmp_path / "dev.jsonl", [{"lines": ["one verse", "two verse", "red verse", "blue verse"]}])
    source = ["One  verse"] * 10 + ["a fresh line", "another fresh line", "a third fresh line", "and a fourth"]
    reads = []
    monkeypatch.setattr(sa, "gutenberg_verses", lambda k: reads.append(k) or source[:k])
    lm, vocab, _ = _toy_lm()
    record = sa.run_pretraining(lm, vocab, {"lines": 3, "epochs": 1}, "en", (run,), sa.TRAIN_DEFAULTS,
                                random.Random(0), False)
    assert reads == [7, 14]       # 3 + 4 run verses first, then twice as many
    assert record["n_verses"] == 3 and record["excluded_run_verses"] == 10


def test_german_runs_skip_pretraining_with_a_note(capsys):
    lm, vocab, _ = _toy_lm()
    before = {k: v.clone() for k, v in lm.state_dict().items()}
    record = sa.run_pretraining(lm, vocab, {"lines": 5, "epochs": 1}, "de", (), sa.TRAIN_DEFAULTS,
                                random.Random(0), False)
    assert record["done"] is False and "skipped" in record["note"]
    assert "skipped" in capsys.readouterr().err
    assert all(torch.equal(v, before[k]) for k, v in lm.state_dict().items())


@pytest.mark.parametrize("pretrain, ok", [(None, True), ({"lines": 10, "epochs": 1}, True),
                                          ({"lines": 0, "epochs": 1}, False), ({"lines": 10}, False),
                                          ({"lines": 10, "epochs": 1, "seed": 2}, False), (5, False)])
def test_pretrain_switch_is_validated(pretrain, ok):
    from poeval import config

    params = poeval_params.load(Path(__file__).resolve().parents[1] / "params.yaml")
    params["models"]["sa-s"]["pretrain"] = pretrain
    if ok:
        poeval_params.resolve(params)
        sa.resolve_model_cfg({"arch": "sa", "pretrain": pretrain})
    else:
        with pytest.raises(PoevalError, match="pretrain"):
            poeval_params.resolve(params)
        with pytest.raises(PoevalError, match="pretrain"):
            sa.resolve_model_cfg({"arch": "sa", "pretrain": pretrain})
