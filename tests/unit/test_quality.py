"""The quality family (poeval.metrics.quality): fluency against a hand loop over the tokens of a tiny causal LM,
the form shares and NoveltyBench's utility on hand-labelled quatrains, the Pareto frontier against brute force,
the note on a system scored by its own model, and the frontier table from cells."""

import json
import random

import pytest
import torch

from poeval import api, config
from poeval.io import write_jsonl

FROST = ["Whose woods these are I think I know.", "His house is in the village though;",
         "He will not see me stopping here", "To watch his woods fill up with snow."]
QUATRAINS = [FROST,   # iambic tetrameter, every verse: it rhymes and scans
             ["I saw a cat upon a mat", "and it was very very fat",   # rhymes; its last verses are prose
              "Yesterday the committee approved the municipal budget", "Representatives discussed infrastructure"],
             [v.lower().replace(",", "").replace(";", "") for v in FROST],   # the same class as FROST
             ["Yesterday the committee approved the budget", "Representatives discussed infrastructure",
              "Nevertheless", "Several amendments were postponed indefinitely"]]   # neither
# hand labels of the rhyme schemes (the records carry them, as the corpus files do); the metre labeller runs
SCHEMES = ["aaba", "aabc", "aaba", "abcd"]


@pytest.fixture(scope="module")
def reference_lm(tmp_path_factory):
    """A tiny GPT-2 with a trained word-level tokenizer, saved as a checkpoint folder."""
    import transformers as tf

    from poeval.generators.lm.build import train_tokenizer

    tok = train_tokenizer(["\n".join(q) for q in QUATRAINS] * 3, vocab_size=200)
    torch.manual_seed(0)
    model = tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=1, n_head=2, n_positions=256,
                                             bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id))
    out = tmp_path_factory.mktemp("reference_lm") / "lm"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out, model.eval(), tok


def _files(tmp_path):
    samples = [{"id": f"s{i}", "lines": q, "scheme": s} for i, (q, s) in enumerate(zip(QUATRAINS, SCHEMES))]
    write_jsonl(tmp_path / "samples.jsonl", samples)
    write_jsonl(tmp_path / "ref.jsonl", [r | {"id": f"r{r['id']}"} for r in samples])
    return tmp_path / "samples.jsonl", tmp_path / "ref.jsonl"


def _by_hand(model, tok, lines) -> float:
    """BOS, the verses joined by newlines, EOS; the mean log_softmax of each next token."""
    ids = [tok.bos_token_id] + tok("\n".join(lines), add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), dim=-1)
    return sum(float(logp[p - 1, ids[p]]) for p in range(1, len(ids))) / (len(ids) - 1)


def test_fluency_form_and_utility_against_hand_computations(tmp_path, reference_lm):
    folder, model, tok = reference_lm
    samples, ref = _files(tmp_path)
    options = {"quality": {"reference_lm": str(folder), "batch_size": 3, "utility_k": 2, "utility_patience": 0.5}}
    result = api.evaluate(str(samples), reference=str(ref), lang="en", metrics=["quality"], options=options,
                          bootstrap_reps=20)["quality"]
    want = [_by_hand(model, tok, q) for q in QUATRAINS]
    assert result["per_poem"]["fluency"] == pytest.approx(want, abs=1e-5)   # padded batches of unequal lengths
    assert result["fluency"] == pytest.approx(sum(want) / 4, abs=1e-5)
    assert (result["rhymes"], result["scans"], result["rhymes_and_scans"]) == (0.75, 0.5, 0.5)
    # blocks (q0, q1) and (q2, q3): quality 1 + 9 * mean(rhymes, scans) = 10, 5.5 | 10, 1; q2 repeats q0 but
    # not within its block; weights (1 - p) / (1 - p^2) * p^(i-1) = 2/3, 1/3
    assert result["utility"] == pytest.approx(((2 / 3) * 10 + (1 / 3) * 5.5 + (2 / 3) * 10 + (1 / 3) * 1) / 2)
    assert result["own_model"] == 0.0 and "note" not in result
    low, high = result["ci"]["fluency"]
    assert low <= result["fluency"] <= high


def test_a_cell_whose_job_notes_the_reference_lm_as_its_own_model_says_so(tmp_path, reference_lm):
    from poeval.jobs.cell import given_job, run

    samples, ref = _files(tmp_path)
    note = "the reference LM is this system's own model"
    job = given_job(["quality"], "en", {"quality": {"reference_lm": str(reference_lm[0])}},
                    cell={"lang": "en", "system": "lm", "decoding": "vanilla", "note": note})
    cell = run(job, str(samples), str(ref), str(tmp_path / "cell.json"))
    assert (cell["quality"]["own_model"], cell["quality"]["note"], cell["cell"]["note"]) == (1.0, note, note)


