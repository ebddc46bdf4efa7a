"""What `poeval import-samples` and `poeval evaluate` take in: the stamp of the bytes read, bounds on a verse
and on a file's lines, the language check, inputs outside what is stamped and ids numbered by position.
docs/inputs-errors.md "Inputs and errors" describes the same rules."""

import builtins
import gzip
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from poeval import config as poeval_config
from poeval import io as poeval_io
from poeval import paths
from poeval.cli import main
from poeval.files import file_sha256
from poeval.io import read_json, write_jsonl

from helpers import QUATRAIN, _jsonl

ROOT = Path(__file__).resolve().parents[2]
ENGLISH = ["the wind is in the willows and the rain", "is on the roof of all the houses here",
           "and she that sang to me will sing again", "when all the summer of the world is near"]
GERMAN = ["der Wind ist in den Weiden und der Regen", "fällt auf das Dach von allen Häusern hier",
          "und sie, die mir gesungen, wird es wieder", "wenn auch der Sommer kommt, ich bin bei dir"]


def _import(source, out: Path, *extra: str) -> int:
    return main(["import-samples", str(source), "--lang", "en", "--out", str(out / "s.jsonl"),
                 "--stats", str(out / "s.stats.json"), *extra])


def _evaluate(tmp_path, samples, reference, *extra) -> int:
    return main(["evaluate", str(samples), "--reference", str(reference), "--lang", "en", "--metrics", "length",
                 "--out", str(tmp_path / "cell.json"), "--quiet", *extra])


def _error(capsys) -> str:
    """The command's one error line (no traceback)."""
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err[-2000:]
    return err.strip()


# --- the stamp is of the bytes the import read ---------------------------------------------------

class _RewrittenWhileRead:
    """A file opened for reading that, once its first line has been read, is rewritten on disk in place, at the
    same length, by someone else: what happened to a samples file rewritten while `import_samples` read it."""

    def __init__(self, handle, path: Path, new: bytes):
        self._handle, self._path, self._new = handle, path, new

    def readline(self, size=-1):
        line = self._handle.readline(size)
        if self._new is not None:
            with open(self._path, "r+b") as other:   # another writer, not through this handle
                other.write(self._new)
            self._new = None
        return line

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()


def test_an_import_stamps_the_bytes_it_read_though_the_file_changes_meanwhile(tmp_path, monkeypatch):
    """A file that another program rewrites (same length) while the import reads it: the import keeps the
    lines it read, so its stamp must be those bytes' sha256, and the import is stale afterwards. Nothing in the
    readers can be made to pause mid-read, so the test replaces `open` in poeval.io, where every reader opens its
    files, with one whose file is rewritten on disk right after its first line was read; the rest of the small
    file was already in the reader's buffer, as the old bytes."""
    from poeval.report.stale import stale_outputs

    monkeypatch.chdir(tmp_path)
    old = "".join(json.dumps({"id": f"m{i}", "lines": QUATRAIN}) + "\n" for i in range(3)).encode()
    new = old.replace(b"warm", b"cold")
    assert len(new) == len(old) and new != old
    Path("mine.jsonl").write_bytes(old)
    write_jsonl(paths.train("en"), [{"id": f"t{i}", "lines": QUATRAIN} for i in range(5)])

    def rewriting_open(file, mode="r", *args, **kwargs):
        handle = builtins.open(file, mode, *args, **kwargs)
        if mode == "rb" and Path(file).resolve() == Path("mine.jsonl").resolve() and not rewritten:
            rewritten.append(file)
            return _RewrittenWhileRead(handle, Path(file), new)
        return handle

    rewritten: list = []
    monkeypatch.setattr(poeval_io, "open", rewriting_open, raising=False)
    samples, stats = paths.samples("en", "mine", "vanilla"), paths.stats("en", "mine", "vanilla")
    assert main(["import-samples", "mine.jsonl", "--lang", "en", "--out", samples, "--stats", stats]) == 0
    monkeypatch.delattr(poeval_io, "open")
    assert rewritten and Path("mine.jsonl").read_bytes() == new
    assert "warm" in Path(samples).read_text()   # the old lines were imported
    recorded = read_json(stats)["provenance"]["inputs"]["source"]["sha256"]
    assert recorded == hashlib.sha256(old).hexdigest() != file_sha256("mine.jsonl")
    cfg = poeval_config.merge(poeval_config.read(ROOT / "params.yaml"), {
        "systems": ["mine"], "models": {"mine": {"arch": "samples", "samples": {"en": {"vanilla": "mine.jsonl"}}}}})
    stale = {s.output: s.reasons for s in stale_outputs(cfg, ".")}
    assert stale[stats] == ["input source mine.jsonl changed since it was built"]


