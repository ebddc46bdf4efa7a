"""The text output of `poeval provenance`: the chain that :func:`poeval.report.provenance.trace` returns,
one link per line."""

from __future__ import annotations

from poeval.report.checks import ABBREV, _abbrev
from poeval.report.param_diff import show as _show


def _file_text(entry: dict) -> str:
    parts = [entry["path"]]
    if "name" in entry:
        parts.insert(0, entry["name"])
    if entry.get("format"):
        parts.append(f"({entry['format']})")
    if "sha256" in entry:
        parts.append(f"{'dir ' if entry.get('kind') == 'dir' else ''}sha256 {_abbrev(entry['sha256'])}")
    if "recorded_sha256" in entry and entry["recorded_sha256"] != entry.get("sha256"):
        parts.append(f"(recorded {_abbrev(entry['recorded_sha256'])})")
    if "dvc_md5" in entry:
        parts.append(f"dvc md5 {_abbrev(entry['dvc_md5'])}")
    return "  ".join(parts)


def _short_revision(code: str | None) -> str:
    """A git revision cut to 12 hex characters (its -dirty flag kept); a version string as it is."""
    if not code:
        return "-"
    head, dirty, _ = code.partition("-dirty")
    is_hex = len(head) == 40 and all(c in "0123456789abcdef" for c in head)
    return head[:ABBREV] + (dirty if is_hex else "") if is_hex else code


def _param_lines(params: dict) -> list[str]:
    return [f"{key} = {_show(value)}" for key, value in params.items()]


def format_text(result: dict) -> str:
    """One link per line (continuation lines indented under it), hashes cut to 12 hex characters;
    ``!`` marks why a link is stale, ``?`` what could not be checked."""
    row = result["row"]
    scale = f" x {result['scale']:g}" if result["scale"] != 1 else ""
    lines = [f"{result['table']}  {row['lang']} / {row['system']} / {row['decoding']}  "
             f"{result['column']} = {result['value']}  ({result['family']}.{result['key']}{scale})"]
    for i, link in enumerate(result["chain"]):
        items = [_file_text(f) for f in link["files"]] + _param_lines(link["params"])
        head = f"{'   ' if i == 0 else '-> '}{link['name']:<16} "
        for j, item in enumerate(items or [""]):
            lines.append((head if j == 0 else " " * len(head)) + item)
        lines += [f"      ! {r}" for r in link["stale"]] + [f"      ? {n}" for n in link["notes"]]
    code = _short_revision(result["code"])
    if result["code"] and result["code"] != result["code_now"]:
        code += f"  (running now: {_short_revision(result['code_now'])})"
    lines += [f"   {'code':<16} {code}", f"   {'created':<16} {result['created'] or '-'}"]
    if result["stale"]:
        lines.append(f"STALE: {len(result['reasons'])} reason(s), marked '!' above")
    else:
        lines.append("OK: inputs and params unchanged since each step was built")
    return "\n".join(lines)
