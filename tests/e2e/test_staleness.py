"""One staleness answer: `poeval stale`, `poeval provenance --check`, `snakemake -n` and `dvc status` agree on what
is stale in the shared tiny run (conftest.py ``dvc_run``) after a params change, an input file change, a rebuilt
venv, and in a fresh clone (`dvc pull`, no .snakemake/metadata), where Snakemake cannot know and
`poeval repro` forces what the stamps call stale (docs/dvc-provenance.md "Which tool to trust")."""

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from built_run import fresh_clone

# rules whose outputs carry no stamp: `poeval stale` cannot name them, Snakemake reruns them by its own triggers
UNSTAMPED = {"training_curve"}
ROWS = ("gpt2-s", "my-generator")   # Table 2's numbers whose chains provenance --check follows


def dry_run(run: Path) -> str:
    """`snakemake -n`, with its normal triggers."""
    proc = subprocess.run(["snakemake", "-n"], cwd=run, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def snakemake_jobs(out: str) -> dict[str, frozenset[str]]:
    """Each output of a dry run's jobs -> its job (the rule and its outputs)."""
    jobs = {}
    for block in out.split("\nrule ")[1:]:
        rule = block.split(":", 1)[0]
        outputs = re.search(r"^    output: (.*)$", block, re.M)
        if rule != "all" and outputs:
            job = frozenset([f"rule {rule}", *outputs.group(1).split(", ")])
            jobs |= {path: job for path in job}
    return jobs


def answers(run: Path) -> dict:
    """What each tool says is stale in ``run`` (the poeval commands in this process: no start-up each)."""
    from poeval import config as poeval_config
    from poeval.cli import main
    from poeval.report.stale import stale_outputs

    status = subprocess.run(["dvc", "status", "--json"], cwd=run, capture_output=True, text=True, timeout=600)
    assert status.returncode == 0, status.stderr[-2000:]
    here = Path.cwd()
    os.chdir(run)
    try:
        stale = [vars(item) for item in stale_outputs(poeval_config.read("params.yaml"), ".")]
        checks = {row: main(["provenance", "results/tables/table2.tsv", "--row", row, "--column", "mattr_pct",
                             "--check"]) for row in ROWS}
    finally:
        os.chdir(here)
    return {"stale": stale, "provenance": checks, "dvc": json.loads(status.stdout or "{}"),
            "snakemake": snakemake_jobs(dry_run(run))}


def stage_of(path: str, dvc: dict) -> str:
    return next(name for name, stage in dvc["stages"].items() for out in stage.get("outs") or []
                if path == next(iter(out)) or path.startswith(next(iter(out)) + "/"))


def assert_agree(run: Path, found: dict) -> None:
    """Snakemake's jobs are those of the outputs `poeval stale` names (and the unstamped rules'); provenance
    --check fails exactly for the numbers whose cell is stale; `dvc status` names the stages whose own params or
    inputs changed (and `sample`, always)."""
    outputs = {item["output"]: item for item in found["stale"]}
    jobs = set(found["snakemake"].values())
    named = {found["snakemake"].get(output) for output in outputs}
    assert None not in named, sorted(o for o in outputs if o not in found["snakemake"])
    assert named == {job for job in jobs if not {f"rule {r}" for r in UNSTAMPED} & job}
    assert found["provenance"] == {row: 3 if f"results/metrics/en/{row}/vanilla/lexical.json" in outputs else 0
                                   for row in ROWS}
    dvc = yaml.safe_load((run / "dvc.yaml").read_text())
    direct = {stage_of(o, dvc) for o, item in outputs.items()
              if not all(r.endswith("is rebuilt first") for r in item["reasons"])}
    assert set(found["dvc"]) == direct | {"sample"} and found["dvc"]["sample"][-1] == "always changed"


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def _new_sample_line(run: Path) -> None:
    with open(run / "examples/samples/my-generator.en.txt", "a") as handle:
        handle.write("\nThe lamp is lit, the door is wide,\nThe supper waits upon the board;\n"
                     "The traveller has come inside\nAnd hangs his cloak and lays his sword.\n")


def _rebuilt_venv(run: Path) -> None:
    """What a reinstall gives the files the run reads from its code: new times, the same bytes."""
    now = time.time()
    for path in [run / "Snakefile", *(p for d in ("src/poeval", "workflow", "profiles") for p in (run / d).rglob("*"))]:
        os.utime(path, (now, now))


CHANGES = {
    # a params change upstream of everything: the corpus report is stale by its stamp, all that was built from it
    # by the inputs it records
    "params": (lambda run: _replace(run / "params.yaml", "min_verse_chars: 11\n", "min_verse_chars: 12\n"),
               lambda n: n >= 20),
    "input file": (_new_sample_line, lambda n: n >= 5),
    "venv rebuild": (_rebuilt_venv, lambda n: n == 0),
}


@pytest.mark.e2e
@pytest.mark.parametrize("case", list(CHANGES))
def test_the_four_tools_agree_on_what_is_stale(dvc_run, tmp_path, case):
    change, count = CHANGES[case]
    run = tmp_path / "run"
    shutil.copytree(dvc_run, run, symlinks=True)   # times kept: Snakemake's metadata still matches
    change(run)
    found = answers(run)
    assert count(len(found["stale"])), found["stale"]
    assert_agree(run, found)


@pytest.mark.e2e
def test_in_a_fresh_clone_snakemake_cannot_know_and_poeval_repro_forces_what_the_stamps_say(dvc_run, tmp_path):
    """`dvc pull` into a fresh clone: nothing is stale, and all four say so. Then a params change: the stamps
    and dvc.lock see it; Snakemake, without its metadata, sees nothing, and `poeval repro` hands it the stale
    outputs (--forcerun), so its dry run then agrees."""
    clone = fresh_clone(dvc_run, tmp_path / "clone")
    found = answers(clone)
    assert found["stale"] == [] and found["snakemake"] == {}
    assert_agree(clone, found)
    _replace(clone / "params.yaml", "min_verse_chars: 11\n", "min_verse_chars: 12\n")
    found = answers(clone)
    assert len(found["stale"]) >= 20 and found["snakemake"] == {}
    proc = subprocess.run(["poeval", "repro", "--", "-n"], cwd=clone, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found["snakemake"] = snakemake_jobs(proc.stdout + proc.stderr)
    assert_agree(clone, found)
