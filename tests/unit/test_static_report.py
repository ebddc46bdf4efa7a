"""`poeval static-report`: a Snakemake report's results as one page without scripts, in number order."""

import base64
import json

import pytest

from poeval.cli import main
from poeval.errors import PoevalError
from poeval.report import static_report


def _uri(mime: str, data: bytes) -> str:
    return f"data:{mime};charset=utf8;filename=x;base64,{base64.b64encode(data).decode()}"


def _report(tmp_path, results: dict, categories: dict):
    """A file laid out as Snakemake's template writes one: scripts, then one data variable per line."""
    text = ("<html><script>var results = {}; function f() {}</script><script>\n"
            f"     var workflow_desc = {json.dumps('<p>about</p>')};\n"
            f"     var results = {json.dumps(results)};\n     var categories = {json.dumps(categories)};\n"
            "</script></html>")
    path = tmp_path / "report.html"
    path.write_text(text, encoding="utf-8")
    return path


def _table(name, label, tsv):
    return {"name": name, "labels": repr({"table": label}), "caption": f"<p>{label} caption</p>",
            "mime_type": "text/tab-separated-values", "data_uri": _uri("text/tab-separated-values", tsv.encode())}


def test_entries_in_number_order_tables_escaped_and_no_script(tmp_path):
    results = {"t/table10.tsv": _table("table10.tsv", "Table 10", "a\tb\n1\t<2>\n"),
               "t/table2.tsv": _table("table2.tsv", "Table 02", "x\ty\nq & r\t3\n"),
               "f/figure1.png": {"name": "figure1.png", "labels": repr({"figure": "Figure 01"}), "caption": "",
                                 "mime_type": "image/png", "data_uri": _uri("image/png", b"\x89PNG")}}
    # as Snakemake lists them: by file name, categories in the order first seen
    categories = {"2 · Figures": {"Other": ["f/figure1.png"]},
                  "1 · Tables": {"Rhyme": ["t/table10.tsv", "t/table2.tsv"]}}
    out = tmp_path / "static.html"
    assert main(["static-report", str(_report(tmp_path, results, categories)), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "<script" not in page and "<p>about</p>" in page and "<title>poeval report</title>" in page
    assert page.index("<h2>1 · Tables</h2>") < page.index("<h4>Table 02</h4>") < page.index("<h4>Table 10</h4>") \
        < page.index("<h2>2 · Figures</h2>") < page.index("<h4>Figure 01</h4>")
    assert "<td>q &amp; r</td>" in page and "<td>&lt;2&gt;</td>" in page and "<th>a</th><th>b</th>" in page
    assert "<p>Table 10 caption</p>" in page and 'img src="data:image/png' in page


def test_a_file_that_is_not_a_report_is_refused_and_nothing_is_written(tmp_path):
    page = tmp_path / "page.html"
    page.write_text("<html><body>hello</body></html>")
    with pytest.raises(PoevalError, match="not a Snakemake report"):
        static_report.write(page, tmp_path / "out.html")
    assert main(["static-report", str(page), "--out", str(tmp_path / "out.html")]) == 2
    assert not (tmp_path / "out.html").exists()
