"""Bad input gives one clear error naming the file, line or key, never a traceback and never a silent
empty result (issue 22, items 5-7 and 9). docs/inputs-errors.md "Inputs and errors" describes the same behaviour."""

import json
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import QUATRAIN, _jsonl
from poeval import bpomp, io, poem_files
from poeval.bpomp.report import write_accuracy_cell
from poeval.cli import main
from poeval.data.quatrains import build_quatrains
from poeval.errors import PoevalError
from poeval.metrics.evaluate import evaluate
from poeval.poetry.annotate import write_annotated

LIMERICK = ["There once was a man from the sea", "Who wanted to climb up a tree",
            "He went up the side", "And there he just died", "And that was the end of the key"]




def _evaluate(tmp_path, samples, reference, *extra):
    return main(["evaluate", str(samples), "--reference", str(reference), "--lang", "en", "--metrics", "length",
                 "--out", str(tmp_path / "cell.json"), "--quiet", *extra])


# --- 5: nothing usable is an error, with what was read and skipped ---------------------------------

@pytest.mark.parametrize("content, message", [
    ("", "nothing usable: no poems"),
    ("\n\n   \n", "nothing usable: no poems"),
    ("".join(json.dumps({"id": str(i), "verses": QUATRAIN}) + "\n" for i in range(3)),
     "nothing usable: read 3 poems, kept 0; skipped: malformed 3"),
    ("a\nb\nc\n\nd\n", "read 2 poems, kept 0; skipped: not_4_lines 2"),
])
def test_evaluate_with_nothing_usable_exits_non_zero_with_counts(tmp_path, ref, capsys, content, message):
    samples = tmp_path / "samples.txt"
    samples.write_text(content)
    assert _evaluate(tmp_path, samples, ref) == 2
    err = capsys.readouterr().err
    assert message in err and "samples.txt" in err
    assert not (tmp_path / "cell.json").exists()


def test_allow_empty_makes_an_empty_sample_a_cell_of_nulls(tmp_path, ref):
    """The workflow's switch: a model that wrote no valid quatrain still gets its (empty) cell."""
    samples = tmp_path / "samples.txt"
    samples.write_text("a\nb\nc\n")
    assert _evaluate(tmp_path, samples, ref, "--allow-empty") == 0
    cell = json.loads((tmp_path / "cell.json").read_text())
    assert cell["n_poems"] == 0 and cell["skipped"] == {"not_4_lines": 1} and cell["length"]["mean"] is None


def test_a_bom_prefixed_jsonl_named_txt_is_read_as_jsonl(tmp_path, ref):
    samples = tmp_path / "samples.txt"
    samples.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps({"id": f"s{i}", "lines": QUATRAIN}) + "\n"
                                                  for i in range(2)).encode())
    result = evaluate(samples, ref, "en", ["length"])
    assert result["n_poems"] == 2 and result["skipped"] == {}
    plain = tmp_path / "plain.txt"
    plain.write_bytes(b"\xef\xbb\xbf" + "\n".join(QUATRAIN).encode())
    assert poem_files.read_poems(plain)[0][0]["lines"] == QUATRAIN   # the mark is not part of the first verse


def test_the_reference_sides_skipped_records_are_counted(tmp_path):
    reference = _jsonl(tmp_path / "ref.jsonl", [{"id": "r0", "lines": QUATRAIN}, {"id": "r1", "lines": QUATRAIN[:3]},
                                                {"id": "r2", "lines": QUATRAIN + ["x"]}])
    samples = _jsonl(tmp_path / "s.jsonl", [{"id": "s0", "lines": QUATRAIN}])
    result = evaluate(samples, reference, "en", ["length"])
    assert result["n_reference"] == 1 and result["reference_skipped"] == {"not_4_lines": 2}


@pytest.mark.parametrize("options, key", [
    ({"lexical": {"mattr_windw": 10}}, "options.lexical.mattr_windw"),
    ({"lexicl": {}}, "'lexicl'"),
    ({"memorization": {"quatrain": 0.7, "verses": 0.9}}, "options.memorization.verses"),
])
def test_an_unknown_options_key_is_rejected_by_name(tmp_path, ref, capsys, options, key):
    samples = _jsonl(tmp_path / "s.jsonl", [{"id": "s0", "lines": QUATRAIN}])
    assert _evaluate(tmp_path, samples, ref, "--options", json.dumps(options)) == 2
    assert key in capsys.readouterr().err


