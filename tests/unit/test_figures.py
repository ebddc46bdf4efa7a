"""The paper's figures on hand-made cell files: what is selected, what is plotted, and that the bytes
are stable."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from poeval import params as poeval_params
from poeval import render
from poeval.cli import main
from poeval.errors import PoevalError
from poeval.poetry.schemes import SCHEMES_4
from poeval.report import figures

ROOT = Path(__file__).resolve().parents[2]
MODELS = {"a": {"arch": "gpt2", "conditioned": False}, "z": {"arch": "bygpt5", "conditioned": True},
          "ds": {"arch": "deepspeare", "conditioned": False}, "sa": {"arch": "sa", "conditioned": True}}


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
    save = render.save_figure

    def keep(fig, out):
        figs.append(fig)
        save(fig, out)

    monkeypatch.setattr(render, "save_figure", keep)
    return figs


def _bar_heights(ax) -> dict[str, list[float]]:
    return {c.get_label(): [round(p.get_height(), 9) for p in c] for c in ax.containers}


def _texts(fig) -> str:
    return " ".join(t.get_text() for ax in fig.axes for t in ax.texts)


def test_extremes_pick_best_worst_and_average_by_cross_entropy(tmp_path):
    # ranked: b 2.5, a 2.9, d 3.2, c 3.7 -> best b, worst c, average the lower median a (the model
    # closest to the mean, 3.075, would be d); e has no valid quatrain and is not ranked
    paths = [_rhyme_cell(tmp_path, "HUMAN", "human0", ce=2.0)]
    paths += [_rhyme_cell(tmp_path, s, ce=ce) for s, ce in (("a", 2.9), ("b", 2.5), ("c", 3.7), ("d", 3.2), ("e", None))]
    picks = figures.extremes(figures.scheme_series(paths))
    assert {role: s.system for role, s in picks.items()} == {"best": "b", "worst": "c", "average": "a"}
    # ties keep params order, so with three or more the average is neither the best nor the worst
    for ces, average in (((1.0, 1.0, 4.0), "q"), ((1.0, 4.0, 4.0), "q")):
        tied = figures.scheme_series([_rhyme_cell(tmp_path, s, ce=ce) for s, ce in zip("pqr", ces)])
        assert {role: s.system for role, s in figures.extremes(tied).items()} == {
            "best": "p", "worst": "r", "average": average}
    assert figures.extremes(figures.scheme_series(paths[:1])) == {}


# The paper's Table 6 cross-entropies (every model; German has no GPT-Neo) and the best, worst and
# average models its Figures 2 (German) and 3 (English) show
PAPER_TABLE6_CE = {
    "de": {"DeepSpeare": 3.52, "SA": 4.57, "ByGPT5-L": 4.12, "ByGPT5-S": 4.21, "GPT2-L": 4.13, "GPT2-S": 4.29,
           "LLaMA2-L": 4.11, "LLaMA2-S": 4.21, "LLaMA3": 4.10, "ByGPT5-L-con": 3.84, "ByGPT5-S-con": 3.75,
           "GPT2-L-con": 3.97, "GPT2-S-con": 4.14, "LLaMA2-L-con": 4.02, "LLaMA2-S-con": 3.83, "LLaMA3-con": 4.04},
    "en": {"DeepSpeare": 3.64, "SA": 4.39, "ByGPT5-L": 4.00, "ByGPT5-S": 4.04, "GPT2-L": 4.03, "GPT2-S": 4.03,
           "GPTNeo-L": 3.99, "GPTNeo-S": 4.11, "LLaMA2-L": 3.95, "LLaMA2-S": 3.95, "LLaMA3": 4.02,
           "ByGPT5-L-con": 4.05, "ByGPT5-S-con": 3.92, "GPT2-L-con": 4.02, "GPT2-S-con": 4.07, "GPTNeo-L-con": 3.89,
           "GPTNeo-S-con": 4.11, "LLaMA2-L-con": 3.85, "LLaMA2-S-con": 3.74, "LLaMA3-con": 3.52}}
PAPER_FIGURES_2_3 = {"de": {"best": "DeepSpeare", "worst": "SA", "average": "LLaMA3"},
                     "en": {"best": "LLaMA3-con", "worst": "SA", "average": "ByGPT5-L"}}


@pytest.mark.parametrize("lang", ["de", "en"])
def test_extremes_reproduce_the_papers_figures_2_and_3_from_its_table6(tmp_path, lang):
    paths = [_rhyme_cell(tmp_path, s, lang=lang, ce=ce) for s, ce in PAPER_TABLE6_CE[lang].items()]
    picks = figures.extremes(figures.scheme_series(paths))
    assert {role: s.system for role, s in picks.items()} == PAPER_FIGURES_2_3[lang]


def _panel_bars(fig) -> dict[str, dict[str, list[float]]]:
    """Panel title -> bar series label -> heights, for the panels that draw bars."""
    return {ax.get_title(): _bar_heights(ax) for ax in fig.axes if ax.containers}


def _percent(shares: dict[str, float]) -> list[float]:
    return [round(100 * shares.get(s, 0.0), 9) for s in SCHEMES_4]


def test_a_human_sample_short_of_its_size_shows_in_the_panel_title(tmp_path, captured):
    # HUMAN samples of 1000 and 999 quatrains: the title gives their range, not a mean rounded to 1000
    paths = [_rhyme_cell(tmp_path, "HUMAN", "human0", lang="de", n=1000),
             _rhyme_cell(tmp_path, "HUMAN", "human1", lang="de", n=999),
             _rhyme_cell(tmp_path, "a", lang="de", ce=2.0, n=999)]
    figures.make("figure2", paths, str(tmp_path / "f2.png"))
    titles = list(_panel_bars(captured[0]))
    assert titles[0] == "(a) HUMAN (n=999-1000)" and titles[1].endswith("n=999")


def test_figure2_is_german_and_figure3_english_with_human_best_worst_average_panels(tmp_path, captured):
    human0, human1 = {"abab": 0.5, "abcd": 0.5}, {"abab": 0.3, "aabb": 0.7}
    a, b, c = {"aaaa": 0.25, "abcd": 0.75}, {"abcb": 1.0}, {"abba": 0.5, "abab": 0.5}
    paths = [_rhyme_cell(tmp_path, "HUMAN", "human0", lang="de", shares=human0),
             _rhyme_cell(tmp_path, "HUMAN", "human1", lang="de", shares=human1),
             _rhyme_cell(tmp_path, "a", lang="de", shares=a, ce=2.0),
             _rhyme_cell(tmp_path, "b", lang="de", shares=b, ce=4.0),
             _rhyme_cell(tmp_path, "c", lang="de", shares=c, ce=2.5)]
    figures.make("figure2", paths, str(tmp_path / "f2.png"))
    fig = captured[0]
    assert fig.get_suptitle().startswith("German: rhyme schemes of HUMAN and of the best, worst and average")
    panels = _panel_bars(fig)
    human = {"abab": 0.4, "abcd": 0.25, "aabb": 0.35}            # the mean of the two samples' shares
    assert list(panels) == ["(a) HUMAN (n=10)", "(b) best: a (v)\nCE 2.000 bits, n=10",
                            "(c) worst: b (v)\nCE 4.000 bits, n=10", "(d) average: c (v)\nCE 2.500 bits, n=10"]
    assert panels["(a) HUMAN (n=10)"] == {"HUMAN": _percent(human)}
    for title, shares in zip(list(panels)[1:], (a, b, c)):
        system = title.split(": ")[1].split(" ")[0]
        assert panels[title] == {system: _percent(shares), "HUMAN": _percent(human)}, title
    with pytest.raises(PoevalError, match="language 'de'"):             # figure 3 is English
        figures.make("figure3", paths, str(tmp_path / "f3.png"))


def test_with_two_models_the_average_is_the_best_and_shares_its_panel(tmp_path, captured):
    paths = [_rhyme_cell(tmp_path, "HUMAN", "human0", lang="en"), _rhyme_cell(tmp_path, "a", lang="en", ce=2.0),
             _rhyme_cell(tmp_path, "b", lang="en", ce=3.0)]
    figures.make("figure3", paths, str(tmp_path / "f3.png"))
    assert list(_panel_bars(captured[0])) == ["(a) HUMAN (n=10)", "(b) best and average: a (v)\nCE 2.000 bits, n=10",
                                              "(c) worst: b (v)\nCE 3.000 bits, n=10"]


def test_the_main_job_makes_only_figures_with_something_to_draw_and_names_the_ones_that_coincide(root):
    from poeval import config, params

    main_job = params.resolve(config.read(root / "params.yaml"))
    made = [name for name in figures.FIGURES if figures.has_panels(main_job, name)]
    # English only: no German figure (2, 6, 8); no poetry-specific system (5), no style-conditioned LLM (9)
    assert [n for n in figures.FIGURES if n not in made] == ["figure2", "figure5", "figure6", "figure8", "figure9"]
    assert figures.same_as(main_job, "figure12") == ["figure14"] and figures.same_as(main_job, "figure13") == ["figure15"]
    assert figures.same_as(main_job, "figure11") == [] and figures.same_as(main_job, "figure1") == []
    german = params.resolve(config.read(root / "params.yaml", (root / "config" / "lang" / "de.yaml",)))
    assert {"figure2", "figure6"} <= {n for n in figures.FIGURES if figures.has_panels(german, n)}


def test_a_language_not_in_the_run_gives_a_labelled_empty_figure(tmp_path, captured):
    assert main(["figure", "figure2", "--out", str(tmp_path / "f2.png")]) == 0
    assert "language 'de' not in this run" in _texts(captured[0])
    assert (tmp_path / "f2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    en_only = [_rhyme_cell(tmp_path, "HUMAN", "human0")]
    assert main(["figure", "figure12", *en_only, "--system", "gpt2-l", "--lang", "de",
                 "--out", str(tmp_path / "f12.png")]) != 0                 # an English cell in a German figure
    assert main(["figure", "figure12", "--system", "gpt2-l", "--lang", "de", "--out", str(tmp_path / "f12.png")]) == 0
    assert _texts(captured[-1]) == "language 'de' not in this run"
    assert main(["figure", "figure12", "--system", "gpt2-l", "--out", str(tmp_path / "x.png")]) != 0


def test_a_figure_from_its_rules_job_is_the_hand_runs(tmp_path, root):
    """Rule figure14 passes its one system, its panels and the figure it repeats as its job (built from the params):
    the same PNG as those options by hand, and its stamp records what it did before."""
    from poeval import config, params
    from poeval.report.steps import by_rule

    resolved = params.resolve(config.read(root / "params.yaml"))
    job = by_rule()["figure14"].build(resolved)
    sel = job.selection
    assert job.same_as == figures.repeats(resolved, "figure14")
    cells = [_rhyme_cell(tmp_path, "HUMAN", "human0", lang=sel.lang), _rhyme_cell(tmp_path, sel.system, lang=sel.lang)]
    hand = ["--system", sel.system, "--lang", sel.lang, "--decodings", *sel.decodings,
            *(["--same-as", job.same_as] if job.same_as else [])]
    assert main(["figure", "figure14", *cells, *hand, "--out", str(tmp_path / "hand.png")]) == 0
    assert main(["figure", "figure14", *cells, "--job", job.to_json(), "--out", str(tmp_path / "job.png")]) == 0
    assert (tmp_path / "job.png").read_bytes() == (tmp_path / "hand.png").read_bytes()
    stamps = [json.loads((tmp_path / f"{n}.png.stamp.json").read_text())["provenance"]["params"] for n in ("hand", "job")]
    assert stamps[0] == stamps[1] == job.recorded()


def test_rhyme_figures_are_byte_identical_and_carry_no_timestamp(tmp_path):
    paths = [_rhyme_cell(tmp_path, "HUMAN", "human0", shares={"abab": 0.6, "abcd": 0.4}),
             _rhyme_cell(tmp_path, "a", shares={"abab": 0.2, "abcd": 0.8})]
    for name in ("figure3", "figure7", "figure12"):
        one, two = tmp_path / f"{name}-1.png", tmp_path / f"{name}-2.png"
        for out in (one, two):
            figures.make(name, paths, str(out), models=MODELS, selection=figures.Selection("a", "en"))
        assert one.read_bytes() == two.read_bytes(), name
        assert b"tIME" not in one.read_bytes() and b"matplotlib version" not in one.read_bytes()


def test_wrong_cells_are_clear_errors(tmp_path):
    length = tmp_path / "length.json"
    length.write_text(json.dumps({"cell": {"lang": "en", "system": "a", "decoding": "v"}, "n_poems": 3,
                                  "length": {"per_poem": [1, 2, 3]}}))
    en = figures.Selection("a", "en")
    with pytest.raises(PoevalError, match="not a 'rhyme' metric cell"):
        figures.make("figure7", [str(length)], str(tmp_path / "x.png"), models=MODELS)
    with pytest.raises(PoevalError, match="not a 'semantic' metric cell"):
        figures.make("figure10", [str(length)], str(tmp_path / "x.png"), selection=en)
    conditioned = _rhyme_cell(tmp_path, "z")
    with pytest.raises(PoevalError, match="'z' is not one of the unconditioned LLMs"):
        figures.make("figure7", [conditioned], str(tmp_path / "x.png"), models=MODELS)
    with pytest.raises(PoevalError, match="has no model entry"):
        figures.make("figure9", [conditioned], str(tmp_path / "x.png"), models={})
    with pytest.raises(PoevalError, match="language 'de'"):
        figures.make("figure9", [_rhyme_cell(tmp_path, "z", lang="de")], str(tmp_path / "x.png"), models=MODELS)
    with pytest.raises(PoevalError, match="a cell of z \\(en\\) given to a figure of a \\(en\\)"):
        figures.make("figure12", [conditioned], str(tmp_path / "x.png"), selection=en)
    with pytest.raises(PoevalError, match="shows one system"):
        figures.make("figure12", [conditioned], str(tmp_path / "x.png"))
    with pytest.raises(PoevalError, match="unknown figure"):
        figures.make("figure99", [conditioned], str(tmp_path / "x.png"))
    assert not (tmp_path / "x.png").exists()


def test_kind_figures_draw_one_panel_per_system_and_language(tmp_path, captured):
    # figure 5 (both languages): system by system as in the paper, DeepSpeare (en), (de), then SA
    human_en, human_de = {"abab": 1.0}, {"aabb": 1.0}
    ds_en, ds_de, sa_en = {"aabb": 0.5, "abcd": 0.5}, {"abba": 1.0}, {"abcd": 1.0}
    paths = [_rhyme_cell(tmp_path, "HUMAN", "human0", shares=human_en),
             _rhyme_cell(tmp_path, "ds", shares=ds_en), _rhyme_cell(tmp_path, "sa", shares=sa_en),
             _rhyme_cell(tmp_path, "HUMAN", "human0", lang="de", shares=human_de),
             _rhyme_cell(tmp_path, "ds", lang="de", shares=ds_de),
             _rhyme_cell(tmp_path, "sa", lang="de", shares={}, ce=None, n=0)]
    data = figures.make("figure5", paths, str(tmp_path / "f5.png"), models=MODELS)
    assert list(data) == ["ds (en), n=10", "ds (de), n=10", "sa (en), n=10"]
    panels = _panel_bars(captured[0])
    assert panels["(a) ds (en), n=10"] == {"ds": _percent(ds_en), "HUMAN": _percent(human_en)}
    assert panels["(b) ds (de), n=10"] == {"ds": _percent(ds_de), "HUMAN": _percent(human_de)}
    assert panels["(c) sa (en), n=10"] == {"sa": _percent(sa_en), "HUMAN": _percent(human_en)}
    assert "no valid quatrains" in _texts(captured[0])           # (d) sa (de): no scheme shares to draw
    # no system of the kind, or the language not in the run: one panel that says so
    figures.make("figure6", [], str(tmp_path / "f6.png"), models=MODELS)
    assert _texts(captured[1]) == "language 'de' not in this run"
    figures.make("figure7", paths[:1], str(tmp_path / "f7.png"), models=MODELS)
    assert _texts(captured[2]) == "unconditioned LLMs not in this run"


def test_system_kinds_split_the_systems_as_the_paper_does():
    models = {"g": {"arch": "gpt2", "conditioned": False}, "gc": {"arch": "gpt2", "conditioned": True},
              "n": {"arch": "gptneo"}, "lc": {"arch": "llama", "conditioned": True}, "b": {"arch": "bygpt5"},
              "d": {"arch": "deepspeare", "conditioned": True}, "s": {"arch": "sa"}, "m": {"arch": "mistral"}}
    systems = {name: spec.systems(models) for name, spec in figures.FIGURES.items() if not spec.single}
    assert systems["figure5"] == ["d", "s", "m"]
    assert systems["figure6"] == systems["figure7"] == ["g", "n", "b"]
    assert systems["figure8"] == systems["figure9"] == ["gc", "lc"]
    assert systems["figure2"] == systems["figure3"] == list(models)
    assert [figures.FIGURES[f"figure{i}"].lang for i in (2, 3, 6, 7, 8, 9)] == ["de", "en", "de", "en", "de", "en"]
    assert [name for name, spec in figures.FIGURES.items() if spec.single] == [f"figure{i}" for i in range(10, 16)]


def test_single_system_figure_draws_a_panel_per_decoding_config(tmp_path, captured):
    human = _rhyme_cell(tmp_path, "HUMAN", "human0", shares={"abab": 1.0})
    vanilla = _rhyme_cell(tmp_path, "sa", "vanilla", shares={"aabb": 0.25, "abcd": 0.75})
    cooler = _rhyme_cell(tmp_path, "sa", "temperature-0.7", shares={"aabb": 0.5, "abcd": 0.5}, n=8)
    sel = figures.Selection("sa", "en", ("vanilla", "temperature-0.7"))
    data = figures.make("figure11", [human, vanilla, cooler], str(tmp_path / "f11.png"), selection=sel)
    assert captured[0].get_suptitle() == "sa (English): rhyme schemes at the default vs a lowered temperature"
    assert _panel_bars(captured[0]) == {
        "(a) vanilla, n=10": {"sa": _percent({"aabb": 0.25, "abcd": 0.75}), "HUMAN": _percent({"abab": 1.0})},
        "(b) temperature-0.7, n=8": {"sa": _percent({"aabb": 0.5, "abcd": 0.5}), "HUMAN": _percent({"abab": 1.0})}}
    assert list(data) == ["vanilla, n=10", "temperature-0.7, n=8"]
    # the lowered temperature not configured: no panel of it (the main job's figure 11 spent half its area on
    # one saying so), the title says it is left out
    figures.make("figure11", [human, vanilla], str(tmp_path / "f11.png"), selection=sel)
    assert [ax.get_title() for ax in captured[1].axes if ax.axison] == ["(a) vanilla, n=10"]
    assert _texts(captured[1]) == ""
    assert captured[1].get_suptitle() == ("sa (English): rhyme schemes at the default vs a lowered temperature\n"
                                          "(no panel for temperature-0.7: not configured for sa in this run)")
    # no decodings given: every config with a cell, in input order; the system not in the run
    figures.make("figure12", [human, cooler, vanilla], str(tmp_path / "f12.png"),
                 selection=figures.Selection("sa", "en"))
    assert list(_panel_bars(captured[2])) == ["(a) temperature-0.7, n=8", "(b) vanilla, n=10"]
    figures.make("figure12", [human], str(tmp_path / "f12.png"), selection=figures.Selection("gpt2-l", "en"))
    assert _texts(captured[3]) == "system 'gpt2-l' not in this run"


def test_similarity_figure_shows_one_systems_max_similarity_to_train_per_decoding(tmp_path, captured):
    def cell(name, system, decoding, within, across):
        path = tmp_path / name
        path.write_text(json.dumps({"cell": {"lang": "en", "system": system, "decoding": decoding}, "n_poems": 2,
                                    "semantic": {"per_poem": {"within": within, "across": across}}}))
        return str(path)

    paths = [cell("h0.json", "HUMAN", "human0", [0.5, 0.6], [0.7, 0.8]),
             cell("h1.json", "HUMAN", "human1", [0.5], [0.75]),
             cell("a.json", "a", "vanilla", [0.1, 0.2], [0.31, 0.41, 0.415]),
             cell("c.json", "a", "topk", [0.3], [0.2])]
    sel = figures.Selection("a", "en", ("vanilla", "topk", "nucleus"))
    data = figures.make("figure10", paths, str(tmp_path / "f10.png"), selection=sel)
    assert {k: v.tolist() for k, v in data.items()} == {"vanilla": [0.31, 0.41, 0.415], "topk": [0.2]}
    vanilla = captured[0].axes[0]
    assert vanilla.get_title() == "(a) vanilla (n=3)"
    bars, human = vanilla.patches[:-1], vanilla.patches[-1]      # filled bins, then HUMAN's outline
    width = figures.SIM_BINS[1] - figures.SIM_BINS[0]
    counts = {round(p.get_x() + width / 2, 2): round(p.get_height() * width * 3, 6) for p in bars if p.get_height()}
    assert counts == {0.31: 1.0, 0.41: 2.0}                        # 0.41 and 0.415 share the bin [0.40, 0.42)
    assert human.get_label() == "HUMAN"
    assert [ax.get_title() for ax in captured[0].axes if ax.axison] == ["(a) vanilla (n=3)", "(b) topk (n=1)"]
    assert captured[0].get_suptitle().endswith("\n(no panel for nucleus: not configured for a in this run)")


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
    """The paper's figures first, numbered; then the ones beyond the paper, whose captions say so."""
    paper = [f"figure{i}" for i in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)]
    assert list(figures.FIGURES)[:len(paper)] == paper
    for name in figures.FIGURES:
        caption = (ROOT / "workflow" / "report" / f"{name}.rst").read_text()
        if name in paper:
            assert re.match(rf"Figure {name[6:]}: ", caption), name
        else:
            assert "(not in the paper" in caption.split(".")[0], name


