"""Tests for poeval.generators.poetic.deepspeare: a tiny DeepSpeare (language, pentameter and rhyme models) trained
on made-up rhyming pseudo-sonnets (CPU, seconds)."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import collections
import itertools
import json
import math
import random
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from poeval.errors import PoevalError  # noqa: E402
from poeval.generators import lm  # noqa: E402
from poeval.poetry.style import STYLE_TOKENS  # noqa: E402
from poeval.generators.decoding import parse_decoding  # noqa: E402
from poeval.generators.poetic import common, deepspeare as ds  # noqa: E402
from poeval.io import read_json, read_jsonl, write_jsonl  # noqa: E402
from helpers import Interrupted, assert_stamped, sampling  # noqa: E402

# rhyme families: the end words of rhyming verses share an ending; some families end in the same letter
# as another (ight/oat, ore/ate, ain/een), so the rhyme model must learn more than the last letter
FAMILIES = {
    "ight": "night light bright sight might flight fight tight".split(),
    "oat": "boat coat float goat throat moat gloat bloat".split(),
    "ay": "day way play stay say gray bay ray".split(),
    "ore": "more shore store core lore snore bore wore".split(),
    "ate": "gate fate late state plate mate hate rate".split(),
    "ell": "bell tell well fell spell shell dwell swell".split(),
    "ain": "rain pain gain main plain chain grain stain".split(),
    "een": "green queen seen keen screen between sheen teen".split(),
    "ound": "sound ground found round bound mound hound pound".split(),
}
ADJ = "silver quiet golden broken gentle hollow bitter tender".split()
NOUN = "river candle meadow harbor shadow lantern orchard sparrow".split()
VERB = "sings sleeps burns waits drifts falls turns breaks".split()
# function words (all stopwords) vary too: the generator's repetition constraints let a stopword occur at
# most twice in a quatrain, as the original's
DET = "the a my your his her our their".split()
PREP = "in by on through under over into above".split()

TINY = {
    "arch": "deepspeare", "size": "S", "conditioned": False, "min_count": 1, "word_dim": 16,
    "char_dim": 12, "enc_dim": 16, "dec_dim": 48, "attn_dim": 16,
    "pm_enc_dim": 12, "pm_dec_dim": 16, "pm_attn_dim": 12, "rm_dim": 24, "dropout": 0.0,
    "softmax_cutoffs": [], "candidates": 4, "rhyme_threshold": 0.5,
    # faster than the original's optimisers (Adagrad 0.2, Adam 0.001), which need more than 80 steps here
    "lm_optimizer": "adam", "lm_lr": 0.01, "pm_lr": 0.01, "rm_lr": 0.01,
}
TRAIN = {"seed": 1, "batch_size": 8, "max_steps": 80, "max_epochs": 100, "eval_every": 40,
         "eval_quatrains": 20, "patience": 5}
VANILLA = {"temperature": 1.0, "top_p": 1.0, "top_k": 0}


def _verse(rng: random.Random, end: str) -> str:
    return (f"{rng.choice(DET)} {rng.choice(ADJ)} {rng.choice(NOUN)} {rng.choice(VERB)} {rng.choice(PREP)} "
            f"{rng.choice(DET)} {end}{rng.choice(',.;')}")


def _quatrain(rng: random.Random) -> tuple[list[str], str]:
    fa, fb = rng.sample(sorted(FAMILIES), 2)
    a1, a2 = rng.sample(FAMILIES[fa], 2)
    b1, b2 = rng.sample(FAMILIES[fb], 2)
    scheme = rng.choice(["abab", "aabb", "abba"])
    ends = {"abab": [a1, b1, a2, b2], "aabb": [a1, a2, b1, b2], "abba": [a1, b1, b2, a2]}[scheme]
    return [_verse(rng, e) for e in ends], scheme


def _sonnets(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        parts = [_quatrain(rng) for _ in range(3)]
        fam = rng.choice(sorted(FAMILIES))
        c1, c2 = rng.sample(FAMILIES[fam], 2)
        couplet = [_verse(rng, c1), _verse(rng, c2)]
        quatrains = [q for q, _ in parts]
        out.append({"id": f"sonnet{i:06d}", "lines": [x for q in quatrains for x in q] + couplet,
                    "quatrains": quatrains, "couplet": couplet, "schemes": [s for _, s in parts],
                    "meters": ["iambic", "anapaestic", "iambic"], "sources": []})
    return out


def _dev(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        lines, scheme = _quatrain(rng)
        out.append({"id": f"dev{i:04d}", "lines": lines, "scheme": scheme, "meter": "iambic"})
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("ds_data")
    write_jsonl(d / "sonnets.jsonl", _sonnets(48, 1))
    write_jsonl(d / "dev.jsonl", _dev(20, 2))
    return {"sonnets": str(d / "sonnets.jsonl"), "dev": str(d / "dev.jsonl"), "dir": d}


@pytest.fixture(scope="module")
def trained(data) -> dict:
    out = data["dir"] / "model"
    summary = ds.train(data["sonnets"], data["dev"], str(out), TINY, TRAIN, lang="en", progress=False)
    return {"dir": out, "summary": summary, "log": read_json(out / "training_log.json"), "sonnets": data["sonnets"],
            "dev": data["dev"]}


def _pairs(loaded: ds.Loaded) -> tuple[list[float], list[float]]:
    rhyming = [("night", "light"), ("boat", "coat"), ("gate", "fate"), ("more", "shore"), ("rain", "chain"),
               ("green", "queen"), ("day", "gray"), ("sound", "ground")]
    # the same first word with a non-rhyming word of the same last letter
    other = [("night", "coat"), ("boat", "light"), ("gate", "shore"), ("more", "fate"), ("rain", "queen"),
             ("green", "chain"), ("day", "bell"), ("sound", "more")]
    return ([loaded.rhyme_similarity(a, b) for a, b in rhyming], [loaded.rhyme_similarity(a, b) for a, b in other])


def _margin(yes: list[float], no: list[float]) -> float:
    return sum(yes) / len(yes) - sum(no) / len(no)


def test_rhyme_model_ranks_rhyming_pairs_above_non_rhyming(trained, data, tmp_path):
    yes, no = _pairs(ds.Loaded(trained["dir"]))
    # each rhyming pair beats the non-rhyming pair that shares its first word, and clearly on average
    assert all(y > n for y, n in zip(yes, no)), (yes, no)
    assert _margin(yes, no) > 0.5, (yes, no)
    # a character LSTM sees shared endings even untrained: training must widen the gap well beyond that (the
    # untrained model: learning rates 0, as one step of the alternating schedule already makes 12 rhyme updates)
    out = tmp_path / "m1"
    untrained = {**TINY, "lm_lr": 0, "pm_lr": 0, "rm_lr": 0}
    ds.train(data["sonnets"], data["dev"], str(out), untrained, {**TRAIN, "max_steps": 1}, lang="en", progress=False)
    yes1, no1 = _pairs(ds.Loaded(out))
    assert _margin(yes, no) > _margin(yes1, no1) + 0.25, (_margin(yes, no), _margin(yes1, no1))
    # the dev margin loss went down
    evals = trained["log"]["evals"]
    assert evals[-1]["dev_rm_loss"] < 0.7 * evals[0]["dev_rm_loss"]


def test_pentameter_loss_decreases(trained):
    evals = trained["log"]["evals"]
    assert evals[0]["step"] == 0   # the untrained model is evaluated first
    assert evals[-1]["dev_pm_loss"] < 0.8 * evals[0]["dev_pm_loss"], [e["dev_pm_loss"] for e in evals]
    assert evals[-1]["train_pm_loss"] < evals[1]["train_pm_loss"]


def test_the_pentameter_model_reads_letters_and_spaces_and_never_attends_to_a_space(trained):
    """As the original (sonnet_model.py compute_pm_loss, util.py remove_punct): letters and spaces only, the
    attention masked at pads and spaces, the decoder's first input a learned vector."""
    assert ds.pm_text("Don't  sing, well-known bird -- O'er the lea!", 100) == "dont sing wellknown bird oer the lea"
    loaded = ds.Loaded(trained["dir"])
    verses = [ds.pm_text("the rain is falling on the sea", 100), ds.pm_text("and all the ships are gone", 100)]
    lines = [loaded.tables.char_ids(v) for v in verses]
    width = max(map(len, lines))
    chars = torch.tensor([x + [0] * (width - len(x)) for x in lines])
    lengths = torch.tensor([len(x) for x in lines])
    space = chars == loaded.tables.cstoi[" "]
    vowels = torch.zeros_like(chars, dtype=torch.bool)
    pm = loaded.model.pentameter
    with torch.no_grad():
        _, parts = pm(loaded.model.chars, chars, lengths, vowels, space)
    attention = parts["attention"]
    assert float(attention[space].abs().max()) == 0.0 and float(attention[chars == 0].abs().max()) == 0.0
    assert torch.allclose(attention.sum(-1), torch.full((2,), 10.0))   # 10 stress positions, each one unit
    pm.zero_grad(set_to_none=True)
    loss, _ = pm(loaded.model.chars, chars, lengths, vowels, space)
    loss.sum().backward()                                           # the first input is learned
    assert pm.init_input.grad is not None and float(pm.init_input.grad.abs().sum()) > 0