def test_rhyme_and_bpomp_commands_with_nothing_usable_exit_non_zero(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["rhyme", str(empty), "--lang", "en", "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "nothing usable" in capsys.readouterr().err
    prose = _jsonl(tmp_path / "prose.jsonl", [{"id": "p", "lines": ["one line of prose"]}])
    assert main(["bpomp", "corpus", prose, "--format", "fortune", "--out", str(tmp_path / "l.jsonl")]) == 2
    assert "read 1 limericks, kept 0; skipped: not_5_lines 1" in capsys.readouterr().err
    assert main(["bpomp", "pairs", str(empty), "--task", "line_swap", "--out", str(tmp_path / "p.jsonl")]) == 2
    assert "nothing usable: no limericks" in capsys.readouterr().err
    assert not any((tmp_path / name).exists() for name in ("o.jsonl", "l.jsonl", "p.jsonl"))


# --- 6: duplicate ids ------------------------------------------------------------------------------

def test_duplicate_sample_ids_are_rejected_naming_the_file_and_the_id(tmp_path, ref, capsys):
    samples = _jsonl(tmp_path / "s.jsonl", [{"id": "a", "lines": QUATRAIN}, {"id": "b", "lines": QUATRAIN},
                                            {"id": "a", "lines": QUATRAIN}, {"id": "b", "lines": QUATRAIN}])
    assert _evaluate(tmp_path, samples, ref) == 2
    err = capsys.readouterr().err
    assert "s.jsonl: id 'a' occurs more than once" in err


def test_memorization_intervals_stay_proportions_when_half_the_sample_is_copied(tmp_path):
    """5 of 10 poems copy a training quatrain: the rate is 0.5 and its bootstrap interval lies in
    [0, 1] and around 0.5 (with ids piled onto one poem it reached 1.5)."""
    train = [[f"{w} line {k} of training poem {i}" for k, w in enumerate(["first", "second", "third", "fourth"])]
             for i in range(5)]
    novel = [[f"{w} verse {k} written fresh as sample {i}" for k, w in enumerate(["alpha", "beta", "gamma", "delta"])]
             for i in range(5)]
    reference = _jsonl(tmp_path / "ref.jsonl", [{"id": f"t{i}", "lines": q} for i, q in enumerate(train)])
    samples = _jsonl(tmp_path / "s.jsonl", [{"id": f"s{i}", "lines": q} for i, q in enumerate(train + novel)])
    result = evaluate(samples, reference, "en", ["memorization"], bootstrap_reps=200)
    low, high = result["memorization"]["ci"]["quatrain"]
    assert result["memorization"]["quatrain"] == 0.5
    assert 0.0 <= low < 0.5 < high <= 1.0


def test_plain_text_and_id_less_jsonl_get_unique_ids(tmp_path):
    text = tmp_path / "s.txt"
    text.write_text("\n\n".join("\n".join(QUATRAIN) for _ in range(3)))
    jsonl = _jsonl(tmp_path / "s.jsonl", [{"lines": QUATRAIN}] * 3)
    for path in (text, jsonl):
        assert [p["id"] for p in poem_files.read_poems(path)[0]] == ["0", "1", "2"]


def test_bpomp_rejects_duplicate_limerick_ids(tmp_path, capsys):
    same = _jsonl(tmp_path / "same.jsonl", [{"id": "same", "lines": LIMERICK}] * 22)
    assert main(["bpomp", "corpus", same, "--format", "fortune", "--out", str(tmp_path / "l.jsonl")]) == 2
    assert "same.jsonl: id 'same' occurs more than once" in capsys.readouterr().err
    with pytest.raises(PoevalError, match="id 'x' occurs more than once"):
        bpomp.make_pairs([{"id": "x", "lines": LIMERICK}, {"id": "x", "lines": LIMERICK}], "line_swap")


# --- 7: tracebacks become clear errors ------------------------------------------------------------

def test_a_json_line_that_is_not_an_object_is_named(tmp_path, ref, capsys):
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"id": "a", "lines": QUATRAIN}) + "\n[1, 2, 3]\n")
    assert _evaluate(tmp_path, samples, ref) == 2
    assert "s.jsonl: line 2: expected a JSON object, got an array" in capsys.readouterr().err


def test_a_directory_where_a_file_is_expected(tmp_path, ref, capsys):
    folder = tmp_path / "folder"
    folder.mkdir()
    commands = [["evaluate", str(folder), "--reference", ref, "--lang", "en", "--out", str(tmp_path / "c.json")],
                ["evaluate", ref, "--reference", str(folder), "--lang", "en", "--out", str(tmp_path / "c.json")],
                ["rhyme", str(folder), "--lang", "en"],
                ["bpomp", "corpus", str(folder), "--format", "oedilf", "--out", str(tmp_path / "l.jsonl")],
                ["bpomp", "pairs", str(folder), "--task", "line_swap", "--out", str(tmp_path / "p.jsonl")]]
    for argv in commands:
        assert main(argv) == 2, argv
        assert "folder: is a directory; expected a file" in capsys.readouterr().err
    samples = _jsonl(tmp_path / "s.jsonl", [{"id": "a", "lines": QUATRAIN}])
    assert main(["evaluate", samples, "--reference", ref, "--lang", "en", "--out", str(folder)]) == 2
    assert "folder: is a directory; expected a file to write" in capsys.readouterr().err


