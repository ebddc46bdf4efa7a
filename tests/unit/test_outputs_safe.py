"""A command never deletes or overwrites what is not its own output: a folder (or an exported Parquet file) is
replaced only when it is absent, empty or holds the command's earlier output (or with --force), never when it is
or holds the working directory or an input; an output path may not name an input, lie inside one, be its sidecar
or another output; a BPoMP pairs file cannot make `bpomp export` write outside its folder; a device, a pipe or a
link at an output path is written through or refused, never replaced; a killed write's temp file is removed by
a later write. docs/inputs-errors.md "Outputs" describes the same behaviour."""

import json
import os
import signal
import subprocess
import sys
import stat
import threading
import time
from pathlib import Path

import pytest

from poeval.cli import main

QUATRAIN = ["the sun is warm today", "the sea is calm and blue", "I walk along the shore", "and think of you"]
LIMERICK = ["There once was a man from the sea", "Who wanted to climb up a tree",
            "He went up the side", "And there he just died", "And that was the end of the key"]
NOTES = b"my own notes, not poeval's\n"


def _jsonl(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def _quatrains(path):
    return _jsonl(path, [{"id": f"q{i}", "lines": [f"{v} {i}" for v in QUATRAIN]} for i in range(6)])


def _pairs(path, task="agreement", n=2):
    return _jsonl(path, [{"id": str(i), "task": task, "original": LIMERICK, "corrupted": LIMERICK[::-1]}
                         for i in range(n)])


def _strays(folder: Path) -> list[str]:
    """Temp folders or files atomic_dir / atomic_write would leave behind."""
    return sorted(p.name for p in folder.rglob(".*") if ".tmp" in p.name or ".old" in p.name)


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A working directory of its own (inside tmp_path, so strays next to it are seen)."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


@pytest.fixture
def foreign(work):
    """A folder of the user's own files."""
    folder = work / "mydocs"
    folder.mkdir()
    (folder / "notes.txt").write_bytes(NOTES)
    return folder


def _err(capsys) -> str:
    """The one error line (progress bars may come before it)."""
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0] == err.splitlines()[-1] and "Traceback" not in err, err
    return errors[0]


# --- 1: a folder is replaced only when it holds the command's own earlier output ---------------------

def test_index_refuses_the_folder_of_its_own_input_even_with_force(work, capsys):
    train = _quatrains(work / "data" / "train.jsonl")
    before = Path(train).read_bytes()
    for force in ([], ["--force"]):
        assert main(["index", "data/train.jsonl", "--out", "data", *force]) == 2
        assert "refusing to replace data: it holds data/train.jsonl, an input" in _err(capsys)
        assert Path(train).read_bytes() == before
    assert _strays(work.parent) == []


def _export_dataset(work, out, *extra):
    return main(["export-dataset", _quatrains(work / "sample.jsonl"), "--out", out, *extra])


def _index(work, out, *extra):
    return main(["index", _quatrains(work / "train.jsonl"), "--out", out, *extra])


def _topics(work, out, *extra):
    return main(["topics", _quatrains(work / "train.jsonl"), "--lang", "en", "--out", out,
                 "--options", json.dumps(TINY_TOPICS), *extra])


TINY_TOPICS = {"num_topics": 2, "passes": 1, "iterations": 5, "no_below": 1, "no_above": 1.0}


def _bpomp_export(work, out, *extra):
    return main(["bpomp", "export", out, "--pairs", _pairs(work / "pairs.jsonl"), *extra])


COMMANDS = {"export-dataset": (_export_dataset, "state.json"), "index": (_index, "index.json"),
            "topics": (_topics, "topics.json"), "bpomp export": (_bpomp_export, "_*.yaml")}


@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_of_the_users_files_is_not_replaced(command, work, foreign, capsys):
    run, marker = COMMANDS[command]
    assert run(work, "mydocs") == 2
    err = _err(capsys)
    assert (f"refusing to replace mydocs: it holds files that are not an earlier `poeval {command}` output "
            f"(no {marker}); empty it, choose another folder, or pass --force") in err
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
    assert (foreign / "notes.txt").read_bytes() == NOTES
    assert _strays(work.parent) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_a_second_run_replaces_the_commands_own_output_and_force_a_foreign_folder(command, work, foreign):
    run, marker = COMMANDS[command]
    assert run(work, "out") == 0 and run(work, "out") == 0   # its own earlier output: no --force needed
    assert run(work, "mydocs", "--force") == 0
    assert not (foreign / "notes.txt").exists() and list(foreign.glob(marker))
    assert _strays(work.parent) == []


