"""The typed metric-cell job (poeval.jobs.cell) and the metric family records (poeval.metrics.families):
the job a rule passes is the job the command parses, a hand run builds the same type, a rule passes no
value outside its command's job, and a new family needs only its module, its record and the schema."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from poeval import config as poeval_config, paths
from poeval.cli import build_parser, main
from poeval.cli_args import _values
from poeval.errors import PoevalError
from poeval.io import write_jsonl
from poeval.jobs.base import parse
from poeval.jobs.cell import CellJob, cell_job
from poeval.metrics import families

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SHOWN = "Shell command: "   # how a dry run with -p prints each job's command


def _quatrains(prefix: str, n: int) -> list[dict]:
    return [{"id": f"{prefix}{i}", "lines": [f"verse {i} {k} of the {prefix} and more" for k in range(4)]}
            for i in range(n)]


@pytest.fixture(scope="module")
def tiny() -> dict:
    return poeval_config.read(ROOT / "params.yaml", (ROOT / "config" / "scale" / "tiny.yaml",))


# --- the job ------------------------------------------------------------------------------------

def test_a_cell_job_carries_the_values_the_rule_passed_as_options(tiny):
    """The values of the old command line of en/HUMAN/human0 memorization (tiny overlay), written out."""
    job = cell_job(tiny, "en", "HUMAN", "human0", "memorization")
    assert job.to_dict() == {
        "kind": "metric-cell", "families": ["memorization"], "lang": "en",
        "options": {"memorization": {"autojunk": False, "couplet": 0.8, "quatrain": 0.7, "verse": 0.9}},
        "bootstrap_reps": 0, "seed": 1, "exclude_sample_from_reference": True, "allow_empty": True,
        "cell": {"lang": "en", "system": "HUMAN", "decoding": "human0"}}
    model = cell_job(tiny, "en", "gpt2-s", "vanilla", "diversity")
    assert model.bootstrap_reps == 50 and not model.exclude_sample_from_reference   # tiny: reps 50
    assert set(model.options) == {"diversity", "semantic"}   # diversity reads the semantic section too
    assert not cell_job(tiny, "en", "HUMAN", "train", "rhyme").exclude_sample_from_reference


def test_a_job_round_trips_and_a_bad_one_is_named(tiny):
    job = cell_job(tiny, "en", "gpt2-s", "vanilla", "semantic")
    assert parse(CellJob, job.to_json()) == job
    data = job.to_dict()
    for broken, match in ((data | {"lnag": "en"}, "unknown key 'lnag'"),
                          ({k: v for k, v in data.items() if k != "seed"}, "missing key 'seed'"),
                          (data | {"families": ["rhythm"]}, "unknown metric family 'rhythm'"),
                          (data | {"lang": "fr"}, "unknown lang 'fr'"),
                          (data | {"kind": "train"}, "expected a metric-cell job")):
        with pytest.raises(PoevalError, match=match):
            CellJob.from_dict(broken)


def test_the_memorization_threshold_walks_from_params_to_the_metric_and_back_to_stale(tmp_path, monkeypatch, tiny):
    """params metrics.memorization.quatrain -> the cell job's typed record -> its JSON -> the record the command
    parses -> the threshold the metric applies -> the stamp -> `poeval stale`, which rebuilds the job."""
    from poeval.jobs.cell import run
    from poeval.metrics import memorization
    from poeval.report.stale import stale_outputs

    monkeypatch.chdir(tmp_path)
    config = poeval_config.merge(tiny, {"metrics": {"memorization": {"quatrain": 0.5}}})
    job = cell_job(poeval_config.fill(config), "en", "gpt2-s", "vanilla", "memorization")
    assert job.options["memorization"].quatrain == 0.5   # a typed record, not a dict
    parsed = CellJob.from_dict(json.loads(job.to_json()))
    assert parsed == job and parsed.options["memorization"].quatrain == 0.5
    seen = []
    real = memorization.compute
    monkeypatch.setattr(memorization, "compute", lambda *a, **kw: seen.append(kw["thresholds"]) or real(*a, **kw))
    write_jsonl(paths.train("en"), _quatrains("q", 12))
    samples, out = paths.samples("en", "gpt2-s", "vanilla"), paths.cell("en", "gpt2-s", "vanilla", "memorization")
    write_jsonl(samples, _quatrains("q", 3) + _quatrains("s", 3))
    cell = run(parsed, samples, paths.train("en"), out)
    assert seen[0]["quatrain"] == 0.5
    assert cell["provenance"]["params"]["metrics"]["memorization"]["quatrain"] == 0.5
    assert stale_outputs(config, ".", ["metric_cell"]) == []
    moved = poeval_config.merge(config, {"metrics": {"memorization": {"quatrain": 0.8}}})
    [stale] = stale_outputs(moved, ".", ["metric_cell"])
    assert stale.reasons == ["params: metrics.memorization.quatrain: recorded 0.5, now 0.8"]


def test_the_job_and_a_hand_run_write_the_same_cell(tmp_path, capsys, tiny):
    """`poeval evaluate --job` and the same values as options: one job type, one cell (stamp included)."""
    ref, sample = tmp_path / "train.jsonl", tmp_path / "human0.jsonl"
    write_jsonl(ref, _quatrains("q", 12))
    write_jsonl(sample, _quatrains("q", 4))
    job = cell_job(tiny, "en", "HUMAN", "human0", "lexical")
    base = [str(sample), "--reference", str(ref)]
    assert main(["evaluate", *base, "--job", job.to_json(), "--out", str(tmp_path / "a.json")]) == 0
    assert capsys.readouterr().out == ""   # the workflow's form writes the cell to --out only
    assert main(["evaluate", *base, "--lang", "en", "--metrics", "lexical", "--options", json.dumps(job.sections()),
                 "--exclude-sample-from-reference", "--allow-empty", "--cell", "en/HUMAN/human0",
                 "--out", str(tmp_path / "b.json"), "--quiet"]) == 0
    a, b = (json.loads((tmp_path / name).read_text()) for name in ("a.json", "b.json"))
    assert a["lexical"] == b["lexical"] and a["cell"] == b["cell"] and a["n_reference"] == 8
    assert a["provenance"]["params"] == b["provenance"]["params"] == job.recorded()
    # the job carries those options: giving one beside it is refused by name
    assert main(["evaluate", *base, "--job", job.to_json(), "--lang", "en", "--out", str(tmp_path / "c.json")]) == 2
    assert "--job carries --lang" in capsys.readouterr().err


def test_a_cache_is_passed_by_name_and_an_unknown_name_is_refused(tmp_path, capsys):
    ref, sample = tmp_path / "train.jsonl", tmp_path / "s.jsonl"
    write_jsonl(ref, _quatrains("q", 6))
    write_jsonl(sample, _quatrains("s", 2))
    assert main(["index", str(ref), "--out", str(tmp_path / "index")]) == 0
    cells = {}
    for name, cached in (("new", ["--cached", f"memorization_index={tmp_path / 'index'}"]),
                         ("alias", ["--memorization-index", str(tmp_path / "index")]), ("none", [])):
        assert main(["evaluate", str(sample), "--reference", str(ref), "--lang", "en", "--metrics", "memorization",
                     "--out", str(tmp_path / f"{name}.json"), "--quiet", *cached]) == 0
        cells[name] = json.loads((tmp_path / f"{name}.json").read_text())["memorization"]
    assert cells["new"] == cells["alias"] == cells["none"]
    assert main(["evaluate", str(sample), "--reference", str(ref), "--lang", "en", "--metrics", "memorization",
                 "--out", str(tmp_path / "x.json"), "--cached", f"index={tmp_path / 'index'}"]) == 2
    assert "unknown cache 'index'" in capsys.readouterr().err


# --- rules against their commands' jobs ---------------------------------------------------------

def _snakemake(work: Path, *args: str, configs=("config/scale/tiny.yaml",), root: Path = ROOT) -> str:
    """Snakemake on the Snakefile of ``root`` (its own ``src`` first on the path) in ``work``; its output."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", HF_HUB_OFFLINE="1",
               PYTHONPATH=str(root / "src"))
    cmd = [str(BIN / "snakemake"), "--snakefile", str(root / "Snakefile"), "--directory", str(work), *args,
           "--configfile", *configs]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    return proc.stdout + proc.stderr


