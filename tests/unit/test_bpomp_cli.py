"""`poeval bpomp ...` end to end on hand-made limericks and tiny scratch models (CPU, seconds)."""

import json

import pytest

from poeval import config
from poeval import params as poeval_params
from poeval.errors import PoevalError
from poeval import cli, paths
from poeval.bpomp import report
from poeval.generators import mlm
from poeval.io import read_json, read_jsonl, write_jsonl

from helpers import GOOD, SIXTH, _records


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    root = tmp_path_factory.mktemp("bpomp_cli")
    write_jsonl(root / "limericks.jsonl", _records(GOOD + [SIXTH]))
    quatrains = [{"id": f"q{i}", "lines": lines[:4]} for i, lines in enumerate(GOOD + [SIXTH])] * 4
    write_jsonl(root / "train.jsonl", quatrains)
    write_jsonl(root / "dev.jsonl", quatrains[:6])
    cfg = {"vocab_size": 150, "n_layer": 1, "n_embd": 32, "n_head": 2, "n_positions": 128, "batch_size": 8,
           "max_steps": 10, "eval_every": 5, "eval_quatrains": 6, "warmup_steps": 2}
    assert cli.main(["bpomp", "train-mlm", "--train", str(root / "train.jsonl"), "--dev", str(root / "dev.jsonl"),
                     "--out", str(root / "bert"), "--config", json.dumps(cfg)]) == 0
    return root


def test_cli_pipeline(work, capsys):
    w = str(work)
    assert cli.main(["bpomp", "corpus", f"{w}/limericks.jsonl", "--out", f"{w}/kept.jsonl",
                     "--report", f"{w}/kept.json"]) == 0
    assert read_json(f"{w}/kept.json")["kept"] == 6
    assert cli.main(["bpomp", "pairs", f"{w}/kept.jsonl", "--task", "word_swap", "--out", f"{w}/pairs.jsonl"]) == 0
    pairs = list(read_jsonl(f"{w}/pairs.jsonl"))
    assert len(pairs) == 6
    capsys.readouterr()
    assert cli.main(["bpomp", "score", f"{w}/pairs.jsonl", "--model", f"{w}/bert", "--kind", "masked",
                     "--variant", "within_word_l2r", "--out", f"{w}/scores.jsonl", "--stats", f"{w}/stats.json"]) == 0
    scored = list(read_jsonl(f"{w}/scores.jsonl"))
    assert all(isinstance(p["score_original"], float) and p["scorer"] == "masked:within_word_l2r" for p in scored)
    assert read_json(f"{w}/stats.json")["s_per_1000_pairs"] > 0
    from transformers import AutoModelForMaskedLM

    counted = AutoModelForMaskedLM.from_pretrained(f"{w}/bert", trust_remote_code=False).num_parameters()
    assert read_json(f"{w}/stats.json")["parameters"] == counted
    capsys.readouterr()
    assert cli.main(["bpomp", "accuracy", f"{w}/scores.jsonl", "--bootstrap-reps", "20"]) == 0
    acc = json.loads(capsys.readouterr().out)["tasks"]["word_swap"]
    assert acc["n"] == 6 and 0 <= acc["ci95"][0] <= acc["accuracy"] <= acc["ci95"][1] <= 1
    assert cli.main(["bpomp", "accuracy", f"{w}/scores.jsonl", "--out", f"{w}/acc.json", "--scorer", "bert",
                     "--kind", "masked", "--model-label", "bert", "--variant", "within_word_l2r"]) == 0
    assert cli.main(["bpomp", "bigrams", f"{w}/train.jsonl", "--out", f"{w}/bigrams.json"]) == 0
    assert read_json(f"{w}/bigrams.json")["once was"] == 4
    assert cli.main(["bpomp", "errors", f"{w}/scores.jsonl", "--bigrams", f"{w}/bigrams.json",
                     "--out", f"{w}/err.json", "--scorer", "bert", "--quantiles", "0.5", "0", "--quiet"]) == 0
    assert cli.main(["bpomp", "table", "accuracy", f"{w}/acc.json", "--out", f"{w}/acc.tsv"]) == 0
    assert cli.main(["bpomp", "table", "errors", f"{w}/err.json", "--out", f"{w}/err.tsv"]) == 0
    rows = [line.split("\t") for line in (work / "acc.tsv").read_text().splitlines()]
    assert rows[0] == report.ACCURACY_HEADER and rows[1][:6] == ["word_swap", "bert", "masked", "bert",
                                                                 "within_word_l2r", "6"]
    cell = read_json(f"{w}/acc.json")["tasks"]["word_swap"]
    assert rows[1][10:] == [f"{v:.4f}" for s in ("per_token", "per_byte")
                            for v in (cell[s]["accuracy"], *cell[s]["ci95"])]
    rows = [line.split("\t") for line in (work / "err.tsv").read_text().splitlines()]
    assert rows[0] == report.ERRORS_HEADER
    diffs = sorted(abs(p["score_original"] - p["score_corrupted"]) for p in scored)
    top = sum(d >= (diffs[2] + diffs[3]) / 2 for d in diffs)  # the 0.5 quantile of 6 values
    wrong = sum(p["score_original"] < p["score_corrupted"] for p in scored)
    assert [r[1:5] for r in rows[1:]][-2:] == [["all", "0.00", "all", "6"], ["all", "0.00", "errors", str(wrong)]]
    assert [r[1:5] for r in rows[1:]][:2] == [["word_swap", "0.50", "all", str(top)],
                                              ["word_swap", "0.50", "errors", rows[2][4]]] and len(rows) == 9
    assert cli.main(["bpomp", "table", "errors-figure", f"{w}/err.json", "--out", f"{w}/err.png"]) == 0
    assert (work / "err.png").read_bytes()[:4] == b"\x89PNG"


