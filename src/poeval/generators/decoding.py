"""A decoding config (params ``decoding.<name>``) as a typed record, parsed once.

Two methods, told apart by the config's ``method`` key (``ancestral`` | ``contrastive``). A config written
without it (params.yaml, the overlays) gets it from the params schema, whose two shapes of
``$defs/decoding`` say which method a set of keys means and hold every default: :func:`parse_decoding`
fills and checks the config through the schema and builds :class:`Ancestral` or :class:`Contrastive`.
Every sampler (the transformers' and both ports), the registry and the sample job read these records, never
the dict.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from poeval import config
from poeval.errors import PoevalError

NODE = "#/$defs/decoding"   # the params schema's decoding config: its shapes, checks and defaults
STOCHASTIC = "stochastic"
FLOATS = frozenset({"temperature", "top_p", "penalty_alpha", "score_temperature"})


@dataclasses.dataclass(frozen=True)
class Decoding:
    """Base of the two methods: ``to_dict`` writes the config with its ``method`` (the form a job's JSON and
    a sample's stamp carry); ``from_dict`` reads any decoding config (:func:`parse_decoding`)."""

    METHOD: ClassVar[str] = ""

    @property
    def method(self) -> str:
        return self.METHOD

    def to_dict(self) -> dict[str, Any]:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {"method": self.METHOD} | {k: v for k, v in fields.items() if v is not None}

    @classmethod
    def from_dict(cls, data: Any) -> "Decoding":
        decoding = parse_decoding(data)
        if cls is not Decoding and not isinstance(decoding, cls):
            raise PoevalError(f"decoding: expected method {cls.METHOD}, got {decoding.method}")
        return decoding


@dataclasses.dataclass(frozen=True)
class Ancestral(Decoding):
    """Ancestral sampling under transformers' temperature, top-k (0: off) and top-p (1.0: off) warpers."""

    METHOD: ClassVar[str] = "ancestral"
    temperature: float
    top_p: float
    top_k: int


@dataclasses.dataclass(frozen=True)
class Contrastive(Decoding):
    """Contrastive search (:mod:`poeval.generators.contrastive`). ``mode``: ``stochastic`` draws each token
    among the top-k from softmax(contrastive score / score_temperature); ``argmax`` is Su et al.'s
    deterministic search after a first token drawn by ancestral sampling; ``paper`` is what the paper's code
    ran: its sampling script passed do_sample=True with penalty_alpha and top_k, and transformers 4 then
    chose plain sampling (GenerationConfig.get_generation_mode: contrastive search only when do_sample is
    False), so penalty_alpha had no effect and the cells are top-k sampling at temperature 1.
    ``score_temperature`` is None except in mode stochastic."""

    METHOD: ClassVar[str] = "contrastive"
    top_k: int
    penalty_alpha: float
    mode: str
    score_temperature: float | None = None

    @property
    def search_temperature(self) -> float:
        """The search's temperature over the candidates' scores: 0 (the argmax) unless mode stochastic."""
        return self.score_temperature if self.mode == STOCHASTIC else 0.0


METHODS: dict[str, type[Decoding]] = {cls.METHOD: cls for cls in (Ancestral, Contrastive)}


def parse_decoding(data: Any, where: str = "decoding") -> Decoding:
    """The typed decoding of a config (``where``: its params key, named in errors): checked and filled by
    the params schema (unknown keys, missing ones, a method the keys do not fit are errors naming the key),
    and ``score_temperature`` refused outside mode stochastic (the schema fills its default either way, so
    it cannot tell a given one from its own)."""
    if isinstance(data, Decoding):
        return data
    if not isinstance(data, dict):
        raise PoevalError(f"{where}: a decoding config is a mapping, got {type(data).__name__}")
    full = config.resolve_section(data, NODE, where)
    cls = METHODS[full.pop("method")]
    if cls is Contrastive and full["mode"] != STOCHASTIC:
        if "score_temperature" in data:
            raise PoevalError(f"{where}: score_temperature applies to mode stochastic only, not {full['mode']!r}")
        full["score_temperature"] = None
    # JSON has one number type: 1 and 1.0 are the same temperature
    return cls(**{k: float(v) if k in FLOATS and v is not None else v for k, v in full.items()})


def ancestral_only(decoding: Decoding, arch: str) -> Ancestral:
    """``decoding`` for a generator that samples ancestrally only (the poetry ports): a contrastive config is
    a clear error naming ``arch``."""
    if not isinstance(decoding, Ancestral):
        raise PoevalError(f"{arch} samples ancestrally; contrastive search (penalty_alpha) is only defined "
                          "for the transformer generators — leave it out of this system's decodings")
    return decoding


def as_run(decoding: Decoding) -> Decoding:
    """The decoding a sampler runs: a contrastive config of mode ``paper`` is top-k sampling at temperature 1
    (:class:`Contrastive`), every other config itself."""
    if isinstance(decoding, Contrastive) and decoding.mode == "paper":
        return Ancestral(temperature=1.0, top_p=1.0, top_k=decoding.top_k)
    return decoding
