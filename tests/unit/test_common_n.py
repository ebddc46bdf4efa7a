"""Rows at a common n (issue 43, point 1): the subsample a common-n cell reads, the n a companion table takes,
which columns are pooled, the n-sensitivity curve and its table (docs/metrics.md "Sample size")."""

import json
import random

import numpy as np
import pytest

from poeval import config as poeval_config
from poeval.errors import PoevalError
from poeval.jobs.cell import CellJob, cell_job, curve_job, run
from poeval.jobs.base import parse
from poeval.metrics.evaluate import draw_subsample, evaluate, n_curve
from poeval.report import sample_size
from poeval.metrics.families import FAMILIES
from poeval.report.tables import common_n, pooled_columns

from helpers import ROOT, _jsonl


@pytest.fixture(scope="module")
def tiny() -> dict:
    return poeval_config.read(ROOT / "params.yaml", (ROOT / "config" / "scale" / "tiny.yaml",))


def _poems(n, seed=0, prefix="p"):
    rng = random.Random(seed)
    words = "sun sea shore blue light night day way stone bone rain again tree free".split()
    return [{"id": f"{prefix}{i}", "lines": [" ".join(rng.choice(words) for _ in range(rng.randint(3, 7)))
                                             for _ in range(4)]} for i in range(n)]


def test_a_subsample_keeps_order_and_is_the_same_for_the_same_seed():
    poems = _poems(40)
    drawn = draw_subsample(poems, 10, seed=3)
    assert len(drawn) == 10 and len({p["id"] for p in drawn}) == 10
    positions = [poems.index(p) for p in drawn]
    assert positions == sorted(positions)                       # the sample's order, not the draw's
    assert drawn == draw_subsample(poems, 10, seed=3)
    assert drawn != draw_subsample(poems, 10, seed=4)
    assert draw_subsample(poems, 40, seed=3) == poems and draw_subsample(poems, 99, seed=3) == poems


def test_a_subsampled_cell_is_the_cell_of_the_drawn_quatrains_against_the_same_reference(tmp_path):
    reference = _poems(60, seed=1, prefix="r")
    sample = reference[:30]                                      # a HUMAN sample drawn from the reference
    ref_path, sample_path = _jsonl(tmp_path / "ref.jsonl", reference), _jsonl(tmp_path / "s.jsonl", sample)
    cell = evaluate(sample_path, ref_path, "en", ["lexical", "length"], exclude_sample_from_reference=True,
                    subsample=8, subsample_seed=5)
    drawn = draw_subsample(sample, 8, 5)
    # the drawn quatrains by hand, against the reference less the *whole* sample (30 quatrains out)
    by_hand = evaluate(_jsonl(tmp_path / "drawn.jsonl", drawn), _jsonl(tmp_path / "rest.jsonl", reference[30:]),
                       "en", ["lexical", "length"])
    assert cell["n_poems"] == 8 and cell["n_reference"] == 30 == by_hand["n_reference"]
    assert cell["subsample"] == {"n": 8, "seed": 5, "of": 30}
    for family in ("lexical", "length"):
        assert cell[family] == by_hand[family]
    with pytest.raises(PoevalError, match="subsample"):
        evaluate(sample_path, ref_path, "en", ["length"], subsample=0)


def test_common_n_is_the_smallest_configured_size_or_the_given_one():
    assert common_n([1000, 50, None, 1000], "auto") == 50
    assert common_n([None, None], "auto") is None
    assert common_n([1000, 50], 200) == 200
    assert common_n([1000, 50], None) is None


def test_pooled_columns_name_the_set_level_measures_of_each_table():
    assert pooled_columns("table6") == ["entropy", "kl"]            # cross-entropy averages -log q per quatrain
    assert pooled_columns("table2") == ["mattr_pct", "mtld"]        # ATTR is a mean of per-quatrain TTRs
    assert pooled_columns("table8") == ["across_min", "across_max"]  # extremes; the mean and m0.7 are not pooled
    assert pooled_columns("memorization") == []
    assert set(pooled_columns("diversity")) == set(FAMILIES["diversity"].present.pooled) - {"homogenization"}
    for family, record in FAMILIES.items():                          # every pooled key is a column somewhere
        present = record.present
        columns = {c.key for c in present.columns + sum(present.views.values(), ())}
        assert present.pooled <= columns, family