def test_the_rhyme_model_margin_by_hand_and_its_negatives_from_the_vocabulary(trained):
    """The margin loss of one quatrain without negatives, from its end words' encodings by hand; negatives are
    vocabulary words (no special or style token), drawn afresh with an rng and fixed without one (dev)."""
    loaded = ds.Loaded(trained["dir"])
    plain = ds.Batcher(loaded.model, loaded.tables, {**loaded.cfg, "rm_neg": 0})
    ends = [loaded.tables.type_id(w, False) for w in ("night", "day", "light", "way")]
    assert loaded.tables.vocab.unk not in ends and len(set(ends)) == 4
    with torch.no_grad():
        u = plain.rhyme_embed(ends)
        margins = []
        for t in range(4):
            others = sorted((float(u[t] @ u[j]) for j in range(4) if j != t), reverse=True)
            margins.append(max(0.0, loaded.cfg["rm_delta"] - others[0] + others[1]))
        assert float(plain.rm_loss([{"ends": [ends]}], None)) == pytest.approx(sum(margins) / 4, abs=1e-5)
        pool = loaded.batcher.negative_pool()
        assert pool and not {loaded.tables.vocab.itos[i] for i in pool} & loaded.tables.specials
        poems = [{"ends": [ends]}]
        fixed = [float(loaded.batcher.rm_loss(poems, None)) for _ in range(2)]
        drawn = {float(loaded.batcher.rm_loss(poems, random.Random(seed))) for seed in range(5)}
    assert fixed[0] == fixed[1] and len(drawn) > 1


def test_the_language_model_mixes_its_context_with_the_originals_gated_unit():
    """sonnet_model.py gated_layer, restated: z and r from [context; state], the candidate from [context; r * state],
    (1 - z) * state + z * candidate; both gates' biases start at 1."""
    torch.manual_seed(0)
    cfg = ds.resolve_model_cfg({"arch": "deepspeare"})
    m = ds.LanguageModel(cfg, 60, 0)
    s, ctx = torch.randn(3, cfg["dec_dim"]), torch.randn(3, 2 * cfg["enc_dim"])

    def affine(layer, x):
        return x @ layer.weight.T + layer.bias

    z, r = torch.sigmoid(affine(m.update, torch.cat([ctx, s], 1))), torch.sigmoid(affine(m.reset, torch.cat([ctx, s], 1)))
    want = (1 - z) * s + z * torch.tanh(affine(m.cand, torch.cat([ctx, r * s], 1)))
    assert torch.allclose(m.mix(s, ctx), want, atol=1e-6)
    assert torch.equal(m.update.bias, torch.ones(cfg["dec_dim"])) and torch.equal(m.reset.bias, torch.ones(cfg["dec_dim"]))


def test_a_checkpoint_of_the_earlier_port_is_refused_with_a_request_to_retrain(trained, tmp_path):
    arch, config, vocab, states = common.load_checkpoint(trained["dir"])
    old = {part: dict(weights) for part, weights in states.items()}
    del old["pentameter"]["init_input"]
    model = ds.DeepSpeare(config, len(vocab), len(config["chars"]), vocab.pad)
    with pytest.raises(PoevalError, match=r"pentameter weights are of an earlier DeepSpeare port.*init_input.*train it again"):
        model.load_states(old)
    model.load_states(states)   # the port's own checkpoint loads


def test_language_model_loss_decreases(trained):
    evals = trained["log"]["evals"]
    assert trained["summary"]["best_dev_loss"] < 0.6 * evals[0]["dev_loss"], [e["dev_loss"] for e in evals]
    assert evals[-1]["train_loss"] < evals[1]["train_loss"]
    loaded = ds.Loaded(trained["dir"])
    seen = loaded.lm_loss([q["lines"] for q in _dev(10, 2)])
    shuffled = loaded.lm_loss([[" ".join(reversed(x.split())) for x in q["lines"]] for q in _dev(10, 2)])
    assert seen < shuffled   # the model prefers the word order it was trained on


def test_train_and_sample_end_to_end(trained, tmp_path):
    model_dir = trained["dir"]
    assert common.is_checkpoint(model_dir)
    arch, config, vocab, states = common.load_checkpoint(model_dir)
    assert arch == "deepspeare" and set(states) == {"chars", "lm", "pentameter", "rhyme"}
    assert config["scheme_counts"] and not any(t in vocab.stoi for t in STYLE_TOKENS)
    log = trained["log"]
    assert set(log) == {"evals", "summary", "model_cfg", "train_cfg", "provenance"}
    # the module stamps its own checkpoint (inputs and params as given)
    assert_stamped(log, {"train": trained["sonnets"], "dev": trained["dev"]}, {"model": TINY, "training": TRAIN})
    for key in ("step", "epoch", "dev_loss", "train_loss", "dev_pm_loss", "dev_rm_loss"):
        assert key in log["evals"][-1]
    for key in ("best_step", "best_dev_loss", "stopped_early", "steps", "elapsed_s", "n_params", "n_train",
                "n_dev_eval", "vocab_size", "threads", "best_dev_pm_loss", "best_dev_rm_loss"):
        assert key in log["summary"]
    assert log["summary"]["n_train"] == 48 and log["summary"]["steps"] == 80

    out, stats = tmp_path / "s.jsonl", tmp_path / "s.stats.json"
    res = ds.sample(str(model_dir), VANILLA, sampling(30, batch_size=16, seed=3), str(out), str(stats),
                    id_prefix="ds-", progress=False)
    records = list(read_jsonl(out))
    assert len(records) == 30 == res["valid"]
    assert [r["id"] for r in records] == [f"ds-{k:05d}" for k in range(30)]
    for r in records:
        assert len(r["lines"]) == 4 and all(x.strip() and x == x.strip() for x in r["lines"])
        assert all(common.verse_ok(common.tokenize(x)) for x in r["lines"])
    st = read_json(stats)
    for key in ("attempts", "valid", "requested", "validity_rate", "reasons", "decoding", "seed", "batch_size",
                "max_new_tokens", "max_attempts", "elapsed_s", "arch", "quatrain_restarts",
                "rhyme_constrained_verses", "candidates", "target_schemes", "distinct_share", "provenance"):
        assert key in st
    assert st["distinct_share"] == len({"\n".join(r["lines"]) for r in records}) / 30
    assert sum(st["target_schemes"].values()) == 30   # the schemes of the valid quatrains only
    assert st["provenance"]["params"]["decoding"] == parse_decoding(VANILLA).to_dict()   # stamped by the shared loop
    assert st["arch"] == "deepspeare" and st["attempts"] >= 30
    assert (st["line_order"], st["verse_state"]) == ("bottom_up", "carried")
    # the toy schemes always rhyme: two constrained verses per quatrain, and the rhyme model mostly finds a rhyme
    assert st["rhyme_constrained_verses"] >= 2 * 30
    # the enforced rhymes rhyme: most sampled quatrains end their verses in the planned families
    fam = {w: f for f, ws in FAMILIES.items() for w in ws}
    rhymed = sum(len({fam.get(common.end_word(common.tokenize(x))) for x in r["lines"]}) <= 2 for r in records)
    assert rhymed >= 0.6 * len(records)


