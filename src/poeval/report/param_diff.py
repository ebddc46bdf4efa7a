"""How a provenance stamp's recorded params are compared with the params of now (`poeval stale`,
`poeval provenance`, the DVC lock checks), by dotted key."""

from __future__ import annotations

import json
from typing import Any


def dotted(config: dict, key: str) -> Any:
    """The value at a dotted params key (``metrics.bootstrap.reps``), or None where it is not set."""
    for part in key.split("."):
        if not isinstance(config, dict) or part not in config:
            return None
        config = config[part]
    return config


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(obj, dict):
        return {prefix: obj}
    out: dict[str, Any] = {}
    for key, value in obj.items():
        out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def show(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def param_diffs(recorded: dict, current: dict, exact: bool = True) -> tuple[list[str], list[str]]:
    """(differences, unrecorded) between two params dicts, by dotted key.

    A difference is ``key: recorded X, now Y`` for a recorded key whose value changed or that is gone
    now (null). A key set now but absent from the record is *unrecorded*, not a difference: a producer
    records what it used (a generator without byte-level decoding never sees max_new_bytes).
    ``exact=False`` compares only the keys both sides have, for legacy records that mix in defaults."""
    r, c = _flatten(recorded), _flatten(current)
    keys = sorted(r) if exact else sorted(r.keys() & c.keys())
    diffs = [f"{k}: recorded {show(r[k])}, now {show(c.get(k))}" for k in keys if r[k] != c.get(k)]
    unrecorded = [f"{k} = {show(c[k])}" for k in sorted(c.keys() - r.keys()) if exact and c[k] is not None]
    return diffs, unrecorded