# runtime flags a rule may pass beside the job: how much a command prints to its log
RUNTIME_FLAGS = {"--quiet"}


def stray_values(command: str) -> list[str]:
    """What a command that takes ``--job`` is given besides its job: every option that is not an I/O path
    it declares (cli_args.io_paths), ``--threads``, a runtime flag or a log redirect, and any word that is not
    one of the values of those. Parsing the command also parses its job (strictly: a bad job fails)."""
    words = shlex.split(command)
    if ">" in words:   # the log redirect (a JSON word holding ">" is one word)
        words = words[:words.index(">")]
    args = build_parser().parse_args(words[1:])
    name, outputs, inputs = args.io_paths
    declared = [a.rstrip("=:") for a in (*outputs, *inputs)]
    allowed = {a for a in declared if a.startswith("--")} | {"--threads", "--job"} | RUNTIME_FLAGS
    given = [v for a in declared for v in _values(args, a)]
    # the name of what a command makes (`poeval table table2`, `poeval figure figure1`) is part of the command
    values = {w for v in given for w in (v if isinstance(v, list) else [v])} | {getattr(args, "name", None)}
    stray, rest = [], words[1 + len(name.split()):]   # after `poeval` and the subcommand's words
    while rest:
        word, rest = rest[0], rest[1:]
        if word in ("--job", "--threads"):
            rest = rest[1:]   # its one value
        elif word.startswith("--") and word not in allowed:
            stray.append(word)
            rest = rest[1:] if rest and not rest[0].startswith("--") else rest   # its value
        elif not word.startswith("--") and word not in values:
            stray.append(word)
    return stray