def test_single_system_figures_default_to_the_main_job_and_the_grid_names_the_papers(root):
    from poeval import config

    params = poeval_params.load(root / "params.yaml")
    assert params["figures"] == config.section_defaults("figures")          # params.yaml and the schema agree
    assert {s["system"] for s in params["figures"].values()} <= set(params["systems"])
    grid = poeval_params.load(root / "params.yaml", (root / "config" / "systems" / "grid.yaml",))
    # the paper's captions of Figures 10-15 (Appendix B)
    assert {name: (s["system"], s["lang"]) for name, s in grid["figures"].items()} == {
        "figure10": ("gptneo-l-cond", "en"), "figure11": ("sa-s", "en"), "figure12": ("gpt2-l", "de"),
        "figure13": ("bygpt5-l", "de"), "figure14": ("gpt2-s-cond", "en"), "figure15": ("bygpt5-s-cond", "de")}
    assert grid["figures"]["figure11"]["decodings"] == ["vanilla", "temperature-0.7"]
    assert all(s["system"] in grid["systems"] and s["lang"] in grid["languages"] for s in grid["figures"].values())
    params["figures"]["figure12"]["system"] = "gpt2-xl"
    with pytest.raises(PoevalError, match=r"figures\.figure12\.system: 'gpt2-xl' is not defined under models"):
        poeval_params.resolve(params)


