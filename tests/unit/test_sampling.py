"""The shared sampling loop (poeval.generators.sampling) on scripted generators: validity rule, failure
reasons, resampling until n valid or max_attempts, distinct share, seeding and the provenance stamp."""

import json
import random
import re

import pytest
import torch

from poeval.errors import PoevalError
from poeval.generators.decoding import parse_decoding
from poeval.generators.sampling import (Attempt, check_quatrain, distinct_share, paper_chunks, paper_keep, paper_loop,
                                       resolve, sample_loop)
from poeval.io import read_json, read_jsonl
from helpers import ROOT

TEMPERATURE_1 = parse_decoding({"temperature": 1.0})

Q = ["a", "b", "c", "d"]
GIVE_UP_AFTER = json.loads((ROOT / "src/poeval/schemas/params.schema.json").read_text())["$defs"]["sampling"][
    "properties"]["give_up_after"]["default"]


@pytest.mark.parametrize(
    ("verses", "finished", "expected"),
    [
        (Q, True, (Q, None)),
        ([" a ", "b\t", "c", " d"], True, (Q, None)),
        (Q, False, (None, "truncated")),           # no EOS within the budget: never repaired
        (Q[:3], True, (None, "wrong_line_count:3")),
        (Q + [""], True, (None, "extra_verse")),     # a fifth verse began: never cut back to four
        (Q + ["e", "f"], False, (None, "extra_verse")),   # ... whether or not the budget ran out
        ([], True, (None, "wrong_line_count:0")),
        (["a", " ", "c", "d"], True, (None, "empty_line")),
        (["a", " --", "c", "d"], True, (None, "empty_line")),   # punctuation only: no verse (poeval.poem_files.read_poems agrees)
        (["a", "1914", "c", "d"], True, (None, "empty_line")),  # no letter, no word: no verse either
    ],
)
def test_validity_rule(verses, finished, expected):
    assert check_quatrain(verses, finished) == expected


def test_distinct_share():
    recs = [{"lines": Q}, {"lines": Q}, {"lines": ["a", "b", "c", "e"]}, {"lines": ["a", "b", "cd", ""]}]
    assert distinct_share(recs) == 3 / 4
    # joined by newlines: ["a b", ...] and ["a", "b ..."] are different quatrains
    assert distinct_share([{"lines": ["a b", "c", "d", "e"]}, {"lines": ["a", "b c", "d", "e"]}]) == 1.0
    assert distinct_share([]) is None


def _script(attempts):
    """A generate callable handing out the scripted attempts in order, recording the batch sizes."""
    queue, sizes = list(attempts), []

    def generate(size):
        sizes.append(size)
        batch, queue[:] = queue[:size], queue[size:]
        return [Attempt(list(a.verses), a.finished, a.reason, dict(a.info)) for a in batch]

    return generate, sizes


def _run(tmp_path, attempts, n, **kw):
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "w.bin").write_bytes(b"w")
    generate, sizes = _script(attempts)
    block = resolve({"n": n, "batch_size": 3, "max_new_tokens": 10, "max_attempts": 100, "seed": 1, **kw})
    stats = sample_loop(generate, tmp_path / "s.jsonl", tmp_path / "s.json", model_dir=str(model),
                        decoding=TEMPERATURE_1, sampling=block, progress=False, id_prefix="x-")
    return list(read_jsonl(tmp_path / "s.jsonl")), stats, sizes


def test_loop_resamples_until_n_valid_and_counts_reasons(tmp_path):
    bad = [Attempt(Q, False), Attempt(Q[:2], True), Attempt(["a", "", "c", "d"], True),
           Attempt([], True, reason="empty_line")]   # a generator's own reason counts as given
    script = [bad[0], Attempt(Q, True), bad[1], bad[2], Attempt(["e", "f", "g", "h"], True), bad[3],
              Attempt(Q, True), Attempt(Q, True)]
    records, stats, sizes = _run(tmp_path, script, n=3)
    # the 7th attempt gives the 3rd valid quatrain: counting stops there, the 8th is never counted
    assert [r["lines"] for r in records] == [Q, ["e", "f", "g", "h"], Q]
    assert [r["id"] for r in records] == ["x-00000", "x-00001", "x-00002"]
    assert sizes == [3, 3, 3]
    assert stats["attempts"] == 7 and stats["valid"] == 3 and stats["requested"] == 3
    assert stats["reasons"] == {"empty_line": 2, "truncated": 1, "wrong_line_count:2": 1}
    assert stats["validity_rate"] == 3 / 7
    assert stats["distinct_share"] == 2 / 3
    assert read_json(tmp_path / "s.json") == stats
    assert stats["provenance"]["params"] == {"decoding": {"method": "ancestral", "temperature": 1.0, "top_p": 1.0,
                                                          "top_k": 0}, "sampling": {
        "n": 3, "batch_size": 3, "max_new_tokens": 10, "max_attempts": 100, "seed": 1, "procedure": "poeval",
        "give_up_after": GIVE_UP_AFTER}}
    assert stats["provenance"]["inputs"]["model"]["sha256"]