def _job_commands(out: str) -> list[str]:
    return [line[len(SHOWN):] for line in out.splitlines()
            if line.startswith(SHOWN) and " --job " in line]


# Rules whose shell runs poeval without a typed job (docs/workflow.md "The rules"): none.
WITHOUT_JOB: set[str] = set()


def poeval_without_job(out: str) -> list[str]:
    """The rules of a dry run (-p) whose command runs poeval without ``--job``, less :data:`WITHOUT_JOB`."""
    rules = re.findall(rf"^(?:local)?rule (\S+):\n(?:.*\n)*?{SHOWN}(.*)$", out, re.M)
    return sorted({rule for rule, command in rules if command.startswith("poeval ") and " --job " not in command}
                  - WITHOUT_JOB)


def test_every_rule_passes_its_command_nothing_but_its_job_paths_and_threads(tmp_path):
    work = tmp_path / "work"
    (work / "config" / "scale").mkdir(parents=True)
    shutil.copy(ROOT / "params.yaml", work)
    shutil.copy(ROOT / "config" / "scale" / "tiny.yaml", work / "config" / "scale")
    (work / "config" / "bpomp.yaml").write_text("bpomp: {enabled: true}\n")   # every rule: BPoMP's too
    (work / "config" / "metrics").mkdir()   # and the creativity and quality families', which the main job leaves out
    shutil.copy(ROOT / "config" / "metrics" / "creativity.yaml", work / "config" / "metrics")
    grid = yaml.safe_load((ROOT / "config" / "systems" / "grid.yaml").read_text())   # its families add quality
    (work / "config" / "quality.yaml").write_text(
        json.dumps({"metrics": {"families": [*grid["metrics"]["families"], "creativity"]}}))
    out = _snakemake(work, "-n", "-p", "--forceall",
                     configs=("config/scale/tiny.yaml", "config/bpomp.yaml", "config/metrics/creativity.yaml",
                              "config/quality.yaml"))
    assert poeval_without_job(out) == []
    rules = set(re.findall(r"^(?:local)?rule (\S+):", out, re.M))
    assert {"quatrains", "split", "train", "sample", "metric_cell", "table2", "figure1", "bpomp_score",
            "adherence_cell", "quality_frontier", "creativity_index", "import_pretrained", "distinct_k",
            "distinct_k_figure", "similarity_cell", "similarity_table", "similarity_figure"} <= rules, sorted(rules)
    # the distinct_k family's cells run with their jobs like every family's
    assert re.search(r"^rule metric_cell:\n(?:    .*\n)*?    output: \S+/distinct_k\.json", out, re.M)
    # the check can fail: a rule whose command has no job is named
    assert poeval_without_job(out.replace(" --job ", " --jobless ", 1)) != []
    commands = _job_commands(out)
    assert any(c.startswith("poeval evaluate ") for c in commands)
    assert not [(c, stray_values(c)) for c in commands if stray_values(c)]
    # the check can fail: a value beside the job, in a real command, is named
    cell = next(c for c in commands if c.startswith("poeval evaluate "))
    assert stray_values(cell.replace(" --job ", " --lang en --job ")) == ["--lang"]
    assert stray_values(cell.replace(" --threads ", " --seed 3 --threads ")) == ["--seed"]
    with pytest.raises(SystemExit):   # a job the command cannot parse
        stray_values(cell.replace('"seed": 1', '"sede": 1'))
    # each cache a record names is built by the rule it names, at the path it names
    # (every job of the rule: import_pretrained imports the BPoMP scorer's release and the reference LM)
    outputs = {rule: {o for found in re.findall(rf"^rule {rule}:\n(?:    .*\n)*?    output: (.*)$", out, re.M)
                      for o in found.split(", ")}
               for rule in {c.rule for f in families.FAMILIES.values() for c in f.cached}}
    for f in families.FAMILIES.values():
        for c in f.cached:
            assert c.path("en") in outputs[c.rule], (c, outputs[c.rule])


