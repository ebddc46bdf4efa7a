import json

import pytest

from poeval.errors import PoevalError
from poeval.report import tables


def _cell(path, lang, system, decoding, n, mean, std=1.0):
    body = {"cell": {"lang": lang, "system": system, "decoding": decoding}, "n_poems": n,
            "length": {"n": n, "mean": mean, "median": mean, "std": std, "min": 1, "max": 9,
                       "hist_intersection": 0.5, "wasserstein": 0.25}}
    path.write_text(json.dumps(body))
    return str(path)


def test_table5_averages_human_cells_and_keeps_model_rows(tmp_path):
    cells = [_cell(tmp_path / "h0.json", "en", "HUMAN", "human0", 10, 20.0),
             _cell(tmp_path / "h1.json", "en", "HUMAN", "human1", 10, 22.0),
             _cell(tmp_path / "m.json", "en", "gpt2-s", "vanilla", 7, 18.5)]
    out = tmp_path / "t5.tsv"
    tables.family_table(cells, "length", str(out))
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[0][:5] == ["lang", "system", "decoding", "n", "mean"]
    assert rows[1][:5] == ["en", "HUMAN (mean of 2)", "-", "10", "21.00"]
    assert rows[2][:5] == ["en", "gpt2-s", "vanilla", "7", "18.50"]
    again = tmp_path / "t5b.tsv"
    tables.family_table(cells, "length", str(again))
    assert again.read_bytes() == out.read_bytes()


def test_n_shows_a_sample_short_of_its_size_even_in_a_mean_row(tmp_path):
    # nine HUMAN samples of 1000 and one of 999 (a dropped quatrain): a rounded mean would print 1000
    cells = [_cell(tmp_path / f"h{i}.json", "en", "HUMAN", f"human{i}", 1000 - (i == 3), 20.0) for i in range(10)]
    cells.append(_cell(tmp_path / "m.json", "en", "gpt2-s", "vanilla", 999, 18.5))
    out = tmp_path / "t5.tsv"
    tables.family_table(cells, "length", str(out))
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert [r[3] for r in rows[1:]] == ["999-1000", "999"]


def test_zero_valid_samples_show_na_not_nan(tmp_path):
    path = tmp_path / "z.json"
    path.write_text(json.dumps({"cell": {"lang": "en", "system": "m", "decoding": "v"}, "n_poems": 0,
                                "length": {"n": 0, "mean": None, "median": None, "std": None, "min": None,
                                           "max": None, "hist_intersection": None, "wasserstein": None}}))
    out = tmp_path / "t.tsv"
    tables.family_table([str(path)], "length", str(out))
    row = out.read_text().splitlines()[1].split("\t")
    assert row[3] == "0" and row[4:] == ["NA"] * 7


def test_table1_counts_and_total_rows(tmp_path):
    def write(name, *poems):
        (tmp_path / name).write_text("".join(json.dumps({"id": str(i), "lines": p}) + "\n" for i, p in enumerate(poems)))
        return str(tmp_path / name)

    train = write("train.jsonl", ["A b", "c, d", "e", "f"], ["a", "b", "c", "d e"])
    dev = write("dev.jsonl", ["g", "a", "a", "h"])
    human = [write(f"h{i}.jsonl", ["a", "b", "c", "d"]) for i in range(2)]
    sonnet = write("s.jsonl", ["x"] * 14)
    dev_sonnet = write("ds.jsonl", ["y z"] * 14)
    out = tmp_path / "t1.tsv"
    tables.table1({"en": {"train": [train], "dev": [dev], "human": human, "sonnets-train": [sonnet],
                          "sonnets-dev": [dev_sonnet]}}, str(out))
    rows = [line.split("\t") for line in out.read_text().splitlines()[1:]]
    assert rows == [["en", "train", "2", "8", "11", "6"], ["en", "dev", "1", "4", "4", "3"],
                    ["en", "total", "3", "12", "15", "8"],   # types: a-f from train, g and h new in dev
                    ["en", "human (2 x 1)", "2", "8", "8", "4"],
                    ["en", "sonnets-train", "1", "14", "14", "1"], ["en", "sonnets-dev", "1", "14", "28", "2"],
                    ["en", "sonnets-total", "2", "28", "42", "3"]]