# --- legends clear of the data -----------------------------------------------------------------------

def test_a_legend_goes_where_it_covers_no_data_else_outside(tmp_path):
    plt = render.load_pyplot()
    fig, (free, full) = plt.subplots(1, 2, figsize=(6, 2.5))
    free.bar(range(6), [1, 1, 1, 1, 1, 9], label="low but the last")   # the upper left is clear
    full.bar(range(6), [9] * 6, width=1.0, label="everywhere")          # nothing inside is clear
    for ax in (free, full):
        ax.legend(loc="upper right")                                   # over the data in both
    fig.canvas.draw()
    assert len(render.legend_overlaps(fig)) == 2
    assert render.place_legends(fig) is True and render.legend_overlaps(fig) == []
    assert free.get_legend()._loc == 2   # upper left: inside, where it was clear
    assert full.get_legend().get_bbox_to_anchor().x0 > full.get_window_extent().x1 - 1   # outside, to the right
    plt.close(fig)


def _length_cell(tmp_path, system, lengths, decoding="v"):
    path = tmp_path / f"len-{system}-{decoding}.json"
    path.write_text(json.dumps({"cell": {"lang": "en", "system": system, "decoding": decoding},
                                "length": {"per_poem": lengths}}))
    return str(path)


def test_every_figure_keeps_its_legends_off_the_data(tmp_path, captured):
    """Crowded panels, as the main job's smollm2 histogram and tall bars at both ends of the schemes: every
    legend is placed where it covers no bar, outline or line (render.legend_overlaps on the saved figure)."""
    from poeval.bpomp import report as bpomp_report
    from poeval.metrics import adherence

    spread = [k for k in range(4, 44) for _ in range(3)]
    figures.make("figure1", [_length_cell(tmp_path, "HUMAN", spread, "human0"), _length_cell(tmp_path, "a", spread),
                             _length_cell(tmp_path, "b", [20] * 90 + spread)], str(tmp_path / "f1.png"))
    tall = {"aaaa": 0.45, "abcd": 0.45, "abab": 0.1}
    figures.make("figure3", [_rhyme_cell(tmp_path, "HUMAN", "human0", shares=tall),
                             _rhyme_cell(tmp_path, "a", shares=tall, ce=2.0)], str(tmp_path / "f3.png"))
    cuts = [{"quantile": q, **{s: {"n": 10, "pearson": r, "pearson_p": 0.5, "spearman": r, "spearman_p": 0.5}
                               for s, r in (("all", 0.9 - q), ("errors", q - 0.9))}} for q in (0.0, 0.3, 0.6, 0.9)]
    cell = tmp_path / "errors.json"
    cell.write_text(json.dumps({"scorer": "bert-s", "tasks": {"word_swap": cuts, "line_swap": cuts}, "overall": cuts}))
    bpomp_report.errors_figure([str(cell)], str(tmp_path / "errors.png"))
    assert len(captured) == 3
    for fig in captured:
        assert render.legend_overlaps(fig) == [], fig.get_suptitle()
    # in the BPoMP figure a task's "(all)" and "(errors)" entries differ in line style and marker
    handles = {t.get_text(): h for h, t in zip(captured[2].axes[0].get_legend().legend_handles,
                                               captured[2].axes[0].get_legend().get_texts())}
    solid, dashed = handles["word_swap (all)"], handles["word_swap (errors)"]
    assert (solid.get_linestyle(), solid.get_marker()) != (dashed.get_linestyle(), dashed.get_marker())
    assert dashed.get_markerfacecolor() == "none"


