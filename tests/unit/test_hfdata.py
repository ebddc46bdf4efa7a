"""Hugging Face `datasets` interop: saved datasets as `poeval evaluate` input, poeval's files exported as
datasets (round trip through `datasets` itself), and QuaTrain's release format."""

import json
from pathlib import Path

import datasets
import pytest

from poeval import bpomp, cli, hfdata, io, poem_files
from poeval.data.quatrains import build_quatrains
from poeval.errors import PoevalError
from poeval.metrics.evaluate import evaluate

FIXTURES = Path(__file__).parents[1] / "fixtures"
RELEASE = FIXTURES / "quatrain_release.jsonl"
SAMPLE = [
    ["Shall I compare thee to a summer's day?", "Thou art more lovely and more temperate:",
     "Rough winds do shake the darling buds of May,", "And summer's lease hath all too short a date;"],
    ["Whose woods these are I think I know.", "His house is in the village though;",
     "He will not see me stopping here", "To watch his woods fill up with snow."],
    ["Only three verses here", "and then the poem stops", "before its time"],
    ["Tyger Tyger, burning bright,", "In the forests of the night;", "What immortal hand or eye,",
     "Could frame thy fearful symmetry?"],
]


def paper_sample(path: Path, quatrains=SAMPLE, lang="en") -> Path:
    """A sample saved as the paper's code saves one (helper_functions.get_dataset, then save_to_disk)."""
    datasets.Dataset.from_dict({"text": quatrains, "language": [lang] * len(quatrains)}).save_to_disk(str(path))
    return path


def test_read_poems_reads_a_saved_dataset(tmp_path):
    poems, skipped = poem_files.read_poems(paper_sample(tmp_path / "sample"))
    assert [p["lines"] for p in poems] == [SAMPLE[0], SAMPLE[1], SAMPLE[3]]
    assert [p["id"] for p in poems] == ["0", "1", "3"]   # ids are row positions, as for a JSONL without ids
    assert dict(skipped) == {"not_4_lines": 1}
    # verses as one string per poem, ids and a scheme column kept
    datasets.Dataset.from_dict({"text": ["\n".join(SAMPLE[1])], "id": ["w"], "scheme": ["aaba"]}).save_to_disk(
        str(tmp_path / "strings"))
    assert poem_files.read_poems(tmp_path / "strings")[0] == [{"id": "w", "lines": SAMPLE[1], "scheme": "aaba"}]


