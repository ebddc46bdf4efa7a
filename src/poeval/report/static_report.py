"""A Snakemake report as one static HTML page: every table as an HTML table and every figure inline, under its
category and subcategory, with its caption, readable without JavaScript (a text browser, a mail attachment,
a cluster's file viewer).

Snakemake's report (``snakemake --report report.html``) is a React app: its results, rendered captions and
categories are JSON objects in one of its scripts (``var results = {...}``, ``var categories = {...}``); this
reads those objects, never runs the script. Entries of a subcategory are ordered by their labels as
:func:`poeval.report.tables.numbered_label` writes them (Table 02 before Table 10), where Snakemake lists
them by file name."""

from __future__ import annotations

import ast
import base64
import binascii
import csv
import html
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

from poeval.errors import PoevalError, quote
from poeval.files import atomic_write
from poeval.io import input_file

# the report template's variables (snakemake/report/template), one per line of a script
_VARIABLE = r"^\s*var {name} = "
# the figures the page shows inline, re-encoded by this module (an <img> runs no script, an SVG's neither)
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml", "image/webp")
TABLE_TYPES = ("text/tab-separated-values", "text/plain")
# what to do about any malformed report: it was not written by Snakemake as it is
_REWRITE = "write the report again with `snakemake --report FILE.html`"