def test_accuracy_against_scorer_size(tmp_path, capsys):
    """Each accuracy cell beside the parameters of its scores' stats, scorers by size; an endpoint's scorer
    (no count) last and off the figure."""
    def cell(name, acc):
        summary = {"accuracy": acc, "ties": 0, "ci95": [acc - 0.1, acc + 0.1]}
        return {"scorer": name, "kind": "causal", "model": name,
                "tasks": {"synonym": {"n": 10, **summary, "per_token": None, "per_byte": summary}}}

    files = {}
    for name, acc, params in (("big", 0.9, 135_000_000), ("served", 0.7, None), ("small", 0.6, 40_000)):
        (tmp_path / f"{name}.json").write_text(json.dumps(cell(name, acc)))
        (tmp_path / f"{name}.stats.json").write_text(json.dumps({"pairs": 10, "parameters": params}))
        files[name] = (str(tmp_path / f"{name}.json"), str(tmp_path / f"{name}.stats.json"))
    names = ("big", "served", "small")
    cells, stats = [files[n][0] for n in names], [files[n][1] for n in names]
    out = tmp_path / "size.tsv"
    assert cli.main(["bpomp", "table", "by-size", *cells, "--stats", *stats, "--out", str(out)]) == 0
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert [r[:9] for r in rows[1:]] == [
        ["small", "causal", "small", "40000", "synonym", "10", "0.6000", "0.5000", "0.7000"],
        ["big", "causal", "big", "135000000", "synonym", "10", "0.9000", "0.8000", "1.0000"],
        ["served", "causal", "served", "NA", "synonym", "10", "0.7000", "0.6000", "0.8000"]]
    assert [r[9:] for r in rows[1:]] == [["NA", "0.6000"], ["NA", "0.9000"], ["NA", "0.7000"]]
    assert cli.main(["bpomp", "table", "by-size-figure", *cells, "--stats", *stats, "--out", str(tmp_path / "s.png")]) == 0
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()
    assert cli.main(["bpomp", "table", "by-size", *cells, "--stats", *stats[:2], "--out", str(tmp_path / "x.tsv")]) == 2
    assert "2 stats files for 3 accuracy cells" in capsys.readouterr().err
    assert cli.main(["bpomp", "table", "accuracy", *cells, "--stats", *stats, "--out", str(tmp_path / "x.tsv")]) == 2
    assert not (tmp_path / "x.tsv").exists()


