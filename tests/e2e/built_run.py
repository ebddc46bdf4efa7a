"""Helpers of the tests on a built run (the fixture ``dvc_run`` in conftest.py): git and DVC commands, a fresh clone."""

import os
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def load(name: str) -> dict:
    return yaml.safe_load((ROOT / name).read_text(encoding="utf-8"))


def git_dvc(cwd: Path, *cmd: str) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"{' '.join(cmd)}: {proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


def fresh_clone(repo: Path, clone: Path) -> Path:
    """`git clone` and `dvc pull`: the artifacts without Snakemake's metadata. Every pulled file (and the user's
    sample files, which git wrote before) gets one mtime, as a copy keeping times would: dvc checkout writes
    files in no particular order, and only the stamps (not a checkout order) may make anything rerun."""
    git_dvc(clone.parent, "git", "clone", "-q", str(repo), str(clone))
    git_dvc(clone, "dvc", "pull")
    assert not (clone / ".snakemake").exists()
    for d in ("data", "models", "results", "examples"):
        for path in (clone / d).rglob("*"):
            if path.is_file():
                os.utime(path, ns=(1_700_000_000 * 10**9,) * 2)
    return clone
