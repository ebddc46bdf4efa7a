"""Real OpenAI-compatible servers on 127.0.0.1 for the tests of the endpoint generator.

Which server for which test:

- :class:`Served` (``transformers serve``, the session fixture ``served_tiny`` in conftest.py): every normal
  path: sampling, seeds, chat and completions, the request count, a server killed or restarted mid-run.
  A real server, so a test sees what vLLM, llama.cpp or a hosted API would give it.
- :class:`FaultServer` (a small stdlib HTTP server that follows a script): only the faults a real server
  cannot be made to give on demand: 429 storms (with or without Retry-After), 5xx, 401/403/404, hung sockets,
  connections closed without a response; and the prompt log-probabilities (``echo`` + ``logprobs``) that vLLM
  gives and transformers serve does not, for BPoMP's endpoint scorer. It never stands in for normal sampling:
  its "ok" text is canned.

What ``transformers serve`` needs (measured with transformers 5.24): OMP_NUM_THREADS=1 (two threads were
5-16x slower on a loaded machine); sampling only through ``extra_body=generation_config(...)`` (a top-level
``top_k`` gets 422); a non-empty prompt (an empty completions prompt crashes it with a 500: send the model's
BOS text, ``Served.bos``); a chat template in the tokenizer for /v1/chat/completions
(:func:`with_chat_template`). A request the client gave up on keeps generating on the server.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import cached_property
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HOST = "127.0.0.1"

# The smallest chat template that /v1/chat/completions accepts: the BOS text, then each message's content
# on its own line; the model continues from there.
CHAT_TEMPLATE = "{{ bos_token }}{% for message in messages %}{{ message['content'] }}\n{% endfor %}"


def free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago (another process may take it before we bind it:
    :class:`Served` retries on a clash)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def generation_config(**config) -> dict:
    """The ``extra_body`` that turns sampling on in ``transformers serve`` (default: top-k 10)."""
    return {"generation_config": json.dumps({"do_sample": True, "top_k": 10, **config})}


def with_chat_template(model: Path, out: Path, template: str = CHAT_TEMPLATE) -> Path:
    """A copy of the model folder ``model`` at ``out`` whose tokenizer has ``template`` as its chat template
    (a scratch tokenizer has none, and /v1/chat/completions answers 500 without one). ``model`` is unchanged."""
    shutil.copytree(model, out)
    (out / "chat_template.jinja").write_text(template, "utf-8")
    return out


# ---------------------------------------------------------------------------------------------- transformers serve

class ServerError(RuntimeError):
    """A server that died or never answered /health; the message ends with its log's tail."""


_LIVE: set[subprocess.Popen] = set()   # every server started and not yet stopped, for the exit hook


@atexit.register
def _kill_live() -> None:
    for proc in list(_LIVE):
        _signal_group(proc, signal.SIGKILL)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)   # its own session: the group id is its pid
    except ProcessLookupError:
        pass


def _transformers_cli() -> str:
    beside = Path(sys.executable).parent / "transformers"
    found = str(beside) if beside.exists() else shutil.which("transformers")
    if not found:
        raise ServerError("no `transformers` command beside this Python or on PATH")
    return found


