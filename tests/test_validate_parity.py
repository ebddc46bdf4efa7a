"""`poeval validate` and the workflow's parse-time check accept and reject the same params, naming the
same keys: both run the params step, poeval.params.resolve (schema, defaults, cross-checks, BPoMP checks)."""

import re

import pytest
import yaml

from poeval import cli
from test_workflow import _workdir, snakemake

# one overlay per outcome (each Snakemake dry run costs seconds): the schema stops a config before the
# cross-checks run, so the schema errors and the cross-check errors go in separate overlays
CASES = {
    "good": ({"training": {"patience": 0, "max_grad_norm": 0.5}}, set()),
    "schema": ({"models": {"gpt2-s": {"size": "XS"}, "deepspeare-s": {"training": {"patience": 0, "lr_decay": 1}}},
                "training": {"max_grad_norm": -1}},
               {"models.gpt2-s.size", "models.deepspeare-s.training.lr_decay", "training.max_grad_norm"}),
    "cross": ({"systems": ["gpt2-s", "gpt9"], "models": {"gpt2-s": {"n_head": 3}},
               "bpomp": {"enabled": True, "scorers": [{"name": "g", "kind": "causal", "model": "gpt2-s",
                                                       "variant": "within_word_l2r"}]}},
              {"systems.1", "models.gpt2-s.n_head", "bpomp.scorers.0.variant"}),
}


def _problems(text: str) -> list[str]:
    """The listed problems of an 'invalid params' message."""
    return re.findall(r"^\s*- (.+)$", text, re.M)


def _keys(problems: list[str]) -> set[str]:
    return {m for p in problems for m in re.findall(r"\bkey ([\w.-]+?)(?:[:,]| \(|$)", p)}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return _workdir(tmp_path_factory.mktemp("parity"))


@pytest.mark.parametrize("case", CASES)
def test_cli_and_workflow_agree(case, work, capsys):
    overlay, keys = CASES[case]
    (work / "config" / f"{case}.yaml").write_text(yaml.safe_dump(overlay))
    configs = ("config/tiny.yaml", f"config/{case}.yaml")

    status = cli.main(["validate", "--params", str(work / "params.yaml"), *(str(work / c) for c in configs)])
    cli_problems = _problems(capsys.readouterr().err)
    proc = snakemake(work, "-n", "results/tables/table5.tsv", configs=configs)
    smk_problems = _problems(proc.stdout + proc.stderr)

    assert (status == 0) == (proc.returncode == 0) == (not keys), proc.stderr[-2000:]
    assert _keys(cli_problems) == _keys(smk_problems) == keys
    assert sorted(cli_problems) == sorted(smk_problems)
