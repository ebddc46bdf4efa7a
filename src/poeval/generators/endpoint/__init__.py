"""A model behind an OpenAI-compatible endpoint as a generator (params ``arch: endpoint``): vLLM, SGLang,
llama.cpp's llama-server, Ollama, transformers serve or a hosted API, through the official ``openai`` client.

The generator interface's two steps (:mod:`poeval.generators.interface`):

* :func:`fit` trains nothing: it asks the server which models it serves (``/v1/models``), fails at once
  on a wrong key, route or model, and writes a checkpoint folder whose manifest (:data:`MANIFEST`) holds
  the endpoint's params and what the server reported. The samples' stamps then name that folder, and a
  changed endpoint (another URL, model or api) makes them stale as a retrained checkpoint would.
* :func:`sample` sends one request per attempt (:mod:`.requests`: the decoding mapped onto the request,
  each attempt's seed derived from ``sampling.seed`` and its index), up to ``max_concurrency`` at once and
  counted in index order (:mod:`.window`), each answer appended to the request log as it arrives
  (:mod:`.requestlog`), a chat answer cleaned by documented rules (:mod:`poeval.generators.chat_answers`),
  then the samplers' validity rule and loop (:func:`poeval.generators.sampling.sample_loop`).

docs/endpoint.md says what this reproduces and what it cannot: a served model can change behind its name,
and a server whose seed is process-wide (transformers serve) repeats its samples only one request at a time.
"""

from __future__ import annotations

import collections
import signal
import threading
import time
from pathlib import Path

from poeval import config
from poeval.errors import PoevalError
from poeval.generators.checkpoint import MANIFEST
from poeval.generators.decoding import Decoding, parse_decoding
from poeval.generators.endpoint import requests as req
from poeval.generators.endpoint.connection import UNLISTED_OK, Endpoint, fail, public_url
from poeval.generators.endpoint.requestlog import RequestLog, log_path
from poeval.generators.endpoint.window import Window
from poeval.generators.interface import TrainInputs
from poeval.generators.prompting import Prompt
from poeval.generators.sampling import Attempt, sample_loop
from poeval.generators.sampling import resolve as resolve_sampling
from poeval.io import read_json_object, write_json
from poeval.stamps import stamp, utc_now

ARCH = "endpoint"
NODE = "#/$defs/endpoint_model"
RETRY_PAUSE_S = 2.0   # before a request that failed all its retries is sent again (the client backed off already)
# A job told to stop (SIGTERM, Ctrl-C) first waits this long for the requests in flight, so their answers reach
# the log rather than being paid for twice; then it closes their connections
STOP_GRACE_S = 15.0


def resolve(model_cfg: dict, name: str | None) -> Endpoint:
    """The endpoint of a ``models`` entry (per-language keys resolved), with the schema's defaults."""
    return Endpoint.from_params(config.resolve_section(model_cfg, NODE, f"models.{name}" if name else "model"), name)


def fit(inputs: TrainInputs, out_dir: str, model_cfg: dict, train_cfg: dict | str, *, lang: str | None,
        name: str | None = None, threads: int = 1, progress: bool = True) -> dict:
    """Check the server and write the endpoint's checkpoint folder (module docstring); ``inputs.served``: the
    checkpoint the server serves, if params name one (``serves``), recorded in the stamp."""
    from poeval.generators.engine import write_checkpoint

    endpoint = resolve(model_cfg, name)
    listed = reported_models(endpoint)
    if listed and endpoint.model not in listed and endpoint.server not in UNLISTED_OK:
        raise PoevalError(f"{endpoint.where()}: the server does not serve this model (it lists "
                          f"{', '.join(listed[:10])}); check models.{name}.model")
    manifest = {"arch": ARCH, "endpoint": endpoint.to_dict() | {"base_url": endpoint.base_url},
                "reported": {"models": listed}}
    served = {"served": inputs.served} if inputs.served else {}
    log = {"summary": {"checked": utc_now(), "models_listed": len(listed)},
           "provenance": stamp(served, {"model": model_cfg, "training": train_cfg})}
    write_checkpoint(out_dir, lambda tmp: write_json(Path(tmp) / MANIFEST, manifest), log)
    print(f"poeval train: {endpoint.where()}: the server lists {len(listed)} model(s)", flush=True)
    return log["summary"]