def test_an_empty_folder_is_filled_without_force(work):
    (work / "empty").mkdir()
    assert _export_dataset(work, "empty") == 0 and (work / "empty" / "state.json").is_file()


def _foreign_parquet(path: Path) -> None:
    """A Parquet file that is not poeval's (no mark in its metadata)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"notes": ["mine"]}), path)


@pytest.mark.parametrize("content", ["notes", "parquet"])
def test_export_dataset_replaces_a_parquet_file_only_when_it_wrote_it(content, work, capsys):
    from poeval.hfdata import load_records

    mine = work / "my.parquet"
    if content == "notes":
        mine.write_bytes(NOTES)
    else:
        _foreign_parquet(mine)
    before = mine.read_bytes()
    assert _export_dataset(work, "my.parquet", "--format", "parquet") == 2
    assert ("refusing to replace my.parquet: it is not an earlier `poeval export-dataset` output (no poeval key in "
            "its Parquet metadata); choose another path, or pass --force") in _err(capsys)
    assert mine.read_bytes() == before
    for out, extra in (("own.parquet", []), ("own.parquet", []), ("my.parquet", ["--force"])):
        assert _export_dataset(work, out, "--format", "parquet", *extra) == 0
        assert len(load_records(str(work / out))) == 6
    assert _strays(work.parent) == []


@pytest.mark.parametrize("out", [".", "..", "../work", str(Path("..") / "..")])
def test_the_working_directory_is_never_replaced(out, work, capsys):
    (work / "keep.txt").write_bytes(NOTES)
    assert _export_dataset(work, out, "--force") == 2
    assert f"refusing to replace {out}: it is or holds the working directory" in _err(capsys)
    assert (work / "keep.txt").read_bytes() == NOTES
    assert _strays(work.parent) == []


def _fake_trainer(monkeypatch):
    """The transformers trainer replaced by one that writes a checkpoint at once, as the real one does last."""
    from poeval.generators import engine, lm

    def train(train, dev, out, model, training, **kw):
        engine.write_checkpoint(out, lambda tmp: (tmp / "model.safetensors").write_bytes(b"weights"), {})

    monkeypatch.setattr(lm, "train", train)


def _train(work, out, *extra):
    data = _quatrains(work / "train.jsonl")
    return main(["train", "--train", data, "--dev", data, "--out", out, "--model", json.dumps({"arch": "gpt2"}),
                 "--training", "{}", *extra])


def test_train_refuses_a_foreign_folder_before_training(work, foreign, monkeypatch, capsys):
    _fake_trainer(monkeypatch)
    assert _train(work, "mydocs") == 2
    assert ("refusing to replace mydocs: it holds files that are not an earlier `poeval train` output "
            "(no training_log.json)") in _err(capsys)
    assert (foreign / "notes.txt").read_bytes() == NOTES
    assert _train(work, "model") == 0 and _train(work, "model") == 0   # its own checkpoint
    assert _train(work, "mydocs", "--force") == 0 and (foreign / "training_log.json").is_file()
    assert not (foreign / "notes.txt").exists() and _strays(work.parent) == []


def test_train_refuses_the_folder_of_its_input_even_with_force(work, monkeypatch, capsys):
    _fake_trainer(monkeypatch)
    data = _quatrains(work / "data" / "train.jsonl")
    before = Path(data).read_bytes()
    assert main(["train", "--train", data, "--dev", data, "--out", "data", "--model", json.dumps({"arch": "gpt2"}),
                 "--training", "{}", "--force"]) == 2
    assert "it holds" in _err(capsys) and Path(data).read_bytes() == before


def test_import_refuses_a_foreign_folder(work, foreign, capsys, tiny_gguf_llama):
    gguf = tiny_gguf_llama.gguf
    assert main(["import", str(gguf), "--out", "mydocs"]) == 2
    assert ("refusing to replace mydocs: it holds files that are not an earlier `poeval import` output "
            "(no import.json)") in _err(capsys)
    assert (foreign / "notes.txt").read_bytes() == NOTES
    assert main(["import", str(gguf), "--out", "mydocs", "--force"]) == 0
    assert (foreign / "import.json").is_file() and not (foreign / "notes.txt").exists()


# --- 2: an output path that is an input ------------------------------------------------------------

def _evaluate(sample, reference, out):
    return main(["evaluate", sample, "--reference", reference, "--lang", "en", "--metrics", "length",
                 "--out", out, "--quiet"])


@pytest.mark.parametrize("link", [None, "symlink", "hardlink"])
@pytest.mark.parametrize("which", ["samples", "--reference"])
def test_evaluate_refuses_an_out_that_is_its_sample_or_reference(which, link, work, capsys):
    sample, reference = _quatrains(work / "sample.jsonl"), _quatrains(work / "ref.jsonl")
    target = sample if which == "samples" else reference
    out = target
    if link:
        out = str(work / "link.json")
        (os.symlink if link == "symlink" else os.link)(target, out)
    before = Path(target).read_bytes()
    assert _evaluate(sample, reference, out) == 2
    assert f"evaluate: --out {out} is also an input ({which}); choose another path" in _err(capsys)
    assert Path(target).read_bytes() == before


@pytest.mark.parametrize("argv", [
    ["rhyme", "IN", "--lang", "en", "--out", "IN"],
    ["export-dataset", "IN", "--format", "parquet", "--out", "IN"],
    ["adherence", "cell", "abab=IN", "--lang", "en", "--system", "s", "--out", "IN"],
    ["table", "table1", "en:train:IN", "--out", "IN"],
    ["bpomp", "bigrams", "IN", "--out", "IN"],
])
def test_every_command_refuses_an_output_that_is_an_input(argv, work, capsys):
    data = _quatrains(work / "in.jsonl")
    before = Path(data).read_bytes()
    assert main([a.replace("IN", data) for a in argv]) == 2
    assert f"--out {data} is also an input" in _err(capsys)
    assert Path(data).read_bytes() == before


def test_evaluate_refuses_an_out_inside_a_cache_folder_it_reads(work, capsys):
    reference = _quatrains(work / "ref.jsonl")
    assert _index(work, "idx") == 0
    before = (work / "idx" / "index.json").read_bytes()
    assert main(["evaluate", _quatrains(work / "sample.jsonl"), "--reference", reference, "--lang", "en",
                 "--metrics", "length", "--cached", "memorization_index=idx", "--out", "idx/index.json"]) == 2
    assert "evaluate: --out idx/index.json lies inside an input (--cached); choose another path" in _err(capsys)
    assert (work / "idx" / "index.json").read_bytes() == before


def test_evaluate_refuses_an_out_that_is_the_sidecar_of_an_input(work, capsys):
    (work / "emb.npy").write_bytes(b"cached vectors")
    (work / "emb.npy.json").write_bytes(NOTES)
    assert main(["evaluate", _quatrains(work / "sample.jsonl"), "--reference", _quatrains(work / "ref.jsonl"),
                 "--lang", "en", "--metrics", "length", "--reference-embeddings", "emb.npy",
                 "--out", "emb.npy.json"]) == 2
    assert ("evaluate: --out emb.npy.json is the sidecar of an input (--reference-embeddings); choose another "
            "path") in _err(capsys)
    assert (work / "emb.npy.json").read_bytes() == NOTES


@pytest.mark.parametrize("argv", [["import-samples", "IN", "--lang", "en"], ["sample", "model"]])
def test_a_command_refuses_two_outputs_that_are_one_file(argv, work, capsys):
    data = _quatrains(work / "in.jsonl")
    assert main([a.replace("IN", data) for a in argv] + ["--out", "s.jsonl", "--stats", "./s.jsonl"]) == 2
    assert "--out s.jsonl is also another output (--stats ./s.jsonl); choose another path" in _err(capsys)
    assert not (work / "s.jsonl").exists()


@pytest.mark.parametrize(("extra", "why"), [
    (["--field", "lines"], "poeval reads that field of a record (id, lines, text, language)"),
    (["--field", "id"], "poeval reads that field of a record (id, lines, text, language)"),
    (["--field", "title", "--poem", "title"], "--poem title reads that field"),
    (["--field", "meter", "--meter"], "--meter writes that field"),
])
def test_rhyme_refuses_a_label_field_that_it_reads_or_writes(extra, why, work, capsys):
    data = _quatrains(work / "in.jsonl")
    assert main(["rhyme", data, "--lang", "en", "--out", "out.jsonl", *extra]) == 2
    assert f"--field {extra[1]!r}: {why}; name another field for the label" in _err(capsys)
    assert not (work / "out.jsonl").exists()


# --- 3: bpomp export writes only inside its folder -------------------------------------------------

@pytest.mark.parametrize("task", ["y/../../../victim", "../victim", "/tmp/victim", ".hidden", "", 3, "a" * 300])
def test_bpomp_export_refuses_a_task_that_is_not_a_plain_name(task, work, capsys):
    """`y/../../../victim` once wrote work/victim.jsonl from out/x's temp folder; a task of 300 letters once
    stopped with a traceback (OSError: file name too long) from the temp file of `<group>_<task>.jsonl`."""
    (work / "out").mkdir()
    victims = [work / "victim.jsonl", work / "victim.yaml"]
    for victim in victims:
        victim.write_bytes(NOTES)
    good = _pairs(work / "good.jsonl")
    bad = work / "bad.jsonl"   # the pair on line 2, after a blank line
    bad.write_text("\n" + json.dumps({"task": task, "original": LIMERICK, "corrupted": LIMERICK}) + "\n")
    assert main(["bpomp", "export", "out/x", "--pairs", good, str(bad)]) == 2
    err = _err(capsys)
    assert f"{bad}: line 2: 'task' must be a plain name of at most 100 characters" in err
    assert f"got {task!r}"[:100] in err
    assert all(v.read_bytes() == NOTES for v in victims)
    assert not (work / "out" / "x").exists() and _strays(work.parent) == []


def test_bpomp_export_refuses_a_group_name_too_long_for_a_file_name(work, capsys):
    """A group of 300 letters once stopped with a traceback (OSError: file name too long)."""
    good = _pairs(work / "good.jsonl")
    assert main(["bpomp", "export", "out/x", "--pairs", good, "--group", "g" * 300]) == 2
    assert "--group must be ASCII letters, digits and underscores, at most 100 of them" in _err(capsys)
    assert not (work / "out").exists()
    assert main(["bpomp", "export", "out/x", "--pairs", good, "--group", "g" * 100]) == 0


# --- 4: what stands at an output path is written through or refused, never replaced -----------------

def _char_device(path: Path) -> Path:
    """A null device node (major 1, minor 3) made inside the test's folder, never the machine's /dev/null."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        os.close(os.open(path, os.O_WRONLY))   # a folder mounted nodev refuses to open it
    except (PermissionError, OSError) as err:
        pytest.skip(f"cannot make a character device here: {err}")
    return path