def test_table1_from_its_rules_job_is_the_hand_runs_and_its_stamp_records_the_rows(tmp_path, root):
    """Rule table1 passes the rows' labels as its job (built from the params) and the files in row order: the
    same bytes as the LANG:SPLIT:PATH items by hand, and the stamp records the rows, which `poeval stale`
    rebuilds; a job whose rows do not match the files is refused."""
    from poeval import config, params
    from poeval.cli import main
    from poeval.report.steps import by_rule
    from poeval.report.table_jobs import SizesTableJob, SplitRow

    files = {}
    for name, n in (("train", 3), ("dev", 1), ("h0", 1)):
        files[name] = tmp_path / f"{name}.jsonl"
        files[name].write_text("".join(json.dumps({"id": str(i), "lines": ["a b", "c", "d", "e"]}) + "\n"
                                       for i in range(n)))
    items = [("train", "train"), ("dev", "dev"), ("human", "h0")]
    hand, job_out = tmp_path / "hand.tsv", tmp_path / "job.tsv"
    assert main(["table", "table1", *(f"en:{s}:{files[f]}" for s, f in items), "--out", str(hand)]) == 0
    job = SizesTableJob([SplitRow("en", s) for s, _ in items])
    assert main(["table", "table1", *(str(files[f]) for _, f in items), "--job", job.to_json(),
                 "--out", str(job_out)]) == 0
    assert job_out.read_bytes() == hand.read_bytes()
    stamp = json.loads((tmp_path / "job.tsv.stamp.json").read_text())
    assert stamp["provenance"]["params"] == {"rows": [{"lang": "en", "split": s} for s, _ in items]} == job.recorded()
    assert main(["table", "table1", str(files["train"]), "--job", job.to_json(), "--out", str(job_out)]) == 2
    resolved = params.resolve(config.read(root / "params.yaml"))
    rows = by_rule()["table1"].build(resolved).rows
    assert [r.split for r in rows] == ["train", "dev", *["human"] * resolved["human"]["n_samples"],
                                       "sonnets-train", "sonnets-dev"]


def _per_poem_cell(path, family, system, decoding, per_poem):
    path.write_text(json.dumps({"cell": {"lang": "en", "system": system, "decoding": decoding}, "n_poems": 3,
                                family: {"per_poem": per_poem}}))
    return str(path)


def test_figures_are_pngs_sized_by_panels_and_byte_identical(tmp_path):
    from matplotlib.image import imread

    from poeval.report import figures

    length = [_per_poem_cell(tmp_path / "h.json", "length", "HUMAN", "human0", [20, 22, 25]),
              _per_poem_cell(tmp_path / "a.json", "length", "a", "v", [10, 12, 12]),
              _per_poem_cell(tmp_path / "b.json", "length", "b", "v", [30, 31, 40])]
    one, two, again = tmp_path / "one.png", tmp_path / "two.png", tmp_path / "again.png"
    figures.figure1(length[:2], str(one))
    figures.figure1(length, str(two))
    figures.figure1(length, str(again))
    assert two.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and two.read_bytes() == again.read_bytes()
    assert imread(str(two)).shape[1] > 1.8 * imread(str(one)).shape[1]   # one panel per model, side by side
    sims = {"within": [0.5, 0.6, 0.9], "across": [0.7, 0.8, 0.8]}
    sem = [_per_poem_cell(tmp_path / "hs.json", "semantic", "HUMAN", "human0", sims),
           _per_poem_cell(tmp_path / "ms.json", "semantic", "a", "v", {"within": None, "across": [0.2, 0.3, 0.4]})]
    figures.figure4(sem, str(tmp_path / "f4.png"))
    assert imread(str(tmp_path / "f4.png")).shape[2] in (3, 4)
    with pytest.raises(PoevalError, match="per-poem"):
        figures.figure4(length, str(tmp_path / "bad.png"))
    with pytest.raises(PoevalError, match="model cell"):
        figures.figure1(length[:1], str(tmp_path / "bad.png"))
    assert not (tmp_path / "bad.png").exists()