# --- axes and panels that say what the data are ------------------------------------------------------------

def _semantic_cell(tmp_path, system, decoding, within, across, lang="en"):
    path = tmp_path / f"sem-{lang}-{system}-{decoding}.json"
    path.write_text(json.dumps({"cell": {"lang": lang, "system": system, "decoding": decoding}, "n_poems": len(across),
                                "semantic": {"per_poem": {"within": within, "across": across}}}))
    return str(path)


def test_the_similarity_figures_fit_their_x_axis_to_the_data(tmp_path, captured):
    # the main job's similarities lie in 0.2-0.7; the bins run from -0.2 to 1.0
    paths = [_semantic_cell(tmp_path, "HUMAN", "human0", [0.31, 0.52], [0.44, 0.68]),
             _semantic_cell(tmp_path, "a", "vanilla", [0.23, 0.41], [0.37, 0.61])]
    figures.make("figure4", paths, str(tmp_path / "f4.png"))
    assert [ax.get_xlim() for ax in captured[0].axes] == [(0.2, 0.7)] * 2     # one range for within and across
    figures.make("figure10", paths, str(tmp_path / "f10.png"), selection=figures.Selection("a", "en"))
    assert captured[1].axes[0].get_xlim() == (0.35, 0.7)
    assert figures.sim_limits([np.array([0.5])]) == (0.45, 0.55)               # one value: a step either side
    assert figures.sim_limits([np.array([-0.9, 1.0])]) == (-0.2, 1.0)          # never beyond the bins


