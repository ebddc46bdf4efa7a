"""Systems made of samples the user supplies (arch: samples): the import, its errors, params, stale and
provenance checks, and the workflow's DAG for such a system."""

import csv
import json
import shutil
from pathlib import Path

import pytest
import yaml

from poeval import config as poeval_config
from poeval import params as poeval_params
from poeval import paths, stamps
from poeval.errors import PoevalError
from poeval.generators.supplied import import_samples
from poeval.files import file_sha256
from poeval.io import read_json, write_jsonl

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "samples" / "my-generator.en.jsonl"
TEXT = ROOT / "examples" / "samples" / "my-generator.en.txt"
QUATRAIN = ["the moon is high", "the sea is wide", "the night is long", "the road is far"]


def _example_records() -> list[dict]:
    return [json.loads(line) for line in EXAMPLE.read_text().splitlines()]


def _import(source, tmp_path, lang="en", **kw) -> tuple[list[dict], dict]:
    out, stats = tmp_path / "out" / "s.jsonl", tmp_path / "out" / "s.stats.json"
    import_samples(source, lang, out, stats, **kw)
    return [json.loads(line) for line in out.read_text().splitlines()], read_json(stats)


def _save_dataset(path: Path, columns: dict) -> None:
    import datasets

    datasets.Dataset.from_dict(columns).save_to_disk(str(path))


