"""A tiny run built as the main job builds it, shared by the DVC and staleness tests: Snakemake, then `poeval
dvc-commit` (dvc.lock), pushed to a local DVC remote and committed to git."""

import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from built_run import ROOT, git_dvc, load


@pytest.fixture(scope="session")
def dvc_run(tmp_path_factory) -> Path:
    """A git + DVC repository of a tiny run (gpt2-s and the samples system my-generator, one decoding, the
    lexical family), its DVC remote beside it; Snakemake's .snakemake/metadata stays in it. Tests copy or
    clone it: they must not change it."""
    from poeval import config as poeval_config

    tmp = tmp_path_factory.mktemp("dvc_run")
    repo = tmp / "repo"
    for d in ("workflow", "profiles", "src/poeval"):
        shutil.copytree(ROOT / d, repo / d, ignore=shutil.ignore_patterns("__pycache__"))
    for f in ("Snakefile", "dvc.yaml", ".dvcignore", ".gitignore"):
        shutil.copy(ROOT / f, repo / f)
    shutil.copytree(ROOT / "examples", repo / "examples")
    # DVC reads params.yaml alone: the tiny overlay, one system, one decoding, one cheap family, no similarity
    # between rows (an encoder run per pair; the tiny DAG of test_workflow builds it)
    params = poeval_config.merge(load("params.yaml"), load("config/scale/tiny.yaml"))
    params = poeval_config.merge(params, {"models": load("examples/my-generator.yaml")["models"]})
    params = poeval_config.merge(params, {
        "systems": ["gpt2-s", "my-generator"], "decodings": ["vanilla"], "style_adherence": {"pairs": None},
        "metrics": {"families": ["lexical"], "similarity": {"enabled": False}}, "training": {"max_steps": 80, "eval_every": 20},
        "figures": {f"figure{i}": {"system": "gpt2-s"} for i in range(10, 16)}})
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"   # poeval, snakemake
    # built as the main job builds (./run.sh run): Snakemake, then `dvc commit` writes dvc.lock
    main_job = next(line for line in (ROOT / "run.sh").read_text().splitlines() if line.strip().startswith("run)"))
    assert [c.strip() for c in main_job.split(";")[1:3]] == ['snakemake -c "${CORES:-all}"', "poeval dvc-commit"], main_job
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "t@example.org"], ["git", "config", "user.name", "t"],
                ["dvc", "init", "-q"], ["snakemake", "-c", "2"], ["poeval", "dvc-commit"],
                ["dvc", "remote", "add", "-d", "store", str(tmp / "store")],
                ["dvc", "push"], ["git", "add", "-A"], ["git", "commit", "-qm", "tiny run"]):
        git_dvc(repo, *cmd)
    return repo