def test_table4_reads_training_logs(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "training_log.json").write_text(json.dumps({
        "model_cfg": {"arch": "bygpt5", "size": "S", "init": "scratch", "conditioned": True},
        "summary": {"n_params": 123456, "vocab_size": 259, "steps": 800, "best_dev_loss": 1.23456,
                    "tokens_per_s": 15000.4}}))
    tuned = tmp_path / "t"
    tuned.mkdir()
    weights = "SmolLM2-135M-Instruct: dequantised 4-bit weights of the instruction-tuned release"
    (tuned / "training_log.json").write_text(json.dumps({
        "model_cfg": {"arch": "llama", "size": "S", "init": "pretrained", "name_or_path": "smollm2-135m",
                      "conditioned": False, "lora": {"r": 16}},
        "summary": {"n_params": 134515008, "vocab_size": 49152, "steps": 150, "best_dev_loss": 4.2,
                    "base": {"name_or_path": "smollm2-135m", "path": "models/pretrained/smollm2-135m",
                             "weights": weights}}}))
    out = tmp_path / "t4.tsv"
    tables.table4([("en", "bygpt5-s-cond", str(model)), ("en", "smollm2", str(tuned))], str(out))
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[0][-1] == "base"
    assert rows[1] == ["en", "bygpt5-s-cond", "bygpt5", "S", "scratch", "yes", "123456", "259", "800", "1.235", "-"]
    assert rows[2] == ["en", "smollm2", "llama", "S", "pretrained", "no", "134515008", "49152", "150", "4.200",
                       f"smollm2-135m + LoRA: {weights}"]
    with pytest.raises(PoevalError, match="training log"):
        tables.table4([("en", "x", str(tmp_path / "missing"))], str(tmp_path / "t4b.tsv"))


def test_sampling_table_shows_validity_distinct_share_and_reasons(tmp_path):
    """Stats as the shared sampling loop writes them (samples written by lm.sample and the ports)."""
    def stats(name, **kw):
        path = tmp_path / f"{name}.stats.json"
        path.write_text(json.dumps({"requested": 8, "reasons": {}, **kw}))
        return str(path)

    samples = [
        ("en", "gpt2-s", "vanilla", stats("v", attempts=10, valid=8, validity_rate=0.8, distinct_share=1.0,
                                         reasons={"wrong_line_count:5": 1, "truncated": 1})),
        # 8 valid quatrains, 3 of them distinct: 37.5 %
        ("en", "gpt2-s", "contrastive-k6-a0.7", stats("c", attempts=8, valid=8, validity_rate=1.0,
                                                     distinct_share=3 / 8)),
        ("en", "sa-s", "vanilla", stats("z", attempts=4, valid=0, validity_rate=0.0, distinct_share=None,
                                        reasons={"truncated": 4})),
        ("en", "old", "vanilla", stats("o", attempts=0, valid=0, validity_rate=0.0)),   # no distinct_share yet
        # the paper's procedure: nothing requested, 12 chunks kept of 10 generations
        ("en", "gpt2-l", "vanilla", stats("p", requested=None, attempts=10, valid=12, validity_rate=1.2,
                                          distinct_share=1.0, reasons={"chunk_lines:3": 2})),
    ]
    out = tmp_path / "sampling.tsv"
    tables.sampling_table(samples, str(out))
    assert [line.split("\t") for line in out.read_text().splitlines()] == [
        ["lang", "system", "decoding", "requested", "attempts", "valid", "validity_pct", "distinct_pct", "reasons"],
        ["en", "gpt2-s", "vanilla", "8", "10", "8", "80.00", "100.00", "truncated=1 wrong_line_count:5=1"],
        ["en", "gpt2-s", "contrastive-k6-a0.7", "8", "8", "8", "100.00", "37.50", "-"],
        ["en", "sa-s", "vanilla", "8", "4", "0", "0.00", "NA", "truncated=4"],
        ["en", "old", "vanilla", "8", "0", "0", "NA", "NA", "-"],
        ["en", "gpt2-l", "vanilla", "NA", "10", "12", "120.00", "100.00", "chunk_lines:3=2"],
    ]
    first = out.read_bytes()
    tables.sampling_table(samples, str(out))
    assert out.read_bytes() == first


def _write(path, system, decoding, n, family, body):
    path.write_text(json.dumps({"cell": {"lang": "en", "system": system, "decoding": decoding}, "n_poems": n,
                                family: body}))
    return str(path)