@pytest.fixture
def formats(tmp_path) -> dict[str, Path]:
    """The example's 18 quatrains in every accepted format, as the paper's code and common tools write them."""
    records = _example_records()
    text = ["\n".join(r["lines"]) for r in records]
    out = {"jsonl": EXAMPLE, "txt": tmp_path / "s.txt", "csv": tmp_path / "s.csv", "parquet": tmp_path / "s.parquet",
           "disk": tmp_path / "saved"}
    out["txt"].write_text("\n\n".join(text) + "\n")
    with open(out["csv"], "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "language"])
        writer.writerows([t, "en"] for t in text)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": [r["lines"] for r in records]}), out["parquet"])
    # helper_functions.get_dataset of the paper's code: a text column of four verses and language
    _save_dataset(out["disk"], {"text": [r["lines"] for r in records], "language": ["en"] * len(records)})
    return out


def test_every_format_imports_the_same_quatrains(formats, tmp_path):
    want = [r["lines"] for r in _example_records()]
    for name, source in formats.items():
        records, stats = _import(source, tmp_path / name, id_prefix="en-mine-vanilla-")
        assert [r["lines"] for r in records] == want, name
        assert stats["requested"] == stats["attempts"] == stats["valid"] == 18 and stats["reasons"] == {}, name
        assert records[0]["id"].startswith("en-mine-vanilla-"), name
    # the JSONL's own ids are kept behind the prefix; a file without ids is numbered by position
    assert _import(EXAMPLE, tmp_path / "ids", id_prefix="p-")[0][0]["id"] == "p-mg-000"
    assert _import(formats["txt"], tmp_path / "pos")[0][17]["id"] == "17"


def test_the_samplers_validity_rule_counts_skips_by_reason(tmp_path):
    """The example's plain-text file holds one three-verse poem among ten; a hand-made file has one of each
    reason the samplers count (a fifth verse, three verses, an empty verse)."""
    records, stats = _import(TEXT, tmp_path / "text")
    assert (stats["requested"], stats["valid"], stats["reasons"]) == (10, 9, {"wrong_line_count:3": 1})
    assert stats["validity_rate"] == 0.9
    poems = [QUATRAIN, QUATRAIN + ["a fifth verse"], QUATRAIN[:3], QUATRAIN[:3] + ["--"], QUATRAIN[::-1]]
    write_jsonl(tmp_path / "mixed.jsonl", [{"lines": p} for p in poems])
    records, stats = _import(tmp_path / "mixed.jsonl", tmp_path / "mixed")
    assert [r["lines"] for r in records] == [QUATRAIN, QUATRAIN[::-1]]
    assert stats["reasons"] == {"extra_verse": 1, "wrong_line_count:3": 1, "empty_line": 1}
    assert stats["requested"] == stats["attempts"] == 5 and stats["valid"] == 2


def test_the_stamp_records_the_file_or_folder_and_its_sha256(formats, tmp_path):
    _, stats = _import(EXAMPLE, tmp_path / "file")
    source = stats["provenance"]["inputs"]["source"]
    assert source == {"path": str(EXAMPLE), "sha256": file_sha256(EXAMPLE)}
    assert stats["provenance"]["params"] == {"source": str(EXAMPLE)}
    _, stats = _import(formats["disk"], tmp_path / "folder")
    assert stats["provenance"]["inputs"]["source"]["sha256"] == stamps.dir_sha256(formats["disk"])


def test_labels_in_the_file_are_not_trusted(tmp_path):
    """A scheme the file carries (perhaps what the generator was asked for) is dropped: the detector labels
    the user's samples as it labels every system's."""
    write_jsonl(tmp_path / "s.jsonl", [{"lines": QUATRAIN, "scheme": "abab", "meter": "iambus"}])
    records, _ = _import(tmp_path / "s.jsonl", tmp_path / "o")
    assert records == [{"id": "0", "lines": QUATRAIN}]


@pytest.mark.parametrize("case, message", [
    ("missing", "models.mine.samples.en.vanilla: no such file or folder: "),
    ("nothing", "nothing usable: read 2 poems, kept 0; skipped: extra_verse 1, wrong_line_count:3 1"),
    ("empty", "nothing usable: no poems"),
    ("language", "record 2 has language 'de', but models.mine.samples.en.vanilla gives the samples of 'en'"),
    ("duplicate", "id 'a' occurs more than once"),
    ("no_text", "the saved dataset has no 'text' or 'lines' column (columns: poem, language)"),
    ("dataset_dict", "holds a DatasetDict (splits: train); give the folder of one split"),
    ("csv_no_text", "the CSV file has no 'text' or 'lines' column (columns: poem)"),
])
def test_bad_input_is_one_line_naming_the_file_and_writes_nothing(tmp_path, case, message):
    import datasets

    source = tmp_path / f"{case}.jsonl"
    if case == "nothing":
        write_jsonl(source, [{"lines": QUATRAIN + ["five"]}, {"lines": QUATRAIN[:3]}])
    elif case == "empty":
        source.write_text("\n")
    elif case == "language":
        write_jsonl(source, [{"lines": QUATRAIN, "language": "en"}, {"lines": QUATRAIN, "language": "de"}])
    elif case == "duplicate":
        write_jsonl(source, [{"id": "a", "lines": QUATRAIN}, {"id": "a", "lines": QUATRAIN}])
    elif case == "no_text":
        source = tmp_path / "saved"
        _save_dataset(source, {"poem": ["\n".join(QUATRAIN)], "language": ["en"]})
    elif case == "dataset_dict":
        source = tmp_path / "dict"
        datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": [QUATRAIN]})}).save_to_disk(str(source))
    elif case == "csv_no_text":
        source = tmp_path / "s.csv"
        source.write_text("poem\nx\n")
    out, stats = tmp_path / "results" / "s.jsonl", tmp_path / "results" / "s.stats.json"
    with pytest.raises(PoevalError) as err:
        import_samples(source, "en", out, stats, key="models.mine.samples.en.vanilla")
    assert message in str(err.value) and "\n" not in str(err.value)
    if case != "missing":
        assert str(source) in str(err.value)
    assert not (tmp_path / "results").exists()


def test_a_failed_import_leaves_the_previous_sample_as_it_was(tmp_path):
    out, stats = tmp_path / "s.jsonl", tmp_path / "s.stats.json"
    import_samples(EXAMPLE, "en", out, stats)
    before = out.read_bytes(), stats.read_bytes()
    (tmp_path / "bad.txt").write_text("one verse\n")
    with pytest.raises(PoevalError, match="nothing usable"):
        import_samples(tmp_path / "bad.txt", "en", out, stats)
    assert (out.read_bytes(), stats.read_bytes()) == before


def test_the_cli_imports_and_reports_the_counts(tmp_path, capsys):
    from poeval.cli import main

    out = tmp_path / "s.jsonl"
    stats = str(tmp_path / "s.json")
    assert main(["import-samples", str(TEXT), "--lang", "en", "--out", str(out), "--stats", stats]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["valid"], printed["requested"], printed["source"]["kind"]) == (9, 10, "txt")
    assert main(["import-samples", str(tmp_path / "none.txt"), "--lang", "en", "--out", str(out), "--stats",
                 str(tmp_path / "s.json"), "--param", "models.x.samples.en.v"]) == 2
    assert "models.x.samples.en.v: no such file or folder" in capsys.readouterr().err


# --- params ---------------------------------------------------------------------------------------

def _params(tmp_path, monkeypatch, entry: dict, **top) -> dict:
    monkeypatch.chdir(tmp_path)
    given = poeval_config.read(ROOT / "params.yaml")
    given["models"]["mine"] = entry
    given["systems"] = [*given["systems"], "mine"]
    given.update(top)
    return given


def test_params_check_a_samples_system(tmp_path, monkeypatch):
    shutil.copy(EXAMPLE, tmp_path / "mine.jsonl")
    entry = {"arch": "samples", "samples": {"en": {"api": "mine.jsonl"}}}
    p = poeval_params.resolve(_params(tmp_path, monkeypatch, entry))
    assert p["models"]["mine"] == {"arch": "samples", "samples": {"en": {"api": "mine.jsonl"}}, "kind": "unconditioned"}
    problems = {
        "key models.mine.samples.en.api: no such file or folder: gone.jsonl": {"en": {"api": "gone.jsonl"}},
        "key models.mine.samples.de: 'de' is not listed in languages": {"en": {"v": "mine.jsonl"},
                                                                         "de": {"v": "mine.jsonl"}},
        "key models.mine.samples: no sample file for any of the languages en": {"fr": {"v": "mine.jsonl"}},
    }
    for message, samples in problems.items():
        with pytest.raises(PoevalError, match=message):
            poeval_params.resolve(_params(tmp_path, monkeypatch, {"arch": "samples", "samples": samples}))
    for entry, key in (({"arch": "samples"}, "samples"), ({"arch": "samples", "samples": {"en": {"a/b": "x"}}}, "a/b"),
                       ({"arch": "samples", "samples": {"en": {"v": "mine.jsonl"}}, "size": "S"}, "size")):
        with pytest.raises(PoevalError, match=key):
            poeval_params.resolve(_params(tmp_path, monkeypatch, entry))


def test_the_example_overlay_is_valid_from_the_repository_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    p = poeval_params.load("params.yaml", ("examples/my-generator.yaml",))
    assert p["systems"][-1] == "my-generator" and p["models"]["my-generator"]["arch"] == "samples"
    assert all((ROOT / path).is_file() for path in p["models"]["my-generator"]["samples"]["en"].values())


# --- stale and provenance -------------------------------------------------------------------------

def test_an_edited_sample_file_makes_its_import_and_cells_stale_and_nothing_else(tmp_path, monkeypatch):
    from poeval.jobs.cell import cell_job, run
    from poeval.report.stale import stale_outputs

    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLE, "mine.jsonl")
    shutil.copy(TEXT, "mine.txt")
    write_jsonl(paths.train("en"), [{"id": f"t{i}", "lines": QUATRAIN} for i in range(5)])
    files = {"vanilla": "mine.jsonl", "text": "mine.txt"}
    cfg = poeval_config.merge(poeval_config.read(ROOT / "params.yaml"), {
        "systems": ["mine"], "models": {"mine": {"arch": "samples", "samples": {"en": files}}},
        "metrics": {"bootstrap": {"reps": 5}}})
    for decoding, source in files.items():
        import_samples(source, "en", paths.samples("en", "mine", decoding), paths.stats("en", "mine", decoding))
        run(cell_job(poeval_config.fill(cfg), "en", "mine", decoding, "length"), paths.samples("en", "mine", decoding),
            paths.train("en"), paths.cell("en", "mine", decoding, "length"))
    assert stale_outputs(cfg, ".") == []
    with open("mine.txt", "a") as handle:
        handle.write("\n" + "\n".join(QUATRAIN) + "\n")
    stale = {s.output: (s.rule, s.reasons) for s in stale_outputs(cfg, ".")}
    assert stale == {
        paths.stats("en", "mine", "text"): ("import_samples", ["input source mine.txt changed since it was built"]),
        paths.cell("en", "mine", "text", "length"): (
            "metric_cell", [f"input samples {paths.samples('en', 'mine', 'text')} is rebuilt first"])}
    moved = poeval_config.merge(cfg, {"models": {"mine": {"samples": {"en": {"vanilla": "elsewhere.jsonl"}}}}})
    assert 'params: source: recorded "mine.jsonl", now "elsewhere.jsonl"' == {
        s.output: s.reasons for s in stale_outputs(moved, ".")}[paths.stats("en", "mine", "vanilla")][0]


