"""`poeval validate` and the workflow's parse-time check each accept the good overlay and reject each bad one
with the problems written out here by hand (both run the params step, poeval.params.resolve: schema,
defaults, cross-checks, BPoMP checks; each side is checked against the hand-written list, not against the
other)."""

import re

import pytest
import yaml

from poeval import cli, params
from poeval.configfiles import configfiles
from poeval.errors import PoevalError
from helpers import ROOT, _workdir, snakemake

# one overlay per outcome (each Snakemake dry run costs seconds): the schema stops a config before the
# cross-checks run, so the schema errors and the cross-check errors go in separate overlays. Each bad overlay
# lists the problem lines it must give, in order (a line ending "(allowed: " is a prefix: the allowed keys follow)
CASES = {
    "good": ({"training": {"patience": 0, "max_grad_norm": 0.5}}, []),
    "schema": ({"models": {"gpt2-s": {"size": "XS"}, "deepspeare-s": {"training": {"patience": 0, "lr_decay": 1}}},
                "training": {"max_grad_norm": -1}},
               ["unknown key models.deepspeare-s.training.lr_decay (allowed: ",
                "key models.gpt2-s.size: 'XS' is not one of ['S', 'L']",
                "key training.max_grad_norm: -1 is less than the minimum of 0"]),
    "cross": ({"systems": ["gpt2-s", "gpt9"], "models": {"gpt2-s": {"n_head": 3}},
               "bpomp": {"enabled": True, "scorers": [{"name": "g", "kind": "causal", "model": "gpt2-s",
                                                       "variant": "within_word_l2r"}]}},
              ["key systems.1: 'gpt9' is not defined under models",
               "key models.gpt2-s.n_head: n_embd (64) must be divisible by n_head (3)",   # tiny.yaml's n_embd 64
               "key bpomp.scorers.0.variant: only masked scorers have a PLL variant"]),
    # a German corpus that is not there stops before any job (not at the quatrains rule's missing input)
    "corpus": ({"languages": ["en", "de"], "corpus": {"de": {"path": "/nonexistent/dlk"}}},
               ["key corpus.de.path: /nonexistent/dlk: not found; clone the DLK corpus (git clone --depth 1 "
                "https://github.com/tnhaider/DLK ../DLK, where params.yaml looks) or point it at a clone's folder "
                "DLK/meterized/json_DLK_v6 (docs/configuration.md \"German\")"]),
}


def _problems(text: str) -> list[str]:
    """The listed problems of an 'invalid params' message."""
    return re.findall(r"^\s*- (.+)$", text, re.M)


def _as_expected(problems: list[str], expected: list[str]) -> bool:
    return len(problems) == len(expected) and all(
        got.startswith(want) if want.endswith("(allowed: ") else got == want for got, want in zip(problems, expected))


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return _workdir(tmp_path_factory.mktemp("parity"))


@pytest.mark.parametrize("case", CASES)
def test_cli_and_workflow_give_the_expected_problems(case, work, capsys):
    overlay, expected = CASES[case]
    (work / "config" / f"{case}.yaml").write_text(yaml.safe_dump(overlay))
    configs = ("config/scale/tiny.yaml", f"config/{case}.yaml")

    status = cli.main(["validate", "--params", str(work / "params.yaml"), *(str(work / c) for c in configs)])
    cli_problems = _problems(capsys.readouterr().err)
    assert status == (2 if expected else 0)
    assert _as_expected(cli_problems, expected), cli_problems

    proc = snakemake(work, "-n", "results/tables/table5.tsv", configs=configs)
    smk_problems = _problems(proc.stdout + proc.stderr)
    assert (proc.returncode == 0) == (not expected), proc.stderr[-2000:]
    assert _as_expected(smk_problems, expected), proc.stderr[-2000:]



def _alias_bomb(levels: int = 9) -> str:
    """Params YAML of ``levels`` lines, each a mapping of nine aliases of the line before: 9**levels values
    once expanded. Snakemake's merge of the --configfile files copies every mapping it meets, aliases too."""
    lines = ["a0: &a0 {" + ", ".join(f"k{j}: x" for j in range(9)) + "}"]
    lines += [f"a{i}: &a{i} {{" + ", ".join(f"k{j}: *a{i - 1}" for j in range(9)) + "}" for i in range(1, levels)]
    return "metrics:\n  length:\n" + "".join(f"    {line}\n" for line in lines)


BOMB_ERROR = "its YAML aliases (*name) expand to more than 100000 values"


def test_validate_refuses_an_alias_bomb_and_a_value_that_contains_itself(work, capsys):
    (work / "config" / "bomb.yaml").write_text(_alias_bomb())
    (work / "config" / "itself.yaml").write_text("metrics:\n  length:\n    bins: &a [1, *a]\n")
    for name, endless in (("bomb", ""), ("itself", " (one contains itself)")):
        assert cli.main(["validate", "--params", str(work / "params.yaml"), str(work / "config" / f"{name}.yaml")]) == 2
        assert capsys.readouterr().err == (f"poeval: error: {work / 'config' / name}.yaml: {BOMB_ERROR}{endless}; "
                                           "write the values out\n")


def test_the_workflow_refuses_an_alias_bomb_before_snakemake_expands_it(work):
    """The workflow profile checks each --configfile before Snakemake merges them (which would take minutes
    and gigabytes): the dry run stops in seconds with one line naming the file."""
    (work / "config" / "bomb.yaml").write_text(_alias_bomb())
    proc = snakemake(work, "-n", configs=("config/scale/tiny.yaml", "config/bomb.yaml"), timeout=60)
    printed = proc.stdout + proc.stderr
    assert proc.returncode == 1 and len(printed) < 5000, printed[:2000]
    assert f"poeval: error: config/bomb.yaml: {BOMB_ERROR}; write the values out\n" in printed, printed[:2000]


def test_the_params_step_refuses_shared_values_that_expand_past_the_limit():
    """Whoever loaded and merged the params (Snakemake run without the workflow profile, a module), the params
    step bounds their expanded size before any walk of them: 9**8 values, refused at once."""
    bins: list = ["x"] * 9
    for _ in range(7):
        bins = [bins] * 9
    given = yaml.safe_load((ROOT / "params.yaml").read_text())
    given["metrics"]["length"] = {"bins": bins}
    with pytest.raises(PoevalError, match=re.escape(BOMB_ERROR)):
        params.resolve(given)


def test_the_profile_finds_every_configfile_spelling():
    argv = ["-n", "--configfile", "a.yaml", "b.yaml", "--config", "x=1", "--configfiles=c.yaml", "-c", "2"]
    assert configfiles(argv) == ["a.yaml", "b.yaml", "c.yaml"]