def test_table8_joins_memorization_and_across_similarity_per_decoding(tmp_path):
    """The paper's Table 8: m0.7 from the memorization cell, mean/std/min/max of the across-sample max
    similarity from the semantic cell of the same sample."""
    def semantic(mean, std, low, high, ci=None):
        return {"within": 0.5, "across": mean, "across_std": std, "across_min": low, "across_max": high,
                **({"ci": ci} if ci else {})}

    paths = [_write(tmp_path / "hs0.json", "HUMAN", "human0", 10, "semantic", semantic(0.50, 0.05, 0.3, 0.7)),
             _write(tmp_path / "hs1.json", "HUMAN", "human1", 10, "semantic", semantic(0.60, 0.07, 0.4, 0.9)),
             _write(tmp_path / "v.json", "m", "vanilla", 8, "semantic",
                    semantic(0.55, 0.06, 0.33, 0.77, ci={"across": [0.5, 0.6]})),
             _write(tmp_path / "t.json", "m", "topk", 8, "semantic", semantic(0.57, 0.07, 0.42, 0.95)),
             _write(tmp_path / "hm0.json", "HUMAN", "human0", 10, "memorization", {"quatrain": 0.0}),
             _write(tmp_path / "hm1.json", "HUMAN", "human1", 10, "memorization", {"quatrain": 0.1}),
             _write(tmp_path / "tm.json", "m", "topk", 8, "memorization", {"quatrain": 0.125}),
             _write(tmp_path / "vm.json", "m", "vanilla", 8, "memorization",
                    {"quatrain": 0.002, "ci": {"quatrain": [0.0, 0.01]}})]
    out, ci = tmp_path / "t8.tsv", tmp_path / "t8.ci.tsv"
    assert tables.table_families("table8") == ["semantic", "memorization"]
    tables.family_table(paths, "semantic", str(out), str(ci), tables.table_columns("table8"))
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[0] == ["lang", "system", "decoding", "n", "m_quatrain", "across_mean", "across_std", "across_min",
                       "across_max"]
    assert rows[1] == ["en", "HUMAN (mean of 2)", "-", "10", "0.050", "0.550", "0.060", "0.350", "0.800"]
    assert rows[2] == ["en", "m", "vanilla", "8", "0.002", "0.550", "0.060", "0.330", "0.770"]
    assert rows[3] == ["en", "m", "topk", "8", "0.125", "0.570", "0.070", "0.420", "0.950"]
    long = {(r[1], r[2], r[3]): r[5:7] for r in (line.split("\t") for line in ci.read_text().splitlines()[1:])}
    assert long[("m", "vanilla", "m_quatrain")] == ["0.000", "0.010"]
    assert long[("m", "vanilla", "across_mean")] == ["0.500", "0.600"]
    with pytest.raises(PoevalError, match="no 'memorization' cell for en/HUMAN/human0"):
        tables.family_table(paths[:4], "semantic", str(out), columns=tables.table_columns("table8"))
    with pytest.raises(PoevalError, match="'semantic' or 'memorization'"):
        tables.family_table([_cell(tmp_path / "len.json", "en", "m", "v", 3, 1.0)], "semantic", str(out),
                            columns=tables.table_columns("table8"))


def test_table5_has_the_papers_human_row_next_to_the_samples(tmp_path):
    cells = [_cell(tmp_path / "h0.json", "en", "HUMAN", "human0", 10, 20.0),
             _cell(tmp_path / "h1.json", "en", "HUMAN", "human1", 10, 22.0),
             _cell(tmp_path / "ht.json", "en", "HUMAN", "train", 900, 21.5),
             _cell(tmp_path / "m.json", "en", "gpt2-s", "vanilla", 7, 18.5)]
    out = tmp_path / "t5.tsv"
    tables.family_table(cells, "length", str(out))
    rows = [line.split("\t")[:5] for line in out.read_text().splitlines()[1:]]
    assert rows == [["en", "HUMAN (mean of 2)", "-", "10", "21.00"], ["en", "HUMAN (train)", "-", "900", "21.50"],
                    ["en", "gpt2-s", "vanilla", "7", "18.50"]]
    assert tables.HUMAN_TRAIN_TABLES == {"table5", "table6"}


def test_a_tables_rule_params_hold_its_own_families_only(root):
    """A family table's rule passes the captions only the metrics sections of the families it reads (and
    of its tests), so that a param of another family does not rerun it (Snakemake's params trigger), and
    every section a caption names is among them."""
    import copy
    import re

    from poeval import config, params
    from poeval.report.table_jobs import caption_metrics
    from poeval.report.tables import FAMILY_OF_TABLE, caption_params, table_families

    resolved = params.resolve(config.read(root / "params.yaml"))
    changed = copy.deepcopy(resolved)
    changed["metrics"]["lexical"]["mattr_window"] += 1
    moved = [t for t in FAMILY_OF_TABLE
             if caption_metrics(resolved, t) != caption_metrics(changed, t)]
    assert moved == ["table2", "table12"]
    for table in FAMILY_OF_TABLE:
        given = caption_metrics(resolved, table)
        assert set(given) == {*table_families(table), "tests"}
        own = "family.rst" if caption_params(table) else f"{table}.rst"   # as rule <table> picks its caption
        for caption in (own, "tests.rst"):
            text = (root / "workflow" / "report" / caption).read_text()
            assert set(re.findall(r'snakemake\.params\.metrics\["(\w+)"\]', text)) <= set(given), (table, caption)


