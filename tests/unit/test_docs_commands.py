"""Every command that the getting-started and own-generator pages (and the README) show runs in a test:
each shell line of their ``bash`` blocks is listed here with the test that runs it, and that test exists."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("docs/getting-started.md", "docs/own-generator.md", "README.md")

# command as the page shows it (comments stripped) -> the test that runs it ("module::function")
RUN_BY = {
    "./run.sh": "test_workflow::test_main_job_imports_smollm2_finetunes_it_and_runs_bpomp",   # its DAG, dry
    "./run.sh test": "test_docs_commands::test_ci_runs_the_readme_test_command",
    "./run.sh docs": "test_docs::test_the_site_builds_opens_from_disk_and_shows_what_the_pages_mean",
    "./run.sh setup && export PATH=\"$PWD/.venv/bin:$PATH\"":   # the set-up of every CI run
        "test_docs_commands::test_ci_runs_the_readme_test_command",
    "snakemake -c all results/tables/table2.tsv --configfile examples/my-generator.yaml":
        "test_supplied::test_the_walk_through_command_puts_the_example_beside_poevals_systems",
    "column -t -s $'\\t' results/tables/table2.tsv":   # the table it shows, read by the test
        "test_supplied_workflow::test_both_systems_are_rows_of_every_table_with_tests_and_intervals",
    ("poeval provenance results/tables/table2.tsv --row my-generator --column mattr_pct --configfile "
     "examples/my-generator.yaml"): "test_supplied_workflow::test_provenance_of_the_new_row_ends_at_the_users_file",
    "snakemake -c all --configfile config/systems/grid.yaml": "test_workflow::test_full_grid_dry_run_lists_every_cell",
    "poeval provenance results/tables/table2.tsv --row gpt2-s --column mattr_pct":
        "test_workflow::test_provenance_of_a_table2_cell",
    "poeval stale": "test_supplied_workflow::test_an_edited_sample_file_reruns_exactly_its_import_cells_and_tables",
    "dvc repro": "test_dvc::test_dvc_repro_in_a_fresh_clone_reruns_what_the_stamps_call_stale",
}


def shown_commands(text: str) -> list[str]:
    """The shell lines of a Markdown text's ``bash`` blocks, without their comments."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command and not command.startswith("#"):
                out.append(command)
    return out


@pytest.mark.parametrize("page", PAGES)
def test_every_command_shown_is_run_by_a_test(page):
    commands = shown_commands((ROOT / page).read_text())
    assert commands, page
    assert [c for c in commands if c not in RUN_BY] == [], f"{page}: add the command and its test to RUN_BY"


def test_the_tests_named_exist():
    for command, test in RUN_BY.items():
        module, name = test.split("::")
        (path,) = (ROOT / "tests").rglob(f"{module}.py")   # in tests/unit or tests/e2e, exactly one
        defined = {n.name for n in ast.parse(path.read_text("utf-8")).body if isinstance(n, ast.FunctionDef)}
        assert name in defined, (command, test)


def test_the_listing_finds_commands_and_strips_comments():
    text = "x\n```bash\n./run.sh   # the main job\n# a comment\n\npoeval stale\n```\n```yaml\na: b\n```\n"
    assert shown_commands(text) == ["./run.sh", "poeval stale"]


def test_ci_runs_the_readme_test_command():
    """CI (.ci/run) is `./run.sh test` on a clean clone: the set-up, then this suite."""
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert lines[-1] == "./run.sh test"
    assert "setup) setup ;;" in (ROOT / "run.sh").read_text()