def test_a_gzipped_import_stamps_the_file_as_stored(tmp_path):
    """The stamp of a .gz file is the sha256 of its gzipped bytes, as `stale` and Snakemake see the file."""
    source = tmp_path / "s.jsonl.gz"
    with gzip.open(source, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps({"lines": QUATRAIN}) + "\n")
    with open(source, "ab") as handle:   # a second gzip member: read as well, and hashed
        handle.write(gzip.compress((json.dumps({"lines": QUATRAIN[::-1]}) + "\n").encode()))
    assert _import(source, tmp_path / "o") == 0
    stats = read_json(tmp_path / "o" / "s.stats.json")
    assert stats["valid"] == 2 and stats["provenance"]["inputs"]["source"]["sha256"] == file_sha256(source)


# --- bounds ---------------------------------------------------------------------------------------

def test_a_verse_longer_than_the_cap_is_skipped_as_long_verse(tmp_path, capsys, ref, monkeypatch):
    """A verse of 50 MB once imported and cost memorization minutes and gigabytes; a verse over
    POEVAL_MAX_VERSE_CHARS (2000 characters) makes its poem a `long_verse` skip in both commands."""
    long = "la " * 667   # 2001 characters
    source = _jsonl(tmp_path / "s.jsonl", [{"id": "a", "lines": [long, *QUATRAIN[1:]]}, {"id": "b", "lines": QUATRAIN}])
    assert _import(source, tmp_path / "o") == 0
    stats = read_json(tmp_path / "o" / "s.stats.json")
    assert (stats["valid"], stats["reasons"]) == (1, {"long_verse": 1})
    assert _evaluate(tmp_path, source, ref) == 0
    assert read_json(tmp_path / "cell.json")["skipped"] == {"long_verse": 1}
    monkeypatch.setenv("POEVAL_MAX_VERSE_CHARS", "3000")
    assert _import(source, tmp_path / "raised") == 0
    assert read_json(tmp_path / "raised" / "s.stats.json")["valid"] == 2
    monkeypatch.setenv("POEVAL_MAX_VERSE_CHARS", "many")
    capsys.readouterr()
    assert _import(source, tmp_path / "bad") == 2
    assert "POEVAL_MAX_VERSE_CHARS='many': expected a positive number of characters" in _error(capsys)


def test_a_gzip_bomb_of_newlines_stops_at_the_line_cap(tmp_path, capsys, ref, monkeypatch):
    """A gzipped file of newlines once read at a million lines a second up to the 64 GiB byte cap (hours);
    POEVAL_MAX_INPUT_LINES caps the lines (blank ones too) as well."""
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb") as handle:
        handle.write(b"\n" * 5000)
    monkeypatch.setenv("POEVAL_MAX_INPUT_LINES", "1000")
    assert _evaluate(tmp_path, bomb, ref) == 2
    assert f"{bomb}: more than 1000 lines (the cap POEVAL_MAX_INPUT_LINES raises)" in _error(capsys)
    assert _import(bomb, tmp_path / "o") == 2
    assert "more than 1000 lines" in _error(capsys) and not (tmp_path / "o").exists()


# --- languages ------------------------------------------------------------------------------------

@pytest.mark.parametrize("said", [["de"], 5, {"code": "de"}])
def test_a_language_that_is_not_a_string_is_an_error(tmp_path, capsys, said):
    """`"language": ["de"]` or `5` once passed `--lang en` unchecked."""
    source = _jsonl(tmp_path / "s.jsonl", [{"lines": QUATRAIN, "language": "en"}, {"lines": QUATRAIN, "language": said}])
    assert _import(source, tmp_path / "o") == 2
    assert f"{source}: record 2: 'language' must be a string such as \"en\", got {said!r}" in _error(capsys)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("english, german", [(0, 30), (18, 30), (30, 18)])
def test_both_commands_warn_by_one_rule_about_poems_in_another_language(tmp_path, capsys, english, german):
    """An all-German file once imported as English without a word, and one of 18 English and 30 German poems
    was warned about by neither command; a share of 10 % or more of another language is warned about."""
    poems = [ENGLISH] * english + [GERMAN] * german
    source = _jsonl(tmp_path / "s.jsonl", [{"id": str(i), "lines": p} for i, p in enumerate(poems)])
    reference = _jsonl(tmp_path / "ref.jsonl", [{"id": "r", "lines": ENGLISH}])
    want = f"{source} reads as 'de', not as --lang 'en', in {german} of {english + german} poems"
    assert _import(source, tmp_path / "o") == 0
    assert f"poeval import-samples: warning: {want}" in capsys.readouterr().err
    assert _evaluate(tmp_path, source, reference) == 0
    assert f"poeval evaluate: warning: {want}" in capsys.readouterr().err