def test_a_common_n_job_draws_and_a_whole_sample_job_says_nothing_of_it(tiny):
    whole = cell_job(tiny, "en", "HUMAN", "human0", "lexical")
    drawn = cell_job(tiny, "en", "HUMAN", "human0", "lexical", n=20)
    assert "subsample" not in whole.to_dict() and "n_curve" not in whole.to_dict()
    assert drawn.to_dict()["subsample"] == 20 and drawn.to_dict()["subsample_seed"] == 1
    assert drawn.recorded()["subsample"] == 20 and "subsample" not in whole.recorded()
    for job in (whole, drawn, curve_job(tiny, "en", "rhyme")):
        assert parse(CellJob, job.to_json()) == job
    seeded = cell_job(tiny | {"tables": {"common_n": {"seed": 7}}}, "en", "gpt2-s", "vanilla", "length", n=20)
    assert seeded.subsample_seed == 7
    with pytest.raises(PoevalError, match="tables.n_curve"):
        parse(CellJob, json.dumps(whole.to_dict() | {"n_curve": {"draws": 0}}))


def test_the_curve_ends_at_the_whole_sample_and_each_point_is_its_draw(tmp_path):
    reference = _poems(80, seed=2, prefix="r")
    ref_path, sample_path = _jsonl(tmp_path / "ref.jsonl", reference), _jsonl(tmp_path / "s.jsonl", reference[:25])
    curve = n_curve(sample_path, ref_path, "en", ["length", "lexical"], sizes=[5, 10, 25, 40], draws=2, seed=3,
                    exclude_sample_from_reference=True)
    assert [(p["n"], p["draw"], p["seed"]) for p in curve["points"]] == [(5, 0, 3), (5, 1, 4), (10, 0, 3), (10, 1, 4),
                                                                         (25, 0, 3)]
    whole = evaluate(sample_path, ref_path, "en", ["lexical"], exclude_sample_from_reference=True)
    assert curve["points"][-1]["lexical"]["mattr"] == whole["lexical"]["mattr"]
    for point in curve["points"]:   # the longest quatrain of each draw, by hand
        drawn = draw_subsample(reference[:25], point["n"], point["seed"])
        assert point["length"]["max"] == max(sum(len(line.split()) for line in p["lines"]) for p in drawn)
    assert "per_poem" not in curve["points"][0]["lexical"]


def test_a_curve_job_writes_its_curve_with_its_params(tmp_path, tiny):
    reference = _poems(40, seed=4, prefix="r")
    ref_path, sample_path = _jsonl(tmp_path / "ref.jsonl", reference), _jsonl(tmp_path / "s.jsonl", reference[:12])
    params = tiny | {"tables": {"n_curve": {"sizes": [6], "draws": 2}}}
    out = tmp_path / "curve.json"
    run(curve_job(params, "en", "length"), sample_path, ref_path, str(out))
    written = json.loads(out.read_text())
    assert [p["n"] for p in written["points"]] == [6, 6, 12]
    assert written["provenance"]["params"]["n_curve"] == {"sizes": [6], "draws": 2}


def _curve(values_by_n):
    points = [{"n": n, "draw": d, "seed": d, "rhyme": {"entropy": v, "kl": v / 10, "cross_entropy": 1.0,
                                                       "distribution": {}}}
              for n, values in values_by_n.items() for d, v in enumerate(values)]
    return {"lang": "en", "families": ["rhyme"], "points": points}


def test_the_sensitivity_table_gives_each_measures_spread_and_shift_per_n(tmp_path):
    path = tmp_path / "rhyme.json"
    path.write_text(json.dumps(_curve({10: [2.0, 2.5, 3.0], 40: [3.5]})))
    out, figure = tmp_path / "ns.tsv", tmp_path / "ns.png"
    sample_size.n_sensitivity([str(path)], str(out), str(figure))
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[0] == sample_size.HEADER
    by = {(r[2], r[4]): r for r in rows[1:]}
    assert by[("entropy", "10")][3:] == ["yes", "10", "3", "2.500", "2.000", "3.000", "-1.000"]
    assert by[("entropy", "40")][5:] == ["1", "3.500", "3.500", "3.500", "0.000"]
    assert by[("cross_entropy", "10")][3] == "no" and by[("cross_entropy", "10")][-1] == "0.000"
    assert by[("kl", "10")][6] == f"{np.mean([0.2, 0.25, 0.3]):.3f}"
    assert figure.stat().st_size > 5_000
    path.write_text("{}")
    with pytest.raises(PoevalError, match="not an n-sensitivity curve"):
        sample_size.n_sensitivity([str(path)], str(out))