def reported_models(endpoint: Endpoint) -> list[str]:
    """The model ids the server lists at ``/v1/models`` (sorted); a wrong key or route fails at once."""
    import openai

    client = endpoint.client()
    try:
        return sorted(model.id for model in client.models.list())
    except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as err:
        raise fail(endpoint, err) from None
    except openai.APIError as err:
        raise PoevalError(f"{endpoint.where()}: cannot list its models ({type(err).__name__}: "
                          f"{str(err).splitlines()[0][:200]}); is the server running?") from None
    finally:
        client.close()


def read(model_dir: str | Path) -> Endpoint:
    """The endpoint of a checkpoint folder :func:`fit` wrote."""
    fields = read_json_object(Path(model_dir) / MANIFEST).get("endpoint") or {}
    try:
        return Endpoint(**fields)
    except TypeError:
        raise PoevalError(f"{model_dir}/{MANIFEST}: not an endpoint manifest; rerun rule train") from None


def sample(model_dir: str, decoding: Decoding | dict, sampling: dict, out: str, stats: str, *, threads: int = 1,
           id_prefix: str = "", progress: bool = True, style: str | None = None,
           prompt: Prompt | None = None) -> dict:
    """Sample until ``n`` valid quatrains or ``max_attempts`` requests (module docstring); write JSONL +
    stats JSON. Decoding configs the endpoint cannot run are refused before any request."""
    endpoint = read(model_dir)
    decoding, sampling = parse_decoding(decoding), resolve_sampling(sampling)
    if prompt is None or prompt.api != endpoint.api:
        raise PoevalError(f"{endpoint.where()}: the sample job must carry the {endpoint.api} prompt "
                          "(poeval.jobs.sample builds it from params models.<system>.prompt)")
    body = req.template(endpoint, decoding, sampling["max_new_tokens"], prompt, style)
    session = _Session(endpoint, body, sampling["seed"], RequestLog(log_path(out)))
    window = Window(session.fetch, endpoint.max_concurrency, sampling["max_attempts"])
    indices = iter(range(sampling["max_attempts"]))
    finished = False   # the requests still in flight at the end are waited for; at a stop, for a grace only
    with _terminate_as_interrupt():
        try:
            result = sample_loop(lambda size: [_attempt(window.get(next(indices)), endpoint.api)], out, stats,
                                 model_dir=model_dir, decoding=decoding, sampling=sampling, id_prefix=id_prefix,
                                 progress=progress, desc=f"sample {endpoint.model}",
                                 extra=lambda counted: _stats(counted, endpoint, body, sampling, style, session),
                                 prompt=prompt.to_dict())
            finished = True
        finally:
            window.drain(endpoint.timeout if finished else min(endpoint.timeout, STOP_GRACE_S))
            window.stop()
            session.client.close()   # a request still in flight loses its connection: vLLM, llama.cpp abort it
    _note_reported(endpoint, result)
    return result


