"""Checks of the resolved params that concern endpoints, run by the params step before any job: a decoding
config that an endpoint system would be sampled with but cannot run (contrastive search; top_k on a server
that takes none) is refused by name, and ``serves`` must name a checkpoint this workflow builds."""

from __future__ import annotations

from poeval.config import model_for_lang
from poeval.generators.decoding import parse_decoding
from poeval.generators.endpoint.connection import Endpoint
from poeval.generators.endpoint.requests import refusal


def endpoint_problems(p: dict) -> list[str]:
    """Problems of every endpoint system in ``systems`` (``p``: resolved params), each naming its key."""
    problems = []
    for system in p["systems"]:
        entry = p["models"].get(system) or {}
        if entry.get("arch") != "endpoint":
            continue
        problems += _serves_problems(system, entry, p["models"])
        endpoint = Endpoint.from_params(model_for_lang(entry, p["languages"][0]), system)
        for where, name in _decodings(p):
            reason = refusal(endpoint, parse_decoding(p["decoding"][name], f"decoding.{name}"))
            if reason:
                problems.append(f"key {where}: decoding config '{name}' cannot run on endpoint system '{system}': "
                                f"{reason}")
    return problems


def _decodings(p: dict) -> list[tuple[str, str]]:
    """(params key, config name) of every decoding config a system of the run is sampled with."""
    named = [(f"decodings.{i}", name) for i, name in enumerate(p["decodings"]) if name in p["decoding"]]
    adherence = (p.get("style_adherence") or {}).get("decoding")
    if adherence in p["decoding"] and adherence not in p["decodings"]:
        named.append(("style_adherence.decoding", adherence))
    return named


def _serves_problems(system: str, entry: dict, models: dict) -> list[str]:
    from poeval.generators.pretrained import RELEASES

    served = entry.get("serves")
    if served is None or served in RELEASES:
        return []
    target = models.get(served)
    if target is None or target.get("arch") in ("endpoint", "samples"):
        return [f"key models.{system}.serves: '{served}' is not a checkpoint this workflow builds (a models entry "
                f"that is neither an endpoint nor samples, or a pretrained release: {', '.join(RELEASES)})"]
    return []