def test_sample_budget_and_validity(trained, tmp_path):
    out, stats = tmp_path / "s.jsonl", tmp_path / "s.stats.json"
    # 8 tokens cannot hold four verses of this corpus (8 tokens each): no attempt is valid, nothing is written
    with pytest.raises(PoevalError, match=r"0 of 16 attempts gave a valid quatrain \(") as err:
        ds.sample(str(trained["dir"]), VANILLA, sampling(10, batch_size=8, max_new_tokens=8, max_attempts=16),
                  str(out), str(stats), progress=False)
    counted = dict(re.findall(r"(\w+) (\d+)", str(err.value).split("(", 1)[1].split(")")[0]))
    assert set(counted) <= {"truncated", "empty_line", "constraints"} and sum(map(int, counted.values())) == 16
    assert int(counted["truncated"]) >= 8
    assert not out.exists() and not stats.exists()


@pytest.mark.parametrize("schedule,order", [("alternating", "round"), ("alternating", "epoch"), ("joint", "round")])
def test_resume_after_interruption_is_bit_identical(data, tmp_path, interrupt, schedule, order):
    # 48 sonnets in batches of 8: 6 steps an epoch, so the resumed run must restore the data order mid-epoch;
    # alternating: also the pentameter and rhyme streams (14 and 12 batches a step, 84 and 72 an epoch), and
    # under update_order epoch the epoch's plan of updates drawn at its start (step 8 is the second of epoch 2)
    model = {**TINY, "update_schedule": schedule, "update_order": order}
    cfg = {**TRAIN, "max_steps": 14, "eval_every": 4}
    ds.train(data["sonnets"], data["dev"], str(tmp_path / "full"), model, cfg, lang="en", progress=False)
    interrupt(10)
    with pytest.raises(Interrupted):
        ds.train(data["sonnets"], data["dev"], str(tmp_path / "cut"), model, cfg, lang="en", progress=False)
    assert not (tmp_path / "cut").exists()
    interrupt(None)
    summary = ds.train(data["sonnets"], data["dev"], str(tmp_path / "cut"), model, cfg, lang="en", progress=False)
    assert summary["resumed_from_step"] == 8
    a, b = common.load_checkpoint(tmp_path / "full")[3], common.load_checkpoint(tmp_path / "cut")[3]
    assert all(torch.equal(a[part][k], b[part][k]) for part in a for k in a[part])
    la, lb = (read_json(tmp_path / x / "training_log.json")["evals"] for x in ("full", "cut"))
    assert [(e["step"], e["train_loss"], e["dev_loss"]) for e in la] == [(e["step"], e["train_loss"], e["dev_loss"]) for e in lb]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut", "full"]   # no resume state left


def test_training_and_sampling_are_deterministic(data, trained, tmp_path):
    cfg = {**TRAIN, "max_steps": 12, "eval_every": 6}
    a, b = tmp_path / "a", tmp_path / "b"
    ds.train(data["sonnets"], data["dev"], str(a), TINY, cfg, lang="en", progress=False)
    ds.train(data["sonnets"], data["dev"], str(b), TINY, cfg, lang="en", progress=False)
    sa, sb = common.load_checkpoint(a)[3], common.load_checkpoint(b)[3]
    for part in sa:
        for key in sa[part]:
            assert torch.equal(sa[part][key], sb[part][key]), (part, key)
    runs = []
    for k in range(2):
        out = tmp_path / f"s{k}.jsonl"
        ds.sample(str(trained["dir"]), {"temperature": 0.8, "top_p": 0.9, "top_k": 0},
                  sampling(12, batch_size=5, seed=7), str(out), str(tmp_path / f"s{k}.json"), progress=False)
        runs.append(list(read_jsonl(out)))
    assert runs[0] == runs[1]
    other = tmp_path / "s2.jsonl"
    ds.sample(str(trained["dir"]), VANILLA, sampling(12, batch_size=5, seed=8), str(other), str(tmp_path / "s2.json"),
              progress=False)
    assert list(read_jsonl(other)) != runs[0]


def test_contrastive_search_is_refused(trained, tmp_path):
    out = tmp_path / "c.jsonl"
    with pytest.raises(PoevalError, match="contrastive"):
        ds.sample(str(trained["dir"]), {"top_k": 10, "penalty_alpha": 0.6}, sampling(5), str(out),
                  str(tmp_path / "c.json"), progress=False)
    assert not out.exists()


def test_conditioned_model_has_style_tokens_and_samples_none(data, tmp_path):
    out = tmp_path / "cond"
    cfg = {**TINY, "conditioned": True}
    ds.train(data["sonnets"], data["dev"], str(out), cfg, {**TRAIN, "max_steps": 40, "eval_every": 20},
             lang="en", progress=False)
    vocab = common.load_checkpoint(out)[2]
    assert all(t in vocab.stoi for t in STYLE_TOKENS)
    assert vocab.itos[: len(common.SPECIALS)] == list(common.SPECIALS)
    samples, stats = tmp_path / "c.jsonl", tmp_path / "c.json"
    ds.sample(str(out), VANILLA, sampling(20, batch_size=10), str(samples), str(stats), progress=False)
    records = list(read_jsonl(samples))
    assert len(records) == 20
    text = json.dumps(records)
    assert "<scheme=" not in text and "<meter=" not in text and "<" not in text
    st = read_json(stats)
    assert st["scheme_source"] == "uniform (aabb, abab, abba), prompted"
    assert sum(st["target_schemes"].values()) == 20 and set(st["target_schemes"]) <= set(ds.ORIGINAL_SCHEMES)
    # the style line is the prompt: its scheme token is the drawn scheme, its meter token one the model sampled
    loaded = ds.Loaded(out)
    gen = ds.Generator(loaded, 1.0, 1.0, 0)
    mem = loaded.model.lm.null.view(1, 1, -1).expand(6, 1, -1)
    schemes = ["aabb", "abab", "abba", "abba", "abab", "aabb"]
    rows, _ = gen._style_rows(mem, torch.ones(6, 1, dtype=torch.bool), schemes)
    assert [vocab.itos[r[0]] for r in rows] == [f"<scheme={x}>" for x in schemes]
    assert all(vocab.itos[r[1]].startswith("<meter=") for r in rows)
    # scheme_draw: training lets the conditioned model sample its own scheme token
    loaded.cfg = {**loaded.cfg, "scheme_draw": "training"}
    assert ds.Generator(loaded, 1.0, 1.0, 0).scheme_source == "sampled style token"


def test_conditioned_training_needs_style_labels(tmp_path, data):
    bad = tmp_path / "nostyle.jsonl"
    write_jsonl(bad, [{k: v for k, v in s.items() if k not in ("schemes", "meters")} for s in _sonnets(4, 5)])
    with pytest.raises(PoevalError, match="schemes"):
        ds.train(str(bad), data["dev"], str(tmp_path / "m"), {**TINY, "conditioned": True}, TRAIN, lang="en",
                 progress=False)
    assert not (tmp_path / "m").exists()


def test_bad_input_is_refused(data, trained, tmp_path):
    out = tmp_path / "m"
    with pytest.raises(PoevalError, match=r"models\.ds\.hidden_size"):
        ds.train(data["sonnets"], data["dev"], str(out), {**TINY, "hidden_size": 3}, TRAIN, lang="en", name="ds",
                 progress=False)
    with pytest.raises(PoevalError, match=r"unknown key training\.warmup"):
        ds.train(data["sonnets"], data["dev"], str(out), TINY, {**TRAIN, "warmup": 3}, lang="en", progress=False)
    with pytest.raises(PoevalError, match="size"):
        ds.train(data["sonnets"], data["dev"], str(out), {**TINY, "size": "XL"}, TRAIN, lang="en", progress=False)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(PoevalError, match="no sonnets"):
        ds.train(str(empty), data["dev"], str(out), TINY, TRAIN, lang="en", progress=False)
    with pytest.raises(PoevalError, match="not found"):
        ds.train(str(tmp_path / "missing.jsonl"), data["dev"], str(out), TINY, TRAIN, lang="en", progress=False)
    with pytest.raises(PoevalError, match="dev file"):
        ds.train(data["sonnets"], str(empty), str(out), TINY, TRAIN, lang="en", progress=False)
    assert not out.exists() and not list(tmp_path.glob(".m*"))
    s_out = tmp_path / "x.jsonl"
    with pytest.raises(PoevalError, match="sampling.n"):
        ds.sample(str(trained["dir"]), VANILLA, sampling(-1), str(s_out), str(tmp_path / "x.json"), progress=False)
    with pytest.raises(PoevalError, match="not found"):
        ds.sample(str(tmp_path / "nomodel"), VANILLA, sampling(5), str(s_out), str(tmp_path / "x.json"),
                  progress=False)
    with pytest.raises(PoevalError, match="not a poetry-generator checkpoint"):
        ds.sample(str(tmp_path), VANILLA, sampling(5), str(s_out), str(tmp_path / "x.json"), progress=False)
    assert not s_out.exists()


