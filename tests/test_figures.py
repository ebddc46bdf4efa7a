"""The paper's figures on hand-made cell files: what is selected, what is plotted, and that the bytes
are stable."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from poeval import figures
from poeval.cli import main
from poeval.errors import PoevalError
from poeval.rhyme import SCHEMES_4

ROOT = Path(__file__).resolve().parents[1]
ARCH_OF = {"a": "gpt2", "b": "gpt2", "c": "gpt2", "d": "gpt2", "z": "bygpt5"}


def _rhyme_cell(tmp_path, system, decoding="v", lang="en", shares=None, ce=3.0, n=10, name=None):
    shares = shares or {"abcd": 1.0}
    body = {"cell": {"lang": lang, "system": system, "decoding": decoding}, "n_poems": n,
            "rhyme": {"distribution": {s: float(shares.get(s, 0.0)) for s in SCHEMES_4}, "cross_entropy": ce}}
    path = tmp_path / (name or f"{lang}-{system}-{decoding}.json")
    path.write_text(json.dumps(body))
    return str(path)


@pytest.fixture
def captured(monkeypatch):
    """The matplotlib figures that reach the PNG writer, to read the plotted artists back."""
    figs = []
    save = figures._save

    def keep(fig, out):
        figs.append(fig)
        save(fig, out)

    monkeypatch.setattr(figures, "_save", keep)
    return figs


def _bar_heights(ax) -> dict[str, list[float]]:
    return {c.get_label(): [round(p.get_height(), 9) for p in c] for c in ax.containers}


def _texts(fig) -> str:
    return " ".join(t.get_text() for ax in fig.axes for t in ax.texts)


def test_extremes_pick_best_worst_and_average_by_cross_entropy(tmp_path):
    # mean of the ranked models' CE: (2.9 + 2.5 + 3.7 + 3.2) / 4 = 3.075; among a and d (best and
    # worst excluded) d is closer (0.125 vs 0.175); e has no valid quatrain and is not ranked
    paths = [_rhyme_cell(tmp_path, "HUMAN", "human0", ce=2.0)]
    paths += [_rhyme_cell(tmp_path, s, ce=ce) for s, ce in (("a", 2.9), ("b", 2.5), ("c", 3.7), ("d", 3.2), ("e", None))]
    picks = figures.extremes(figures.scheme_series(paths))
    assert {role: s.system for role, s in picks.items()} == {"best": "b", "worst": "c", "average": "d"}
    # with three or more, the average is never the best or the worst, even when it ties with one
    tied = figures.scheme_series([_rhyme_cell(tmp_path, s, ce=ce) for s, ce in (("p", 1.0), ("q", 1.0), ("r", 4.0))])
    assert {role: s.system for role, s in figures.extremes(tied).items()} == {"best": "p", "worst": "r", "average": "q"}
    # a tie goes to the earlier system (params order)
    tie = figures.scheme_series([_rhyme_cell(tmp_path, s, ce=1.5) for s in ("x", "y")])
    assert figures.extremes(tie)["best"].system == "x" and figures.extremes(tie)["worst"].system == "x"
    assert figures.extremes(figures.scheme_series(paths[:1])) == {}


def test_extremes_figure_plots_the_cells_shares_human_averaged(tmp_path, captured):
    paths = [_rhyme_cell(tmp_path, "HUMAN", "human0", shares={"abab": 0.5, "abcd": 0.5}),
             _rhyme_cell(tmp_path, "HUMAN", "human1", shares={"abab": 0.3, "aabb": 0.7}),
             _rhyme_cell(tmp_path, "a", shares={"aaaa": 0.25, "abcd": 0.75}, ce=2.0),
             _rhyme_cell(tmp_path, "b", shares={"abcb": 1.0}, ce=4.0)]
    figures.make("figure2", paths, str(tmp_path / "f2.png"), arch_of=ARCH_OF)
    heights = _bar_heights(captured[0].axes[0])
    human = dict.fromkeys(SCHEMES_4, 0.0) | {"abab": 40.0, "abcd": 25.0, "aabb": 35.0}
    assert heights["HUMAN (n=10)"] == [human[s] for s in SCHEMES_4]
    best = next(v for k, v in heights.items() if k.startswith("best: a (v), CE 2.000"))
    assert best == [75.0 if s == "abcd" else 25.0 if s == "aaaa" else 0.0 for s in SCHEMES_4]
    worst = next(v for k, v in heights.items() if k.startswith("worst: b (v)"))
    assert worst == [100.0 if s == "abcb" else 0.0 for s in SCHEMES_4]


def test_a_language_not_in_the_run_gives_a_labelled_empty_figure(tmp_path, captured):
    assert main(["figure", "figure3", "--out", str(tmp_path / "f3.png")]) == 0
    assert "'de' not in this run" in _texts(captured[0])
    assert (tmp_path / "f3.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rhyme_figures_are_byte_identical_and_carry_no_timestamp(tmp_path):
    paths = [_rhyme_cell(tmp_path, "HUMAN", "human0", shares={"abab": 0.6, "abcd": 0.4}),
             _rhyme_cell(tmp_path, "a", shares={"abab": 0.2, "abcd": 0.8})]
    for name in ("figure2", "figure5", "figure11"):
        one, two = tmp_path / f"{name}-1.png", tmp_path / f"{name}-2.png"
        figures.make(name, paths, str(one), arch_of=ARCH_OF)
        figures.make(name, paths, str(two), arch_of=ARCH_OF)
        assert one.read_bytes() == two.read_bytes(), name
        assert b"tIME" not in one.read_bytes() and b"matplotlib version" not in one.read_bytes()


def test_wrong_cells_are_clear_errors(tmp_path):
    length = tmp_path / "length.json"
    length.write_text(json.dumps({"cell": {"lang": "en", "system": "a", "decoding": "v"}, "n_poems": 3,
                                  "length": {"per_poem": [1, 2, 3]}}))
    with pytest.raises(PoevalError, match="not a 'rhyme' metric cell"):
        figures.make("figure5", [str(length)], str(tmp_path / "x.png"), arch_of=ARCH_OF)
    with pytest.raises(PoevalError, match="not a 'semantic' metric cell"):
        figures.make("figure10", [str(length)], str(tmp_path / "x.png"))
    bygpt5 = _rhyme_cell(tmp_path, "z")
    with pytest.raises(PoevalError, match="'z' \\(arch bygpt5\\) is not of the GPT-2 family"):
        figures.make("figure5", [bygpt5], str(tmp_path / "x.png"), arch_of=ARCH_OF)
    with pytest.raises(PoevalError, match="has no arch"):
        figures.make("figure5", [bygpt5], str(tmp_path / "x.png"), arch_of={})
    german = _rhyme_cell(tmp_path, "a", lang="de")
    with pytest.raises(PoevalError, match="language 'de'"):
        figures.make("figure2", [german], str(tmp_path / "x.png"), arch_of=ARCH_OF)
    with pytest.raises(PoevalError, match="unknown figure"):
        figures.make("figure99", [german], str(tmp_path / "x.png"))
    assert not (tmp_path / "x.png").exists()


def test_family_figure_shows_its_systems_or_says_there_are_none(tmp_path, captured):
    human = _rhyme_cell(tmp_path, "HUMAN", "human0", shares={"abab": 1.0})
    a = _rhyme_cell(tmp_path, "a", shares={"aabb": 0.5, "abcd": 0.5})
    data = figures.make("figure5", [human, a], str(tmp_path / "f5.png"), arch_of=ARCH_OF)
    assert list(data["en"]) == ["HUMAN (n=10)", "a (v), n=10"]
    heights = _bar_heights(captured[0].axes[0])
    assert heights["a (v), n=10"] == [50.0 if s in ("aabb", "abcd") else 0.0 for s in SCHEMES_4]
    assert "no systems" not in _texts(captured[0])
    figures.make("figure9", [human], str(tmp_path / "f9.png"), arch_of=ARCH_OF)
    assert "no systems of this family in this run" in _texts(captured[1])


def test_arch_families_cover_any_arch():
    spec = figures.FIGURES
    arch_of = {"g": "gpt2", "n": "gptneo", "l": "llama", "b": "bygpt5", "d": "deepspeare", "s": "sa", "m": "mistral"}
    assert [spec[f"figure{i}"].systems(arch_of) for i in range(5, 10)] == [["g"], ["n"], ["l"], ["b"], ["d", "s", "m"]]
    assert spec["figure15"].systems(arch_of) == ["d", "s", "m"]
    assert spec["figure2"].systems(arch_of) == list(arch_of)


def test_decoding_heatmap_rows_are_the_shares_per_config(tmp_path, captured):
    paths = [_rhyme_cell(tmp_path, "HUMAN", "human0", shares={"abab": 1.0}),
             _rhyme_cell(tmp_path, "a", "vanilla", shares={"aabb": 0.25, "abcd": 0.75}),
             _rhyme_cell(tmp_path, "a", "topk", shares={}, ce=None, n=0)]
    data = figures.make("figure11", paths, str(tmp_path / "f11.png"), arch_of=ARCH_OF)
    rows = data[("en", "a")]
    assert list(rows) == ["HUMAN (n=10)", "vanilla (n=10)", "topk (n=0)"]
    assert rows["vanilla (n=10)"][SCHEMES_4.index("abcd")] == 75.0 and rows["vanilla (n=10)"].sum() == 100.0
    assert np.isnan(rows["topk (n=0)"]).all()   # no valid quatrains: no shares, not 0 %
    image = captured[0].axes[0].images[0].get_array()
    assert image[1, SCHEMES_4.index("aabb")] == 25.0


def test_similarity_by_decoding_pools_systems_per_config(tmp_path, captured):
    def cell(name, system, decoding, within, across):
        path = tmp_path / name
        path.write_text(json.dumps({"cell": {"lang": "en", "system": system, "decoding": decoding}, "n_poems": 2,
                                    "semantic": {"per_poem": {"within": within, "across": across}}}))
        return str(path)

    paths = [cell("h.json", "HUMAN", "human0", [0.5, 0.6], [0.7, 0.8]),
             cell("a.json", "a", "vanilla", [0.1, 0.2], [0.3, 0.4]),
             cell("b.json", "b", "vanilla", [0.9], None),
             cell("c.json", "a", "topk", [0.3], [0.2])]
    data = figures.make("figure10", paths, str(tmp_path / "f10.png"))
    assert data["en"]["within"]["vanilla"].tolist() == [0.1, 0.2, 0.9]
    assert data["en"]["across"]["vanilla"].tolist() == [0.3, 0.4]
    assert data["en"]["within"]["topk"].tolist() == [0.3] and data["en"]["within"]["HUMAN"].tolist() == [0.5, 0.6]
    legend = [t.get_text() for t in captured[0].axes[0].get_legend().get_texts()]
    assert legend == ["HUMAN (n=2)", "vanilla (n=3)", "topk (n=1)"]


def test_training_curve_is_a_flat_tsv_of_the_evals(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "training_log.json").write_text(json.dumps({
        "evals": [{"step": 50, "dev_loss": 5.25, "train_loss": 5.5, "lr": 0.1},
                  {"step": 100, "dev_loss": 4.125}],
        "summary": {"best_dev_loss": 4.125}}))
    out = tmp_path / "curve.tsv"
    assert main(["curve", str(model), "--out", str(out)]) == 0
    assert out.read_text() == "step\tdev_loss\ttrain_loss\n50\t5.250000\t5.500000\n100\t4.125000\t\n"
    (model / "training_log.json").write_text(json.dumps({"evals": [{"step": 1}]}))
    with pytest.raises(PoevalError, match=r"evals\[0\] has no step or dev_loss"):
        figures.training_curve(str(model), str(out))
    with pytest.raises(PoevalError, match="no training log"):
        figures.training_curve(str(tmp_path), str(out))


def test_every_figure_has_a_numbered_caption():
    assert list(figures.FIGURES) == [f"figure{i}" for i in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)]
    for name in figures.FIGURES:
        caption = (ROOT / "workflow" / "report" / f"{name}.rst").read_text()
        assert re.match(rf"Figure {name[6:]}: ", caption), name