def test_cli_errors_exit_2(work, capsys):
    w = str(work)
    assert cli.main(["bpomp", "pairs", f"{w}/missing.jsonl", "--task", "line_swap", "--out", f"{w}/x.jsonl"]) == 2
    assert "input not found" in capsys.readouterr().err
    assert cli.main(["bpomp", "score", f"{w}/limericks.jsonl", "--model", f"{w}/bert", "--kind", "masked",
                     "--out", f"{w}/x.jsonl"]) == 2
    assert "'original' and 'corrupted'" in capsys.readouterr().err
    assert cli.main(["bpomp", "score", f"{w}/limericks.jsonl", "--model", f"{w}/nowhere", "--kind", "causal",
                     "--variant", "within_word_l2r", "--out", f"{w}/x.jsonl"]) == 2
    assert "masked scorers only" in capsys.readouterr().err
    assert cli.main(["bpomp", "accuracy", f"{w}/limericks.jsonl"]) == 2
    assert "run the scorer first" in capsys.readouterr().err
    assert cli.main(["bpomp", "table", "errors", f"{w}/kept.json", "--out", f"{w}/x.tsv"]) == 2
    assert "not a BPoMP cell" in capsys.readouterr().err
    assert not (work / "x.jsonl").exists() and not (work / "x.tsv").exists()


def _problems(cfg) -> str:
    """The params step's message for ``cfg`` ('' when it resolves)."""
    try:
        poeval_params.resolve(cfg)
    except PoevalError as err:
        return str(err)
    return ""


def test_params_cross_checks():
    given = config.read("params.yaml")
    base = poeval_params.load("params.yaml")
    assert base["bpomp"]["enabled"] and _problems(given) == ""          # the main job's BPoMP is sound
    assert _problems(given | {"bpomp": given["bpomp"] | {"enabled": False, "scorers": [
        {"name": "x", "kind": "masked", "model": "gpt2-s"}]}}) == ""           # disabled: nothing checked
    b = given["bpomp"] | {"enabled": True}
    cfg = given | {"bpomp": b | {"scorers": [{"name": "x", "kind": "causal", "model": "bert-s"},
                                             {"name": "x", "kind": "masked", "model": "gpt2-s"},
                                             {"name": "y", "kind": "causal", "model": "gpt2-s", "variant": "within_word_l2r"}],
                                 "pairs": b["pairs"] | {"synonym_choice": "mlm"}}}
    problems = _problems(cfg)
    for key in ("scorers.0.model", "scorers.1.name", "scorers.1.model", "scorers.2.variant", "pairs.synonym_model"):
        assert f"bpomp.{key}" in problems
    # the masked LM that chooses the synonyms must not also score them: both keys named
    same = given | {"bpomp": b | {"pairs": b["pairs"] | {"synonym_choice": "mlm", "synonym_model": "bert-s"}}}
    problems = _problems(same).splitlines()[1:]
    masked = next(i for i, s in enumerate(b["scorers"]) if s["model"] == "bert-s")
    assert len(problems) == 1 and "bpomp.pairs.synonym_model" in problems[0] and f"bpomp.scorers.{masked}.model" in problems[0]
    other = same["bpomp"] | {"scorers": [s for s in b["scorers"] if s["model"] != "bert-s"]}
    assert _problems(given | {"bpomp": other}) == ""
    assert report.scorer_model({"kind": "causal", "model": "gpt2-s"}, base) == (paths.model_dir("en", "gpt2-s"), True)
    assert report.scorer_model({"kind": "masked", "model": "bert-s"}, base) == (paths.mlm_dir("en", "bert-s"), True)
    assert report.scorer_model({"kind": "masked", "model": "/m/bert"}, base) == ("/m/bert", False)
    assert report.scorer_model({"kind": "causal", "model": "smollm2-135m"}, base) == (paths.pretrained("smollm2-135m"), True)
    assert report.scorer_model({"kind": "causal", "model": "org/model"}, base) == ("org/model", False)
    assert set(base["bpomp"]["mlm"]["bert-s"]) <= set(mlm.MLM_DEFAULTS)
    bad = base | {"bpomp": b | {"pairs": b["pairs"] | {"n": 0}, "typo": 1}}
    with pytest.raises(PoevalError, match="bpomp.pairs.n|bpomp.typo"):
        poeval_params.resolve(bad)


