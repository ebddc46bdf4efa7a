"""The walk-through "Evaluate your own generator" on the tiny DAG: the example overlay's samples system
(a JSONL file, a plain-text file and, added here, a saved dataset as the paper's code saves samples) and a
checkpoint trained elsewhere, sampled as it is (init: pretrained, training: none), beside HUMAN in the
paper's tables, their tests and intervals and a figure; then a changed sample file reruns exactly that
system's import, cells and tables."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from poeval import paths
from poeval.files import file_sha256
from poeval.io import read_json

from helpers import ROOT, _rows, snakemake

pytestmark = pytest.mark.e2e

MINE, LOCAL = "my-generator", "mine-local"
CONFIGS = ("config/scale/tiny.yaml", "examples/my-generator.yaml", "config/mine.yaml")
FAMILIES = ["length", "lexical", "memorization", "rhyme", "semantic", "diversity"]
TABLES = ["table2", "table3", "table5", "table6", "table7", "diversity"]
OVERLAY = {
    # merged into the example's samples: its JSONL (vanilla) and text (plain-text) files, and a saved dataset
    "models": {MINE: {"samples": {"en": {"saved": "theirs-saved"}}},
               LOCAL: {"arch": "gpt2", "size": "S", "init": "pretrained", "name_or_path": "my-checkpoint",
                      "training": "none"}},
    "systems": [MINE, LOCAL], "decodings": ["vanilla"], "human": {"n_samples": 2},
    "metrics": {"families": FAMILIES}, "style_adherence": {"pairs": None},
}
TARGETS = [paths.table(t) for t in TABLES + ["table4", "sampling"]] + [paths.figure(f) for f in ("figure7", "figure1")]


def _checkpoint(work: Path) -> None:
    """A small GPT-2 trained elsewhere (here: `poeval train` on the example's 18 quatrains): a local folder."""
    from poeval.cli import main

    model = {"arch": "gpt2", "vocab_size": 300, "n_layer": 1, "n_embd": 64, "n_head": 2, "n_positions": 96}
    training = {"max_steps": 150, "batch_size": 6, "eval_every": 50, "lr": 0.01, "warmup_steps": 5, "patience": 0}
    source = str(work / "examples" / "samples" / "my-generator.en.jsonl")
    assert main(["train", "--train", source, "--dev", source, "--out", str(work / "my-checkpoint"),
                 "--model", json.dumps(model), "--training", json.dumps(training)]) == 0


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    import datasets

    work = tmp_path_factory.mktemp("supplied") / "work"
    (work / "config" / "scale").mkdir(parents=True)
    shutil.copy(ROOT / "params.yaml", work / "params.yaml")
    shutil.copy(ROOT / "config" / "scale" / "tiny.yaml", work / "config" / "scale" / "tiny.yaml")
    shutil.copytree(ROOT / "examples", work / "examples")
    (work / "config" / "mine.yaml").write_text(yaml.safe_dump(OVERLAY))
    poems = [json.loads(line)["lines"] for line in (work / "examples/samples/my-generator.en.jsonl").open()][::-1]
    datasets.Dataset.from_dict({"text": poems[:12], "language": ["en"] * 12}).save_to_disk(str(work / "theirs-saved"))
    _checkpoint(work)
    proc = snakemake(work, "-c", "2", *TARGETS, configs=CONFIGS)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return work


def test_both_systems_are_rows_of_every_table_with_tests_and_intervals(run):
    for table in TABLES:
        rows = _rows(run / paths.table(table))
        systems = [row[1] for row in rows[1:]]
        assert MINE in systems and LOCAL in systems, (table, systems)
        assert all(v != "nan" for row in rows for v in row), table
        for side in (paths.table_ci(table), paths.table_tests(table)):
            assert {MINE, LOCAL} <= {row[1] for row in _rows(run / side)[1:]}, side
    # one row per system (its vanilla file) here; every file where the table has a row per decoding config
    assert [row[2] for row in _rows(run / paths.table("table2"))[1:] if row[1] == MINE] == ["vanilla"]
    assert [row[2:4] for row in _rows(run / paths.table("table7"))[1:] if row[1] == MINE] == [
        ["vanilla", "18"], ["plain-text", "9"], ["saved", "12"]]
    assert all((run / paths.figure(f)).stat().st_size > 5_000 for f in ("figure7", "figure1"))


def test_table4_and_the_sampling_table_say_where_the_samples_come_from(run):
    rows = _rows(run / paths.table("table4"))[1:]
    source = "examples/samples/my-generator.en.jsonl"
    mine = [row for row in rows if row[1] == MINE]
    assert [row[2] for row in mine] == ["samples"] * 3
    assert mine[0][-1] == f"samples supplied by the user (vanilla): {source} sha256 {file_sha256(run / source)[:12]}"
    assert mine[2][-1].startswith("samples supplied by the user (saved): theirs-saved sha256 ")
    local = next(row for row in rows if row[1] == LOCAL)
    assert local[2:5] == ["gpt2", "S", "pretrained"] and local[8] == "0"   # sampled as it is: no step
    sampling = {(row[1], row[2]): row for row in _rows(run / paths.table("sampling"))[1:]}
    assert sampling[(MINE, "plain-text")][3:6] == ["10", "10", "9"]
    assert sampling[(MINE, "plain-text")][8] == "wrong_line_count:3=1"
    assert sampling[(MINE, "saved")][3:6] == ["12", "12", "12"]


def test_the_samples_row_equals_poeval_evaluate_on_the_same_file(run):
    import poeval
    from poeval import config as poeval_config

    metrics = poeval_config.read(run / "params.yaml", tuple(run / c for c in CONFIGS))["metrics"]
    mine = run / "examples/samples/my-generator.en.jsonl"
    result = poeval.evaluate(str(mine), reference=str(run / paths.train("en")), lang="en",
                             metrics=["lexical", "length"], options={f: metrics[f] for f in ("lexical", "length")})
    for family in ("lexical", "length"):
        cell = read_json(run / paths.cell("en", MINE, "vanilla", family))
        assert cell["n_poems"] == result["n_poems"] == 18
        assert {k: v for k, v in cell[family].items() if k != "ci"} == result[family], family


def test_provenance_of_the_new_row_ends_at_the_users_file(run, capsys, monkeypatch):
    from poeval.cli import main

    monkeypatch.chdir(run)
    assert main(["provenance", paths.table("table2"), "--row", MINE, "--column", "mattr_pct",
                 "--configfile", *CONFIGS, "--check"]) == 0
    text = capsys.readouterr().out
    source = "examples/samples/my-generator.en.jsonl"
    assert "supplied samples" in text and f"source  {source}  sha256 {file_sha256(run / source)[:12]}" in text
    split = text.split("-> split", 1)[1].split("-> corpus", 1)[0]   # the reference the row was compared with
    assert f"{paths.train('en')}  sha256 {file_sha256(run / paths.train('en'))[:12]}" in split
    assert text.rstrip().endswith("OK: inputs and params unchanged since each step was built")


def test_an_edited_sample_file_reruns_exactly_its_import_cells_and_tables(run, tmp_path, capsys, monkeypatch):
    from poeval.cli import main

    work = tmp_path / "copy"
    shutil.copytree(run, work, symlinks=True)
    monkeypatch.chdir(work)
    with open(work / "examples/samples/my-generator.en.txt", "a") as handle:
        handle.write("\nThe lamp is lit, the door is wide,\nThe supper waits upon the board;\n"
                     "The traveller has come inside\nAnd hangs his cloak and lays his sword.\n")
    assert main(["stale", "--check", "--configfile", *CONFIGS]) == 3
    named = {line.split()[0] for line in capsys.readouterr().out.splitlines() if not line.startswith(" ")}
    # and the tables that show them, which record the files they were built from: those Snakemake reruns below
    assert named == {paths.stats("en", MINE, "plain-text"), paths.cell("en", MINE, "plain-text", "memorization"),
                     *(paths.table(t) for t in ("sampling", "table4", "table7"))}
    proc = snakemake(work, "-n", *TARGETS, configs=CONFIGS)   # with .snakemake/metadata: Snakemake sees it too
    jobs = [block.split(":", 1)[0] for block in (proc.stdout + proc.stderr).split("\nrule ")[1:]]
    # the file shows in Table 7 (a row per decoding config), the sampling table and Table 4 (its sha256)
    assert sorted(jobs) == ["import_samples", "metric_cell", "sampling_table", "table4", "table7"], proc.stdout[-3000:]


def test_the_html_report_holds_the_rows(run):
    import base64
    import re

    proc = snakemake(run, *TARGETS, "--report", "results/report.html", configs=CONFIGS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = (run / "results" / "report.html").read_text()
    tables = {name: base64.b64decode(data).decode() for name, data in re.findall(
        r'"data:text/tab-separated-values;charset=utf8;filename=([^;]+);base64,([A-Za-z0-9+/=]+)"', html)}
    assert {"table2.tsv", "table2_tests.tsv", "table4.tsv", "sampling.tsv"} <= set(tables)
    assert tables["table2.tsv"] == (run / paths.table("table2")).read_text() and f"\t{MINE}\t" in tables["table2.tsv"]
    assert "samples supplied by the user (saved): theirs-saved sha256" in tables["table4.tsv"]
