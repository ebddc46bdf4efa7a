"""The docs site (mkdocs.yml, docs/): it builds in strict mode, its generated pages hold every params key and
every subcommand, and every code comment that points into it (docs/<page>.md "Heading") finds its heading."""

import copy
import re
import shutil
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from poeval import config, docs
from poeval.cli import build_parser

from helpers import _params_keys

ROOT = Path(__file__).resolve().parents[2]


# --- the built site, checked as a reader opens it: from disk, each page's HTML ------------------------------
# One build (about 12 s on a 2-core machine) serves every check, in one test: pytest-xdist would build once per
# worker for a module fixture. It stays in the unit tier, which runs in parallel, rather than the serial e2e one.

# Tags that markdown and the mkdocs theme write; any other tag is a placeholder (<unk>, <system>) that a page
# wrote outside a code span, which the browser reads as an unknown element and shows nothing of.
HTML_TAGS = {"html", "head", "body", "meta", "title", "link", "script", "style", "div", "span", "nav", "header",
             "footer", "main", "section", "form", "input", "button", "label", "i", "img", "a", "p", "br", "hr",
             "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "dl", "dt", "dd", "table", "thead", "tbody",
             "tr", "th", "td", "code", "pre", "kbd", "em", "strong", "b", "sup", "sub", "blockquote", "small"}
# A Sphinx role that reached a page as text (:mod:`x` renders as ":mod:<code>x</code>").
RAW_ROLE = re.compile(r"(?<![\w/]):(?:[a-z]+:)?[a-z]+:(?:<code>|`)")
# An entity left in a text node after the browser's one unescaping: markup escaped twice (&amp;lt;output&amp;gt;).
ENTITY = re.compile(r"&(?:[A-Za-z]+|#[0-9]+|#x[0-9A-Fa-f]+);")