def _death_signal() -> list[str]:
    """A prefix that kills the server when this process dies, even by SIGKILL (the exit hook then never
    runs): util-linux setpriv's parent-death signal, where there is one. Linux sends it when the *thread* that
    started the server ends: start servers from the main thread (fixtures do)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


_ACCESS = re.compile(r'"POST (\S+) HTTP/[\d.]+" \d{3}')
_CLASH = ("address already in use", "errno 98")


class Served:
    """``transformers serve`` of the model ``model`` (a folder or an id it can load offline) on 127.0.0.1,
    its stdout and stderr appended to ``log_dir/serve-<port>.log``; a context manager.

    ``port`` None picks a free one (and another on a clash). ``timeout``: seconds to wait for /health.
    ``args``: more options for ``transformers serve``. ``started_in``: seconds the last start took.
    """

    def __init__(self, model: str | Path | None, log_dir: str | Path, *, port: int | None = None,
                 timeout: float = 120.0, args: tuple[str, ...] = (), cwd: str | Path | None = None):
        # the id to request: a forced model is listed under the path it was given; None: no forced model, the
        # server loads whatever folder a request names (relative to ``cwd``, e.g. a workflow's models/)
        self.model = str(model) if model is not None else None
        self.cwd = cwd
        self.log_dir = Path(log_dir)
        self.port = port
        self.timeout = timeout
        self.args = tuple(args)
        self.started_in: float | None = None
        self._proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    @property
    def log(self) -> Path:
        return self.log_dir / f"serve-{self.port}.log"

    @cached_property
    def bounds(self) -> tuple[str, str]:
        """The model's BOS and EOS texts (poeval.generators.checkpoint.text_bounds)."""
        from transformers import AutoTokenizer

        from poeval.generators.checkpoint import text_bounds

        return text_bounds(AutoTokenizer.from_pretrained(self.model))

    @property
    def bos(self) -> str:
        """The text to start a prompt with: an empty prompt crashes the server."""
        return self.bounds[0]

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __enter__(self) -> Served:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> Served:
        """Start the server and wait for /health; on a port clash, retry on another port (if it was ours to
        pick)."""
        pick = self.port is None
        for attempt in range(3):
            if pick:
                self.port = free_port()
            try:
                self._start_once()
                return self
            except ServerError as err:
                if not (pick and attempt < 2 and any(c in str(err).lower() for c in _CLASH)):
                    raise
        raise AssertionError("unreachable")

    def restart(self) -> Served:
        """Stop the server if it runs, then start it again on the same port with the same model."""
        self.stop()
        self._start_once()
        return self

    def kill(self) -> None:
        """SIGKILL, as a server killed mid-run: no clean shutdown, open connections dropped."""
        if self.alive:   # only a live one: a reaped pid may already be another process's
            _signal_group(self._proc, signal.SIGKILL)
            self._reap(5)

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds (uvicorn waits for requests in flight)."""
        if not self.alive:
            return
        _signal_group(self._proc, signal.SIGTERM)
        try:
            self._proc.wait(grace)
        except subprocess.TimeoutExpired:
            _signal_group(self._proc, signal.SIGKILL)
        self._reap(5)

    def requests(self, path: str | None = "/v1/completions") -> int:
        """How many POSTs to ``path`` (None: to any path) the server answered, counted from uvicorn's access
        lines in the log over every start on this port. A line is written as the response starts, so a request
        whose response the client has read is counted; one the client gave up on is counted once the server
        answers it."""
        if not self.log.exists():
            return 0
        posts = _ACCESS.findall(self.log.read_text("utf-8", errors="replace"))
        return sum(1 for p in posts if path is None or p.split("?", 1)[0] == path)

    def log_tail(self, lines: int = 40) -> str:
        if not self.log.exists():
            return "(no log)"
        return "\n".join(self.log.read_text("utf-8", errors="replace").splitlines()[-lines:])

    # -- internals

    def _start_once(self) -> None:
        if self.alive:
            raise ServerError(f"already running on port {self.port}")
        began = time.monotonic()
        self._spawn()
        self._wait_healthy(began + self.timeout)
        self.started_in = time.monotonic() - began

    def _spawn(self) -> None:
        cmd = [*_death_signal(), _transformers_cli(), "serve", *([self.model] if self.model else []), "--host", HOST,
               "--port", str(self.port), *self.args]
        # one thread: OpenMP threads fight on a loaded machine; unbuffered: the log is read while it runs
        env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                   PYTHONUNBUFFERED="1")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            out.write(f"\n==== start {time.strftime('%H:%M:%S')}: {cmd}\n".encode())
            out.flush()
            self._proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          env=env, start_new_session=True, cwd=self.cwd)
        _LIVE.add(self._proc)

    def _wait_healthy(self, deadline: float) -> None:
        url = f"http://{HOST}:{self.port}/health"
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self._reap(0)
                raise ServerError(f"transformers serve exited ({self._proc.returncode}):\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        self.kill()
        raise ServerError(f"transformers serve gave no /health in {self.timeout:.0f} s:\n{self.log_tail()}")

    def _reap(self, timeout: float) -> None:
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        if self._proc.poll() is not None:
            _LIVE.discard(self._proc)


# ---------------------------------------------------------------------------------------------- the fault injector

@dataclass
class Received:
    """One request a FaultServer received: ``headers`` with lower-case names; ``body`` the parsed JSON (None
    when there was none or it was not JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict | None


_ERRORS = {  # status -> (the error type the OpenAI API gives, a message)
    400: ("invalid_request_error", "bad request"),
    401: ("invalid_request_error", "Incorrect API key provided"),
    403: ("permission_error", "You are not allowed to use this model"),
    404: ("invalid_request_error", "The model does not exist"),
    429: ("rate_limit_error", "Rate limit reached"),
    500: ("server_error", "The server had an error while processing your request"),
    503: ("server_error", "The engine is currently overloaded"),
}
_KINDS = {"ok": 2, "logprobs": 3, "status": 3, "hang": 2, "close": 1}   # action kind -> its tuple's length


def _check(action: tuple) -> tuple:
    if not action or action[0] not in _KINDS or len(action) != _KINDS[action[0]]:
        raise ValueError(f"not a FaultServer action: {action!r} (ok/text, logprobs/tokens/token_logprobs, "
                         "status/code/retry_after, hang/s, close)")
    if action[0] == "status" and action[1] not in _ERRORS:
        raise ValueError(f"no error body for status {action[1]}; known: {sorted(_ERRORS)}")
    return action


class FaultServer:
    """A threaded HTTP server on 127.0.0.1 that speaks enough of the OpenAI API for the ``openai`` client
    (GET /v1/models, POST /v1/completions and /v1/chat/completions) and answers each POST with the next action
    of ``script``, then with ``default``; a context manager. Actions:

    - ``("ok", text)``: a well-formed completion (or chat completion) of ``text``, echoing the request's model;
    - ``("logprobs", tokens, token_logprobs)``: a /v1/completions answer to ``echo`` + ``logprobs`` as vLLM gives
      it: the prompt's ``tokens`` with their ``token_logprobs`` (the first None), then one generated token
      (``GENERATED``) when ``max_tokens`` is not 0; ``usage.prompt_tokens`` is ``len(tokens)``. What a real
      server with prompt log-probabilities answers, for the tests that cannot run one (vLLM needs a GPU);
    - ``("status", code, retry_after)``: that status (400, 401, 403, 404, 429, 500, 503) with an OpenAI-style
      error body, and a Retry-After header when ``retry_after`` (seconds) is not None;
    - ``("hang", seconds)``: read the request, answer nothing for ``seconds``, then close (a hung socket);
    - ``("close",)``: close the connection without a response.

    ``received``: every request, in order (:class:`Received`); ``posts``: the POSTs among them.
    Streaming is not spoken (a ``stream`` request gets 400).
    """

    def __init__(self, script=(), default: tuple = ("ok", "the sea is calm tonight"), model: str = "fault-model"):
        self.script = [_check(tuple(a)) for a in script]
        self.default = _check(tuple(default))
        self.model = model
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()   # wakes hanging handlers at shutdown
        self._conns: set[socket.socket] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self._httpd.server_address[1]}/v1"

    @property
    def posts(self) -> list[Received]:
        return [r for r in self.received if r.method == "POST"]

    def __enter__(self) -> FaultServer:
        self._httpd = ThreadingHTTPServer((HOST, 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fault-server", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._closing.set()
        self._httpd.shutdown()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:   # idle keep-alive connections: their handlers block reading until the socket closes
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()
        self._thread.join(5)

    def _next(self, request: Received) -> tuple:
        with self._lock:
            self.received.append(request)
            if request.method != "POST":
                return ("get",)
            return self.script.pop(0) if self.script else self.default


def _handler(server: FaultServer):
    class Handler(_FaultHandler):
        fault = server
    return Handler


class _FaultHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive, as the openai client's connection pool expects
    timeout = 30                    # an idle connection ends after this many seconds
    fault: FaultServer

    def log_message(self, *args) -> None:   # quiet: the record is .received
        pass

    def setup(self) -> None:
        super().setup()
        with self.fault._lock:
            self.fault._conns.add(self.connection)

    def finish(self) -> None:
        with self.fault._lock:
            self.fault._conns.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def do_GET(self) -> None:
        request = self._record(None)
        self.fault._next(request)
        if request.path.rstrip("/") == "/v1/models":
            self._json(200, {"object": "list", "data": [
                {"id": self.fault.model, "object": "model", "created": 0, "owned_by": "fault-server"}]})
        else:
            self._error(404, "not found")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = self._record(self.rfile.read(length) if length else b"")
        action = self.fault._next(request)
        kind = action[0]
        if kind == "hang":
            self.fault._closing.wait(action[1])
            self.close_connection = True
        elif kind == "close":
            self.close_connection = True
        elif kind == "status":
            self._error(action[1], _ERRORS[action[1]][1], action[2])
        elif (request.body or {}).get("stream"):
            self._error(400, "FaultServer does not stream")
        elif kind == "logprobs" and request.path == "/v1/completions":
            self._json(200, _echoed(request, action[1], action[2]))
        elif request.path in ("/v1/completions", "/v1/chat/completions"):
            self._json(200, _completion(request, action[1]))
        else:
            self._error(404, f"no route {request.path}")

    def _record(self, raw: bytes | None) -> Received:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        return Received(self.command, self.path.split("?", 1)[0], headers, body)

    def _json(self, status: int, payload: dict, extra: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, retry_after: float | None = None) -> None:
        kind = _ERRORS.get(status, ("invalid_request_error", ""))[0]
        extra = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        self._json(status, {"error": {"message": message, "type": kind, "param": None, "code": status}}, extra)


_COUNTER = itertools.count(1)


def _completion(request: Received, text: str) -> dict:
    """A completions or chat completions response of ``text`` (``n`` choices, all ``text``) for ``request``."""
    body = request.body or {}
    chat = request.path.endswith("/chat/completions")
    prompt = body.get("messages") if chat else body.get("prompt")
    choice = {"message": {"role": "assistant", "content": text}} if chat else {"text": text, "logprobs": None}
    n = int(body.get("n") or 1)
    return {
        "id": f"{'chatcmpl' if chat else 'cmpl'}-test-{next(_COUNTER)}",
        "object": "chat.completion" if chat else "text_completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [{"index": i, **choice, "finish_reason": "stop"} for i in range(n)],
        "usage": {"prompt_tokens": len(json.dumps(prompt).split()), "completion_tokens": len(text.split()),
                  "total_tokens": len(json.dumps(prompt).split()) + len(text.split())},
        "system_fingerprint": "fp-test",
    }


GENERATED = ("!", -0.5)   # the token a "logprobs" action generates after the prompt, and its log-probability


def _echoed(request: Received, tokens: list[str], token_logprobs: list[float | None]) -> dict:
    """A completions response to ``echo`` + ``logprobs``: the prompt's ``tokens`` and ``token_logprobs``, then
    the generated token unless ``max_tokens`` is 0 (what vLLM answers; its text is the prompt and the token)."""
    body = request.body or {}
    generate = body.get("max_tokens", 16) != 0
    toks = list(tokens) + [GENERATED[0]] * generate
    offsets = [sum(len(t) for t in toks[:i]) for i in range(len(toks))]
    logprobs = {"tokens": toks, "token_logprobs": list(token_logprobs) + [GENERATED[1]] * generate,
                "text_offset": offsets, "top_logprobs": None}
    return {
        "id": f"cmpl-test-{next(_COUNTER)}", "object": "text_completion", "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [{"index": 0, "text": "".join(toks), "logprobs": logprobs, "finish_reason": "length"}],
        "usage": {"prompt_tokens": len(tokens), "completion_tokens": int(generate),
                  "total_tokens": len(tokens) + int(generate)},
    }