# --------------------------------------------------------------------------------------------------
# generation as the original's sonnet_model.py generate / sample_sent / sample_word


def test_schemes_are_drawn_uniformly_not_from_training():
    counts = {"abab": 900, "aabb": 60, "abcd": 40}       # training schemes far from uniform
    torch.manual_seed(0)
    drawn = collections.Counter(ds.draw_schemes(3000, "uniform", counts))
    assert set(drawn) == {"aabb", "abab", "abba"}
    chi2 = sum((drawn[x] - 1000) ** 2 / 1000 for x in drawn)
    assert chi2 < 13.8           # chi-square, 2 degrees of freedom, p = 0.001
    # the switch keeps poeval's earlier draw from the training schemes
    torch.manual_seed(0)
    old = collections.Counter(ds.draw_schemes(3000, "training", counts))
    assert old["abab"] > 2600 and old["abba"] == 0


def test_rhyme_targets_are_the_original_patterns():
    # sonnet_model.py reset(): (pos, neg) per verse for aabb, abab, abba
    original = {"aabb": ([None, 0, None, 2], [None, None, 1, None]),
                "abab": ([None, None, 0, 1], [None, 0, None, None]),
                "abba": ([None, None, 1, 0], [None, 0, None, None])}
    for scheme, (pos, neg) in original.items():
        assert [ds.rhyme_targets(scheme, v) for v in range(4)] == list(zip(pos, neg))


def test_rerank_draws_with_the_sharp_temperature():
    losses = [2.0, 1.8, 3.0, 2.5]
    # by hand: weights exp(-loss / 0.1) = e^-20, e^-18, e^-30, e^-25, normalised
    w = [math.exp(-20), math.exp(-18), math.exp(-30), math.exp(-25)]
    expected = [x / sum(w) for x in w]
    assert ds.rerank_probs(losses, 0.1).tolist() == pytest.approx(expected, rel=1e-9)
    assert expected[1] == pytest.approx(0.8801, abs=1e-4)
    assert ds.rerank(losses, 0.1, "best") == 1
    torch.manual_seed(0)
    picks = collections.Counter(ds.rerank(losses, 0.1, "sample") for _ in range(2000))
    assert abs(picks[1] / 2000 - expected[1]) < 0.03 and abs(picks[0] / 2000 - expected[0]) < 0.03
    # at temperature 1 the best candidate would be kept far less often (0.38)
    assert ds.rerank_probs(losses, 1.0)[1] < 0.4


def test_constrained_draw_is_the_rejection_loop():
    # sample_word draws up to `attempts` times until an allowed word comes; by hand, with p = (.5, .3, .2), word 0
    # avoided and 2 attempts: failure 0.5^2 = 0.25, accepted words 1 and 2 in ratio 0.6 : 0.4
    n = 40000
    probs = torch.tensor([[0.5, 0.3, 0.2]]).expand(n, 3)
    allowed = torch.tensor([[False, True, True]]).expand(n, 3)
    torch.manual_seed(0)
    words, failed = ds.constrained_draw(probs, allowed, 2)
    assert abs(failed.float().mean().item() - 0.25) < 0.01
    kept = words[~failed]
    assert (kept > 0).all() and abs((kept == 1).float().mean().item() - 0.6) < 0.01


def _restart_generator(fail_first: dict[int, str]):
    """A Generator whose one try (``_quatrains``) fails on its first call for the quatrains in ``fail_first``."""
    gen = object.__new__(ds.Generator)
    gen.cfg = {"restarts": 3}
    calls = []

    def tries(size, max_tokens):
        calls.append(size)
        out = []
        for p in range(size):
            reason = fail_first.get(p) if len(calls) == 1 else None
            out.append({"lines": None if reason else [f"call {len(calls)}"] * 4, "reason": reason,
                        "scheme": "abab", "constrained": 1, "out_of_budget": 2, "end_punct": len(calls)})
        return out

    gen._quatrains = tries
    return gen, calls


def test_failed_quatrains_are_started_over():
    gen, calls = _restart_generator({1: "constraints", 3: "empty_line", 4: "truncated"})
    res = gen.generate(5, 50)
    # quatrains 1 and 3 are tried again from the start (a new call of two), a truncated one is not
    assert calls == [5, 2]
    assert [r["restarts"] for r in res] == [0, 1, 0, 1, 0]
    assert [r["lines"][0] if r["lines"] else None for r in res] == ["call 1", "call 2", "call 1", "call 2", None]
    assert res[4]["reason"] == "truncated" and [r["constrained"] for r in res] == [1, 2, 1, 2, 1]
    # candidates dropped for the budget add up over the tries; punctuation before the end word is the kept try's
    assert [r["out_of_budget"] for r in res] == [2, 4, 2, 4, 2]
    assert [r["end_punct"] for r in res] == [1, 2, 1, 2, 1]


def test_restarts_end_after_the_cap(trained):
    loaded = ds.Loaded(trained["dir"])
    # no end word reaches a cosine of 1 with another word: every rhyming verse fails, every try restarts
    loaded.cfg = {**loaded.cfg, "rhyme_threshold": 1.0, "restarts": 2}
    gen = ds.Generator(loaded, 1.0, 1.0, 0)
    sizes = []
    one_try = gen._quatrains
    gen._quatrains = lambda size, budget: sizes.append(size) or one_try(size, budget)
    torch.manual_seed(0)
    res = gen.generate(4, 100)
    assert sizes == [4, 4, 4]
    assert all(r["lines"] is None and r["reason"] == "constraints" and r["restarts"] == 2 for r in res)


def test_the_stopwords_switch_gives_a_german_model_the_originals_english_list(trained):
    """The function words a quatrain may repeat: the model's language's list, or with ``stopwords: english``
    the original's English list whatever the language (its sonnet_gen.py on the paper's German models)."""
    loaded = ds.Loaded(trained["dir"])
    base = dict(loaded.cfg)
    words = [w for w in loaded.vocab.itos if common.is_word(w)]
    got = {}
    for lang, switch in (("en", "language"), ("de", "language"), ("de", "english")):
        loaded.cfg = {**base, "lang": lang, "stopwords": switch}
        gen = ds.Generator(loaded, 1.0, 1.0, 0)
        got[lang, switch] = {w for w in words if gen.free[gen.lower_id[loaded.vocab.stoi[w]]]}
    english = {w for w in words if w.lower() in ds.STOPWORDS["en"]}
    assert "the" in english and got["en", "language"] == got["de", "english"] == english
    assert got["de", "language"] == {w for w in words if w.lower() in ds.STOPWORDS["de"]} != english
    assert ds.MODEL_DEFAULTS["stopwords"] == "language"


def test_generated_quatrains_keep_the_repetition_constraints(trained, tmp_path):
    out, stats = tmp_path / "r.jsonl", tmp_path / "r.json"
    ds.sample(str(trained["dir"]), VANILLA, sampling(24, batch_size=12, seed=5), str(out), str(stats), progress=False)
    records = list(read_jsonl(out))
    assert len(records) == 24
    stop = ds.STOPWORDS["en"]
    for r in records:
        verses = [[t.lower() for t in common.tokenize(x)] for x in r["lines"]]
        counts = collections.Counter(t for v in verses for t in v)
        assert all(c == 1 for t, c in counts.items() if common.is_word(t) and t not in stop), r
        assert max(counts.values()) <= 2, r          # nothing, stopwords and punctuation included, thrice
        ends = [common.end_word(v) for v in verses]
        assert len(set(ends)) == 4, r
        for v in verses:                              # none of the last 3 tokens, in generation order
            rev = v[::-1]
            assert all(rev[i] not in rev[max(0, i - 3):i] for i in range(len(rev))), r
    assert read_json(stats)["quatrain_restarts"] >= 0


