"""What a hand run of `poeval evaluate` shows on the terminal, and the checks of --lang before any work."""

import json
import shutil

import pytest

from poeval import api, paths
from poeval.cli import main
from poeval.errors import PoevalError
from poeval.poetry.spelling import guess_lang

ENGLISH = [["The wind is in the willows and the rain", "is on the roof of all the houses here,",
            "and she that sang to me will sing again", "when all the summer of the world is near."],
           ["My heart is with the hills, and with the sea", "the ships go out to all the lands afar;",
            "but thou art here, and thou art all to me,", "and this is all the light of every star."]] * 4
GERMAN = [["Der Wind ist in den Weiden und der Regen", "fällt auf das Dach von allen Häusern hier,",
           "und sie, die mir gesungen, wird es wieder", "wenn auch der Sommer kommt, ich bin bei dir."],
          ["Mein Herz ist bei den Bergen und dem Meer,", "die Schiffe fahren aus mit ihrem Licht;",
           "doch du bist hier, und du bist mir so sehr", "das Licht von jedem Stern, ich weiß es nicht."]] * 4


def _write(path, poems, broken=()):
    path.write_text("\n\n".join("\n".join(p) for p in [*poems, *broken]) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    reference = tmp_path / "train.jsonl"
    reference.write_text("".join(json.dumps({"id": f"t{i}", "lines": p}) + "\n" for i, p in enumerate(ENGLISH * 3)))
    return _write(tmp_path / "mine.txt", ENGLISH[:6], broken=(["one verse"], ["two", "verses"])), reference


def _evaluate(tmp_path, samples, reference, *extra, metrics="length,lexical"):
    out = tmp_path / "cell.json"
    code = main(["evaluate", str(samples), "--reference", str(reference), "--lang", "en", "--metrics", metrics,
                 "--out", str(out), "--bootstrap-reps", "20", *extra])
    return code, out


def test_a_hand_run_prints_the_headline_numbers_and_says_what_was_skipped(tmp_path, files, capsys):
    code, out = _evaluate(tmp_path, *files)
    assert code == 0
    result, shown = json.loads(out.read_text()), capsys.readouterr()
    lexical = result["lexical"]
    assert "per_poem" not in shown.out and len(shown.out.splitlines()) == 1 + 3 + 3
    attr = next(line for line in shown.out.splitlines() if line.strip().startswith("ATTR"))
    low, high = (100 * v for v in lexical["ci"]["attr"])
    assert attr.split()[1:] == [f"{100 * lexical['attr']:.2f}", "%", f"[{low:.2f},", f"{high:.2f}]"]
    assert shown.out.splitlines()[0] == "6 poems (en) against 24 reference quatrains"
    assert "2 of 8 poems skipped (not_4_lines 2)" in shown.err
    # --json: the whole result, as --out holds it
    code, out = _evaluate(tmp_path, *files, "--json")
    assert code == 0 and json.loads(capsys.readouterr().out) == json.loads(out.read_text())


def test_a_hand_run_needs_no_out_file_and_a_job_does(tmp_path, files, capsys, monkeypatch):
    samples, reference = files
    monkeypatch.chdir(tmp_path)
    argv = ["evaluate", str(samples), "--reference", str(reference), "--lang", "en", "--metrics", "lexical"]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0] == "6 poems (en) against 24 reference quatrains"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt", "train.jsonl"]   # nothing written
    job = json.dumps({"kind": "metric-cell", "lang": "en", "families": ["lexical"], "options": {}, "bootstrap_reps": 0,
                      "seed": 1, "exclude_sample_from_reference": False, "allow_empty": False, "cell": None})
    assert main(argv[:4] + ["--job", job]) == 2
    assert "evaluate --job writes its cell to --out: give --out" in capsys.readouterr().err


def test_a_hand_run_reuses_the_workflows_cache_of_this_very_reference(tmp_path, files, capsys, monkeypatch):
    """The workflow's memorization index of this reference (same sha256) stands in for the one the run
    would build, with one line saying so and the same numbers; one of another reference, or --no-cache,
    and the run builds its own (and hints how to build it once)."""
    samples, reference = files
    monkeypatch.chdir(tmp_path)
    index = paths.memorization_index("en")
    other = tmp_path / "other.jsonl"
    other.write_text("".join(line for line in reference.read_text().splitlines(keepends=True)[:-1]))
    assert main(["index", str(other), "--out", index]) == 0   # the workflow's path, another reference
    capsys.readouterr()
    code, out = _evaluate(tmp_path, samples, reference, "--quiet", metrics="memorization")
    built, err = json.loads(out.read_text()), capsys.readouterr().err
    assert code == 0 and "reusing" not in err and "build it once with `poeval index REFERENCE --out DIR`" in err
    shutil.rmtree(index)
    assert main(["index", str(reference), "--out", index]) == 0
    capsys.readouterr()
    code, out = _evaluate(tmp_path, samples, reference, "--quiet", metrics="memorization")
    reused, err = json.loads(out.read_text()), capsys.readouterr().err
    assert code == 0 and f"poeval evaluate: reusing {index} (memorization_index of this very reference" in err
    assert "hint" not in err and reused["memorization"] == built["memorization"]
    assert _evaluate(tmp_path, samples, reference, "--quiet", "--no-cache", metrics="memorization")[0] == 0
    err = capsys.readouterr().err
    assert "reusing" not in err and "build it once" in err


@pytest.mark.parametrize("lang", ["english", "EN", "fr", ""])
def test_an_unknown_language_stops_before_any_work(tmp_path, files, lang):
    samples, reference = files
    with pytest.raises(PoevalError, match=r"unsupported language .*use one of en, de"):
        api.evaluate(str(samples), reference=str(reference), lang=lang, metrics=["lexical"])


def test_a_sample_in_another_language_than_lang_is_warned_about(tmp_path, files, capsys):
    samples, reference = files
    german = _write(tmp_path / "deutsch.txt", GERMAN)
    assert (guess_lang(v for p in ENGLISH for v in p), guess_lang(v for p in GERMAN for v in p)) == ("en", "de")
    assert guess_lang(["the and of"]) is None   # too few function words to tell
    api.evaluate(str(samples), reference=str(reference), lang="en", metrics=["lexical"])
    assert "warning" not in capsys.readouterr().err
    api.evaluate(str(german), reference=str(reference), lang="en", metrics=["lexical"])
    err = capsys.readouterr().err
    assert f"{german} reads as 'de', not as --lang 'en'" in err and str(reference) not in err
    api.evaluate(str(samples), reference=str(reference), lang="de", metrics=["lexical"])
    err = capsys.readouterr().err
    assert "reads as 'en', not as --lang 'de'" in err and str(reference) in err
