"""The generated pages of the docs site (docs/hooks.py calls these at build time, so they cannot drift):
the params reference from the schema, the CLI reference from the parser, and the main job's rule graph.

Importable without Snakemake; :func:`rulegraph_svg` runs ``snakemake --rulegraph`` and graphviz's ``dot``
as programs (docs/workflow.md "The rule graph")."""

from __future__ import annotations

import argparse
import functools
import html
import json
import shutil
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from poeval import config

# The name a map's entries stand for, by the map's key path; other maps show <name>.
PLACEHOLDERS = {
    "models": "<system>",
    "decoding": "<decoding>",
    "models.<system>.samples": "<lang>",
    "models.<system>.samples.<lang>": "<decoding>",
    "style_adherence.pairs": "<system>",
}
GENERATED_NOTE = ("Generated at build time by `poeval.docs` from {source}; do not edit it by hand "
                  "(docs/hooks.py).")


@dataclass(frozen=True)
class Row:
    path: str          # the key path, e.g. models.<system>.arch
    when: str          # the branch it belongs to, e.g. "arch: samples"; "" when always
    type: str
    default: str       # "" when the schema has none
    required: bool
    description: str


def _resolver(schema: dict):
    def node(pointer: str) -> dict:
        out = schema
        for part in pointer.lstrip("#/").split("/"):
            out = out[part]
        return out

    def follow(n: dict) -> dict:
        while isinstance(n, dict) and "$ref" in n:   # the referencing node's own keys win
            n = {**node(n["$ref"]), **{k: v for k, v in n.items() if k != "$ref"}}
        return n
    return follow


def _variants(n: dict, follow) -> list[tuple[str, dict]]:
    """An ``if``/``then``/``else`` node as its leaf branches, each merged with the node's own keys and
    labelled by the value the tested key takes there (``arch: samples``)."""
    n = follow(n)
    if "if" not in n:
        return [("", n)]
    base = {k: v for k, v in n.items() if k not in ("if", "then", "else", "description")}
    tested = list(n["if"].get("properties", {}))
    out = []
    for which in ("then", "else"):
        if which not in n:
            continue
        for label, leaf in _variants(n[which], follow):
            merged = {**base, **leaf,
                      "properties": {**base.get("properties", {}), **leaf.get("properties", {})},
                      "required": sorted(set(base.get("required", [])) | set(leaf.get("required", [])))}
            for key in tested:
                spec = follow(merged["properties"].get(key, {}))
                values = [spec["const"]] if "const" in spec else spec.get("enum")
                if values:
                    label = f"{key}: " + ", ".join(map(str, values))
            out.append((label or ("otherwise" if which == "else" else json.dumps(n["if"])), merged))
    return out


def _has_keys(n: dict) -> bool:
    return bool(n.get("properties")) or isinstance(n.get("additionalProperties"), dict) or "if" in n


def _type(n: dict, follow) -> str:
    n = follow(n)
    if "const" in n:
        return f"`{json.dumps(n['const'])}`"
    if "enum" in n:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in n["enum"])
    alts = n.get("oneOf") or n.get("anyOf")
    if alts:
        return " or ".join(_type(a, follow) for a in alts)
    if "if" in n:
        return "object (by " + ", ".join(n["if"].get("properties", {})) + ")"
    types = n.get("type")
    types = types if isinstance(types, list) else [types] if types else []
    parts = []
    for t in types:
        if t == "array" and isinstance(n.get("items"), dict):
            parts.append(f"array of {_type(n['items'], follow)}")
        elif t == "object" and isinstance(n.get("additionalProperties"), dict) and not n.get("properties"):
            parts.append("map")
        else:
            parts.append(t)
    out = " or ".join(parts) if parts else ("object" if _has_keys(n) else "any")
    bounds = [f"{sym} {n[k]}" for k, sym in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"),
                                              ("exclusiveMaximum", "<")) if k in n]
    bounds += [f"{k} {n[k]}" for k in ("minItems", "maxItems", "minLength", "minProperties") if k in n]
    if n.get("uniqueItems"):
        bounds.append("unique")
    if "pattern" in n:
        bounds.append(f"pattern `{n['pattern']}`")
    return out + (f" ({', '.join(bounds)})" if bounds else "")