def test_a_repeated_quatrain_in_a_block_adds_nothing_to_the_utility():
    from poeval.metrics import quality

    cls = quality.classes([QUATRAINS[0], QUATRAINS[2], QUATRAINS[1]])   # q2 equals q0 (case, punctuation aside)
    assert cls.tolist() == [0, 0, 2]
    u = torch.tensor([10.0, 10.0, 4.0]).numpy()
    w = [(1 - 0.5) / (1 - 0.5 ** 3) * 0.5 ** i for i in range(3)]
    assert quality.utility(cls, u, 3, 0.5) == pytest.approx(w[0] * 10 + w[2] * 4)
    assert quality.utility(cls, u, 4, 0.5) is None   # no whole block


def _dominated(p, q):
    return q[0] >= p[0] and q[1] >= p[1] and (q[0] > p[0] or q[1] > p[1])


def test_the_pareto_front_is_the_set_of_undominated_points():
    from poeval.metrics.quality import pareto_front

    rng = random.Random(3)
    for _ in range(200):
        pts = [(rng.randint(0, 4), rng.randint(0, 4)) for _ in range(rng.randint(1, 7))]   # ties on purpose
        want = [i for i, p in enumerate(pts) if not any(_dominated(p, q) for q in pts)]
        assert pareto_front(pts) == want, pts
    assert pareto_front([(1.0, None), (float("nan"), 2.0), (0.0, 0.0)]) == [2]


def _params(root, **quality):
    given = {"systems": ["gpt2-s", "gemma3"], "metrics": {"families": ["diversity", "quality"], "quality": quality}}
    return config.fill(config.merge(config.read(root / "params.yaml"), given))


def test_a_system_of_the_reference_lm_is_marked_in_its_cell_job(root):
    from poeval.jobs.cell import cell_job

    params = _params(root)
    assert "note" in cell_job(params, "en", "gemma3", "vanilla", "quality").cell
    for system, decoding in (("gpt2-s", "vanilla"), ("HUMAN", "human0")):
        assert "note" not in cell_job(params, "en", system, decoding, "quality").cell
    assert "note" not in cell_job(_params(root, reference_lm="smollm2-135m"), "en", "gemma3", "vanilla", "quality").cell
    assert "note" not in cell_job(params, "en", "gemma3", "vanilla", "diversity").cell   # quality cells only


def _cells(tmp_path, system, decoding, fluency, form, vendi, own=0.0) -> list[str]:
    """A row's quality and diversity cells, one file each as the workflow writes them."""
    sections = {"quality": {"fluency": fluency, "rhymes_and_scans": form, "utility": 5.0, "own_model": own},
                "diversity": {"vendi": vendi, "self_bleu": 100 - vendi}}
    out = []
    for family, section in sections.items():
        path = tmp_path / f"{system}.{decoding}.{family}.json"
        path.write_text(json.dumps({"cell": {"lang": "en", "system": system, "decoding": decoding}, "n_poems": 10,
                                    family: section}))
        out.append(str(path))
    return out


def test_the_frontier_table_flags_each_systems_undominated_configs(tmp_path):
    from poeval.cli import main

    rows = [("a", "x", -3.0, 0.5, 10), ("a", "y", -4.0, 0.6, 20), ("a", "z", -5.0, 0.4, 15), ("b", "x", -1.0, 0.9, 1),
            ("HUMAN", "human0", -2.0, 0.7, 30)]
    cells = [path for row in rows for path in _cells(tmp_path, *row, own=float(row[0] == "b"))]
    out = tmp_path / "frontier.tsv"
    assert main(["frontier", *cells, "--measure", "self_bleu", "--out", str(out), "--figure",
                 str(tmp_path / "f.png")]) == 0
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[0][4] == "100_minus_self_bleu"
    got = {(r[1], r[2]): (r[8], r[9], r[10]) for r in rows[1:]}
    # a: x and y are on the fluency front, z is dominated by y; by form y alone and x, z below it
    assert got == {("a", "x"): ("yes", "no", "no"), ("a", "y"): ("yes", "yes", "no"), ("a", "z"): ("no", "no", "no"),
                   ("b", "x"): ("no", "no", "yes"), ("HUMAN", "-"): ("no", "no", "no")}
    assert (tmp_path / "f.png").stat().st_size > 0
