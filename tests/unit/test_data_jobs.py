"""The typed jobs of the data rules (poeval.jobs.data): a params value reaches the library code that uses it
through the rule's one builder and `--job`, the output's stamp records the job, and `poeval stale` rebuilds
it with the same builder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from poeval import config as poeval_config, paths
from poeval.cli import main
from poeval.data.quatrains import build_quatrains
from poeval.io import read_json
from poeval.jobs.data import quatrains_job
from poeval.report.stale import stale_outputs

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "corpus_quatrain.jsonl"


def _params(min_verse_chars: int) -> dict:
    """params.yaml with the fixture corpus for en and ``quatrains.min_verse_chars``, as written."""
    return poeval_config.merge(poeval_config.read(ROOT / "params.yaml"), {
        "corpus": {"en": {"format": "quatrain", "path": str(CORPUS)}},
        "quatrains": {"min_verse_chars": min_verse_chars}})


def test_min_verse_chars_reaches_the_windows_and_the_stamp_and_stale_rebuilds_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    job = quatrains_job(poeval_config.fill(_params(30)), "en")
    assert job.quatrains.min_verse_chars == 30
    report = paths.corpus_report("en")
    assert main(["quatrains", "--job", job.to_json(), "--out", paths.quatrains("en"), "--report", report]) == 0
    written = read_json(report)
    _, reference = build_quatrains("quatrain", str(CORPUS), min_verse_chars=30, id_prefix="en", progress=False)
    assert written["dropped_filter"] == reference["dropped_filter"]   # the windows were cut with 30
    assert written["dropped_filter"]["verse_too_short"] > 0
    assert written["provenance"]["params"] == job.recorded()
    assert stale_outputs(_params(30), ".") == []
    stale = stale_outputs(_params(11), ".")
    assert [(s.rule, s.reasons) for s in stale] == [
        ("quatrains", ["params: quatrains.min_verse_chars: recorded 30, now 11"])]


def test_a_job_and_the_options_it_holds_are_not_given_together(tmp_path, capsys):
    job = quatrains_job(poeval_config.fill(_params(11)), "en")
    out = ["--out", str(tmp_path / "q.jsonl"), "--report", str(tmp_path / "r.json")]
    assert main(["quatrains", "--job", job.to_json(), "--lang", "en", *out]) == 2
    assert "--job holds --lang, --corpus, --quatrains: give it alone, not with --lang" in capsys.readouterr().err
    bad = json.loads(job.to_json()) | {"quatrains": {"min_verse_chars": -1}}
    with pytest.raises(SystemExit):
        main(["quatrains", "--job", json.dumps(bad), *out])
    assert "quatrains.min_verse_chars" in capsys.readouterr().err
    assert not (tmp_path / "q.jsonl").exists()