def test_word_temperature_is_drawn_per_word(trained):
    loaded = ds.Loaded(trained["dir"])
    logp = torch.full((4000, 3), -1.0)
    assert ds.Generator(loaded, 0.9, 1.0, 0)._logits(logp) == (logp, 0.9)     # default: the decoding's
    loaded.cfg = {**loaded.cfg, "word_temperature": [0.6, 0.8]}
    torch.manual_seed(0)
    logits, temperature = ds.Generator(loaded, 0.9, 1.0, 0)._logits(logp)
    drawn = -1.0 / logits[:, 0]                       # the temperature each row was divided by
    assert temperature == 1.0 and (logits == logits[:, :1]).all()
    assert 0.6 <= drawn.min() < 0.61 and 0.79 < drawn.max() <= 0.8 and abs(drawn.mean() - 0.7) < 0.005
    for bad in ([0.8, 0.6], [0, 1], 0.7, [0.6]):
        with pytest.raises(PoevalError, match="word_temperature"):
            ds.resolve_model_cfg({**TINY, "word_temperature": bad})
    with pytest.raises(PoevalError, match="scheme_draw"):
        ds.resolve_model_cfg({**TINY, "scheme_draw": "human"})
    with pytest.raises(PoevalError, match="rerank_temperature"):
        ds.resolve_model_cfg({**TINY, "rerank_temperature": 0})


# --- issue 25: verse order and state, the shared character encoder, the original's optimisers


def test_rows_are_read_bottom_up_with_each_style_row_first():
    # a conditioned sonnet as read_sonnets lays it out: style row (S) before each quatrain, the couplet last
    verse = [False, True, True, True, True, False, True, True, True, True, True, True]
    assert ds.row_order(verse, "top_down") == list(range(12))
    # by hand: couplet (11, 10) first, then quatrain 2's style row and its verses from the last, then quatrain 1
    assert ds.row_order(verse, "bottom_up") == [11, 10, 5, 9, 8, 7, 6, 0, 4, 3, 2, 1]
    assert ds.row_order([True] * 4, "bottom_up") == [3, 2, 1, 0]


def test_decoder_sequences_carry_the_state_across_rows():
    bos, eol = 90, 99
    rows = [[[1, 2], [3]]]                             # one poem: two rows, read in this order
    # carried: one sequence, each row right to left and ended by <eol>, the next row's input starting at <eol>
    assert ds.decoder_sequences(rows, 2, True, bos, eol) == [([bos, 2, 1, eol, 3], [2, 1, eol, 3, eol], [0, 0, 0, 1, 1])]
    # fresh: one sequence per row slot, each from <bos>; a missing slot has no target
    assert ds.decoder_sequences(rows, 3, False, bos, eol) == [([bos, 2, 1], [2, 1, eol], [0, 0, 0]),
                                                              ([bos, 3], [3, eol], [1, 1]), ([bos], [], [])]


def _recording(gen):
    """Wrap ``gen._decode``: each call's start tokens, input state, texts of its rows and final state."""
    calls = []
    decode = gen._decode

    def wrapped(*args):
        out = decode(*args)
        buf, length, state, start = out[0], out[1], args[8], args[9]
        texts = [common.detokenize([gen.vocab[t] for t in buf[i, : length[i]].tolist()[::-1]])
                 for i in range(buf.shape[0])]
        calls.append({"start": start.clone(), "state": tuple(x.clone() for x in state), "texts": texts,
                      "final": tuple(x.clone() for x in out[5])})
        return out

    gen._decode = wrapped
    return calls


@pytest.mark.parametrize("order", ["bottom_up", "top_down"])
def test_the_last_verse_is_generated_first_and_the_state_carried(trained, order):
    loaded = ds.Loaded(trained["dir"])
    assert loaded.cfg["line_order"] == "bottom_up" and loaded.cfg["verse_state"] == "carried"   # the defaults
    loaded.cfg = {**loaded.cfg, "line_order": order, "restarts": 0}
    gen = ds.Generator(loaded, 1.0, 1.0, 0)
    calls = _recording(gen)
    torch.manual_seed(1)
    res = gen._quatrains(6, 100)
    k = int(loaded.cfg["candidates"])
    done = [p for p, r in enumerate(res) if r["lines"] is not None]
    assert done and len(calls) == 4
    first, last = (3, 0) if order == "bottom_up" else (0, 3)
    for p in done:
        rows = slice(p * k, (p + 1) * k)
        assert res[p]["lines"][first] in calls[0]["texts"][rows]      # the first slot wrote this verse
        assert res[p]["lines"][last] in calls[3]["texts"][rows]
    eol, bos = loaded.vocab.eol, loaded.vocab.bos
    assert (calls[0]["start"] == bos).all() and all((c["start"] == eol).all() for c in calls[1:])
    assert all(float(x.abs().max()) == 0 for x in calls[0]["state"])
    for p in done:   # the next slot starts from the final state of one of this quatrain's candidates: the kept one
        h_next = calls[1]["state"][0][0, p * k]
        assert any(torch.equal(h_next, calls[0]["final"][0][0, i]) for i in range(p * k, (p + 1) * k))


def test_the_rhyme_targets_follow_the_written_order():
    # bottom-up, slot g writes verse 3 - g: the scheme is read backwards. aaba: verse 4 (a), then verse 3 (b, not
    # rhyming with verse 4), verse 2 (a, rhyming with verse 4), verse 1 (a, rhyming with verse 2)
    assert [ds.rhyme_targets("aaba"[::-1], g) for g in range(4)] == [(None, None), (None, 0), (0, None), (2, None)]


def test_the_language_model_reads_characters_with_the_pentameter_encoder(trained):
    loaded = ds.Loaded(trained["dir"])
    states = common.load_checkpoint(trained["dir"])[3]
    assert not any("char" in key for key in states["lm"])             # no character encoder of its own
    assert loaded.model.lm.decoder.input_size == TINY["word_dim"] + 2 * TINY["pm_enc_dim"]
    quatrains = [q["lines"] for q in _dev(4, 2)]
    before = loaded.lm_loss(quatrains)
    with torch.no_grad():
        for weight in loaded.model.pentameter.encoder.parameters():
            weight.add_(0.5)
    assert loaded.lm_loss(quatrains) != pytest.approx(before, rel=1e-4)   # the LM's loss moves with that encoder


def test_the_original_optimisers_own_every_weight_once_under_the_joint_schedule():
    cfg = ds.resolve_model_cfg({k: v for k, v in TINY.items() if not k.endswith(("_lr", "_optimizer", "dropout"))})
    assert (cfg["lm_optimizer"], cfg["lm_lr"], cfg["pm_optimizer"], cfg["pm_lr"], cfg["rm_optimizer"], cfg["rm_lr"],
            cfg["dropout"]) == ("adagrad", 0.2, "adam", 0.001, "adam", 0.001, 0.3)   # config.py: keep_prob 0.7
    assert (cfg["update_schedule"], cfg["lm_loss"], cfg["bptt_verses"]) == ("alternating", "batch_sum", 2)
    model = ds.DeepSpeare(cfg, 50, 20, 0)
    opt = ds.optimizers(model, {**cfg, "update_schedule": "joint"}, ds.resolve_train_cfg({}))
    lm_opt, pm_opt, rm_opt = opt.parts["lm"], opt.parts["pm"], opt.parts["rm"]
    assert isinstance(lm_opt, torch.optim.Adagrad) and lm_opt.defaults["lr"] == 0.2
    assert lm_opt.defaults["initial_accumulator_value"] == 0.1        # tf.train.AdagradOptimizer's
    assert type(pm_opt) is torch.optim.Adam and type(rm_opt) is torch.optim.Adam and pm_opt.defaults["lr"] == 0.001
    owned = [id(p) for o in opt.parts.values() for g in o.param_groups for p in g["params"]]
    assert sorted(owned) == sorted(id(p) for p in model.parameters())   # each weight once
    assert id(model.chars.weight) in {id(p) for g in pm_opt.param_groups for p in g["params"]}
    # alternating: the original's variable lists, the character embedding in all three
    alt = ds.optimizers(model, cfg, ds.resolve_train_cfg({}))
    held = {k: {id(p) for g in o.param_groups for p in g["params"]} for k, o in alt.parts.items()}
    assert held["lm"] == {id(p) for m in (model.chars, model.pentameter.encoder, model.lm) for p in m.parameters()}
    assert held["rm"] == {id(p) for m in (model.chars, model.rhyme) for p in m.parameters()}
    assert held["pm"] == {id(p) for m in (model.chars, model.pentameter) for p in m.parameters()}
    with pytest.raises(PoevalError, match="lm_lr"):
        ds.resolve_train_cfg({"lr": 0.01})                            # one optimiser per model: no shared lr