def test_loop_stops_at_max_attempts(tmp_path):
    script = [Attempt(Q, False), Attempt(Q, True)] + [Attempt(Q, False)] * 8
    records, stats, sizes = _run(tmp_path, script, n=2, max_attempts=5)
    assert len(records) == 1 and stats["attempts"] == 5 and sizes == [3, 2]   # the last batch is cut to fit
    assert stats["reasons"] == {"truncated": 4} and stats["validity_rate"] == 1 / 5


def test_a_sample_without_a_valid_quatrain_is_an_error_naming_the_reasons(tmp_path):
    script = [Attempt(Q, False)] * 3 + [Attempt(Q[:2], True)] * 2
    with pytest.raises(PoevalError, match=r"model: 0 of 5 attempts gave a valid quatrain \(truncated 3, "
                                          r"wrong_line_count:2 2\); raise sampling.max_new_tokens"):
        _run(tmp_path, script * 2, n=2, max_attempts=5)
    assert not (tmp_path / "s.jsonl").exists() and not (tmp_path / "s.json").exists()


def _bound_reference(attempts: int) -> float:
    """The exact one-sided 95 % upper bound of a share after 0 successes in ``attempts`` (Clopper-Pearson)."""
    from scipy.stats import beta

    return float(beta.ppf(0.95, 1, attempts))


@pytest.mark.parametrize(("n", "max_attempts", "gives_up_at"), [
    (1000, 4000, 12),   # 0 of 9 allows 28 % (1130 of the 3991 left), 0 of 12 22 % (882): under 1000
    (50, 4000, 225),    # a small n needs more evidence: the bound must fall under 50 / the attempts left
    (5, 60, 30),        # give_up_after 30 and the bound of 30 (9.5 %) x 30 left < 5
])
def test_a_sample_without_a_valid_quatrain_yet_is_given_up_once_n_is_out_of_reach(tmp_path, n, max_attempts,
                                                                                 gives_up_at):
    """The rule (poeval.generators.sampling.out_of_reach) checked against the exact binomial bound: the loop stops
    at the first batch end from give_up_after on where even that bound cannot reach n in the attempts left."""
    after = 30 if max_attempts == 60 else 3
    expected = next(a for a in range(after, max_attempts, 3) if _bound_reference(a) * (max_attempts - a) < n)
    assert expected == gives_up_at
    with pytest.raises(PoevalError, match=rf"model: 0 of {gives_up_at} attempts gave a valid quatrain \(truncated "
                                          rf"{gives_up_at}\): n = {n} is out of reach within sampling.max_attempts "
                                          rf"{max_attempts}, so the sample stops \(sampling.give_up_after {after}\)"):
        _run(tmp_path, [Attempt(Q, False)] * max_attempts, n=n, max_attempts=max_attempts, give_up_after=after)
    # giving up is for a sample without a valid quatrain: once one is valid, the loop runs on to max_attempts
    script = [Attempt(Q, True)] + [Attempt(Q, False)] * (max_attempts - 1)
    records, stats, _ = _run(tmp_path, script, n=n, max_attempts=max_attempts, give_up_after=after)
    assert len(records) == 1 and stats["attempts"] == max_attempts