def test_english_samples_are_not_warned_about(tmp_path, capsys):
    poems = [ENGLISH] * 40 + [GERMAN] * 2   # under a tenth: a quotation, not a language mix-up
    source = _jsonl(tmp_path / "s.jsonl", [{"id": str(i), "lines": p} for i, p in enumerate(poems)])
    assert _import(source, tmp_path / "o") == 0 and _evaluate(tmp_path, source, source) == 0
    assert "warning" not in capsys.readouterr().err


# --- inputs outside what is stamped ---------------------------------------------------------------

def _saved(path: Path) -> Path:
    import datasets

    datasets.Dataset.from_dict({"text": [QUATRAIN] * 3}).save_to_disk(str(path))
    return path


def test_a_saved_dataset_is_read_from_the_bytes_it_is_stamped_by(tmp_path):
    """Its stamp is the folder's sha256 as `stale` computes it (every file's bytes, by relative path)."""
    from poeval.stamps import dir_sha256

    ds = _saved(tmp_path / "ds")
    assert _import(ds, tmp_path / "o") == 0
    stats = read_json(tmp_path / "o" / "s.stats.json")
    assert stats["valid"] == 3 and stats["provenance"]["inputs"]["source"]["sha256"] == dir_sha256(ds)


def test_a_saved_dataset_whose_data_lies_outside_its_folder_is_refused(tmp_path, capsys, ref):
    """A state.json naming `../ds/data-….arrow` once imported a file that neither the stamp nor the
    workflow's inputs cover; so does a data file that is a link out of the folder."""
    ds = _saved(tmp_path / "ds")
    capsys.readouterr()   # save_to_disk's progress bar
    state = json.loads((ds / "state.json").read_text())
    data = state["_data_files"][0]["filename"]
    outside = tmp_path / "outside"
    outside.mkdir()
    state["_data_files"] = [{"filename": f"../ds/{data}"}]
    (outside / "state.json").write_text(json.dumps(state))
    assert _import(outside, tmp_path / "o") == 2
    assert (f"{outside}: state.json names the data file '../ds/{data}', which is not a file of this folder"
            in _error(capsys))
    assert _evaluate(tmp_path, outside, ref) == 2
    assert "which is not a file of this folder" in _error(capsys)
    linked = tmp_path / "linked"
    linked.mkdir()
    shutil.copy(ds / "state.json", linked / "state.json")
    (linked / data).symlink_to(ds / data)
    assert _import(linked, tmp_path / "o") == 2
    assert f"{linked}: state.json names the data file '{data}', which is not a file of this folder" in _error(capsys)
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd, as /dev/stdin is made")
def test_a_pipe_is_refused_by_name(tmp_path, capsys):
    """`cat S | poeval import-samples /dev/stdin` once said "the file is empty": the format sniff ate the pipe.
    /dev/stdin is a link to /proc/self/fd/0; the test links to a pipe of its own the same way."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, (json.dumps({"lines": QUATRAIN}) + "\n").encode())
        os.close(write_end)
        stdin = tmp_path / "stdin"
        stdin.symlink_to(f"/proc/self/fd/{read_end}")
        assert _import(stdin, tmp_path / "o") == 2
        assert f"{stdin}: not a regular file (a pipe or a device)" in _error(capsys)
        assert not (tmp_path / "o").exists()
    finally:
        os.close(read_end)


# --- ids ------------------------------------------------------------------------------------------

def test_an_id_equal_to_another_records_position_number_is_named_as_such(tmp_path, capsys, ref):
    """A record without an id is numbered by its position (from 0); one that gives that number as its id once got
    "id '1' occurs more than once", blaming a repeated id that the file does not hold."""
    source = _jsonl(tmp_path / "s.jsonl", [{"lines": QUATRAIN}, {"lines": QUATRAIN}, {"id": "1", "lines": QUATRAIN}])
    want = (f"{source}: record 2 has no 'id', so it is numbered '1' by its position (from 0), and record 3 gives "
            "'1' as its id; give every record an id, or none")
    assert _import(source, tmp_path / "o") == 2
    assert want in _error(capsys)
    assert _evaluate(tmp_path, source, ref) == 2
    assert want in _error(capsys)
    both = _jsonl(tmp_path / "both.jsonl", [{"id": "a", "lines": QUATRAIN}, {"id": "a", "lines": QUATRAIN}])
    assert _import(both, tmp_path / "o") == 2
    assert "id 'a' occurs more than once" in _error(capsys)