def _import_samples(sample, out):
    return main(["import-samples", sample, "--lang", "en", "--out", out, "--stats", "stats.json"])


def _evaluate_to(sample, out):
    return _evaluate(sample, _quatrains(Path(sample).parent / "ref.jsonl"), out)


@pytest.mark.parametrize("run", [_evaluate_to, _import_samples])
def test_out_writes_through_a_character_device(run, work):
    device = _char_device(work / "n")
    assert run(_quatrains(work / "sample.jsonl"), "n") == 0
    assert stat.S_ISCHR(os.lstat(device).st_mode) and _strays(work.parent) == []


def test_an_output_written_through_a_device_gets_no_stamp_beside_it(work):
    """`rhyme --out` writes a stamp beside a file it writes; beside a device (as /dev/null would be) it makes none."""
    device = _char_device(work / "n")
    assert main(["rhyme", _quatrains(work / "sample.jsonl"), "--lang", "en", "--out", "n"]) == 0
    assert sorted(p.name for p in work.iterdir()) == ["n", "sample.jsonl"]
    assert main(["rhyme", "sample.jsonl", "--lang", "en", "--out", "r.jsonl"]) == 0
    assert (work / "r.jsonl.stamp.json").is_file()


def _drain(reader: int, writer: threading.Thread, seconds: float = 20) -> bytes:
    """What the non-blocking ``reader`` gets while ``writer`` runs, and after (at most ``seconds``)."""
    chunks, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        done = not writer.is_alive()
        try:
            while chunk := os.read(reader, 1 << 16):
                chunks.append(chunk)
        except BlockingIOError:   # a writer holds it open, nothing to read yet
            pass
        if done:
            return b"".join(chunks)
        time.sleep(0.01)
    raise AssertionError("the command did not finish writing the FIFO")