def read_report(path: str | Path) -> dict:
    """``{"description", "results", "categories"}`` of a Snakemake report file, each checked for the shape
    Snakemake writes; a result's payload decoded (``table`` rows or ``image`` bytes)."""
    try:
        text = input_file(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise PoevalError(f"{path}: not UTF-8 (byte {err.start + 1}: {err.reason}); {_REWRITE}") from None
    description = _variable(text, "workflow_desc", path)
    if description is not None and not isinstance(description, str):
        raise PoevalError(f"{path}: the report's `workflow_desc` is {quote(description)}, not a string; {_REWRITE}")
    results, categories = _variable(text, "results", path), _variable(text, "categories", path)
    _check_categories(categories, path)
    if not isinstance(results, dict):
        raise PoevalError(f"{path}: the report's `results` is {quote(results)}, not a JSON object; {_REWRITE}")
    return {"description": description or "", "categories": categories,
            "results": {key: _result(entry, f"{path}: result {quote(key)}") for key, entry in results.items()}}


def _variable(text: str, name: str, path) -> object:
    found = list(re.finditer(_VARIABLE.format(name=name), text, re.M))
    if not found:
        raise PoevalError(f"{path}: not a Snakemake report (no `var {name}` in it; write one with "
                          "`snakemake --report report.html`)")
    try:   # the last one: the template's own scripts come before the data
        return json.JSONDecoder().raw_decode(text, found[-1].end())[0]
    except ValueError as err:   # invalid JSON, or an integer of more digits than Python converts
        raise PoevalError(f"{path}: the report's `{name}` is not JSON ({err}); {_REWRITE}") from None
    except RecursionError:
        raise PoevalError(f"{path}: the report's `{name}` is nested too deeply; {_REWRITE}") from None


def _check_categories(categories, path) -> None:
    """``{category: {subcategory: [result path, ...]}}``, as Snakemake writes them."""
    where = f"{path}: the report's `categories`"
    if not isinstance(categories, dict):
        raise PoevalError(f"{where} is {quote(categories)}, not a JSON object; {_REWRITE}")
    for name, subs in categories.items():
        if not isinstance(subs, dict):
            raise PoevalError(f"{where}: {quote(name)} is {quote(subs)}, not an object of subcategories; {_REWRITE}")
        for sub, paths in subs.items():
            if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                raise PoevalError(f"{where}: {quote(name)} / {quote(sub)} is {quote(paths)}, not a list of "
                                  f"result paths; {_REWRITE}")


def _result(entry, where: str) -> dict:
    """One result as the page uses it: its text fields (strings), labels, and the table or image it holds."""
    if not isinstance(entry, dict):
        raise PoevalError(f"{where} is {quote(entry)}, not a JSON object; {_REWRITE}")
    for key in ("name", "caption", "mime_type", "data_uri"):   # size, filename, job_properties: not shown
        if entry.get(key) is not None and not isinstance(entry[key], str):
            raise PoevalError(f"{where}: `{key}` is {quote(entry[key])}, not a string; {_REWRITE}")
    mime, name = entry.get("mime_type") or "", entry.get("name") or ""
    payload = _payload(entry.get("data_uri") or "", where)
    table = _table(payload, where) if payload is not None and (mime in TABLE_TYPES or name.endswith(".tsv")) else None
    return {"name": name, "caption": entry.get("caption") or "", "mime_type": mime, "labels": _labels(entry),
            "table": table, "image": payload if mime in IMAGE_TYPES else None}


def _labels(entry: dict) -> dict:
    """A result's labels: a JSON object (Snakemake 9), or the dict's Python repr (literals only) of older ones."""
    labels = entry.get("labels") or {}
    if isinstance(labels, str):
        try:
            labels = ast.literal_eval(labels)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            labels = {"label": labels}
    return labels if isinstance(labels, dict) else {"label": str(labels)}


def _payload(uri: str, where: str) -> bytes | None:
    """The bytes of an embedded (``data:...;base64,``) result; None for a link into a zipped report's folder."""
    if not uri.startswith("data:"):
        return None
    header, _, data = uri.partition(",")
    if not header.endswith(";base64"):
        raise PoevalError(f"{where}: `data_uri` is not base64-encoded ({quote(header)}); {_REWRITE}")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as err:
        raise PoevalError(f"{where}: `data_uri` is not valid base64 ({err}); {_REWRITE}") from None


def _table(data: bytes, where: str) -> list[list[str]]:
    try:
        return list(csv.reader(io.StringIO(data.decode("utf-8")), delimiter="\t"))
    except UnicodeDecodeError as err:
        raise PoevalError(f"{where}: the table is not UTF-8 (byte {err.start + 1}); {_REWRITE}") from None
    except csv.Error as err:
        raise PoevalError(f"{where}: the table cannot be read as TSV ({err}); {_REWRITE}") from None


class _Text(HTMLParser):
    """The text of an HTML fragment as paragraphs: every tag dropped, and what script and style hold."""

    BLOCKS = frozenset("p div br li dt dd tr table blockquote pre section h1 h2 h3 h4 h5 h6".split())
    HIDDEN = frozenset("script style template noscript iframe object textarea title".split())

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[list[str]] = [[]]
        self.hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.HIDDEN:
            self.hidden += 1
        elif tag in self.BLOCKS:
            self.paragraphs.append([])

    def handle_endtag(self, tag):
        if tag in self.HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in self.BLOCKS:
            self.paragraphs.append([])

    def handle_data(self, data):
        if not self.hidden:
            self.paragraphs[-1].append(data)


def text_html(fragment: str) -> str:
    """A caption or description from the report as escaped text in ``<p>`` paragraphs: the page shows the
    report's words, never its markup (a caption of ``<img src=x onerror=...>`` is not an image)."""
    parser = _Text()
    parser.feed(fragment)
    parser.close()
    paragraphs = (" ".join("".join(p).split()) for p in parser.paragraphs)
    return "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs if p)


def _title(path: str, entry: dict) -> str:
    """An entry's heading: its labels (``Table 02 · intervals``), else its file name."""
    return " · ".join(str(v) for v in entry["labels"].values()) or entry["name"] or path


def _order(path: str, entry: dict) -> tuple:
    """Labels first (numbered labels sort as numbers), then the file name."""
    return tuple(str(v) for v in entry["labels"].values()), _natural(Path(path).name)


def _natural(name: str) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def _table_html(rows: list[list[str]]) -> str:
    if not rows:
        return "<p>(empty table)</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _entry_html(path: str, entry: dict, anchor: str) -> str:
    if entry["image"] is not None:   # a data URI of this module's making: an allowed type, base64 of the bytes
        uri = f"data:{entry['mime_type']};base64,{base64.b64encode(entry['image']).decode('ascii')}"
        content = f'<img src="{uri}" alt="{html.escape(path)}">'
    elif entry["table"] is not None:
        content = _table_html(entry["table"])
    else:
        content = f"<p>(a {html.escape(entry['mime_type'] or 'file')}: open {html.escape(path)})</p>"
    return (f'<section id="{anchor}"><h4>{html.escape(_title(path, entry))}</h4><p class="path">{html.escape(path)}</p>'
            f'{text_html(entry["caption"])}{content}</section>')


STYLE = ("body{font-family:sans-serif;max-width:80em;margin:auto;padding:1em}table{border-collapse:collapse;"
         "font-size:90%}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}img{max-width:100%}"
         ".path{color:#666;font-family:monospace}")


def _listed(report: dict, subs: dict, sub: str) -> list[str]:
    """The results of a subcategory that the report holds, in label order."""
    results = report["results"]
    return sorted({p for p in subs[sub] if p in results}, key=lambda p: _order(p, results[p]))


def render(report: dict, title: str = "poeval report") -> str:
    """The page: a contents list, then each category (in the order of its leading number), subcategory and
    entry, with no script; every text of the report escaped (:func:`text_html`)."""
    results, toc, parts = report["results"], [], []
    for c, category in enumerate(sorted(report["categories"], key=_natural)):
        subs = report["categories"][category]
        parts.append(f"<h2>{html.escape(category)}</h2>")
        toc.append(f"<li>{html.escape(category)}<ul>")
        for s, sub in enumerate(subs):
            parts.append(f"<h3>{html.escape(sub)}</h3>")
            for e, path in enumerate(_listed(report, subs, sub)):
                anchor = f"r{c}-{s}-{e}"
                parts.append(_entry_html(path, results[path], anchor))
                heading = html.escape(_title(path, results[path]))
                toc.append(f'<li><a href="#{anchor}">{html.escape(sub)}: {heading}</a></li>')
        toc.append("</ul></li>")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{text_html(report['description'])}"
            f"<ul>{''.join(toc)}</ul>{''.join(parts)}</body></html>\n")


def write(report_html: str | Path, out: str | Path) -> int:
    """Read the Snakemake report ``report_html``, write the static page to ``out`` (whole or not at all);
    returns the number of entries."""
    report = read_report(report_html)
    page = render(report)
    with atomic_write(out) as handle:
        handle.write(page)
    return sum(len(_listed(report, subs, sub)) for subs in report["categories"].values() for sub in subs)