# --- the workflow ---------------------------------------------------------------------------------

def _dry_run(tmp_path, overlay: dict, *targets: str) -> str:
    import os
    import subprocess
    import sys

    work = tmp_path / "work"
    (work / "config").mkdir(parents=True)
    shutil.copy(ROOT / "params.yaml", work / "params.yaml")
    shutil.copytree(ROOT / "examples", work / "examples")
    (work / "config" / "mine.yaml").write_text(yaml.safe_dump(overlay))
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", HF_HUB_OFFLINE="1")
    proc = subprocess.run([str(bin_dir / "snakemake"), "--snakefile", str(ROOT / "Snakefile"), "--directory", str(work),
                           "-n", "-p", *targets, "--configfile", "examples/my-generator.yaml", "config/mine.yaml"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def test_the_dag_imports_a_samples_system_and_puts_it_in_the_tables(tmp_path):
    out = _dry_run(tmp_path, {"decodings": ["vanilla", "contrastive-k6-a0.7"]}, paths.table("table2"),
                   paths.table("table7"), paths.table("table4"), paths.table("sampling"), paths.figure("figure7"))
    mine = "results/samples/en/my-generator"
    job = ('{"id_prefix": "en-my-generator-vanilla-", "kind": "import-samples", "lang": "en", "param": '
           '"models.my-generator.samples.en.vanilla", "source": "examples/samples/my-generator.en.jsonl"}')
    assert f"poeval import-samples --job '{job}' --out {mine}/vanilla.jsonl" in out
    assert f"{mine}/plain-text.jsonl" in out and "models/en/my-generator" not in out
    assert "results/curves/en/my-generator" not in out
    jobs = {block.split(":", 1)[0]: block for block in out.split("\nrule ")[1:]}
    # Table 2: one row per system (its vanilla file); Table 7: every decoding config, so every file
    assert "results/metrics/en/my-generator/vanilla/lexical.json" in jobs["table2"]
    assert "my-generator/plain-text" not in jobs["table2"]
    assert "results/metrics/en/my-generator/plain-text/memorization.json" in jobs["table7"]
    assert f"{mine}/vanilla.stats.json" in jobs["table4"] and f"{mine}/plain-text.stats.json" in jobs["sampling_table"]
    assert "results/metrics/en/my-generator/vanilla/rhyme.json" in jobs["figure7"]   # kind: unconditioned


def test_a_samples_system_named_only_by_its_own_decoding_shows_that_file(tmp_path):
    theirs = {"arch": "samples", "samples": {"en": {"api": "examples/samples/my-generator.en.txt"}}}
    overlay = {"models": {"theirs": theirs}, "systems": ["theirs"]}
    out = _dry_run(tmp_path, overlay, paths.table("table2"))
    assert "results/metrics/en/theirs/api/lexical.json" in out and "results/metrics/en/my-generator" not in out


def test_the_walk_through_command_puts_the_example_beside_poevals_systems(tmp_path):
    """docs/own-generator.md "Evaluate your own generator": `snakemake results/tables/table2.tsv --configfile
    examples/my-generator.yaml` on params.yaml (dry run here; tests/e2e/test_supplied_workflow.py runs it on the
    tiny DAG)."""
    out = _dry_run(tmp_path, {}, paths.table("table2"))
    table2 = {block.split(":", 1)[0]: block for block in out.split("\nrule ")[1:]}["table2"]
    for system in ("smollm2", "gpt2-s", "my-generator"):
        assert f"results/metrics/en/{system}/vanilla/lexical.json" in table2, system


def test_a_samples_system_cannot_score_bpomp(tmp_path, monkeypatch):
    shutil.copy(EXAMPLE, tmp_path / "mine.jsonl")
    given = _params(tmp_path, monkeypatch, {"arch": "samples", "samples": {"en": {"api": "mine.jsonl"}}})
    given["bpomp"]["scorers"] = [{"name": "mine", "kind": "causal", "model": "mine"}]
    with pytest.raises(PoevalError, match="key bpomp.scorers.0.model: 'mine' is a samples system"):
        poeval_params.resolve(given)