# --- a new family: its module, its record, the schema -------------------------------------------

TOY = '''"""A toy metric family: verses per poem, times a params option."""
import numpy as np


def cell(poems, ref, opts):
    verses = np.array([len(p["lines"]) for p in poems], dtype=float) * opts["scale"]
    return ({"verses": float(verses.mean()), "n_reference": len(ref.poems), "per_poem": {"verses": verses.tolist()}},
            lambda idx: {"verses": float(verses[idx].mean())})
'''
# its record: the function, and what its table, its tests and the summary of `poeval evaluate` show
TOY_RECORD = """    "toy": Family(toy.cell, present=Present(
        "Toy", (Column("verses", "verses_x", 1),), summary=(Column("verses", "toy verses per poem", 3),),
        tests=(Test("verses", "per_poem", "per_poem.verses"),), caption="Toy: verses per poem, scaled.")),
"""


def _add_toy_family(copy: Path) -> None:
    """The toy family in a copy of the repository: a new module, its record and its schema section."""
    (copy / "src/poeval/metrics/toy.py").write_text(TOY)
    registry = copy / "src/poeval/metrics/families.py"
    text = registry.read_text()
    text = text.replace("from poeval.metrics import topics\n", "from poeval.metrics import topics, toy\n", 1)
    text = text.replace("FAMILIES = {\n", "FAMILIES = {\n" + TOY_RECORD, 1)
    registry.write_text(text)
    schema_path = copy / "src/poeval/schemas/params.schema.json"
    schema = json.loads(schema_path.read_text())
    metrics = schema["properties"]["metrics"]["properties"]
    metrics["families"]["items"]["enum"].append("toy")
    metrics["toy"] = {"type": "object", "additionalProperties": False,
                      "properties": {"scale": {"type": "number", "default": 2.0}}}
    schema_path.write_text(json.dumps(schema, indent=2))


