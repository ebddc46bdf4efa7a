"""dvc.yaml is complete: `dvc repro` reruns a stage whenever a params key or a file it reads changes.

Each check is a function of the parsed files, tried on the real dvc.yaml and on a broken copy (the checks
must be able to fail)."""

import copy
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CODE = ("src/poeval", "workflow", "profiles")   # every file under these must be some stage's dependency


def _load(name: str) -> dict:
    return yaml.safe_load((ROOT / name).read_text(encoding="utf-8"))


def _paths(entries: list) -> list[str]:
    """Paths of a deps/outs list (an out may be ``{path: {persist: true}}``)."""
    return [str(next(iter(e))) if isinstance(e, dict) else str(e) for e in entries or []]


def _covered(path: str, deps: set[str]) -> bool:
    """A dep covers itself and, as a directory, everything under it."""
    return any(path == d.rstrip("/") or path.startswith(d.rstrip("/") + "/") for d in deps)


def uncovered_params(dvc: dict, params: dict) -> list[str]:
    """Params keys in no stage: a key is covered when it or a parent is listed; a key only some of
    whose subkeys are listed (``metrics.families``) needs every subkey covered."""
    listed = {str(p) for stage in dvc["stages"].values() for p in stage.get("params") or []}

    def missing(key: str, value) -> list[str]:
        if key in listed:
            return []
        if isinstance(value, dict) and any(p.startswith(key + ".") for p in listed):
            return [m for sub, v in value.items() for m in missing(f"{key}.{sub}", v)]
        return [key]

    return [m for key, value in params.items() for m in missing(key, value)]


def code_files(root: Path) -> list[str]:
    """The files the stages run: the package, the workflow, and a Snakefile at the top if there is one."""
    files = [p for d in CODE for p in (root / d).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    files += [root / "Snakefile"] if (root / "Snakefile").is_file() else []
    return sorted(p.relative_to(root).as_posix() for p in files)


def uncovered_files(dvc: dict, files: list[str]) -> list[str]:
    deps = {p for stage in dvc["stages"].values() for p in _paths(stage.get("deps"))}
    return [f for f in files if not _covered(f, deps)]


def chain_breaks(dvc: dict) -> list[str]:
    """Stages in file order form a chain: each stage after the first depends on an output of the one
    before it, and none on an output of itself or a later stage."""
    stages = list(dvc["stages"].items())
    outs = [set(_paths(spec.get("outs"))) for _, spec in stages]
    breaks = []
    for i, (name, spec) in enumerate(stages):
        deps = set(_paths(spec.get("deps")))
        if i and not deps & outs[i - 1]:
            breaks.append(f"{name} depends on no output of {stages[i - 1][0]}")
        later = [(stages[j][0], sorted(deps & outs[j])) for j in range(i, len(stages)) if deps & outs[j]]
        breaks += [f"{name} depends on {', '.join(paths)} of {other} (not before it)" for other, paths in later]
    return breaks


@pytest.fixture(scope="module")
def dvc() -> dict:
    return _load("dvc.yaml")


def test_every_params_key_is_read_by_some_stage(dvc):
    assert uncovered_params(dvc, _load("params.yaml")) == []


def test_every_code_file_is_a_dependency_of_some_stage(dvc):
    files = code_files(ROOT)
    assert "src/poeval/generators/poetic/deepspeare.py" in files and "workflow/rules/common.smk" in files
    assert uncovered_files(dvc, files) == []


def test_the_stages_form_a_chain(dvc):
    assert list(dvc["stages"]) == ["data", "train", "sample", "metrics", "tables"]
    assert chain_breaks(dvc) == []


def test_the_checks_catch_an_incomplete_dvc_yaml(dvc):
    """The shape of dvc.yaml before deps and params were completed: the sample stage read lm.py only,
    no stage listed `poetic`, and metrics depended on the tables' output."""
    broken = copy.deepcopy(dvc)
    stages = broken["stages"]
    stages["sample"]["deps"] = ["models", "src/poeval/generators/lm.py", "workflow/rules/sample.smk"]
    for stage in stages.values():
        stage["params"] = [p for p in stage.get("params") or [] if p not in ("poetic", "sampling")]
    stages["tables"]["params"] += ["sampling.n"]
    stages["metrics"]["deps"] += ["results/tables"]
    params = _load("params.yaml")
    assert uncovered_params(broken, params) == ["poetic"] + [f"sampling.{k}" for k in params["sampling"] if k != "n"]
    files = code_files(ROOT)
    for stage in ("data", "train", "metrics", "tables"):
        stages[stage]["deps"] = [d for d in stages[stage]["deps"] if d not in CODE]
    missing = uncovered_files(broken, files)
    assert "src/poeval/generators/poetic/deepspeare.py" in missing and "workflow/rules/common.smk" in missing
    assert "src/poeval/generators/lm.py" not in missing and "workflow/rules/sample.smk" not in missing
    assert chain_breaks(broken) == ["metrics depends on results/tables of tables (not before it)"]
    stages["train"]["deps"].remove("data")
    assert "train depends on no output of data" in chain_breaks(broken)
