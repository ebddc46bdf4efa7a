"""dvc.yaml is complete: `dvc repro` reruns a stage whenever a params key or a file it reads changes.

Each check is a function of the parsed files, tried on the real dvc.yaml and on a broken copy (the checks
must be able to fail)."""

import copy
import csv
import json
from pathlib import Path

import pytest
import yaml
from built_run import fresh_clone, git_dvc

ROOT = Path(__file__).resolve().parents[2]
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
    assert "src/poeval/generators/poetic/deepspeare/model.py" in files and "workflow/rules/common.smk" in files
    assert uncovered_files(dvc, files) == []


def test_the_stages_form_a_chain(dvc):
    assert list(dvc["stages"]) == ["data", "train", "sample", "metrics", "tables"]
    assert chain_breaks(dvc) == []


def test_the_checks_catch_an_incomplete_dvc_yaml(dvc):
    """The shape of dvc.yaml before deps and params were completed: the sample stage read the transformers sampler only,
    no stage listed `poetic`, and metrics depended on the tables' output."""
    broken = copy.deepcopy(dvc)
    stages = broken["stages"]
    stages["sample"]["deps"] = ["models", "src/poeval/generators/lm/generation.py", "workflow/rules/sample.smk"]
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
    assert "src/poeval/generators/poetic/deepspeare/model.py" in missing and "workflow/rules/common.smk" in missing
    assert "src/poeval/generators/lm/generation.py" not in missing and "workflow/rules/sample.smk" not in missing
    assert chain_breaks(broken) == ["metrics depends on results/tables of tables (not before it)"]
    stages["train"]["deps"].remove("data")
    assert "train depends on no output of data" in chain_breaks(broken)


def _mtimes(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): p.stat().st_mtime_ns for d in ("data", "models", "results")
            for p in (root / d).rglob("*") if p.is_file()}


@pytest.mark.e2e
def test_dvc_repro_in_a_fresh_clone_reruns_what_the_stamps_call_stale(dvc_run, tmp_path):
    """Push a tiny run to a local DVC remote, pull it into a fresh clone (no .snakemake/metadata), change
    training.max_steps and `dvc repro`: the checkpoint and everything after it are rebuilt, nothing
    else, and `poeval provenance --check` passes. Plain Snakemake would say "Nothing to be done". Then edit
    one file of a samples system (examples/my-generator.yaml): `poeval stale` names its import and cell,
    and `dvc repro` rebuilds exactly those and the tables that show them."""
    import os

    from poeval import config as poeval_config
    from poeval.cli import main
    from poeval.report import stale

    # the lock holds every stage as built: only the stage marked always_changed would run
    assert git_dvc(dvc_run, "dvc", "status").split() == ["sample:", "always", "changed"]
    clone = fresh_clone(dvc_run, tmp_path / "clone")
    before = _mtimes(clone)

    text = (clone / "params.yaml").read_text()
    (clone / "params.yaml").write_text(text.replace("max_steps: 80\n", "max_steps: 100\n", 1))
    out = git_dvc(clone, "dvc", "repro")
    after = _mtimes(clone)
    rebuilt = sorted(p for p in before if after.get(p) != before[p])
    model, cell = "models/en/gpt2-s/", "results/metrics/en/gpt2-s/vanilla/lexical.json"
    assert rebuilt == sorted(
        [p for p in before if p.startswith(model)] + [cell]
        + ["results/curves/en/gpt2-s.tsv", "results/samples/en/gpt2-s/vanilla.jsonl",
           "results/samples/en/gpt2-s/vanilla.stats.json"]
        + _tables("sampling", "table4") + _tables("table12", "table2", family=True)
        + _tables("table12_common_n", "table2_common_n", common_n=True))   # gpt2-s keeps its cell there
    assert "training.max_steps: recorded 80, now 100" in out
    log = json.loads((clone / model / "training_log.json").read_text())
    assert log["provenance"]["params"]["training"]["max_steps"] == 100
    os.chdir(clone)
    assert main(["provenance", "results/tables/table2.tsv", "--row", "gpt2-s", "--column", "mattr_pct", "--check"]) == 0
    assert main(["stale", "--check"]) == 0

    # a user's sample file changes (it is in git, as examples/ is here): its import is stale by its stamp
    with open(clone / "examples/samples/my-generator.en.txt", "a") as handle:
        handle.write("\nThe lamp is lit, the door is wide,\nThe supper waits upon the board;\n"
                     "The traveller has come inside\nAnd hangs his cloak and lays his sword.\n")
    mine = "results/samples/en/my-generator/plain-text"
    found = {s.output for s in stale.stale_outputs(poeval_config.read("params.yaml"), ".")}
    # and the tables that show its cell, which record the cells they were built from
    # a file of unknown size is drawn down to the common n (20: the systems' sampling.n) in the companions
    drawn = "results/metrics/en/my-generator/plain-text/lexical.n20.json"
    assert found == {f"{mine}.stats.json", "results/metrics/en/my-generator/plain-text/lexical.json", drawn,
                     *(f"results/tables/{t}.tsv" for t in ("sampling", "table4", "table12", "table12_common_n"))}
    before = _mtimes(clone)
    git_dvc(clone, "dvc", "repro")
    after = _mtimes(clone)
    assert sorted(p for p in before if after.get(p) != before[p]) == sorted(
        [f"{mine}.jsonl", f"{mine}.stats.json", "results/metrics/en/my-generator/plain-text/lexical.json", drawn]
        + _tables("sampling", "table4") + _tables("table12", family=True)
        + _tables("table12_common_n", common_n=True))
    assert json.loads((clone / f"{mine}.stats.json").read_text())["valid"] == 10
    assert main(["stale", "--check"]) == 0

    # a param only a table reads (issue 39, item 8): the family tables' tests are redone with 99 permutations
    text = (clone / "params.yaml").read_text()
    (clone / "params.yaml").write_text(text.replace("permutations: 1999\n", "permutations: 99\n", 1))
    assert main(["stale", "--check"]) == 3
    before = _mtimes(clone)
    # the tables stage alone: the metrics stage lists all of `metrics` too, but its stamps are fresh (stale
    # --check names only tables), so its Snakemake runs would build nothing, as the step above shows
    git_dvc(clone, "dvc", "repro", "--single-item", "tables")
    after = _mtimes(clone)
    assert sorted(p for p in before if after.get(p) != before[p]) == sorted(_tables("table12", "table2", family=True))
    with open(clone / "results/tables/table2_tests.tsv", encoding="utf-8") as handle:
        counts = {row["permutations"] for row in csv.DictReader(handle, delimiter="\t") if row["test"] != "NA"}
    assert counts and counts <= {"99", "all"}, counts
    assert main(["stale", "--check"]) == 0


def _tables(*names: str, family: bool = False, common_n: bool = False) -> list[str]:
    """The files a table rule writes: the table and its stamp, a family table's intervals and tests, a common-n
    companion's intervals."""
    kinds = (".tsv", ".tsv.stamp.json") + ((".ci.tsv", "_tests.tsv") if family else ()) + ((".ci.tsv",) if common_n else ())
    return [f"results/tables/{name}{kind}" for name in names for kind in kinds]