def test_a_cell_label_must_have_three_parts(tmp_path, ref, capsys):
    samples = _jsonl(tmp_path / "s.jsonl", [{"id": "a", "lines": QUATRAIN}])
    assert _evaluate(tmp_path, samples, ref, "--cell", "a/b") == 2
    assert "--cell 'a/b': expected LANG/SYSTEM/DECODING" in capsys.readouterr().err


def test_an_empty_systems_list_is_invalid(tmp_path, capsys):
    overlay = tmp_path / "empty.yaml"
    overlay.write_text("systems: []\n")
    assert main(["validate", str(overlay)]) == 2
    assert "key systems: [] should be non-empty" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".jsonl", ".txt", ".jsonl.gz"])
def test_a_bad_byte_is_reported_on_its_own_line(tmp_path, ref, capsys, suffix):
    lines = [json.dumps({"id": f"s{i}", "lines": QUATRAIN}).encode() for i in range(8)]
    lines[5] = lines[5].replace(b"warm", b"w\xe9rm")
    data = b"\n".join(lines) + b"\n"
    samples = tmp_path / f"s{suffix}"
    if suffix.endswith(".gz"):
        import gzip
        data = gzip.compress(data)
    samples.write_bytes(data)
    assert _evaluate(tmp_path, samples, ref) == 2
    assert "line 6: not valid UTF-8" in capsys.readouterr().err


# --- 9: every reader, on arbitrary bytes and arbitrary JSON records -------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
                    max_leaves=12)
VERSE = st.text(alphabet=string.ascii_letters + " ,.;'-!?äöüß", min_size=0, max_size=40)
# records shaped like the readers' own, with every field free to be wrong
RECORD = st.fixed_dictionaries({}, optional={
    "id": st.one_of(st.text(max_size=4), st.integers(0, 3), JSON),
    "lines": st.one_of(st.lists(VERSE, min_size=0, max_size=6), JSON),
    "limerick": st.one_of(VERSE.map(lambda v: "\n".join([v] * 5)), JSON),
    "scheme": st.one_of(st.sampled_from(["abab", "aabb", "x"]), JSON),
    "original": st.one_of(st.lists(VERSE, max_size=5), JSON),
    "corrupted": st.one_of(st.lists(VERSE, max_size=5), JSON),
    "task": st.one_of(st.sampled_from(bpomp.TASKS), JSON),
    "text": st.one_of(st.lists(VERSE, min_size=3, max_size=5), VERSE, JSON),
    "stanzas": st.one_of(st.lists(st.lists(st.fixed_dictionaries({"text": VERSE}), max_size=6), max_size=3), JSON),
    "score_original": st.one_of(st.floats(), JSON),
    "score_corrupted": st.one_of(st.floats(), JSON),
})
LINES = st.lists(st.one_of(RECORD.map(json.dumps), JSON.map(json.dumps), st.just("")), max_size=6)
PROPERTY = settings(max_examples=60, deadline=None, derandomize=True,   # the same examples in every run
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


# Every reader of user input, as a call (input path, scratch folder) -> how many records it produced.
READERS = {
    "samples": lambda p, tmp: len(poem_files.read_poems(p)[0]),
    "reference": lambda p, tmp: evaluate(_jsonl(tmp / "one.jsonl", [{"id": "one", "lines": QUATRAIN}]), p, "en",
                                         ["length"])["n_reference"],
    "rhyme stanzas": lambda p, tmp: write_annotated(p, "en", str(tmp / "out"), progress=False),
    "fortune limericks": lambda p, tmp: bpomp.write_corpus("fortune", p, str(tmp / "out"))["kept"],
    "oedilf limericks": lambda p, tmp: bpomp.write_corpus("oedilf", p, str(tmp / "out"))["kept"],
    "pairs from limericks": lambda p, tmp: bpomp.write_pairs(p, "line_swap", str(tmp / "out"), progress=False)["pairs"],
    "scored pairs": lambda p, tmp: sum(t["n"] for t in write_accuracy_cell(p, reps=5)["tasks"].values()),
    "quatrain corpus": lambda p, tmp: len(build_quatrains("quatrain", p, progress=False)[0]),
    "dlk corpus": lambda p, tmp: len(build_quatrains("dlk", p, progress=False)[0]),
}


def _check_reader(tmp_path, name: str, path) -> None:
    try:
        produced = READERS[name](str(path), tmp_path)
    except PoevalError as err:
        assert str(err), name
        return
    assert produced > 0, f"{name}: a silent empty result"


@pytest.mark.parametrize("reader", list(READERS))
@PROPERTY
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes_give_a_result_or_one_clear_error(tmp_path, reader, data):
    path = tmp_path / "input.jsonl"
    path.write_bytes(data)
    _check_reader(tmp_path, reader, path)


@pytest.mark.parametrize("reader", list(READERS))
@PROPERTY
@given(lines=LINES)
def test_arbitrary_json_records_give_a_result_or_one_clear_error(tmp_path, reader, lines):
    path = tmp_path / "input.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _check_reader(tmp_path, reader, path)
