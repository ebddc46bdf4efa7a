"""The link of a provenance chain that a model behind an endpoint has instead of a training split: the
endpoint as rule train found it (its checkpoint folder's manifest), what the counted answers reported
(model ids, system fingerprints, the first and last request, token usage), the checkpoint the server
serves when params name one (``serves``), and, with ``poeval provenance --check``, what the server says
now: a served model can change behind the same name, which no file hash can see, so a model id or
fingerprint that differs from the recorded one is a note."""

from __future__ import annotations

from pathlib import Path

from poeval.generators.checkpoint import MANIFEST
from poeval.generators.endpoint import read
from poeval.generators.endpoint.connection import Endpoint, public_url
from poeval.report.checks import Link, _load


def endpoint_link(t, stats: dict | None, model_dir: str, training_stamp: dict | None, log_path: str,
                  ask: bool) -> Link:
    """The ``endpoint`` link (module docstring); ``t``: the chain's tracer."""
    link = Link("endpoint")
    manifest = _load(t.abs(Path(model_dir) / MANIFEST)) or {}
    endpoint = manifest.get("endpoint") or {}
    stats = stats or {}
    reported = stats.get("reported") or {}
    requests = stats.get("requests") or {}
    link.params = {"base_url": public_url(endpoint["base_url"]) if endpoint else None, "model": endpoint.get("model"),
                   "api": endpoint.get("api"), "server": endpoint.get("server"),
                   "listed": (manifest.get("reported") or {}).get("models"),
                   "answers name": reported.get("models"), "system_fingerprints": reported.get("system_fingerprints"),
                   "requests": f"{requests.get('first')} .. {requests.get('last')}", "usage": requests.get("usage"),
                   "sent": (stats.get("sent") or {}).get("request")}
    served = ((training_stamp or {}).get("inputs") or {}).get("served")
    if served:
        t.file_entry(link, served["path"])
        t.check_input(link, training_stamp, "served", served["path"], log_path)
    if ask and endpoint:
        link.notes += server_notes(read(t.abs(model_dir)), reported)
    return link


def server_notes(ep: Endpoint, reported: dict) -> list[str]:
    """What the server says now, against what was recorded: its model list, and one 1-token answer's model
    id and fingerprint. A note each, never a stale mark: the samples' files are unchanged."""
    import openai

    client = ep.client()
    try:
        listed = sorted(m.id for m in client.models.list())
        probe = _probe(client, ep)
    except openai.APIError as err:
        return [f"{ep.where()}: not reachable now ({type(err).__name__}); what it serves was not compared"]
    finally:
        client.close()
    notes = [] if ep.model in listed or not listed else [f"{ep.where()}: the server no longer lists the model"]
    for what, now in (("model", probe.model), ("system_fingerprint", probe.system_fingerprint)):
        recorded = reported.get("models" if what == "model" else "system_fingerprints") or []
        if now and recorded and now not in recorded:
            notes.append(f"{ep.where()}: answers now name {what} {now!r}, the samples' answers named "
                         f"{', '.join(map(repr, recorded))}: the served model may have changed behind its name")
    return notes or [f"{ep.where()}: asked now: the same model id and fingerprint as recorded"]


def _probe(client, ep):
    """One answer of one token, for the model id and fingerprint the server reports now."""
    if ep.api == "chat":
        return client.chat.completions.create(model=ep.model, messages=[{"role": "user", "content": "Hello"}],
                                              max_tokens=1)
    return client.completions.create(model=ep.model, prompt="Hello", max_tokens=1)
