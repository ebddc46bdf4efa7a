import json

from poeval import tables


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


def test_zero_valid_samples_show_na_not_nan(tmp_path):
    path = tmp_path / "z.json"
    path.write_text(json.dumps({"cell": {"lang": "en", "system": "m", "decoding": "v"}, "n_poems": 0,
                                "length": {"n": 0, "mean": None, "median": None, "std": None, "min": None,
                                           "max": None, "hist_intersection": None, "wasserstein": None}}))
    out = tmp_path / "t.tsv"
    tables.family_table([str(path)], "length", str(out))
    row = out.read_text().splitlines()[1].split("\t")
    assert row[3] == "0" and row[4:] == ["NA"] * 7


def test_table1_counts(tmp_path):
    train = tmp_path / "train.jsonl"
    train.write_text(json.dumps({"id": "a", "lines": ["A b", "c, d", "e", "f"]}) + "\n"
                     + json.dumps({"id": "b", "lines": ["a", "b", "c", "d e"]}) + "\n")
    out = tmp_path / "t1.tsv"
    tables.table1({"en": {"train": [str(train)]}}, str(out))
    assert out.read_text().splitlines()[1].split("\t") == ["en", "train", "2", "8", "11", "6"]