def test_the_report_puts_the_papers_tables_first_by_family_in_number_order():
    from poeval.report.figures import FIGURES, figure_place
    from poeval.report.tables import FAMILY_OF_TABLE, PAPER_TABLES, REPORT_CATEGORIES, report_place

    assert sorted(REPORT_CATEGORIES) == list(REPORT_CATEGORIES)   # Snakemake sorts categories by name
    tables = ["table1", "table4", "sampling", "style_adherence", *FAMILY_OF_TABLE]
    places = {t: report_place(t) for t in tables}
    paper = [t for t in tables if places[t]["category"] == REPORT_CATEGORIES[0]]
    assert sorted(paper) == sorted(PAPER_TABLES)
    assert sorted(places[t]["labels"]["table"] for t in paper if t != "memorization") == [
        f"Table {i:02d}" for i in range(1, 13)]   # text order is number order
    assert places["table2"]["subcategory"] == places["table12"]["subcategory"] == "Lexical diversity"
    assert places["table8"]["subcategory"] == "Semantic similarity" and places["table6"]["subcategory"] == "Rhyme"
    assert {places[t]["category"] for t in ("metre", "topics", "diversity", "sampling")} == {REPORT_CATEGORIES[2]}
    assert report_place("table2", "tests")["category"] == REPORT_CATEGORIES[3]
    figs = {f: figure_place(f) for f in FIGURES}
    assert [figs[f]["labels"]["figure"] for f in sorted(FIGURES, key=lambda f: figs[f]["labels"]["figure"])
            if figs[f]["category"] == REPORT_CATEGORIES[1]] == [f"Figure {i:02d}" for i in range(1, 16)]
    assert figs["metre_figure"]["category"] == REPORT_CATEGORIES[2]


def test_no_report_output_falls_into_other(root):
    """Every report() of the rules names its category (Snakemake files the others under "Other"), and the
    training curves are in the report."""
    import re

    rules = {p.name: p.read_text() for p in (root / "workflow" / "rules").glob("*.smk")}
    calls = [m.group(0) for text in rules.values()
             for m in re.finditer(r"(?<![\w.])report\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)", text)]
    assert calls and all("category=" in c or "_place(" in c for c in calls), calls
    assert "paths.curve" in "".join(calls)


def test_a_caption_says_when_a_table_holds_less_than_its_title(root):
    from poeval import config, params
    from poeval.generators import registry
    from poeval.report import tables

    main_job = params.resolve(config.read(root / "params.yaml"))
    decodings, systems = main_job["decodings"], main_job["systems"]
    poetic = [s for s in systems if registry.is_poetic(main_job["models"][s])]
    assert (decodings, poetic) == (["vanilla"], [])          # the main job: one decoding config, no poetic system
    assert tables.scope_note("table10", decodings, poetic).endswith("the table holds only the HUMAN rows.")
    assert tables.scope_note("table9", decodings, systems) == (
        "This run has one decoding config (vanilla): the rows are Table 5's (``table5.tsv``, less its HUMAN (train) "
        "row); a row per decoding config needs more in ``decodings`` (config/systems/grid.yaml runs all twelve).")
    assert "the rows are Table 2's (``table2.tsv``);" in tables.scope_note("table12", decodings, systems)
    assert tables.scope_note("table10", decodings, ["deepspeare-s"]) == ""
    assert tables.scope_note("table9", ["vanilla", "temperature-0.7"], systems) == ""
    assert tables.scope_note("table5", decodings, systems) == tables.scope_note("table11", decodings, systems) == ""
    for table in ("table7", "table9", "table10", "table12", "diversity_decodings"):   # the captions print it
        assert "{{ snakemake.params.scope }}" in (root / "workflow" / "report" / f"{table}.rst").read_text()


def test_every_family_table_has_a_caption(root):
    """A family table's rule names a caption file that exists: its own, or the generic one with its record's
    text (a family that brings neither would break the Snakemake report)."""
    from poeval.report.tables import FAMILY_OF_TABLE, caption_params

    missing = [t for t in FAMILY_OF_TABLE
               if not caption_params(t) and not (root / "workflow" / "report" / f"{t}.rst").is_file()]
    assert missing == []
