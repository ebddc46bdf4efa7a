"""Models behind an endpoint as rows of the tiny DAG, against a real `transformers serve` on 127.0.0.1 started
in the workflow's directory without a forced model (it loads the folder each request names):

- ``ep-plain``: completions from the BOS of a tiny GPT-2 trained on made-up quatrains (the session's tiny_gpt2);
- ``ep-chat``: a chat row conditioned by prompt (the same model with a chat template), with its style adherence.
  Its template renders the BOS alone: a model that small, given the user's message, answers no quatrain, and a
  row without a valid quatrain is an error. Its requests still carry the prompt (recorded, stamped, stale).

Both are rows of Tables 2 and 6, the sampling table (with the chat clean-up counts) and Table 4, and the
provenance of a cell names the endpoint, the model the answers reported and the prompt."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from poeval import paths
from poeval.io import read_json

from helpers import BIN, ROOT, _rows, snakemake

pytestmark = pytest.mark.e2e

TARGETS = [paths.table(t) for t in ("table2", "table6", "table4", "sampling", "style_adherence")]


def _overlay(base_url: str, model: Path, chat_model: Path) -> dict:
    # the tiny model has 128 positions: short prompts and 40 new tokens
    common = {"arch": "endpoint", "base_url": base_url, "server": "transformers", "max_concurrency": 1,
              "sampling": {"max_new_tokens": 40}}
    return {
        "models": {
            "ep-plain": common | {"model": str(model), "api": "completions", "prompt": {"text": "<|endoftext|>"}},
            "ep-chat": common | {"model": str(chat_model), "api": "chat", "conditioned": True,
                                 "prompt": {"user": "a quatrain", "user_style": "{scheme}: {scheme_words}"},
                                 "sampling": {"n": 4, "max_attempts": 6, "max_new_tokens": 40}},
        },
        "systems": ["ep-plain", "ep-chat"], "decodings": ["vanilla"],
        "metrics": {"families": ["length", "lexical", "rhyme"]}, "style_adherence": {"pairs": None},
        "decoding": {"vanilla": {"temperature": 0.3}},   # the tiny models write quatrains when cool
    }


@pytest.fixture(scope="module")
def run(tiny_gpt2, tmp_path_factory):
    from servers import Served, with_chat_template

    work = tmp_path_factory.mktemp("endpoint") / "work"
    (work / "config" / "scale").mkdir(parents=True)
    shutil.copy(ROOT / "params.yaml", work / "params.yaml")
    shutil.copy(ROOT / "config" / "scale" / "tiny.yaml", work / "config" / "scale" / "tiny.yaml")
    chat_model = with_chat_template(tiny_gpt2, work.parent / "chat-model", template="{{ bos_token }}")
    with Served(None, work.parent / "logs", cwd=work) as served:
        overlay = _overlay(served.base_url, tiny_gpt2, chat_model)
        (work / "config" / "endpoint.yaml").write_text(yaml.safe_dump(overlay))
        configs = ("config/scale/tiny.yaml", "config/endpoint.yaml")
        proc = snakemake(work, "-c", "2", *TARGETS, configs=configs)
        assert proc.returncode == 0, proc.stderr[-3000:]
        yield work, served, configs


def test_both_endpoint_rows_are_in_the_tables(run):
    work, _, _ = run
    for table in ("table2", "table6"):
        systems = [row[1] for row in _rows(work / paths.table(table))[1:]]
        assert "ep-plain" in systems and "ep-chat" in systems, table
    table4 = {row[1]: row for row in _rows(work / paths.table("table4"))[1:]}
    assert table4["ep-chat"][2] == "endpoint" and table4["ep-chat"][5] == "yes (prompt)"
    assert "(completions)" in table4["ep-plain"][-1]
    adherence = {row[1] for row in _rows(work / paths.table("style_adherence"))[1:]}
    assert adherence == {"ep-chat"}


def test_the_prompt_and_the_answers_are_recorded(run):
    work, served, _ = run
    plain = read_json(work / paths.stats("en", "ep-plain", "vanilla"))
    assert plain["valid"] == 20 and plain["sent"]["request"]["prompt"] == "<|endoftext|>"
    stats = read_json(work / paths.stats("en", "ep-chat", "vanilla"))
    assert stats["provenance"]["params"]["prompt"]["user"] == "a quatrain"
    assert stats["sent"]["request"]["messages"] == [{"role": "user", "content": "a quatrain"}]
    assert stats["requests"]["sent_now"] == stats["attempts"] == served.requests("/v1/chat/completions") - _prompted(work)


def _prompted(work: Path) -> int:
    """Requests of the prompted (style adherence) samples of ep-chat."""
    return sum(read_json(p)["attempts"] for p in (work / "results").rglob("*.stats.json")
               if "ep-chat" in str(p) and p.name != "vanilla.stats.json")


def test_provenance_names_the_endpoint_the_reported_model_and_the_prompt(run):
    import subprocess

    work, served, configs = run
    cmd = [str(BIN / "poeval"), "provenance", paths.table("table2"), "--row", "ep-chat", "--column", "mattr_pct",
           "--json", "--check", *[a for c in configs for a in ("--configfile", c)]]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=300)
    result = json.loads(proc.stdout)
    link = next(link for link in result["chain"] if link["name"] == "endpoint")
    assert link["params"]["base_url"] == served.base_url and link["params"]["answers name"]
    assert any("asked now" in note or "answers now name" in note for note in link["notes"])
    decoding = next(link for link in result["chain"] if link["name"] == "decoding")
    assert "prompt" in json.dumps(decoding) and proc.returncode == 0, proc.stderr


def test_a_changed_prompt_makes_exactly_that_systems_samples_stale(run):
    import subprocess

    work, _, configs = run
    changed = work / "config" / "changed.yaml"
    changed.write_text(yaml.safe_dump({"models": {"ep-chat": {"prompt": {"user": "another quatrain"}}}}))
    cmd = [str(BIN / "poeval"), "stale", *[a for c in (*configs, "config/changed.yaml") for a in ("--configfile", c)]]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=300)
    stale = proc.stdout
    assert paths.samples("en", "ep-chat", "vanilla") in stale and "prompt" in stale, stale + proc.stderr
    assert paths.samples("en", "ep-plain", "vanilla") not in stale