def test_paper_yaml_trains_deepspeare_as_the_original(root):
    from poeval import config as schema, params
    from poeval.generators import registry

    cfg = params.resolve(schema.read(root / "params.yaml", (root / "config" / "scale" / "paper.yaml",)))
    assert cfg["training"]["lr"] == 5e-5                              # the LLMs' fine-tuning rate...
    for system in ("deepspeare-s", "deepspeare-s-cond"):
        model, training = registry.training_params(cfg["models"][system], cfg["training"])
        assert "lr" not in training and training["max_steps"] != cfg["training"]["max_steps"]   # ...stays theirs
        tcfg, mcfg = ds.resolve_train_cfg(training), ds.resolve_model_cfg(model)
        assert (tcfg["batch_size"], tcfg["max_epochs"], tcfg["patience"]) == (128, 30, 5)
        assert mcfg["size"] == "L" and mcfg["dec_dim"] == 600 and mcfg["pm_enc_dim"] == 50
        assert (mcfg["lm_optimizer"], mcfg["lm_lr"], mcfg["pm_lr"], mcfg["dropout"]) == ("adagrad", 0.2, 0.001, 0.3)
        assert model["update_schedule"] == mcfg["update_schedule"] == "alternating"   # set there, not only defaulted
        assert (model["lm_loss"], model["bptt_verses"]) == ("batch_sum", 2)
        # run_epoch's order of the whole epoch; create_word_batch's history of the earlier chunks
        assert (mcfg["update_order"], mcfg["lm_context"]) == ("epoch", "chunks")
        # create_*_batch's full batches only; keep_prob around every LSTM cell
        assert (mcfg["last_batch"], mcfg["dropout_scope"]) == ("drop", "cells")
        # sonnet_model.py: a full softmax over the vocabulary, tied to the word embeddings
        assert (mcfg["softmax_cutoffs"], mcfg["tie_embeddings"]) == ([], True)
        # sonnet_model.py lm_attention's concat form; compute_pm_loss's learned step of the window
        assert (mcfg["lm_attention"], mcfg["pm_window"]) == ("concat", "original")
    assert (ds.MODEL_DEFAULTS["update_order"], ds.MODEL_DEFAULTS["lm_context"]) == ("round", "verses")
    assert (ds.MODEL_DEFAULTS["last_batch"], ds.MODEL_DEFAULTS["dropout_scope"]) == ("keep", "words")
    assert (ds.MODEL_DEFAULTS["lm_attention"], ds.MODEL_DEFAULTS["pm_window"]) == ("bilinear", "monotone")


def test_a_checkpoint_of_the_earlier_port_is_refused(trained, tmp_path):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(trained["dir"], old)
    manifest = read_json(old / "poeval_model.json")
    del manifest["config"]["line_order"]
    (old / "poeval_model.json").write_text(json.dumps(manifest))
    with pytest.raises(PoevalError, match="earlier poeval.*train it again"):
        ds.Loaded(old)


# --- the original's training schedule (sonnet_train.py run_epoch, util.py create_*_batch, sonnet_model.py)


def _prepared(data, **cfg) -> tuple:
    from poeval.generators.poetic.deepspeare import training

    mcfg = ds.resolve_model_cfg({**TINY, **cfg})
    tcfg = ds.resolve_train_cfg(TRAIN)
    return training.prepare(data["sonnets"], data["dev"], mcfg, tcfg, None, None), mcfg, tcfg


def test_batch_sum_is_the_token_mean_times_tokens_per_sonnet(data):
    """The original's lm_cost (sonnet_model.py): reduce_sum of the masked cross-entropy / batch_size."""
    from poeval.generators.poetic.deepspeare import training

    assert training.lm_objective(torch.tensor(12.0), 30, 3, "batch_sum") == 4.0    # 12 / 3 sonnets
    assert training.lm_objective(torch.tensor(12.0), 30, 3, "mean") == pytest.approx(0.4)   # 12 / 30 tokens
    prep, _, _ = _prepared(data, update_schedule="joint")
    poems = prep.train_enc[:3]
    with torch.no_grad():
        lm_sum, n_tok = prep.batcher.lm_loss(poems)
        rest = prep.batcher.pm_loss(poems) + prep.batcher.rm_loss(poems, random.Random(0))
        prep.batcher.cfg = {**prep.batcher.cfg, "lm_loss": "mean"}
        mean = training.joint_loss(prep.batcher, poems, random.Random(0))[0] - rest
        prep.batcher.cfg = {**prep.batcher.cfg, "lm_loss": "batch_sum"}
        summed = training.joint_loss(prep.batcher, poems, random.Random(0))[0] - rest
    assert n_tok == 3 * 14 * 9                                        # 14 verses of 8 words and <eol> per sonnet
    assert float(mean) == pytest.approx(float(lm_sum) / n_tok, rel=1e-5)
    assert float(summed) == pytest.approx(float(mean) * n_tok / 3, rel=1e-5)


@pytest.mark.parametrize("extra", [{}, {"verse_state": "fresh"}, {"conditioned": True}])
def test_the_lm_chunks_of_two_verses_add_up_to_the_whole_sonnet(data, extra):
    """bptt_truncate 2 (config.py): 7 chunks of a 14-verse sonnet (a style row joins the verse after it). With no
    update between them the carried state is the same, so their losses add up to the whole sonnet's."""
    prep, _, _ = _prepared(data, **extra)
    poems = prep.train_enc[:3]
    with torch.no_grad():
        whole, n = prep.batcher.lm_loss(poems)
        chunks = list(prep.batcher.lm_chunks(poems, 2))
    assert len(chunks) == prep.batcher.lm_chunk_count(poems, 2) == 7
    if not extra:
        assert [k for _, k in chunks] == [3 * 2 * 9] * 7                # 3 sonnets x 2 verses x (8 tokens + <eol>)
    assert sum(k for _, k in chunks) == n
    assert float(sum(loss for loss, _ in chunks)) == pytest.approx(float(whole), rel=1e-5)
    assert ds.chunk_ids([False, True, True, True, True, False, True], 2) == [0, 0, 0, 1, 1, 2, 2]


def test_backpropagation_stops_at_each_chunk(data):
    """Truncated backpropagation: the state a chunk starts from carries no graph, so each chunk's backward pass
    runs after the previous one's graph was freed (it would fail if it reached back into it)."""
    prep, _, _ = _prepared(data)
    for loss, _ in prep.batcher.lm_chunks(prep.train_enc[:2], 2):
        loss.backward()
    assert prep.model.lm.decoder.weight_hh_l0.grad is not None


def test_per_target_rhyme_batches_give_the_quatrain_loss(data):
    """The original's rhyme batches hold single targets (util.py create_rhyme_batch); over all four targets of
    each quatrain (no negatives, so nothing random) their loss is the port's quatrain loss."""
    prep, _, _ = _prepared(data, rm_neg=0)
    poems = prep.train_enc[:2]
    items = [(q, t) for p in poems for q in p["ends"] for t in range(4)]
    with torch.no_grad():
        assert float(prep.batcher.rm_targets(items, random.Random(0))) == pytest.approx(
            float(prep.batcher.rm_loss(poems, None)), rel=1e-6)