def test_the_progress_bar_shows_attempts_beside_the_valid_quatrains(tmp_path, capsys, monkeypatch):
    from poeval import progress

    monkeypatch.setattr(progress, "LOG_INTERVAL", 0.0)   # a log's line at every redraw, not every 10 s
    model = tmp_path / "model"
    model.mkdir()
    generate, _ = _script([Attempt(Q, False), Attempt(Q, True), Attempt(Q, False)] * 2)
    block = resolve({"n": 2, "batch_size": 3, "max_new_tokens": 10, "max_attempts": 100, "seed": 1})
    sample_loop(generate, tmp_path / "s.jsonl", tmp_path / "s.json", model_dir=str(model), decoding=TEMPERATURE_1,
                sampling=block, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert re.search(r"sample: .*2/2 .*3 attempts", lines[-2]) and re.search(r"sample: .*2/2 .*5 attempts", lines[-1])


def test_loop_extra_sees_which_attempts_were_valid(tmp_path):
    script = [Attempt(Q, True, info={"k": 1}), Attempt(Q, False, info={"k": 2}), Attempt(Q, True, info={"k": 4})]
    model = tmp_path / "m"
    model.mkdir()
    generate, _ = _script(script)
    block = {"n": 2, "batch_size": 5, "max_new_tokens": 10, "max_attempts": 10, "seed": 1}
    stats = sample_loop(generate, tmp_path / "s.jsonl", tmp_path / "s.json", model_dir=str(model), decoding=TEMPERATURE_1,
                        sampling=resolve(block), progress=False,
                        extra=lambda counted: {"valid_k": sum(a.info["k"] for a in counted if a.reason is None)})
    assert stats["valid_k"] == 5


def test_loop_seeds_the_global_rng(tmp_path):
    def generate(size):
        return [Attempt([f"w{torch.randint(0, 10**6, ()).item()}", "b", "c", "d"], True) for _ in range(size)]

    model = tmp_path / "m"
    model.mkdir()
    outs = []
    for seed in (1, 1, 2):
        block = {"n": 4, "batch_size": 2, "max_new_tokens": 10, "max_attempts": 10, "seed": seed}
        sample_loop(generate, tmp_path / "s.jsonl", tmp_path / "s.json", model_dir=str(model), decoding=TEMPERATURE_1,
                    sampling=resolve(block), progress=False)
        outs.append((tmp_path / "s.jsonl").read_bytes())
    assert outs[0] == outs[1] != outs[2]


@pytest.mark.parametrize("kw", [{"n": -1}, {"batch_size": 0}, {"max_attempts": 0}, {"n": 1.5},
                                {"max_new_tokens": None}, {"max_new_bytes": 0}, {"seed": None}, {"top_k": 5}])
def test_a_bad_sampling_block_is_refused_naming_its_key(kw):
    block = {"n": 1, "batch_size": 1, "max_new_tokens": 1, "max_attempts": 1, "seed": 1, **kw}
    with pytest.raises(PoevalError, match=f"sampling.{next(iter(kw))}"):
        resolve(block)


@pytest.mark.parametrize("key", ["n", "batch_size", "max_new_tokens", "max_attempts", "seed"])
def test_a_key_left_out_of_a_sampling_block_takes_the_main_jobs_value(key):
    """the schema is the one holder of defaults: a library call or `poeval sample --sampling` without
    params.yaml gets what the main job samples with (issue 44: max_new_tokens was required by hand)"""
    import yaml

    main_job = yaml.safe_load((ROOT / "params.yaml").read_text())["sampling"]
    block = {"n": 1, "batch_size": 1, "max_new_tokens": 1, "max_attempts": 1, "seed": 1}
    assert resolve(block) == {**block, "procedure": "poeval", "give_up_after": GIVE_UP_AFTER}
    assert resolve({k: v for k, v in block.items() if k != key}) == {**block, key: main_job[key], "procedure": "poeval",
                                                                     "give_up_after": GIVE_UP_AFTER}
    assert "max_new_bytes" not in resolve({})   # without it a byte-level model gets max_new_tokens


def test_every_valid_quatrain_is_one_the_metrics_read(tmp_path):
    """The validity rule and the metrics' reader (poeval.poem_files.read_poems) agree: what sampling writes is never
    skipped when a cell reads it (a verse of punctuation or digits only is neither)."""
    from poeval.poem_files import read_poems

    verses = [["a", "b", "c", "d"], ["a", "--", "c", "d"], ["a", "b", " ...!", "d"], ["a", "b", "c", "'Tis"],
              ["é", "b", "c", "d"], ["a", " ", "c", "d"], ["1", "b", "c", "d"]]
    valid = [lines for lines, reason in (check_quatrain(v, True) for v in verses) if reason is None]
    assert len(valid) == 3   # "--", " ...!", " " and "1" have no word (poeval.text.verse_problem)
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "lines": v}) + "\n" for i, v in enumerate(verses)))
    kept, skipped = read_poems(path)
    assert [r["lines"] for r in kept] == valid and sum(skipped.values()) == len(verses) - len(valid)