def test_the_best_worst_figure_marks_a_ranking_of_models_of_different_n(tmp_path, captured):
    human = _rhyme_cell(tmp_path, "HUMAN", "human0", n=1000)
    # the main job: smollm2's 50 quatrains against gpt2-s's 1000
    unequal = [human, _rhyme_cell(tmp_path, "smollm2", ce=2.0, n=50), _rhyme_cell(tmp_path, "gpt2-s", ce=1.0, n=1000)]
    figures.make("figure3", unequal, str(tmp_path / "f3.png"))
    title = "English: rhyme schemes of HUMAN and of the best, worst and average model by cross-entropy"
    assert captured[0].get_suptitle() == (f"{title}\n(ranked at unequal n, 50-1000, without intervals: the "
                                          "cross-entropy grows as n falls; table6_common_n ranks at one n)")
    equal = [human, _rhyme_cell(tmp_path, "a", ce=2.0, n=50), _rhyme_cell(tmp_path, "b", ce=1.0, n=50)]
    figures.make("figure3", equal, str(tmp_path / "f3.png"))
    assert captured[1].get_suptitle() == title


def test_a_single_system_figure_that_repeats_an_earlier_one_names_it_instead(root, tmp_path, captured):
    from poeval import config, params

    main_job = params.resolve(config.read(root / "params.yaml"))
    # two systems, one decoding config: 12 and 14 show gpt2-s under vanilla, 13 and 15 smollm2
    assert {n: figures.repeats(main_job, n) for n in ("figure11", "figure12", "figure13", "figure14", "figure15")} \
        == {"figure11": None, "figure12": None, "figure13": None, "figure14": "figure12", "figure15": "figure13"}
    grid = params.resolve(config.read(root / "params.yaml", (root / "config" / "systems" / "grid.yaml",)))
    assert [n for n in figures.FIGURES if figures.repeats(grid, n)] == []
    out = tmp_path / "f14.png"
    assert main(["figure", "figure14", "--system", "gpt2-s", "--lang", "en", "--decodings", "vanilla",
                 "--same-as", "figure12", "--out", str(out)]) == 0
    assert len(captured[0].axes) == 1 and not captured[0].axes[0].containers       # no bars: no second copy
    assert _texts(captured[0]) == ("The same as Figure 12 in this run:\nparams figures.figure14 and figures.figure12\n"
                                   "both show gpt2-s (English)\nunder the same decoding configs")
    assert "figure12" in Path(f"{out}.stamp.json").read_text()                    # the stamp records it


def test_the_readme_says_which_figures_the_main_job_makes(root):
    from poeval import config, params

    main_job = params.resolve(config.read(root / "params.yaml"))
    rows = re.findall(r"^\| ([\d, ]+) \| (made|not made|a note)", (root / "README.md").read_text(), re.M)
    said = {f"figure{n.strip()}": what for numbers, what in rows for n in numbers.split(",")}
    assert sorted(said, key=lambda n: int(n[6:])) == [f"figure{i}" for i in range(1, 16)]
    assert {n for n, what in said.items() if what != "not made"} == \
        {n for n in figures.FIGURES if n.removeprefix("figure").isdigit() and figures.has_panels(main_job, n)}
    assert {n for n, what in said.items() if what == "a note"} == \
        {n for n in figures.FIGURES if figures.has_panels(main_job, n) and figures.repeats(main_job, n)}