def test_one_round_is_the_originals_7_lm_14_pentameter_and_12_rhyme_updates(data):
    """48 sonnets of 14 verses at batch 8: an epoch has 6 x 7 LM chunks, 672 / 8 = 84 pentameter and
    576 / 8 = 72 rhyme batches (util.py create_word_batch, create_char_batch, create_rhyme_batch), so a round
    of one batch of sonnets makes 7, 14 and 12 updates; each optimiser touches only the original's variables
    (sonnet_model.py: those built before it, of which its loss reaches some): the LM's Adagrad the character
    embedding, the pentameter encoder and the LM, never the pentameter model's decoder or the rhyme model."""
    from poeval.generators import engine
    from poeval.generators.poetic.deepspeare import training

    prep, cfg, tcfg = _prepared(data, lm_optimizer="adagrad", lm_lr=0.2)
    model = prep.model
    stream = engine.BatchStream([1] * len(prep.train_enc), tcfg["batch_size"], 0, prep.rng)
    alt = training.Alternating(prep.batcher, prep.train_enc, stream, cfg, tcfg, prep.rng)
    opt = ds.optimizers(model, cfg, tcfg)
    steps, real = [], opt.step

    def step(closure=None, part=None):
        before = {n: w.detach().clone() for n, w in model.named_parameters()}
        real(part=part)
        steps.append((part, {n for n, w in model.named_parameters() if not torch.equal(before[n], w)}))

    opt.step = step
    sums = alt(stream.next(), opt)
    kinds = [k for k, _ in steps]
    assert collections.Counter(kinds) == {"lm": 7, "pm": 14, "rm": 12} and kinds != sorted(kinds)   # mixed
    assert (sums["n_pm"], sums["n_rm"], sums["targets"]) == (14, 12, 8 * 14 * 9)   # every chunk used once
    touched = {k: set().union(*(names for kind, names in steps if kind == k)) for k in ("lm", "pm", "rm")}
    prefixes = {"lm": ("chars.", "pentameter.encoder.", "lm."), "pm": ("chars.", "pentameter."),
                "rm": ("chars.", "rhyme.")}
    for kind, names in touched.items():
        assert names and all(n.startswith(prefixes[kind]) for n in names), (kind, sorted(names))
        assert "chars.weight" in names
    assert any(n.startswith("pentameter.encoder.") for n in touched["lm"])
    assert any(n.startswith("pentameter.decoder.") for n in touched["pm"])
    for _ in range(5):                                               # the rest of the epoch: exactly one pass each
        alt(stream.next(), opt)
    assert alt.streams["pm"].pos == alt.streams["pm"].per_epoch == 84 and alt.streams["rm"].pos == 72
    assert [training.share(i, 10, 4) for i in range(4)] == [2, 3, 2, 3]


def test_epoch_order_shuffles_the_kinds_of_the_whole_epoch_together(data):
    """update_order epoch, as the original's run_epoch: the epoch's 42 LM chunks, 84 pentameter and 72 rhyme
    batches in one shuffled order; each step runs its own batch's 7 chunks and the other updates before them,
    so the steps' pentameter and rhyme shares vary, and the epoch still makes each exactly once."""
    from poeval.generators import engine
    from poeval.generators.poetic.deepspeare import training

    prep, cfg, tcfg = _prepared(data, update_order="epoch")
    stream = engine.BatchStream([1] * len(prep.train_enc), tcfg["batch_size"], 0, prep.rng)
    alt = training.Alternating(prep.batcher, prep.train_enc, stream, cfg, tcfg, prep.rng)
    opt = ds.optimizers(prep.model, cfg, tcfg)
    counts = [alt(stream.next(), opt) for _ in range(stream.per_epoch)]
    assert [c["targets"] for c in counts] == [8 * 14 * 9] * 6                    # every batch's 7 chunks, once
    assert (sum(c["n_pm"] for c in counts), sum(c["n_rm"] for c in counts)) == (84, 72)
    assert len({(c["n_pm"], c["n_rm"]) for c in counts}) > 1                      # not the round's even shares
    assert alt.streams["pm"].pos == 84 and alt.streams["rm"].pos == 72
    assert "plan" in alt.streams and len(alt.plan.steps) == 6


def test_cut_epoch_gives_each_batch_its_chunks_and_the_updates_before_them():
    from poeval.generators.poetic.deepspeare import training

    kinds = ["pm", "lm", "rm", "lm", "lm", "pm", "lm", "rm"]
    assert training.cut_epoch(kinds, [2, 2]) == [["pm", "lm", "rm", "lm"], ["lm", "pm", "lm", "rm"]]
    assert training.cut_epoch(["lm", "rm"], [1]) == [["lm", "rm"]]


def test_chunk_context_attends_over_earlier_chunks_only(data):
    """lm_context chunks, as the original's training (util.py create_word_batch: a chunk's history is the
    words of the chunks before it): the first chunk sees only the null slot, so the verse encoder's weights
    cannot change its loss; with verses its second verse attends over its first, and they do."""
    prep, _, _ = _prepared(data)
    poems = prep.train_enc[:2]

    def first_chunk_losses(context: str) -> tuple[float, float]:
        prep.batcher.cfg = {**prep.batcher.cfg, "lm_context": context}
        with torch.no_grad():
            before = float(next(prep.batcher.lm_chunks(poems, 2))[0])
            saved = {k: v.clone() for k, v in prep.model.lm.encoder.state_dict().items()}
            for w in prep.model.lm.encoder.parameters():
                w.add_(0.5)
            after = float(next(prep.batcher.lm_chunks(poems, 2))[0])
            prep.model.lm.encoder.load_state_dict(saved)
        return before, after

    same = first_chunk_losses("chunks")
    assert same[0] == pytest.approx(same[1], rel=1e-6)
    moved = first_chunk_losses("verses")
    assert moved[0] != pytest.approx(moved[1], rel=1e-4)
    with torch.no_grad():            # later chunks attend over earlier ones under both
        prep.batcher.cfg = {**prep.batcher.cfg, "lm_context": "chunks"}
        a = [float(x) for x, _ in prep.batcher.lm_chunks(poems, 2)]
        prep.batcher.cfg = {**prep.batcher.cfg, "lm_context": "verses"}
        b = [float(x) for x, _ in prep.batcher.lm_chunks(poems, 2)]
    assert all(x != pytest.approx(y, rel=1e-6) for x, y in zip(a, b))


def test_the_original_clips_the_lm_and_pentameter_gradients_not_the_rhyme_models(data, monkeypatch):
    from poeval.generators import engine
    from poeval.generators.poetic.deepspeare import training

    prep, cfg, tcfg = _prepared(data)
    stream = engine.BatchStream([1] * len(prep.train_enc), tcfg["batch_size"], 0, prep.rng)
    alt = training.Alternating(prep.batcher, prep.train_enc, stream, cfg, tcfg, prep.rng)
    opt = ds.optimizers(prep.model, cfg, tcfg)
    clipped = []
    clip = torch.nn.utils.clip_grad_norm_
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_",
                        lambda ws, norm: clipped.append((len(ws), norm)) or clip(ws, norm))
    alt(stream.next(), opt)
    sizes = {k: len([p for g in opt.parts[k].param_groups for p in g["params"]]) for k in ("lm", "pm")}
    assert collections.Counter(clipped) == {(sizes["lm"], 5.0): 7, (sizes["pm"], 5.0): 14}   # config.py max_grad_norm


# --- the remaining differences from the original, switched or counted (package docstring)


def test_the_stats_count_punctuation_before_the_end_word_and_the_dropped_candidates(trained, tmp_path):
    """Each valid verse whose last token is punctuation was drawn punctuation first (right to left, before its
    end word): the toy verses all end on a mark, so most do. A tight budget drops candidates that ran out of
    it; a loose one drops none."""
    def stats(max_new_tokens: int) -> tuple[dict, list[dict]]:
        out, st = tmp_path / f"{max_new_tokens}.jsonl", tmp_path / f"{max_new_tokens}.stats.json"
        ds.sample(str(trained["dir"]), VANILLA, sampling(12, batch_size=6, seed=5, max_new_tokens=max_new_tokens,
                                                         max_attempts=60), str(out), str(st), progress=False)
        return read_json(st), list(read_jsonl(out))

    loose, records = stats(200)
    marked = sum(not common.is_word(common.tokenize(x)[-1]) for r in records for x in r["lines"])
    assert loose["verses_punct_before_end_word"] == marked > 0
    assert loose["valid_verses"] == 4 * len(records) and loose["candidates_out_of_budget"] == 0
    # a budget that only the shortest quatrain of the loose run fits: longer candidates run out of it
    tight, _ = stats(min(sum(len(common.tokenize(x)) + 1 for x in r["lines"]) for r in records))
    assert tight["candidates_out_of_budget"] > 0


