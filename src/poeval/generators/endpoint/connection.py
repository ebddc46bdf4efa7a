"""An OpenAI-compatible endpoint as poeval talks to it: its params (one record), the key read from the
environment variable that params name, the official ``openai`` client, and errors in one line each.

The key never leaves this module's client: params hold only the *name* of its variable
(``api_key_env``), and :func:`public_url` drops credentials and the query string from every URL that a
stamp, a log line or an error shows.
"""

from __future__ import annotations

import dataclasses
import os
import re
from urllib.parse import urlsplit, urlunsplit

from poeval.errors import PoevalError

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Servers whose /v1/models need not list a model that requests may name (transformers serve loads any folder).
UNLISTED_OK = frozenset({"transformers"})
NO_KEY = "none"   # the openai client needs some key; a local server without auth ignores it


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """Params ``models.<system>`` of ``arch: endpoint`` for one language (``$defs/endpoint_model``), the keys
    that decide how requests are sent; ``name`` is the system, for errors."""

    name: str | None
    base_url: str
    model: str
    api: str
    api_key_env: str | None
    server: str
    max_concurrency: int
    timeout: float
    max_retries: int
    max_failed_requests: int

    FIELDS = ("base_url", "model", "api", "api_key_env", "server", "max_concurrency", "timeout", "max_retries",
              "max_failed_requests")

    @classmethod
    def from_params(cls, entry: dict, name: str | None = None) -> "Endpoint":
        """From a resolved ``models`` entry (defaults filled, per-language keys resolved)."""
        return cls(name=name, **{key: entry[key] for key in cls.FIELDS})

    def to_dict(self) -> dict:
        """What a checkpoint manifest records: every field, the URL without credentials."""
        return {key: getattr(self, key) for key in self.FIELDS} | {"base_url": public_url(self.base_url),
                                                                   "name": self.name}

    def where(self) -> str:
        """The endpoint in an error line: its public URL and model."""
        return f"endpoint {public_url(self.base_url)} (model {self.model!r})"

    def client(self):
        """The ``openai`` client: the key from ``api_key_env``, the timeout and the retries (exponential back-off
        on 408, 409, 429, 5xx and connection errors, honouring Retry-After) of params."""
        import openai

        return openai.OpenAI(base_url=self.base_url, api_key=api_key(self.api_key_env), timeout=self.timeout,
                             max_retries=self.max_retries)


def public_url(url: str) -> str:
    """``url`` without user, password, query string or fragment: what stamps, logs and errors may show."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def api_key(env: str | None) -> str:
    """The key held by the environment variable ``env`` (None: a server without auth)."""
    if env is None:
        return NO_KEY
    value = os.environ.get(env)
    if not value:
        raise PoevalError(f"api_key_env names the environment variable {env}, which is not set: export it with "
                          "the endpoint's key")
    return value


def key_problems(name: str, entry: dict) -> list[str]:
    """Params problems of an endpoint entry that could carry a secret, each said without echoing the value:
    a literal ``api_key``, an ``api_key_env`` that is no variable name (a key pasted in its place)."""
    where = f"key models.{name}"
    why = "params are copied into stamps, logs and git; give the NAME of an environment variable that holds the key"
    problems = [f"{where}.api_key: a literal key is refused ({why}, as api_key_env: OPENAI_API_KEY)"
                for key in entry if key == "api_key"]
    env = entry.get("api_key_env")
    if env is not None and (not isinstance(env, str) or not ENV_NAME.match(env)):
        problems.append(f"{where}.api_key_env: this looks like a key, not a variable name ({why})")
    return problems


def fail(endpoint: Endpoint, err: Exception) -> PoevalError:
    """A request error that retrying cannot fix (401, 403, 404, 400, 422, a wrong model) as one line that
    names the endpoint and model: the server's status and message, never the key or the request."""
    status = getattr(err, "status_code", None)
    detail = _message(err)
    hint = {401: "the key is missing or wrong (api_key_env)", 403: "the key may not use this model",
            404: "no such route or model at this base_url"}.get(status, "the server refused the request")
    return PoevalError(f"{endpoint.where()}: HTTP {status}: {hint}" + (f": {detail}" if detail else ""))


def _message(err: Exception) -> str:
    """The server's own error message, one line and short, without anything that looks like a key."""
    body = getattr(err, "body", None)
    text = body.get("message") if isinstance(body, dict) else None
    text = str(text or getattr(err, "message", "") or "")
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\b(sk|key|Bearer)[-_ ]?[A-Za-z0-9_\-]{8,}", "<redacted>", text)[:200]