# --- the paper's procedure (sampling.procedure: paper): its chunk rule, quirk included


def _paper_reference(chunks):
    """The paper's loop itself (sample_generation_llm.py, generate_quatrains), run on a list: the
    independent reference of paper_keep, removal while iterating included."""
    quatrains = [chunk for chunk in chunks if len(chunk) == 4]
    for quatrain in quatrains:
        for line in quatrain:
            if len(line) == 0:
                quatrains.remove(quatrain)
                break
    return quatrains


A, B, C, D = (["a", "b", "c", "d"], ["", "b", "c", "d"], ["a", "", "c", "d"], ["e", "f", "g", "h"])


def test_paper_chunks_cut_on_blank_lines_and_keep_everything_as_written():
    text = "a\nb\n\nc\n\n\nd \ne"
    assert paper_chunks(text) == [["a", "b"], ["c"], ["", "d ", "e"]]
    assert paper_chunks("") == [[""]]


@pytest.mark.parametrize(("chunks", "kept"), [
    ([A, D], [A, D]),
    ([B, D], [D]),
    ([B, C, D], [C, D]),          # the chunk after a removed one is never checked: C stays, empty line and all
    ([B, C, C, D], [C, D]),       # B removed, first C skipped; the second C removes the first equal one (the skipped C)
    ([A, B, B, B], [A, B]),       # B removed, B skipped, B removes the first B: one B stays
    ([A + ["x"], ["a"], C], []),  # only four-line chunks count
    ([C, A[:3], C], [C]),         # the three-line chunk goes first, so the second C is the one skipped
])
def test_paper_keep_reproduces_the_removal_while_iterating(chunks, kept):
    assert paper_keep([list(c) for c in chunks]) == kept
    assert paper_keep([list(c) for c in chunks]) == _paper_reference([list(c) for c in chunks])


def test_paper_keep_agrees_with_the_papers_loop_on_random_batches():
    rng = random.Random(3)
    pool = [A, B, C, D, A[:3], A + ["x"], ["", "", "c", "d"]]
    for _ in range(500):
        chunks = [list(rng.choice(pool)) for _ in range(rng.randrange(12))]
        assert paper_keep([list(c) for c in chunks]) == _paper_reference([list(c) for c in chunks])


def _paper_run(tmp_path, texts, generations, batch_size):
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "w.bin").write_bytes(b"w")
    queue, sizes = list(texts), []

    def generate(size):
        sizes.append(size)
        batch, queue[:] = queue[:size], queue[size:]
        return batch

    block = resolve({"n": 1, "batch_size": batch_size, "max_new_tokens": 10, "max_attempts": generations, "seed": 1,
                     "procedure": "paper"})
    stats = paper_loop(generate, tmp_path / "p.jsonl", tmp_path / "p.json", model_dir=str(model),
                       decoding=TEMPERATURE_1, sampling=block, progress=False, id_prefix="p-")
    return list(read_jsonl(tmp_path / "p.jsonl")), stats, sizes


def test_paper_loop_draws_every_generation_and_applies_the_rule_per_batch(tmp_path):
    q = "a\nb\nc\nd"
    gap = "\nx\ny\nz"                                  # four lines, the first empty
    texts = [(q + "\n\n" + q, True), (gap, True),      # batch 1: two quatrains, then a removed chunk
             ("\n" + gap[1:], False), ("e\nf", True),  # batch 2: a new list, so its first chunk is checked
             (gap + "\n\n" + gap, False)]              # batch 3: removed, the second skipped and kept
    records, stats, sizes = _paper_run(tmp_path, texts, generations=5, batch_size=2)
    assert sizes == [2, 2, 1]
    assert [r["lines"] for r in records] == [["a", "b", "c", "d"]] * 2 + [["", "x", "y", "z"]]
    assert [r["id"] for r in records] == ["p-00000", "p-00001", "p-00002"]
    assert (stats["attempts"], stats["valid"], stats["requested"]) == (5, 3, None)
    assert stats["validity_rate"] == 3 / 5
    assert stats["reasons"] == {"chunk_lines:2": 1, "empty_line": 3}
    assert (stats["chunks"], stats["kept_with_empty_line"], stats["ended_with_eos"]) == (7, 1, 3)
    assert stats["procedure"] == "paper" and stats["min_new_tokens"] == 20
    assert json.loads((tmp_path / "p.json").read_text())["valid"] == 3