def params_rows(schema: dict | None = None) -> list[Row]:
    """Every key path of the params schema, in the schema's order: properties, map entries
    (``models.<system>``), list items (``bpomp.scorers[].name``), object alternatives of a ``oneOf``, and
    every branch of an ``if`` (``models.<system>`` per ``arch``)."""
    schema = schema if schema is not None else config.schema()
    follow = _resolver(schema)
    rows: list[Row] = []

    def visit(n: dict, path: str, when: str, required: bool, shared: bool):
        n = follow(n)
        default = json.dumps(n["default"], ensure_ascii=False) if "default" in n and not shared else ""
        rows.append(Row(path, when, _type(n, follow), default, required, n.get("description", "")))
        # "overrides": a system's own training/sampling keys; an unset one comes from the shared block
        children(n, path, when, shared or bool(n.get("overrides")))

    def children(n: dict, path: str, when: str, shared: bool = False):
        n = follow(n)
        if "if" in n:
            for label, leaf in _variants(n, follow):
                children({k: v for k, v in leaf.items() if k != "if"}, path,
                         "; ".join(x for x in (when, label) if x), shared)
            return
        for key, spec in n.get("properties", {}).items():
            visit(spec, f"{path}.{key}" if path else key, when, key in n.get("required", []), shared)
        extra = n.get("additionalProperties")
        if isinstance(extra, dict):
            visit(extra, f"{path}.{PLACEHOLDERS.get(path, '<name>')}", when, False, shared)
        items = n.get("items")
        if isinstance(items, dict) and _has_keys(follow(items)):
            children(items, f"{path}[]", when, shared)
        alts = [follow(a) for a in n.get("oneOf", []) + n.get("anyOf", [])]
        keyed = [a for a in alts if _has_keys(a)]
        for alt in keyed:
            label = ""
            if len(keyed) > 1:   # name a form by the keys only it requires (decoding: temperature | penalty_alpha)
                others = {k for a in keyed if a is not alt for k in a.get("properties", {})}
                own = [k for k in alt.get("required", []) if k not in others] or alt.get("required", [])
                label = "with " + ", ".join(own)
            children(alt, path, "; ".join(x for x in (when, label) if x), shared)

    children(schema, "", "")
    return rows


def key_paths(schema: dict | None = None) -> list[str]:
    return list(dict.fromkeys(r.path for r in params_rows(schema)))


# A Sphinx role of a docstring (:mod:`x`, :py:func:`~a.b`), shown on a page as the code it names; a code span.
_ROLE = re.compile(r"(?<![\w`]):(?:[a-z]+:)?[a-z]+:`(~?)([^`]+)`")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)


def _escape(text: str) -> str:
    return html.escape(text, quote=False).replace("|", "\\|")


def _cell(text: str) -> str:
    """Docstring or schema text as one markdown table cell: a Sphinx role becomes a code span (``~`` keeps the
    last name, as Sphinx shows it), newlines become spaces, and ``<``, ``&`` and ``|`` are escaped outside code
    spans only (markdown escapes a code span's content itself: escaping it too shows ``&lt;`` on the page)."""
    text = _ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", text)
    text, out, pos = text.replace("\n", " "), [], 0
    for m in _CODE_SPAN.finditer(text):
        out += [_escape(text[pos:m.start()]), m.group(0)]
        pos = m.end()
    return "".join(out + [_escape(text[pos:])])