class _Page(HTMLParser):
    """A built page's links, tags, text outside ``<pre>`` and text inside each ``<pre>``."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links, self.tags, self.text, self.pre, self._pre = [], set(), [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.links += [v for k, v in attrs if k in ("href", "src") and v]
        if tag == "pre":
            self._pre = []

    def handle_endtag(self, tag):
        if tag == "pre" and self._pre is not None:
            self.pre.append("".join(self._pre))
            self._pre = None

    def handle_data(self, data):
        (self._pre if self._pre is not None else self.text).append(data)


def _fenced_blocks(markdown: str) -> list[str]:
    """The text of each fenced code block of a markdown page, dedented and stripped (as a ``<pre>`` shows it)."""
    out, inside = [], None
    for line in markdown.splitlines():
        if re.match(r"\s*```", line):
            if inside is not None:
                out.append(textwrap.dedent("\n".join(inside)).strip())
            inside = [] if inside is None else None
        elif inside is not None:
            inside.append(line)
    return [x for x in out if x]


def site_problems(site: Path) -> list[str]:
    problems = []
    for path in sorted(site.rglob("*.html")):
        rel, raw = path.relative_to(site).as_posix(), path.read_text("utf-8")
        page = _Page()
        page.feed(raw)
        if rel != "404.html":   # a server's error page: mkdocs writes its links from the server root on purpose
            for link in page.links:
                url = urlsplit(link)
                if not (url.scheme or url.netloc) and url.path and not (path.parent / unquote(url.path)).is_file():
                    problems.append(f"{rel}: link {link} is not a file of the site")
        problems += [f"{rel}: <{tag}> is not HTML (a placeholder outside a code span?)"
                     for tag in sorted(page.tags - HTML_TAGS)]
        problems += [f"{rel}: raw role {m.group(0)!r}" for m in RAW_ROLE.finditer(re.sub(r"<pre>.*?</pre>", "", raw,
                                                                                            flags=re.S))]
        problems += [f"{rel}: markup escaped twice: {t.strip()[:80]!r}" for t in page.text if ENTITY.search(t)]
        source = ROOT / "docs" / Path(rel).with_suffix(".md")
        if source.is_file():
            problems += [f"{rel}: fenced block {block.splitlines()[0]!r} is not a code block"
                         for block in _fenced_blocks(source.read_text("utf-8"))
                         if not any(block in pre for pre in page.pre)]
    return problems


def test_the_site_builds_opens_from_disk_and_shows_what_the_pages_mean(tmp_path):
    pytest.importorskip("mkdocs")
    if shutil.which("dot") is None:
        pytest.skip("graphviz's dot is not installed (./run.sh setup installs it)")
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    for page in ("index.html", "reference/params.html", "reference/cli.html", "workflow.html",
                 "images/rulegraph.svg"):
        assert (site / page).is_file(), page
    assert "<svg" in (site / "images" / "rulegraph.svg").read_text()
    assert site_problems(site) == []
    # long code in a table cell may break, so the workflow page's artifact table fits the page
    assert 'href="css/poeval.css"' in (site / "workflow.html").read_text()
    assert re.search(r"td code\s*{[^}]*overflow-wrap:\s*anywhere", (site / "css" / "poeval.css").read_text())


def test_the_site_checks_find_a_folder_link_a_raw_role_a_placeholder_tag_escaped_markup_and_a_lost_fence(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "target.html").write_text("")
    (tmp_path / "sub" / "fine.html").write_text(
        '<p><a href="../target.html#x">ok</a> <a href="https://example.org/">web</a> <a href="#top">top</a> '
        "<code>&lt;output&gt;.json</code> &amp; a:b:<code>x</code> <pre><code>:mod:`kept`</code></pre></p>")
    (tmp_path / "sub" / "bad.html").write_text(
        '<p><a href="../sub/">folder</a> :func:<code>samples</code> end symbol and <unk>, '
        "<code>&amp;lt;output&amp;gt;.json</code></p>")
    assert site_problems(tmp_path) == [
        "sub/bad.html: link ../sub/ is not a file of the site",
        "sub/bad.html: <unk> is not HTML (a placeholder outside a code span?)",
        "sub/bad.html: raw role ':func:<code>'",
        "sub/bad.html: markup escaped twice: '&lt;output&gt;.json'",
    ]
    assert _fenced_blocks("a\n\n```yaml\n\nmodels: {}\n```\n  ```\n  x: 1\n    y: 2\n  ```\n") == \
        ["models: {}", "x: 1\n  y: 2"]


def test_a_docstring_cell_shows_roles_as_code_and_escapes_outside_code_only():
    assert docs._cell("the side file of :func:`samples` (:mod:`poeval.paths`, :py:meth:`~a.B.run`)") == \
        "the side file of `samples` (`poeval.paths`, `run`)"
    assert docs._cell("stamp ``<output>.stamp.json``; <unk> | a & b\nnext") == \
        "stamp ``<output>.stamp.json``; &lt;unk&gt; \\| a &amp; b next"


def test_the_params_page_holds_every_key_path_of_the_schema():
    page = docs.params_page()
    paths = docs.key_paths()
    assert {"corpus.en.format", "models.<system>.arch", "models.<system>.samples.<lang>.<decoding>",
            "models.<system>.rerank", "models.<system>.hidden", "models.<system>.lora.r",
            "decoding.<decoding>.penalty_alpha", "bpomp.scorers[].model"} <= set(paths)
    missing = [p for p in paths if f"`{p}`" not in page]
    assert missing == []
    # every property name of the schema, at any depth, is the last part of some key path
    assert _params_keys() - {p.rsplit(".", 1)[-1] for p in paths} == set()


def test_a_key_added_to_the_schema_appears_on_the_params_page():
    schema = copy.deepcopy(config.schema())
    schema["properties"]["metrics"]["properties"]["new_family_xyz"] = {"type": "integer", "default": 7,
                                                                      "description": "a new key"}
    schema["$defs"]["sa_model"]["properties"]["new_port_key_xyz"] = {"type": "boolean"}
    page = docs.params_page(schema)
    assert "`metrics.new_family_xyz`" in page and "a new key" in page and "`7`" in page
    assert "`models.<system>.new_port_key_xyz`" in page
    assert "`metrics.new_family_xyz`" not in docs.params_page()


def test_the_cli_page_lists_every_subcommand():
    page = docs.cli_page()
    commands = docs.commands(build_parser())
    assert {"evaluate", "provenance", "bpomp", "bpomp corpus", "bpomp export"} <= set(commands)
    for command in commands:
        assert f"## poeval {command}\n" in page, command
        assert f"usage: poeval {command}" in page, command


def test_workflow_page_markers_are_filled():
    text = docs.fill_markers((ROOT / "docs" / "workflow.md").read_text(), ROOT)
    assert "<!-- generated" not in text
    assert "`paths.cell`" in text and "`results/metrics/{lang}/{system}/{decoding}/{family}.json`" in text
    assert "`workflow/rules/data.smk`" in text and "`quatrains`" in text


def test_every_docs_reference_in_the_code_finds_its_heading():
    assert docs.reference_problems(ROOT) == []


def test_the_reference_check_reports_a_missing_heading_a_missing_page_and_a_readme_reference(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n## The `x` command\n\n```\n# Not a heading\n```\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text(
        '# see docs/page.md "The `x` command" and docs/page.md "Page"\n'   # fine
        '# docs/page.md "No such heading"\n'
        '# docs/page.md "Not a heading"\n'
        '# docs/gone.md "Page"\n'
        '# README "Layout"\n'
        '# docs/page.md "Cut across\n# lines"\n')
    (tmp_path / "params.json").write_text('{"description": "docs/page.md \\"Page\\" and docs/page.md \\"Nope\\""}\n')
    assert docs.reference_problems(tmp_path, ("src", "params.json")) == [
        'src/a.py:2: docs/page.md has no heading "No such heading"',
        'src/a.py:3: docs/page.md has no heading "Not a heading"',
        "src/a.py:4: docs/gone.md does not exist",
        "src/a.py:6: a docs reference cut across lines (keep it on one)",
        "src/a.py:5: a README reference (point it at docs/<page>.md)",
        'params.json:1: docs/page.md has no heading "Nope"',
    ]


# A tracker's number means nothing to a reader of the docs: a measurement names its commit and command instead.
ISSUE_NUMBER = re.compile(r"\b(?:issues?|pull requests?|PRs?)\s*#?\d+", re.I)


def test_no_docs_page_names_an_issue_number():
    pages = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
    found = [f"{p.relative_to(ROOT)}:{n}: {m.group(0)}" for p in pages
             for n, line in enumerate(p.read_text("utf-8").splitlines(), 1) for m in ISSUE_NUMBER.finditer(line)]
    assert found == []
    assert ISSUE_NUMBER.findall("measured before issue 28's rules (issue #43, PR 15189); this issue 's") == \
        ["issue 28", "issue #43", "PR 15189"]