def test_out_writes_through_a_fifo(work):
    """The command runs in a thread while the test reads the FIFO, its reader open from the start (so that the
    command's open does not wait); a deadline keeps the test from hanging however the command behaves."""
    fifo = work / "f"
    os.mkfifo(fifo)
    sample = _quatrains(work / "sample.jsonl")
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    result: dict = {}
    writer = threading.Thread(target=lambda: result.update(rc=_evaluate_to(sample, "f")), daemon=True)
    writer.start()
    try:
        got = _drain(reader, writer)
    finally:
        os.close(reader)
    assert result["rc"] == 0 and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(got)["length"]["n"] == 6


def test_out_writes_through_a_link_to_a_pipe(work):
    """`ln -s /proc/self/fd/1 so`: a link to the command's own standard output, here a pipe of the test's."""
    read_end, write_end = os.pipe()
    os.symlink(f"/proc/self/fd/{write_end}", work / "so")
    try:
        assert _evaluate_to(_quatrains(work / "sample.jsonl"), "so") == 0
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as handle:
        assert json.loads(handle.read())["length"]["n"] == 6
    assert (work / "so").is_symlink() and _strays(work.parent) == []


def test_out_refuses_a_link_that_points_outside_its_folder(work, capsys):
    (work / "elsewhere").mkdir()
    (work / "elsewhere" / "x.json").write_bytes(NOTES)
    (work / "d").mkdir()
    os.symlink("../elsewhere/x.json", work / "d" / "out_link")
    assert _evaluate_to(_quatrains(work / "sample.jsonl"), "d/out_link") == 2
    assert (f"d/out_link: is a symbolic link to {work / 'elsewhere' / 'x.json'}, outside its folder"
            in _err(capsys))
    assert (work / "d" / "out_link").is_symlink() and (work / "elsewhere" / "x.json").read_bytes() == NOTES