def _poeval(copy: Path, *args: str) -> str:
    """`poeval ARGS` of the copy (its own ``src`` first on the path), run in it; its stdout."""
    env = dict(os.environ, PYTHONPATH=str(copy / "src"), HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", "import sys; from poeval.cli import main; sys.exit(main())", *args],
                          cwd=copy, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _tsv(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text().splitlines()]


def test_a_new_family_runs_its_cell_through_the_workflow(tmp_path):
    copy = tmp_path / "repo"
    for name in ("src", "workflow", "profiles"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("Snakefile", "params.yaml"):
        shutil.copy(ROOT / name, copy)
    (copy / "config" / "scale").mkdir(parents=True)
    shutil.copy(ROOT / "config" / "scale" / "tiny.yaml", copy / "config" / "scale")
    _add_toy_family(copy)
    # the run's choice of families (an overlay of this run, no code), and its data made by hand
    (copy / "config" / "toy.yaml").write_text("metrics: {families: [toy]}\n")
    train = _quatrains("q", 10)
    write_jsonl(copy / paths.train("en"), train)
    write_jsonl(copy / paths.human("en", "human0"), train[:3])
    write_jsonl(copy / paths.human("en", "human1"), train[3:6])
    cells = [paths.cell("en", "HUMAN", f"human{k}", "toy") for k in range(2)]
    _snakemake(copy, "-c", "1", *cells, "--allowed-rules", "metric_cell",
               configs=("config/scale/tiny.yaml", "config/toy.yaml"), root=copy)
    result = json.loads((copy / cells[0]).read_text())
    assert result["toy"] == {"verses": 8.0, "n_reference": 7, "per_poem": {"verses": [8.0] * 3}}   # 4 verses x 2
    assert result["provenance"]["params"]["metrics"] == {"toy": {"scale": 2.0}}   # the section resolved: its default
    assert result["cell"] == {"lang": "en", "system": "HUMAN", "decoding": "human0"}
    # its lines in the summary of `poeval evaluate` (a hand run of a model's sample), from its record
    write_jsonl(copy / "mine.jsonl", _quatrains("m", 4))
    shown = _poeval(copy, "evaluate", "mine.jsonl", "--reference", paths.train("en"), "--lang", "en", "--metrics",
                    "toy", "--cell", "en/mine/vanilla", "--out", "mine.json")
    assert shown.splitlines()[1:] == [f"  {'toy verses per poem':<38} {8:>9.3f}"]
    # its table (named after it: no paper table shows it) with its significance test against HUMAN, as the
    # workflow's rule of that name makes them
    table, tests = copy / "toy.tsv", copy / "toy_tests.tsv"
    _poeval(copy, "table", "toy", *cells, "mine.json", "--out", str(table), "--ci-out", "toy.ci.tsv",
            "--tests-out", str(tests))
    assert _tsv(table) == [["lang", "system", "decoding", "n", "verses_x"], ["en", "HUMAN (mean of 2)", "-", "3", "8.0"],
                           ["en", "mine", "vanilla", "4", "8.0"]]
    assert [(r[1], r[3], r[4], r[8], r[9]) for r in _tsv(tests)[1:]] == [
        ("HUMAN", "verses", "permutation", "3", "3"), ("HUMAN", "verses", "permutation", "3", "3"),
        ("mine", "verses", "permutation", "4", "6")]   # each HUMAN sample against the other, the model against both
    # the run's targets hold its table, made by its own rule with the record's caption text
    planned = _snakemake(copy, "-n", "-p", configs=("config/scale/tiny.yaml", "config/toy.yaml"), root=copy)
    assert re.search(r"^rule toy:\n(?:    .*\n)*?    output: results/tables/toy.tsv, results/tables/toy.ci.tsv, "
                     r"results/tables/toy_tests.tsv$", planned, re.M), planned[-3000:]
    assert f"poeval table toy {' '.join(cells)}" in planned