class _Session:
    """The client, the request log and the failure budget that the request threads share."""

    def __init__(self, endpoint: Endpoint, body: dict, seed: int, log: RequestLog):
        self.endpoint, self.body, self.seed, self.log = endpoint, body, seed, log
        self.client = endpoint.client()
        self.failed, self.sent = 0, 0
        self.lock = threading.Lock()

    def fetch(self, index: int) -> dict:
        """The answer of attempt ``index``: from the log if it holds it, else from the server (then logged)."""
        request = req.request(self.body, req.seed(self.seed, index))
        key = req.key(request)
        entry = self.log.get(key)
        if entry is None:
            entry = {"key": key, "index": index, "seed": request["seed"], **self._ask(request)}
            self.log.add(entry)
        return entry

    def _ask(self, request: dict) -> dict:
        import openai

        while True:
            started = utc_now()
            try:
                response = req.send(self.client, request)
                with self.lock:
                    self.sent += 1
                return {"sent": started, "received": utc_now(), **req.answer(response, request["route"])}
            except openai.APIStatusError as err:
                if err.status_code != 429 and err.status_code < 500:
                    raise fail(self.endpoint, err) from None
                self._failed(err)
            except (openai.APIConnectionError, openai.APITimeoutError) as err:
                self._failed(err)
            time.sleep(RETRY_PAUSE_S)

    def _failed(self, err: Exception) -> None:
        """Count a request that failed after all its retries; past the budget, end the job in one line."""
        with self.lock:
            self.failed += 1
            if self.failed <= self.endpoint.max_failed_requests:
                return
        what = f"HTTP {err.status_code}" if getattr(err, "status_code", None) else type(err).__name__
        raise PoevalError(f"{self.endpoint.where()}: {self.failed} requests failed after {self.endpoint.max_retries} "
                          f"retries each (max_failed_requests {self.endpoint.max_failed_requests}; last: {what}); "
                          f"the {len(self.log.answers)} answers that arrived are in {self.log.path}: rerun to resume")


def _attempt(entry: dict, api: str) -> Attempt:
    """An answer as an attempt: a chat answer cleaned first (the rules that fired go into ``info``); it
    ended within budget iff the server says it stopped (not ``length``)."""
    text, rules = entry["text"], ()
    if api == "chat":
        from poeval.generators import chat_answers

        cleaned = chat_answers.clean(text)
        text, rules = cleaned.text, cleaned.rules
    return Attempt(text.split("\n"), entry.get("finish_reason") == "stop", info={"entry": entry, "cleaned": rules})


def _stats(counted: list[Attempt], endpoint: Endpoint, body: dict, sampling: dict, style: str | None,
           session: _Session) -> dict:
    """The endpoint's part of the stats: the chat clean-up per rule, and what the counted requests were
    (as sent, their seeds, the server's reported models and fingerprints, times and token usage)."""
    entries = [a.info["entry"] for a in counted]
    usage: collections.Counter = collections.Counter()
    for entry in entries:
        usage.update(entry.get("usage") or {})
    times = sorted(t for e in entries for t in (e.get("sent"), e.get("received")) if t)
    return {
        "api": endpoint.api, "endpoint": public_url(endpoint.base_url),
        **({"style": style} if style is not None else {}),
        "cleaned": dict(sorted(collections.Counter(r for a in counted for r in a.info["cleaned"]).items())),
        "sent": {"request": body, "seeds": {"rule": "first 31 bits of sha256('<sampling.seed>/<index>')",
                                            "sampling_seed": sampling["seed"], "indices": len(entries)}},
        "reported": {"models": sorted({e["model"] for e in entries if e.get("model")}),
                     "system_fingerprints": sorted({e["system_fingerprint"] for e in entries
                                                    if e.get("system_fingerprint")})},
        "requests": {"first": times[0] if times else None, "last": times[-1] if times else None,
                     "usage": dict(sorted(usage.items())), "sent_now": session.sent,
                     "from_log": session.log.reused, "failed_now": session.failed},
    }


def _note_reported(endpoint: Endpoint, result: dict) -> None:
    """Say on stderr when the answers name another model than the one requested (a server may map names)."""
    import sys

    others = [m for m in result["reported"]["models"] if m != endpoint.model]
    if others:
        print(f"poeval sample: {endpoint.where()}: answers name the model {', '.join(others)}", file=sys.stderr)


class _terminate_as_interrupt:
    """SIGTERM (Snakemake stopping a job, a cluster's scancel) raises KeyboardInterrupt in the main thread,
    so the request threads stop and the client's connections close instead of the process vanishing."""

    def __enter__(self):
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._raise)
        return self

    @staticmethod
    def _raise(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
        return False