def test_out_writes_at_the_target_of_a_link_inside_its_folder(work):
    (work / "real.json").write_bytes(NOTES)
    os.symlink("real.json", work / "in_link")
    assert _evaluate_to(_quatrains(work / "sample.jsonl"), "in_link") == 0
    assert (work / "in_link").is_symlink() and json.loads((work / "real.json").read_text())["length"]["n"] == 6
    assert _strays(work.parent) == []


# --- 5: the temp files of a killed write are removed by a later write of the same output ---------------

KILLED_WRITE = """import os, signal, sys
from poeval.files import atomic_write
with atomic_write(sys.argv[1]) as handle:
    handle.write("partial")
    handle.flush()
    os.kill(os.getpid(), signal.SIGKILL)
"""
NO_PID = 4194305   # above Linux's largest pid (PID_MAX_LIMIT, 2**22): never a running process


def _age(path: Path, seconds: float = 3600) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)


def test_the_temp_file_of_a_killed_write_is_removed_by_the_next_write(work):
    proc = subprocess.run([sys.executable, "-c", KILLED_WRITE, "out.json"], cwd=work, capture_output=True)
    assert proc.returncode == -signal.SIGKILL
    [left] = _strays(work)
    _age(work / left)
    assert _evaluate_to(_quatrains(work / "sample.jsonl"), "out.json") == 0
    assert _strays(work) == [] and json.loads((work / "out.json").read_text())["length"]["n"] == 6


def test_only_stale_temp_files_of_the_output_itself_are_removed(work):
    names = {"stale_old_format": ".out.json.abcdefgh.tmp", "stale_dead_pid": f".out.json.{NO_PID}.abcdefgh.tmp",
             "fresh_dead_pid": f".out.json.{NO_PID}.ijklmnop.tmp", "running": f".out.json.{os.getpid()}.abcdefgh.tmp",
             "other_output": f".out.json.1.{NO_PID}.abcdefgh.tmp", "not_a_temp": ".out.json.abcdefgh.tmp.keep"}
    for key, name in names.items():
        (work / name).write_bytes(NOTES)
        if key != "fresh_dead_pid":
            _age(work / name)
    assert _evaluate_to(_quatrains(work / "sample.jsonl"), "out.json") == 0
    left = {key for key, name in names.items() if (work / name).exists()}
    assert left == {"fresh_dead_pid", "running", "other_output", "not_a_temp"}
