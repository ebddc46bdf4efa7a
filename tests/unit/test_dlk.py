"""German corpora: ``format: dlk`` reads the DLK release as cloned (its JSON folder or one file) and gives the
windows of the same poems in the converted JSON-lines shape; a release file that cannot be read stops with one
line; German in other shapes goes through the generic formats; the params step names a corpus path that is not
there (docs/configuration.md "German")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from poeval import cli
from poeval.data import quatrains as Q
from poeval.errors import PoevalError
from helpers import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
RELEASE = FIXTURES / "dlk_release"            # the poems of corpus_dlk_tiny.jsonl in the release's shape
CONVERTED = FIXTURES / "corpus_dlk_tiny.jsonl"
POEM1 = RELEASE / "dta.poem.1-Muster,_Max-Probe.json"


def build(path, **kw):
    return Q.build_quatrains("dlk", str(path), progress=False, **kw)


def without_file(report: dict) -> dict:
    return {**report, "source": {k: v for k, v in report["source"].items() if k != "file"}}


@pytest.mark.parametrize("non_overlap", [True, False])
def test_release_folder_gives_the_windows_of_the_converted_file(non_overlap):
    records, report = build(RELEASE, non_overlap=non_overlap)
    expected, expected_report = build(CONVERTED, non_overlap=non_overlap)
    assert records == expected and without_file(report) == without_file(expected_report)
    assert report["source"]["poems"] == 2 and report["source"]["file"] == str(RELEASE)
    if non_overlap:   # the hand count of test_corpus.py's converted fixture
        assert [r["source"] for r in records] == ["dta.poem.1:0:3", "dta.poem.1:2:0"]
        assert records[1]["measure"] == ["iambic.tetra", None, "iambic.tetra", "iambic.tetra"]


def test_one_release_file_gives_its_stanzas_in_number_order(tmp_path):
    """The fixture's poem as read by hand: stanzas of 10, 2 and 4 verses; a verse without a metre label gets None."""
    from poeval.data import dlk   # (here: the module is new, and the other tests fail on their own before it)
    [(where, poem)] = list(dlk.poems(str(POEM1), "corpus.de.path"))
    assert poem["id"] == "dta.poem.1" and [len(stanza) for stanza in poem["stanzas"]] == [10, 2, 4]
    assert poem["stanzas"][0][9] == {"text": "Der Abend sinkt auf Hain und Grab", "measure": "iambic.tetra"}
    assert poem["stanzas"][2][1] == {"text": "Die Sterne ziehn am Himmel hin", "measure": None}
    # numbers, not strings, order the stanzas and verses: stanza.10 after stanza.9, line.10 after line.9
    shuffled = {"x.poem.1": {"poem": {f"stanza.{s}": {f"line.{i}": {"text": f"{s}/{i}"} for i in (10, 9, 1)}
                                      for s in (10, 9, 1)}}}
    (tmp_path / "x.json").write_text(json.dumps(shuffled))
    [(_, poem)] = list(dlk.poems(str(tmp_path / "x.json"), "corpus.de.path"))
    assert [[line["text"] for line in stanza] for stanza in poem["stanzas"]] == [
        [f"{s}/{i}" for i in (1, 9, 10)] for s in (1, 9, 10)]