def params_page(schema: dict | None = None) -> str:
    """docs/reference/params.md: one table per top-level key of params.yaml."""
    rows = params_rows(schema)
    top = list(dict.fromkeys(r.path.split(".")[0].split("[")[0] for r in rows))
    out = ["# Parameters reference", "",
           GENERATED_NOTE.format(source="`src/poeval/schemas/params.schema.json`"), "",
           "What the keys do and how overlays work: [Configuration](../configuration.md). Every default below "
           "is filled in by the params step (`poeval validate` runs it by hand). A key path's `<system>`, "
           "`<decoding>`, `<lang>` or `<name>` stands for a name you choose; `[]` marks the items of a list; "
           "**when** names the branch a key belongs to (e.g. a system's `arch`). A system's own `training` and "
           "`sampling` keys show no default: an unset one comes from the shared block of that name.", ""]
    for name in top:
        mine = [r for r in rows if r.path == name or r.path.startswith((name + ".", name + "["))]
        out += [f"## {name}", ""]
        head = mine[0]
        if head.description:
            out += [_cell(head.description), ""]
        out += ["| key | when | type | default | description |", "|---|---|---|---|---|"]
        for r in mine:
            key = f"`{r.path}`" + (" (required)" if r.required else "")
            default = f"`{r.default}`" if r.default else ""
            out.append(f"| {key} | {_cell(r.when)} | {_cell(r.type)} | {default} | "
                       f"{_cell(r.description)} |")
        out.append("")
    return "\n".join(out)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help(parser: argparse.ArgumentParser, width: int = 100) -> str:
    """``--help`` at a fixed width, so that the page does not depend on the terminal."""
    cls = parser.formatter_class
    parser.formatter_class = functools.partial(cls, width=width)
    try:
        return parser.format_help()
    finally:
        parser.formatter_class = cls


def commands(parser: argparse.ArgumentParser | None = None) -> list[str]:
    """Every subcommand, nested ones as ``bpomp corpus``."""
    parser = parser or _cli_parser()
    out = []
    for name, sub in _subparsers(parser).items():
        out.append(name)
        out += [f"{name} {inner}" for inner in _subparsers(sub)]
    return out


def _cli_parser() -> argparse.ArgumentParser:
    from poeval.cli import build_parser
    return build_parser()


def cli_page(parser: argparse.ArgumentParser | None = None) -> str:
    """docs/reference/cli.md: the ``--help`` of ``poeval`` and of every subcommand."""
    parser = parser or _cli_parser()
    out = ["# Command reference", "",
           GENERATED_NOTE.format(source="`poeval.cli.build_parser()`"), "",
           "How the commands fit together: [The `poeval` command](../commands.md).", "",
           "## poeval", "", "```text", _help(parser).rstrip(), "```", ""]
    for name, sub in _subparsers(parser).items():
        out += [f"## poeval {name}", "", "```text", _help(sub).rstrip(), "```", ""]
        for inner, subsub in _subparsers(sub).items():
            out += [f"### poeval {name} {inner}", "", "```text", _help(subsub).rstrip(), "```", ""]
    return "\n".join(out)


def rulegraph_dot(root: Path, configfiles: tuple[str, ...] = ()) -> str:
    """``snakemake --rulegraph`` of the workflow in ``root`` (params.yaml plus overlays): nothing runs."""
    snakemake = shutil.which("snakemake") or str(Path(sys.executable).with_name("snakemake"))
    cmd = [snakemake, "--rulegraph"]
    if configfiles:
        cmd += ["--configfile", *configfiles]
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if done.returncode or "digraph" not in done.stdout:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout[done.stdout.index("digraph"):]


def rulegraph_svg(root: Path, configfiles: tuple[str, ...] = ()) -> str:
    """The rule graph drawn by graphviz (``dot -Tsvg``; Debian package graphviz, installed by run.sh)."""
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError("graphviz's dot is not installed (./run.sh setup installs the Debian package graphviz)")
    done = subprocess.run([dot, "-Tsvg"], input=rulegraph_dot(root, configfiles), capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"dot -Tsvg failed: {done.stderr[-2000:]}")
    return done.stdout


