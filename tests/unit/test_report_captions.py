"""Every caption of the Snakemake report renders against the params as written: Snakemake renders a caption
(jinja) only when `snakemake --report` runs, after the whole DAG, so a caption that reads a params key the
config does not hold (``snakemake.config`` is the params as written, without the schema's defaults) would
fail only there."""

from pathlib import Path

import jinja2
import pytest
import yaml

from poeval import config as poeval_config

ROOT = Path(__file__).resolve().parents[2]
CAPTIONS = sorted((ROOT / "workflow" / "report").glob("*.rst"))


class _Any:
    """Stands in for what a caption reads of its rule (params, wildcards, input, output): any attribute or key."""

    def __getattr__(self, name):
        return self

    def __getitem__(self, key):
        return self

    def __iter__(self):
        return iter(())

    def __str__(self):
        return "x"


def _render(text: str, params: dict) -> str:
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    snakemake = type("Job", (), {"config": params, "params": _Any(), "wildcards": _Any(), "input": _Any(),
                                 "output": _Any(), "rule": "rule"})()
    return env.from_string(text).render(snakemake=snakemake, categories=_Any(), files=_Any())


def _load(name: str) -> dict:
    return yaml.safe_load((ROOT / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("overlay", [None, "config/scale/tiny.yaml"])
def test_every_caption_renders_against_the_params_as_written(overlay):
    params = _load("params.yaml")
    if overlay:
        params = poeval_config.merge(params, _load(overlay))
    assert len(CAPTIONS) > 40
    failed = {}
    for caption in CAPTIONS:
        try:
            _render(caption.read_text(encoding="utf-8"), params)
        except jinja2.exceptions.UndefinedError as err:
            failed[caption.name] = str(err)
    assert failed == {}


def test_a_caption_reading_a_key_the_params_do_not_hold_fails():
    with pytest.raises(jinja2.exceptions.UndefinedError):
        _render('{{ snakemake.config["metrics"]["no_such_family"]["threshold"] }}', _load("params.yaml"))
