"""`poeval static-report`: a Snakemake report's results as one page without scripts, in number order."""

import base64
import json
import re

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


# the tags the page writes itself
PAGE_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p", "ul", "li", "a", "section",
             "table", "thead", "tbody", "tr", "th", "td", "img"}


def test_text_from_the_report_is_escaped_and_only_the_pages_own_markup_remains(tmp_path):
    """A caption or description comes out as its text (tags, and what script holds, dropped; the rest escaped);
    labels and category names escaped; the figure is the page's own data URI of the decoded bytes, whatever the
    report's URI said besides."""
    png = _uri("image/png", b"\x89PNG")
    results = {"t/table1.tsv": _table("table1.tsv", "Table 01", "a\n1\n")
               | {"caption": '<p>see <img src=x onerror=alert(2)> &amp; <b>this</b></p><script>alert(3)</script>'},
               "f/figure1.png": {"name": "figure1.png", "labels": {"figure": "<b>Figure 01</b>"}, "caption": None,
                                 "mime_type": "image/png", "data_uri": png.replace(";charset", '";onerror=x;charset')}}
    path = _report(tmp_path, results, {"1 · <i>Tables</i>": {"All": ["t/table1.tsv", "f/figure1.png"]}})
    path.write_text(path.read_text().replace(json.dumps("<p>about</p>"), json.dumps("<script>alert(1)</script>"
                                                                                    "<p>about <a href=x>it</a></p>")))
    out = tmp_path / "static.html"
    assert main(["static-report", str(path), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    tags = {t.lstrip("/") for t in re.findall(r"<(/?[a-z0-9]+)", page)}
    assert tags <= PAGE_TAGS and "script" not in tags and "b" not in tags and "i" not in tags
    assert all(re.fullmatch(r'<a href="#r[0-9-]+">', a) for a in re.findall(r"<a [^>]*>", page))
    assert "onerror" not in page and "alert" not in page
    assert "<p>about it</p>" in page and "<p>see &amp; this</p>" in page
    assert "<h4>&lt;b&gt;Figure 01&lt;/b&gt;</h4>" in page and "<h2>1 · &lt;i&gt;Tables&lt;/i&gt;</h2>" in page
    assert '<img src="data:image/png;base64,' + base64.b64encode(b"\x89PNG").decode() + '"' in page


GOOD = {"t/t.tsv": _table("t.tsv", "Table 01", "a\tb\n1\t2\n")}
CATS = {"1 · Tables": {"All": ["t/t.tsv"]}}


def _with(**fields):
    return {"t/t.tsv": GOOD["t/t.tsv"] | fields}


@pytest.mark.parametrize("results, categories, desc, message", [
    pytest.param([GOOD], CATS, "", "`results` is [{", id="results not an object"),
    pytest.param(GOOD, ["t/t.tsv"], "", "`categories` is ['t/t.tsv']", id="categories not an object"),
    pytest.param(GOOD, {"1": ["t/t.tsv"]}, "", "'1' is ['t/t.tsv'], not an object", id="subcategories a list"),
    pytest.param(GOOD, {"1": {"All": [["t/t.tsv"]]}}, "", "not a list of result paths", id="nested list of paths"),
    pytest.param({"t/t.tsv": "t.tsv"}, CATS, "", "result 't/t.tsv' is 't.tsv'", id="result not an object"),
    pytest.param(_with(caption=["<p>x</p>"]), CATS, "", "`caption` is ['<p>x</p>'], not a string", id="caption a list"),
    pytest.param(_with(mime_type=["text/plain"]), CATS, "", "`mime_type` is ['text/plain']", id="mime type a list"),
    pytest.param(_with(labels=None, name=5), CATS, "", "`name` is 5", id="name a number, no labels"),
    pytest.param(_with(data_uri="data:text/plain;base64,@@"), CATS, "", "not valid base64", id="data not base64"),
    pytest.param(_with(data_uri="data:text/plain,a%09b"), CATS, "", "not base64-encoded", id="data not marked base64"),
    pytest.param(_with(data_uri=_uri("text/plain", b"\xff")), CATS, "", "the table is not UTF-8", id="table not UTF-8"),
    pytest.param(_with(data_uri=_uri("text/plain", b"a" * 200_000)), CATS, "", "cannot be read as TSV",
                 id="a table cell over csv's limit"),
    pytest.param(GOOD, CATS, ["<p>x</p>"], "`workflow_desc` is ['<p>x</p>']", id="description a list"),
])
def test_a_malformed_report_is_one_line_naming_what_is_wrong_and_nothing_is_written(tmp_path, capsys, results,
                                                                                    categories, desc, message):
    path = _report(tmp_path, results, categories)
    path.write_text(path.read_text().replace(json.dumps("<p>about</p>"), json.dumps(desc)))
    assert main(["static-report", str(path), "--out", str(tmp_path / "out.html")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(path) in err and message in err, err
    assert "snakemake --report" in err and not (tmp_path / "out.html").exists()


@pytest.mark.parametrize("data", ["[" * 100_000, "1" * 5000], ids=["nested too deeply", "an integer of 5000 digits"])
def test_results_json_python_cannot_hold_is_one_line(tmp_path, capsys, data):
    path = _report(tmp_path, {}, CATS)
    path.write_text(path.read_text().replace("var results = {}", f"var results = {data}").replace(
        "     var results = {};", f"     var results = {data};"))
    assert main(["static-report", str(path), "--out", str(tmp_path / "out.html")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "the report's `results`" in err, err[-500:]


def test_fields_the_page_does_not_show_and_odd_labels_are_no_error(tmp_path):
    """Snakemake's size, filename and job properties are not read, so their type does not matter; labels that
    are no literal (a Python repr of an unhashable key) are shown as written."""
    results = _with(size={"kB": [1]}, filename=7, job_properties=None, labels="{[1]: 2}")
    out = tmp_path / "static.html"
    assert main(["static-report", str(_report(tmp_path, results, CATS)), "--out", str(out)]) == 0
    assert "<h4>{[1]: 2}</h4>" in out.read_text(encoding="utf-8")