def test_the_paper_loop_keeping_no_chunk_is_an_error_too(tmp_path):
    with pytest.raises(PoevalError, match=r"0 of 3 attempts gave a valid quatrain \(chunk_lines:2 3\)"):
        _paper_run(tmp_path, [("a\nb", True)] * 3, generations=3, batch_size=2)
    assert not (tmp_path / "p.jsonl").exists()


# --- the typed decoding (poeval.generators.decoding): parsed once, by the schema's two shapes

def test_a_decoding_config_parses_to_its_method_and_round_trips():
    from poeval.generators.decoding import Ancestral, Contrastive

    assert parse_decoding({"temperature": 0.7}) == Ancestral(temperature=0.7, top_p=1.0, top_k=0)
    assert parse_decoding({"top_k": 6, "penalty_alpha": 0.7}) == Contrastive(top_k=6, penalty_alpha=0.7,
                                                                             mode="stochastic", score_temperature=0.1)
    paper = parse_decoding({"method": "contrastive", "top_k": 6, "penalty_alpha": 0.7, "mode": "paper"})
    assert paper.score_temperature is None and paper.search_temperature == 0.0
    for config in ({"temperature": 1, "top_p": 0.9, "top_k": 5}, {"top_k": 4, "penalty_alpha": 0.6, "mode": "argmax"},
                   {"top_k": 4, "penalty_alpha": 0.6, "score_temperature": 0.3}):
        typed = parse_decoding(config)
        assert typed.to_dict()["method"] == typed.method == ("contrastive" if "penalty_alpha" in config else "ancestral")
        assert parse_decoding(typed.to_dict()) == typed   # what a job's JSON carries reads back the same
        assert parse_decoding(json.loads(json.dumps(typed.to_dict()))) == typed
    assert parse_decoding({"temperature": 1}).temperature == 1.0 and isinstance(
        parse_decoding({"temperature": 1}).temperature, float)


@pytest.mark.parametrize("config, message", [
    ({"method": "contrastive", "top_k": 10}, "'penalty_alpha' is a required property"),
    ({"top_k": 10}, "required property"),
    ({"temperature": 1.0, "typical_p": 0.9}, "unknown key decoding.typical_p"),
    ({"method": "ancestral", "top_k": 4, "penalty_alpha": 0.6}, "key decoding.method"),
    ({"top_k": 4, "penalty_alpha": 0.6, "mode": "paper", "score_temperature": 0.1},
     "score_temperature applies to mode stochastic only, not 'paper'"),
    ("vanilla", "a decoding config is a mapping"),
])
def test_a_bad_decoding_config_is_a_clear_error_naming_its_key(config, message):
    with pytest.raises(PoevalError, match=re.escape(message)):
        parse_decoding(config)


def test_the_params_step_fills_the_method_from_the_schema(root):
    """params.yaml writes no `method`: the schema's shape of each config says it, once."""
    from poeval import params

    resolved = params.load(root / "params.yaml")
    methods = {name: d["method"] for name, d in resolved["decoding"].items()}
    assert methods["vanilla"] == "ancestral" and methods["contrastive-k10-a0.6"] == "contrastive"
    assert all(parse_decoding(d).method == methods[name] for name, d in resolved["decoding"].items())
    # score_temperature is a default of mode stochastic only: a resolved argmax or paper config parses too
    from poeval import config

    assert config.fill({"top_k": 4, "penalty_alpha": 0.6}, "#/$defs/decoding")["score_temperature"] == 0.1
    argmax = config.fill({"top_k": 4, "penalty_alpha": 0.6, "mode": "argmax"}, "#/$defs/decoding")
    assert "score_temperature" not in argmax and parse_decoding(argmax).search_temperature == 0.0


def test_a_port_refuses_a_contrastive_decoding():
    from poeval.generators.decoding import ancestral_only

    with pytest.raises(PoevalError, match="sa samples ancestrally"):
        ancestral_only(parse_decoding({"top_k": 4, "penalty_alpha": 0.6}), "sa")
