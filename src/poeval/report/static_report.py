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
import csv
import html
import io
import json
import re
from pathlib import Path

from poeval.errors import PoevalError
from poeval.io import atomic_write

# the report template's variables (snakemake/report/template), one per line of a script
_VARIABLE = r"^\s*var {name} = "


def read_report(path: str | Path) -> dict:
    """``{"description", "results", "categories"}`` of a Snakemake report file."""
    text = Path(path).read_text(encoding="utf-8")
    return {"description": _variable(text, "workflow_desc", path) or "",
            "results": _variable(text, "results", path), "categories": _variable(text, "categories", path)}


def _variable(text: str, name: str, path) -> object:
    found = list(re.finditer(_VARIABLE.format(name=name), text, re.M))
    if not found:
        raise PoevalError(f"{path}: not a Snakemake report (no `var {name}` in it; write one with "
                          "`snakemake --report report.html`)")
    try:   # the last one: the template's own scripts come before the data
        return json.JSONDecoder().raw_decode(text, found[-1].end())[0]
    except json.JSONDecodeError as err:
        raise PoevalError(f"{path}: the report's `{name}` is not JSON ({err})") from None


def _labels(entry: dict) -> dict:
    """A result's labels: Snakemake writes the dict's Python repr (literals only)."""
    labels = entry.get("labels") or {}
    if isinstance(labels, str):
        try:
            labels = ast.literal_eval(labels)
        except (ValueError, SyntaxError):
            labels = {"label": labels}
    return labels if isinstance(labels, dict) else {"label": str(labels)}


def _title(path: str, entry: dict) -> str:
    """An entry's heading: its labels (``Table 02 · intervals``), else its file name."""
    return " · ".join(str(v) for v in _labels(entry).values()) or entry.get("name", path)


def _order(path: str, entry: dict) -> tuple:
    """Labels first (numbered labels sort as numbers), then the file name."""
    return tuple(str(v) for v in _labels(entry).values()), _natural(Path(path).name)


def _natural(name: str) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def _payload(entry: dict) -> bytes:
    uri = entry.get("data_uri") or ""
    return base64.b64decode(uri.split("base64,", 1)[1]) if "base64," in uri else b""


def _table_html(data: bytes) -> str:
    rows = list(csv.reader(io.StringIO(data.decode("utf-8")), delimiter="\t"))
    if not rows:
        return "<p>(empty table)</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _entry_html(path: str, entry: dict, anchor: str) -> str:
    mime = entry.get("mime_type", "")
    if mime.startswith("image/"):
        content = f'<img src="{html.escape(entry.get("data_uri", ""), quote=True)}" alt="{html.escape(path)}">'
    elif mime in ("text/tab-separated-values", "text/plain") or path.endswith(".tsv"):
        content = _table_html(_payload(entry))
    else:
        content = f"<p>(a {html.escape(mime or 'file')}: open {html.escape(path)})</p>"
    # the captions are Snakemake's rendering of the workflow's own reST captions: trusted HTML
    return (f'<section id="{anchor}"><h4>{html.escape(_title(path, entry))}</h4><p class="path">{html.escape(path)}</p>'
            f'{entry.get("caption", "")}{content}</section>')


STYLE = ("body{font-family:sans-serif;max-width:80em;margin:auto;padding:1em}table{border-collapse:collapse;"
         "font-size:90%}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}img{max-width:100%}"
         ".path{color:#666;font-family:monospace}")


def render(report: dict, title: str = "poeval report") -> str:
    """The page: a contents list, then each category (in the order of its leading number), subcategory and
    entry, with no script."""
    results, toc, parts = report["results"], [], []
    for c, category in enumerate(sorted(report["categories"], key=_natural)):
        subs = report["categories"][category]
        parts.append(f"<h2>{html.escape(category)}</h2>")
        toc.append(f"<li>{html.escape(category)}<ul>")
        for s, sub in enumerate(subs):
            paths = sorted((p for p in subs[sub] if p in results), key=lambda p: _order(p, results[p]))
            parts.append(f"<h3>{html.escape(sub)}</h3>")
            for e, path in enumerate(paths):
                anchor = f"r{c}-{s}-{e}"
                parts.append(_entry_html(path, results[path], anchor))
                heading = html.escape(_title(path, results[path]))
                toc.append(f'<li><a href="#{anchor}">{html.escape(sub)}: {heading}</a></li>')
        toc.append("</ul></li>")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{report['description']}"
            f"<ul>{''.join(toc)}</ul>{''.join(parts)}</body></html>\n")


def write(report_html: str | Path, out: str | Path) -> int:
    """Read the Snakemake report ``report_html``, write the static page to ``out`` (whole or not at all);
    returns the number of entries."""
    report = read_report(report_html)
    page = render(report)
    with atomic_write(out) as handle:
        handle.write(page)
    return sum(len(v) for sub in report["categories"].values() for v in sub.values())