def test_guard_counts_find_the_quatrains_failed_at_the_restart_bound():
    from poeval.generators.sampling import Attempt

    def attempt(reason, restarts, punct=0, oob=0):
        return Attempt([], reason is None, reason=reason,
                       info={"restarts": restarts, "end_punct": punct, "out_of_budget": oob})

    counted = [attempt(None, 0, punct=2), attempt(None, 5, punct=1, oob=3), attempt("constraints", 5),
               attempt("empty_line", 5, oob=1), attempt("truncated", 1)]
    assert ds.generation.guard_counts(counted, 5) == {
        "verses_punct_before_end_word": 3, "valid_verses": 8, "candidates_out_of_budget": 4,
        "quatrains_at_restart_bound": 2, "max_quatrain_restarts": 5}


def test_last_batch_drop_skips_the_short_batches_after_the_same_shuffle():
    from poeval.generators import engine

    keep = engine.BatchStream([1] * 10, 4, 0, random.Random(3))
    drop = engine.BatchStream([1] * 10, 4, 0, random.Random(3), drop_last=True)
    assert (keep.per_epoch, drop.per_epoch) == (3, 2)
    for _ in range(2):                                   # two epochs: the same order, the short batch gone
        kept = [keep.next() for _ in range(3)]
        assert [drop.next() for _ in range(2)] == kept[:2] and len(kept[2]) == 2
    assert sorted(engine.BatchStream([1] * 3, 4, 0, random.Random(3), drop_last=True).next()) == [0, 1, 2]


@pytest.mark.parametrize("last_batch,epochs", [("keep", 0.8), ("drop", 1.0)])
def test_last_batch_reaches_every_stream_of_training(data, tmp_path, last_batch, epochs):
    """48 sonnets at batch 10: 5 batches an epoch (the last of 8) kept, 4 dropped (the original's
    create_word_batch); the pentameter (672 verses) and rhyme (576 targets) streams drop theirs too."""
    from poeval.generators import engine
    from poeval.generators.poetic.deepspeare import training

    summary = ds.train(data["sonnets"], data["dev"], str(tmp_path / "m"), {**TINY, "last_batch": last_batch},
                       {**TRAIN, "batch_size": 10, "max_steps": 4, "eval_every": 4}, lang="en", progress=False)
    assert summary["epochs"] == epochs
    prep, cfg, tcfg = _prepared(data, last_batch=last_batch)
    tcfg = {**tcfg, "batch_size": 10}
    stream = engine.BatchStream([1] * len(prep.train_enc), 10, 0, prep.rng)
    alt = training.Alternating(prep.batcher, prep.train_enc, stream, cfg, tcfg, prep.rng)
    full = last_batch == "drop"
    assert (alt.streams["pm"].per_epoch, alt.streams["rm"].per_epoch) == ((67, 57) if full else (68, 58))


def test_dropout_scope_cells_drops_every_lstms_outputs_in_training_only(data):
    """cells, as the original's DropoutWrapper around every LSTM cell (sonnet_model.py): in training the
    pentameter loss (character encoder and decoder), the rhyme encodings and the verse encoder's states vary
    from call to call; under words none of them does, and in eval mode neither scope drops anything."""
    prep, _, _ = _prepared(data, dropout=0.3)
    words = prep.model
    cells = ds.DeepSpeare({**prep.batcher.cfg, "dropout_scope": "cells"}, len(prep.vocab), len(prep.chars), 0)
    cells.load_state_dict(words.state_dict())            # the same weights: the switch adds none
    lines = [x for p in prep.train_enc[:2] for x in p["pm"]]
    chars, lengths = torch.randint(3, len(prep.chars), (6, 7)), torch.full((6,), 7)
    verses = torch.randint(5, len(prep.vocab), (3, 5))

    def outputs(model) -> list:
        batcher = ds.Batcher(model, prep.batcher.tables, prep.batcher.cfg)
        return [batcher.pm_lines(lines), model.rhyme.embed(model.chars, chars, lengths),
                model.lm.encoder(model.lm.embed(verses), torch.full((3,), 5))[0]]

    def varies(model) -> list[bool]:
        torch.manual_seed(0)
        a = outputs(model)
        b = outputs(model)
        return [not torch.equal(x, y) for x, y in zip(a, b)]

    with torch.no_grad():
        words.train()
        cells.train()
        assert varies(cells) == [True, True, True] and varies(words) == [False, False, False]
        words.eval()
        cells.eval()
        assert all(torch.equal(x, y) for x, y in zip(outputs(words), outputs(cells)))
    assert ds.resolve_model_cfg({})["dropout_scope"] == "words" and ds.resolve_model_cfg({})["last_batch"] == "keep"


# --- the original's attention forms (sonnet_model.py lm_attention, compute_pm_loss)


def test_lm_attention_concat_is_the_originals_formula():
    """concat: e = v^T tanh(W [m; s] + b), here W = [att_k | att_q] and b = att_k's bias, summed by hand per
    (step, word); bilinear: att_q(s) . att_k(m). The one-step form gives the same scores; concat adds only v."""
    cfg = ds.resolve_model_cfg({"size": "S"})
    torch.manual_seed(0)
    bil = ds.LanguageModel(cfg, 50, 0)
    cat = ds.LanguageModel({**cfg, "lm_attention": "concat"}, 50, 0)
    assert set(cat.state_dict()) - set(bil.state_dict()) == {"att_v.weight"}
    s, mem = torch.randn(2, 3, cfg["dec_dim"]), torch.randn(2, 4, 2 * cfg["enc_dim"])
    with torch.no_grad():
        for lm in (bil, cat):
            keys = lm.att_k(mem)
            got = lm.attention_scores(s, keys)
            for p, t, m in itertools.product(range(2), range(3), range(4)):
                pre = lm.att_k.weight @ mem[p, m] + lm.att_k.bias + lm.att_q.weight @ s[p, t]
                want = lm.att_v.weight[0] @ torch.tanh(pre) if lm is cat else (
                    (lm.att_q.weight @ s[p, t]) @ (lm.att_k.weight @ mem[p, m] + lm.att_k.bias))
                assert float(got[p, t, m]) == pytest.approx(float(want), rel=1e-4, abs=1e-5)
            assert torch.allclose(lm.step_scores(s[:, 1], keys), got[:, 1], atol=1e-5)


def test_pm_window_original_steps_by_its_learned_share():
    """The original's window with its step's last layer zeroed: sigmoid(0) = 1/2, so the centre is 1/2 then 1
    (capped) of the verse; with the content scores flat (v = 0) and sigma 0.01 the attention sits on position
    round(1/2 x 8) = 4 once and on the last character 9 times. Repeat penalty: steps 3-10 land where attention
    already was (8); nothing falls on the space or the pads."""
    cfg = {**ds.resolve_model_cfg({"size": "S"}), "pm_window": "original", "pm_sigma": 0.01}
    torch.manual_seed(0)
    pm = ds.PentameterModel(cfg)
    assert set(pm.state_dict()) - set(ds.PentameterModel(ds.resolve_model_cfg({"size": "S"})).state_dict()) == {
        "loc.0.weight", "loc.0.bias", "loc.2.weight"}
    char_emb = torch.nn.Embedding(10, cfg["char_dim"])
    chars = torch.tensor([[3, 4, 5, 6, 7, 3, 4, 5, 6, 0, 0], [3, 4, 1, 6, 7, 3, 4, 5, 6, 0, 0]])
    lengths = torch.tensor([9, 9])
    spaces = chars == 1
    vowels = torch.zeros_like(spaces)
    with torch.no_grad():
        pm.loc[2].weight.zero_()
        pm.att_v.weight.zero_()
        pm.eval()
        loss, parts = pm(char_emb, chars, lengths, vowels, spaces)
    want = torch.zeros(11)
    want[4], want[8] = 1.0, 9.0
    assert torch.allclose(parts["attention"][0], want, atol=1e-4)
    assert float(parts["repeat"][0]) == pytest.approx(8.0, abs=1e-4)
    # the second verse's space (position 2) and pads get nothing; its sums are a verse's 10 steps
    assert float(parts["attention"][1, 2]) == 0.0 and float(parts["attention"][1, 9:].sum()) == 0.0
    assert float(parts["attention"][1].sum()) == pytest.approx(10.0, abs=1e-4)
