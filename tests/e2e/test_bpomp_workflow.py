"""The BPoMP targets of the Snakemake DAG on the tiny overlays, in a temporary directory (~2-3 minutes)."""

import json
import shutil

import pytest

from poeval import paths
from helpers import ROOT, _rows, _workdir, snakemake

TARGETS = (paths.table("bpomp_accuracy"), paths.table("bpomp_errors"), paths.figure("bpomp_errors"),
           paths.table("bpomp_by_size"))
CONFIGS = ("config/scale/tiny.yaml", "config/bpomp/tiny.yaml", "config/limericks.yaml")


def _bpomp_workdir(tmp_path, shared_data):
    work = _workdir(tmp_path)
    shutil.copy(ROOT / "config" / "bpomp" / "tiny.yaml", work / "config" / "bpomp" / "tiny.yaml")
    path = shared_data / "limericks" / "fortune_limericks.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    (work / "config" / "limericks.yaml").write_text(f"bpomp: {{corpus: {{path: {json.dumps(str(path))}}}}}\n")
    return work


def test_disabled_by_default_and_checked_before_any_job(tmp_path):
    work = _workdir(tmp_path)
    proc = snakemake(work, "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "bpomp" not in proc.stdout + proc.stderr
    (work / "config" / "bad.yaml").write_text(
        "bpomp: {enabled: true, scorers: [{name: x, kind: causal, model: gpt2-s, variant: within_word_l2r}]}\n")
    proc = snakemake(work, "-n", configs=("config/scale/tiny.yaml", "config/bad.yaml"))
    assert proc.returncode != 0 and "bpomp.scorers.0.variant" in proc.stderr + proc.stdout


@pytest.mark.e2e
def test_bpomp_targets_on_tiny_overlay(tmp_path, shared_data):
    work = _bpomp_workdir(tmp_path, shared_data)
    proc = snakemake(work, "-c", "2", *TARGETS, configs=CONFIGS)
    assert proc.returncode == 0, proc.stderr[-4000:]

    acc = _rows(work / paths.table("bpomp_accuracy"))
    assert acc[0] == ["task", "scorer", "kind", "model", "variant", "pairs", "accuracy", "ci_low", "ci_high", "ties",
                      "acc_per_token", "ci_low_per_token", "ci_high_per_token",
                      "acc_per_byte", "ci_low_per_byte", "ci_high_per_byte"]
    assert [r[:3] for r in acc[1:]] == [[t, s, k] for t in ("word_swap", "line_swap", "synonym")
                                        for s, k in (("gpt2-s", "causal"), ("bert-s", "masked"))]
    for row in acc[1:]:
        assert row[5] == "30"
        for value, low, high in ((6, 7, 8), (10, 11, 12), (13, 14, 15)):   # raw, per token, per byte
            assert 0 <= float(row[low]) <= float(row[value]) <= float(row[high]) <= 1
    by_size = _rows(work / paths.table("bpomp_by_size"))
    assert {(r[0], r[4]) for r in by_size[1:]} == {(s, t) for s in ("gpt2-s", "bert-s")
                                                   for t in ("word_swap", "line_swap", "synonym")}
    assert all(int(r[3]) > 0 for r in by_size[1:])   # each scorer's parameter count, from its checkpoint
    assert acc[2][4] == "within_word_l2r"

    err = _rows(work / paths.table("bpomp_errors"))
    assert err[0] == ["scorer", "task", "quantile", "subset", "pairs", "pearson", "pearson_p", "spearman", "spearman_p"]
    assert len(err) == 1 + 2 * 4 * 5 * 2   # scorers x (3 tasks + all) x 5 cut-offs x (all, errors)
    by_key = {tuple(r[:4]): r for r in err[1:]}
    assert by_key[("gpt2-s", "all", "0.00", "all")][4] == "90"
    assert by_key[("bert-s", "synonym", "0.90", "all")][4] == "3"
    assert all(-1 <= float(r[5]) <= 1 for r in err[1:] if r[5] != "NA")
    assert (work / paths.figure("bpomp_errors")).read_bytes()[:4] == b"\x89PNG"

    log = json.loads((work / paths.mlm_dir("en", "bert-s") / "training_log.json").read_text())
    assert log["objective"] == "masked" and log["config"]["n_layer"] == 1
    stats = json.loads((work / paths.bpomp_score_stats("bert-s", "synonym")).read_text())
    assert stats["pairs"] == 30 and stats["s_per_1000_pairs"] > 0
    again = snakemake(work, "-c", "2", *TARGETS, configs=CONFIGS)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