def paths_table() -> str:
    """Every artifact path of :mod:`poeval.paths` as its Snakemake pattern (docs/workflow.md)."""
    import inspect

    from poeval import paths
    out = ["| function | path (Snakemake pattern) | what |", "|---|---|---|"]
    for name, fn in vars(paths).items():
        if not inspect.isfunction(fn) or fn.__module__ != paths.__name__ or name in ("pattern", "log"):
            continue
        doc = (inspect.getdoc(fn) or "").split("\n\n")[0].replace("\n", " ")
        out.append(f"| `paths.{name}` | `{paths.pattern(fn)}` | {_cell(doc)} |")
    return "\n".join(out)


def rules_table(root: Path) -> str:
    """The rules of each ``workflow/rules/*.smk`` file, in the Snakefile's include order."""
    import re
    snakefile = (root / "Snakefile").read_text("utf-8")
    files = re.findall(r'include:\s*"([^"]+)"', snakefile)
    out = ["| file | rules |", "|---|---|"]
    for rel in files:
        rules = re.findall(r"^rule (\w+):", (root / rel).read_text("utf-8"), flags=re.M)
        out.append(f"| `{rel}` | {', '.join(f'`{r}`' for r in rules) or '(no rule: the params step and input functions)'} |")
    return "\n".join(out)


MARKERS = {"<!-- generated: paths -->": lambda root: paths_table(),
           "<!-- generated: rules -->": rules_table}


def fill_markers(markdown: str, root: Path) -> str:
    """A page's generated parts: each marker line replaced by what it names."""
    for marker, make in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, make(root))
    return markdown


# Where code comments point into the docs as docs/<page>.md "Heading" (tests/unit/test_docs.py checks each).
REFERENCE_SOURCES = ("src", "workflow", "Snakefile", "params.yaml", "config", "profiles", "scripts", "benchmarks",
                     "run.sh", "dvc.yaml", "Makefile")
_REFERENCE = re.compile(r'docs/([A-Za-z0-9_/.-]+?\.md)[ \t]*\\?"([^"\\\n]*)\\?"')
_OPEN_REFERENCE = re.compile(r'docs/[A-Za-z0-9_/.-]+?\.md[ \t]*\\?"[^"\n]*$', re.M)
_OLD_REFERENCE = re.compile(r'README\s+\\?["\']')
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def headings(page: Path) -> set[str]:
    """The texts of a markdown page's ``#`` headings (any level; fenced code left out)."""
    text = re.sub(r"^```.*?^```", "", page.read_text("utf-8"), flags=re.M | re.S)
    return {m.group(1) for m in _HEADING.finditer(text)}


def _source_files(root: Path, sources=REFERENCE_SOURCES):
    for name in sources:
        path = root / name
        if path.is_file():
            yield path
        elif path.is_dir():
            yield from (p for p in sorted(path.rglob("*")) if p.is_file() and "__pycache__" not in p.parts)


def reference_problems(root: Path, sources=REFERENCE_SOURCES) -> list[str]:
    """Every reference ``docs/<page>.md "Heading"`` under ``sources`` whose page or heading does not exist,
    one cut across lines, and every reference left that points at the README by a quoted heading."""
    problems, cache = [], {}
    for path in _source_files(root, sources):
        try:
            text = path.read_text("utf-8")
        except UnicodeDecodeError:
            continue
        rel = path.relative_to(root).as_posix()

        def line(pos: int) -> int:
            return text.count("\n", 0, pos) + 1
        for m in _REFERENCE.finditer(text):
            page, heading = root / "docs" / m.group(1), m.group(2)
            if not page.is_file():
                problems.append(f"{rel}:{line(m.start())}: docs/{m.group(1)} does not exist")
                continue
            if page not in cache:
                cache[page] = headings(page)
            if heading not in cache[page]:
                problems.append(f'{rel}:{line(m.start())}: docs/{m.group(1)} has no heading "{heading}"')
        for m in _OPEN_REFERENCE.finditer(text):
            if not _REFERENCE.match(text, m.start()):
                problems.append(f"{rel}:{line(m.start())}: a docs reference cut across lines (keep it on one)")
        for m in _OLD_REFERENCE.finditer(text):
            problems.append(f"{rel}:{line(m.start())}: a README reference (point it at docs/<page>.md)")
    return problems
