"""The docs site (mkdocs.yml, docs/): it builds in strict mode, its generated pages hold every params key and
every subcommand, and every code comment that points into it (docs/<page>.md "Heading") finds its heading."""

import copy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from poeval import config, docs
from poeval.cli import build_parser

from helpers import _params_keys

ROOT = Path(__file__).resolve().parents[2]


def test_the_site_builds_in_strict_mode(tmp_path):
    pytest.importorskip("mkdocs")
    if shutil.which("dot") is None:
        pytest.skip("graphviz's dot is not installed (./run.sh setup installs it)")
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    for page in ("index.html", "reference/params/index.html", "reference/cli/index.html",
                 "workflow/index.html", "images/rulegraph.svg"):
        assert (site / page).is_file(), page
    assert "<svg" in (site / "images" / "rulegraph.svg").read_text()


def test_the_params_page_holds_every_key_path_of_the_schema():
    page = docs.params_page()
    paths = docs.key_paths()
    assert {"corpus.en.format", "models.<system>.arch", "models.<system>.samples.<lang>.<decoding>",
            "models.<system>.rerank", "models.<system>.hidden", "models.<system>.lora.r",
            "decoding.<decoding>.penalty_alpha", "bpomp.scorers[].model"} <= set(paths)
    missing = [p for p in paths if f"`{p}`" not in page]
    assert missing == []
    # every property name of the schema, at any depth, is the last part of some key path
    assert _params_keys() - {p.rsplit(".", 1)[-1] for p in paths} == set()


def test_a_key_added_to_the_schema_appears_on_the_params_page():
    schema = copy.deepcopy(config.schema())
    schema["properties"]["metrics"]["properties"]["new_family_xyz"] = {"type": "integer", "default": 7,
                                                                      "description": "a new key"}
    schema["$defs"]["sa_model"]["properties"]["new_port_key_xyz"] = {"type": "boolean"}
    page = docs.params_page(schema)
    assert "`metrics.new_family_xyz`" in page and "a new key" in page and "`7`" in page
    assert "`models.<system>.new_port_key_xyz`" in page
    assert "`metrics.new_family_xyz`" not in docs.params_page()


def test_the_cli_page_lists_every_subcommand():
    page = docs.cli_page()
    commands = docs.commands(build_parser())
    assert {"evaluate", "provenance", "bpomp", "bpomp corpus", "bpomp export"} <= set(commands)
    for command in commands:
        assert f"## poeval {command}\n" in page, command
        assert f"usage: poeval {command}" in page, command


def test_workflow_page_markers_are_filled():
    text = docs.fill_markers((ROOT / "docs" / "workflow.md").read_text(), ROOT)
    assert "<!-- generated" not in text
    assert "`paths.cell`" in text and "`results/metrics/{lang}/{system}/{decoding}/{family}.json`" in text
    assert "`workflow/rules/data.smk`" in text and "`quatrains`" in text


def test_every_docs_reference_in_the_code_finds_its_heading():
    assert docs.reference_problems(ROOT) == []


def test_the_reference_check_reports_a_missing_heading_a_missing_page_and_a_readme_reference(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n## The `x` command\n\n```\n# Not a heading\n```\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text(
        '# see docs/page.md "The `x` command" and docs/page.md "Page"\n'   # fine
        '# docs/page.md "No such heading"\n'
        '# docs/page.md "Not a heading"\n'
        '# docs/gone.md "Page"\n'
        '# README "Layout"\n'
        '# docs/page.md "Cut across\n# lines"\n')
    (tmp_path / "params.json").write_text('{"description": "docs/page.md \\"Page\\" and docs/page.md \\"Nope\\""}\n')
    assert docs.reference_problems(tmp_path, ("src", "params.json")) == [
        'src/a.py:2: docs/page.md has no heading "No such heading"',
        'src/a.py:3: docs/page.md has no heading "Not a heading"',
        "src/a.py:4: docs/gone.md does not exist",
        "src/a.py:6: a docs reference cut across lines (keep it on one)",
        "src/a.py:5: a README reference (point it at docs/<page>.md)",
        'params.json:1: docs/page.md has no heading "Nope"',
    ]