def test_read_poems_rejects_other_folders(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(PoevalError, match="is a directory; expected a file.*save_to_disk.*no state.json"):
        poem_files.read_poems(tmp_path / "empty")
    datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": SAMPLE})}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(PoevalError, match=r"DatasetDict \(splits: train\)"):
        poem_files.read_poems(tmp_path / "dd")
    datasets.Dataset.from_dict({"poem": ["x"]}).save_to_disk(str(tmp_path / "nocol"))
    with pytest.raises(PoevalError, match="no 'text' or 'lines' column.*poem"):
        poem_files.read_poems(tmp_path / "nocol")
    paper_sample(tmp_path / "short", [SAMPLE[2]])
    with pytest.raises(PoevalError, match="nothing usable.*not_4_lines 1"):
        poem_files.read_poems(tmp_path / "short")


def test_evaluate_cli_reads_the_papers_saved_sample(tmp_path, capsys):
    reference = tmp_path / "train.jsonl"
    io.write_jsonl(reference, [{"id": f"r{i}", "lines": lines} for i, lines in enumerate(SAMPLE * 3) if len(lines) == 4])
    as_jsonl = tmp_path / "sample.jsonl"
    io.write_jsonl(as_jsonl, [{"id": str(i), "lines": lines} for i, lines in enumerate(SAMPLE)])
    saved = paper_sample(tmp_path / "sample")
    assert cli.main(["evaluate", str(saved), "--reference", str(reference), "--lang", "en",
                     "--metrics", "length,lexical", "--out", str(tmp_path / "cell.json"), "--quiet"]) == 0
    cell = io.read_json(tmp_path / "cell.json")
    want = evaluate(as_jsonl, reference, "en", ["length", "lexical"])
    assert cell["n_poems"] == 3 and cell["skipped"] == {"not_4_lines": 1}
    assert cell["length"] == want["length"] and cell["lexical"] == want["lexical"]


def split_records(tmp_path):
    """A train split as the data stage writes it, from QuaTrain's release fixture."""
    records, _ = build_quatrains("quatrain", str(RELEASE), progress=False)
    return records


def pairs_records():
    limericks = list(io.read_jsonl(FIXTURES / "bpomp_mined_limericks.jsonl"))
    return bpomp.make_pairs(limericks, "word_swap", n=5, check_scheme=False)[0]


@pytest.mark.parametrize("fmt", ["disk", "parquet"])
def test_export_round_trip(tmp_path, fmt):
    for name, records in (("train", split_records(tmp_path)), ("pairs", pairs_records()),
                          ("sample", [{"id": str(i), "lines": q} for i, q in enumerate(SAMPLE)])):
        src = tmp_path / f"{name}.jsonl"
        io.write_jsonl(src, records)
        out = tmp_path / (f"{name}_ds" if fmt == "disk" else f"{name}.parquet")
        summary = hfdata.export_dataset(str(src), str(out), fmt)
        assert summary["records"] == len(records) and summary["columns"] == list(records[0])
        assert hfdata.load_records(str(out)) == list(io.read_jsonl(src))
        if fmt == "disk":   # datasets' own loader, no poeval in between
            assert datasets.load_from_disk(str(out)).to_list() == list(io.read_jsonl(src))


def test_export_cli_and_columns(tmp_path, capsys):
    src = tmp_path / "mixed.jsonl"
    io.write_jsonl(src, [{"id": "a", "lines": ["x"] * 4}, {"id": "b", "lines": ["y"] * 4, "note": "n"}])
    assert cli.main(["export-dataset", str(src), "--out", str(tmp_path / "ds")]) == 0
    assert json.loads(capsys.readouterr().out)["columns"] == ["id", "lines", "note"]
    back = datasets.load_from_disk(str(tmp_path / "ds")).to_list()
    assert back[0] == {"id": "a", "lines": ["x"] * 4, "note": None}   # a field the first record lacks: null there
    # poeval reads its own export back as a sample
    assert [p["id"] for p in poem_files.read_poems(tmp_path / "ds")[0]] == ["a", "b"]
    io.write_jsonl(src, [{"id": "a", "n": 1}, {"id": "b", "n": "two"}])
    assert cli.main(["export-dataset", str(src), "--out", str(tmp_path / "bad")]) == 2
    assert "field 'n' cannot be one dataset column" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_quatrain_release_format(tmp_path):
    """tests/fixtures/quatrain_release.jsonl is written as QuaTrain's release files are (uniformers'
    examples/statistics/quatrain.py: the annotated dataset's ``to_json``: JSON lines of ``text`` (4 verses),
    ``language``, ``rhyme``, ``meter`` and the ``alliteration`` score, no id); datasets writes it byte for byte."""
    release = [json.loads(line) for line in RELEASE.read_text("utf-8").splitlines()]
    datasets.Dataset.from_list(release).to_json(str(tmp_path / "QuaTrain-en.json"))
    assert (tmp_path / "QuaTrain-en.json").read_bytes() == RELEASE.read_bytes()
    records, report = build_quatrains("quatrain", str(tmp_path / "QuaTrain-en.json"), progress=False)
    assert report["source"]["read"] == 5 and report["dedup"]["removed"] == 1   # two windows share 3 verses
    assert records[0] == {"id": "qt-0000000", "lines": release[0]["text"], "source": "quatrain:1", "rhyme": "ABAB",
                          "metre": "iambus", "alliteration": release[0]["alliteration"]}
    # and as a sample for poeval evaluate: `text` read as the verses
    poems, skipped = poem_files.read_poems(tmp_path / "QuaTrain-en.json")
    assert [p["lines"] for p in poems] == [r["text"] for r in release] and not skipped


def test_a_quatrain_release_file_gets_poevals_own_metre_labels():
    """Its ``meter`` is another labeller's ("iambus"): read_poems keeps no metre label from a ``text`` record,
    so the metre family labels the verses itself rather than stopping at an unknown label."""
    poems, _ = poem_files.read_poems(RELEASE)
    assert all("meter" not in p for p in poems)
    result = evaluate(RELEASE, RELEASE, "en", ["metre"])["metre"]
    assert sum(result["counts"].values()) == 5 and result["entropy"] is not None