def test_rule_jobs_run_as_the_hand_options_and_stamp_the_job(work, capsys):
    """The workflow's --job (poeval.jobs.bpomp, built from the resolved params) scores and counts as the hand
    options that say the same, and records the job in the stamp beside the output; --job refuses a hand
    option beside it, and --stamp is gone."""
    from poeval.jobs import bpomp as jobs

    w, model = str(work), str(work / "bert")
    given = config.read("params.yaml")
    b = given["bpomp"] | {"enabled": True, "score": {"batch_size": 2}, "bootstrap": {"reps": 30, "seed": 5},
                          "scorers": [{"name": "b", "kind": "masked", "model": model, "variant": "within_word_l2r"}],
                          "errors": {"bigrams": f"{w}/train.jsonl", "confidence_quantiles": [0.5, 0]}}
    P = poeval_params.resolve(given | {"bpomp": b})
    write_jsonl(f"{w}/jp.jsonl", list(read_jsonl(f"{w}/limericks.jsonl")))
    assert cli.main(["bpomp", "pairs", f"{w}/jp.jsonl", "--out", f"{w}/jpairs.jsonl",
                     "--job", jobs.pairs_job(P, "word_swap").to_json()]) == 0
    assert cli.main(["bpomp", "bigrams", f"{w}/train.jsonl", "--out", f"{w}/jbigrams.json",
                     "--job", jobs.bigrams_job(P).to_json()]) == 0
    assert read_json(f"{w}/jbigrams.json.stamp.json")["provenance"]["params"] == {}
    runs = {"job": [], "hand": ["--model", model, "--kind", "masked", "--variant", "within_word_l2r", "--batch-size",
                                "2", "--model-param", "bpomp.scorers.0.model"]}
    for name, hand in runs.items():
        job = ["--job", jobs.score_job(P, "b", "word_swap").to_json()] if name == "job" else hand
        assert cli.main(["bpomp", "score", f"{w}/jpairs.jsonl", *job, "--out", f"{w}/s-{name}.jsonl"]) == 0
        job = (["--job", jobs.accuracy_job(P, "b", "word_swap").to_json()] if name == "job" else
               ["--scorer", "b", "--kind", "masked", "--model-label", model, "--variant", "within_word_l2r",
                "--bootstrap-reps", "30", "--seed", "5"])
        assert cli.main(["bpomp", "accuracy", f"{w}/s-{name}.jsonl", *job, "--out", f"{w}/a-{name}.json"]) == 0
        job = (["--job", jobs.errors_job(P, "b").to_json()] if name == "job" else
               ["--scorer", "b", "--quantiles", "0.5", "0"])
        assert cli.main(["bpomp", "errors", f"{w}/s-{name}.jsonl", "--bigrams", f"{w}/jbigrams.json", *job,
                         "--out", f"{w}/e-{name}.json", "--quiet"]) == 0
    for out in ("s-{}.jsonl", "a-{}.json", "e-{}.json"):
        assert (work / out.format("job")).read_bytes() == (work / out.format("hand")).read_bytes(), out
        assert not (work / f"{out.format('hand')}.stamp.json").exists()
    stamp = read_json(f"{w}/a-job.json.stamp.json")["provenance"]
    assert stamp["params"] == {"bootstrap": {"reps": 30, "seed": 5}, "scorer": b["scorers"][0]}
    assert stamp["inputs"]["1"]["path"] == f"{w}/s-job.jsonl"
    assert read_json(f"{w}/s-job.jsonl.stamp.json")["provenance"]["params"]["model"] == {
        "ref": model, "param": "bpomp.scorers.0.model"}
    capsys.readouterr()
    assert cli.main(["bpomp", "accuracy", f"{w}/s-job.jsonl", "--seed", "9", "--job",
                     jobs.accuracy_job(P, "b", "word_swap").to_json()]) == 2
    assert "--seed" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["bpomp", "accuracy", f"{w}/s-job.jsonl", "--stamp", "{}"])