def test_one_release_file_gives_the_windows_of_its_converted_poem(tmp_path):
    converted = tmp_path / "poem1.jsonl"
    converted.write_text(CONVERTED.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    records, report = build(POEM1, non_overlap=False)
    expected, expected_report = build(converted, non_overlap=False)
    assert records == expected and without_file(report) == without_file(expected_report)
    assert report["source"]["poems"] == 1 and {r["source"].split(":")[0] for r in records} == {"dta.poem.1"}


def release_poem(pid: str, verses: list[str]) -> dict:
    return {pid: {"metadata": {"title": "N.A."},
                  "poem": {"stanza.1": {f"line.{i}": {"text": v, "measure": "iambic.tetra"}
                                        for i, v in enumerate(verses, 1)}}}}


def verses(first: int) -> list[str]:
    return [f"Ein ganz gewöhnlicher Vers Nummer {i}" for i in range(first, first + 4)]


def test_folder_in_poem_number_order_and_a_repeated_poem_read_once(tmp_path):
    folder = tmp_path / "json_DLK_v6"
    folder.mkdir()
    (folder / "dta.poem.10-Muster,_Max-Zehn.json").write_text(json.dumps(release_poem("dta.poem.10", verses(5))))
    nine = json.dumps(release_poem("dta.poem.9", verses(1)))
    (folder / "dta.poem.9-Muster,_Max-Ein_sehr_langer_Titel.json").write_text(nine)
    (folder / "dta.poem.9-Muster,_Max-Ein_sehr_lan").write_text(nine)   # the release cuts long names, .json too
    (folder / "notes.txt").write_text("not a poem\n")
    records, report = build(folder)
    assert [r["source"] for r in records] == ["dta.poem.9:0:0", "dta.poem.10:0:0"]
    assert report["source"]["poems"] == 2
    (folder / "dta.poem.9-Muster,_Max-Ein_sehr_lan").write_text(json.dumps(release_poem("dta.poem.9", verses(9))))
    with pytest.raises(PoevalError, match=r"Titel\.json: poem dta\.poem\.9: this poem id is also in "
                                          r"dta\.poem\.9-Muster,_Max-Ein_sehr_lan with other lines"):
        build(folder)


BAD_FILES = {
    "truncated JSON": (b'{"dta.poem.1": {"metadata": {}, "poem": {"stanza.1": ', "line 1: invalid JSON"),
    "not UTF-8": (b'{"dta.poem.1": "\xff"}', "line 1: not valid UTF-8"),
    "an array": (b'[{"text": "Ein Vers"}]', "not a DLK file: expected one JSON object"),
    "a line without text": (json.dumps({"dta.poem.1": {"poem": {"stanza.1": {"line.1": {"measure": "x"}}}}}).encode(),
                            "poem dta.poem.1: stanza.1 must map 'line.N' to"),
}


# a broken file given alone was one line before the release was read; inside a folder, and in each shape, it is now
@pytest.mark.parametrize("case, given", [(case, given) for case in BAD_FILES for given in ("folder", "file")
                                         if given == "folder" or case in ("an array", "a line without text")])
def test_a_bad_release_file_stops_with_one_line(case, given, tmp_path, capsys):
    folder = tmp_path / "json_DLK_v6"
    shutil.copytree(RELEASE, folder)
    content, message = BAD_FILES[case]
    bad = folder / "dta.poem.3-Muster,_Max-Kaputt.json"
    bad.write_bytes(content)
    corpus = {"format": "dlk", "path": str(folder if given == "folder" else bad)}
    status = cli.main(["quatrains", "--lang", "de", "--corpus", json.dumps(corpus), "--quatrains", "{}",
                       "--out", str(tmp_path / "q.jsonl"), "--report", str(tmp_path / "r.json")])
    err = capsys.readouterr().err   # (the progress bar's lines, then the error)
    error = err[err.index("poeval: error: "):].strip()
    assert status == 2 and "\n" not in error, err
    assert error.startswith(f"poeval: error: {bad}: ") and message in error, err
    assert not (tmp_path / "q.jsonl").exists()


def test_a_folder_without_poem_files_is_named(tmp_path):
    (tmp_path / "README.md").write_text("nothing here\n")
    with pytest.raises(PoevalError, match=r"corpus\.de\.path: .*: no DLK poem file .* in this folder; give .*json_DLK_v6"):
        Q.build_quatrains("dlk", str(tmp_path), progress=False, path_key="corpus.de.path")


def test_german_in_other_shapes_goes_through_the_generic_formats():
    """examples/corpus: plain text (a blank line between quatrains) as format quatrain, and stanzas of any length
    as JSON lines of {"id", "stanzas": [[{"text"}]]} (the converted DLK shape, measure optional) as format dlk."""
    records, _ = Q.build_quatrains("quatrain", str(ROOT / "examples" / "corpus" / "german-quatrains.txt"),
                                   progress=False, id_prefix="de")
    assert [r["lines"][0] for r in records] == ["Am Ufer liegt ein stiller Kahn,", "Die Linde blüht am Brunnenrand,"]
    assert all(len(r["lines"]) == 4 for r in records)
    records, report = build(ROOT / "examples" / "corpus" / "german-stanzas.jsonl")
    # herbst: one 6-verse stanza (windows 0-2, the greedy step keeps 0) and a 2-verse one; winter: one window
    assert [r["source"] for r in records] == ["herbst:0:0", "winter:0:0"]
    assert records[1]["lines"][3] == "Und lachen laut im kalten Sturm." and records[0]["measure"] == [None] * 4
    assert report["source"]["stanzas_under_4_lines"] == 1


# --- the params step: a corpus path that is not there ------------------------------------------------------

def validate(tmp_path, capsys, corpus: dict, english: dict | None = None) -> tuple[int, str]:
    overlay = tmp_path / "german.yaml"
    overlay.write_text(yaml.safe_dump({"languages": ["en", "de"], "corpus": {"de": corpus, "en": english or {}}}))
    status = cli.main(["validate", "--params", str(ROOT / "params.yaml"), str(ROOT / "config" / "lang" / "de.yaml"),
                       str(overlay)])
    out = capsys.readouterr()
    return status, out.out + out.err


def test_validate_names_a_german_corpus_path_that_is_not_there(tmp_path, capsys):
    missing = tmp_path / "DLK" / "DLK" / "meterized" / "json_DLK_v6"
    status, said = validate(tmp_path, capsys, {"path": str(missing)})
    assert status == 2
    assert f"  - key corpus.de.path: {missing}: not found; clone the DLK corpus (git clone --depth 1 " \
           "https://github.com/tnhaider/DLK ../DLK, where params.yaml looks)" in said
    assert said.count("\n  - ") == 1, said
    # a relative path is read from the working directory, which the line names
    status, said = validate(tmp_path, capsys, {"path": "nowhere/dlk_poems.jsonl.gz"})
    assert status == 2 and f"nowhere/dlk_poems.jsonl.gz: not found (relative to the working directory {Path.cwd()})" in said
    for there in (RELEASE, POEM1, CONVERTED):
        assert validate(tmp_path, capsys, {"path": str(there)})[0] == 0
    status, said = validate(tmp_path, capsys, {"format": "quatrain", "path": str(tmp_path / "q.txt")})
    assert status == 2 and f"key corpus.de.path: {tmp_path / 'q.txt'}: not found" in said and "DLK" not in said
    # every language's path, one line each
    status, said = validate(tmp_path, capsys, {"path": str(missing)}, {"format": "quatrain", "path": "en.jsonl"})
    assert status == 2 and [line.split(":")[0] for line in said.splitlines() if line.startswith("  - ")] == [
        "  - key corpus.en.path", "  - key corpus.de.path"], said
