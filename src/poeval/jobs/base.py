"""The machinery every job type shares: a frozen dataclass that writes itself as sorted JSON and is read
back strictly (an unknown or missing key is an error naming the job kind and the key, never ignored)."""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from typing import Any, Callable, ClassVar, TypeVar

from poeval import paths
from poeval.errors import PoevalError

J = TypeVar("J", bound="Job")


@dataclasses.dataclass(frozen=True)
class Job:
    """Base of every job type. Subclasses are frozen dataclasses with a ``KIND`` (the job's name in errors
    and in the JSON's ``kind`` key). A field whose type has ``from_dict``/``to_dict`` (a nested record such
    as a typed decoding) is written and read through them."""

    KIND: ClassVar[str] = "job"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.KIND} | {f.name: _out(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def recorded(self) -> dict[str, Any]:
        """What the output's provenance stamp records of this job, and what `poeval stale` and `poeval
        provenance` compare it with (the job rebuilt from the params of now): by default its fields."""
        return {k: v for k, v in self.to_dict().items() if k != "kind"}

    def to_json(self) -> str:
        """The command-line value: sorted keys, so that the string (and Snakemake's params trigger) is stable."""
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls: type[J], data: dict[str, Any]) -> J:
        if not isinstance(data, dict):
            raise PoevalError(f"{cls.KIND} job: expected a JSON object, got {type(data).__name__}")
        data = dict(data)
        kind = data.pop("kind", cls.KIND)
        if kind != cls.KIND:
            raise PoevalError(f"expected a {cls.KIND} job, got a '{kind}' job")
        check_keys(data, [f.name for f in dataclasses.fields(cls)], f"{cls.KIND} job")
        hints = typing.get_type_hints(cls)
        return cls(**{name: _in(hints[name], value) for name, value in data.items()})


def check_keys(data: dict, known: list[str], what: str) -> None:
    """Exactly the keys ``known``: a key a command does not read, or one it needs, is said by name."""
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise PoevalError(f"{what}: unknown key {', '.join(map(repr, unknown))} (known: {', '.join(known)})")
    missing = [k for k in known if k not in data]
    if missing:
        raise PoevalError(f"{what}: missing key {', '.join(map(repr, missing))}")


def parse(cls: type[J], text: str) -> J:
    """A job from its command-line JSON (what a rule passes as ``--job``)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise PoevalError(f"{cls.KIND} job: not JSON ({err.msg} at character {err.pos})") from None
    return cls.from_dict(data)


def _out(value: Any) -> Any:
    return value.to_dict() if hasattr(value, "to_dict") else value


def _in(hint: Any, value: Any) -> Any:
    """A field's value from JSON: through ``from_dict`` where the field's type (or one member of an
    ``X | None``) has one; otherwise as it is (plain JSON values)."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    for tp in typing.get_args(hint) if union else (hint,):
        if value is not None and hasattr(tp, "from_dict"):
            return tp.from_dict(value)
    return value


def stamp_beside(output: Callable[..., str]) -> Callable[..., str]:
    """The path function of the stamp beside ``output``'s file (:func:`poeval.paths.stamp_file`), with its
    wildcards: where a step whose output cannot hold a stamp keeps it."""
    @functools.wraps(output)
    def stamped(*args: str, **wildcards: str) -> str:
        return paths.stamp_file(output(*args, **wildcards))
    return stamped


def _always(params: dict, wildcards: dict) -> bool:
    return True


def _nothing(**wildcards: str) -> tuple[str, ...]:
    return ()


@dataclasses.dataclass(frozen=True)
class Step:
    """One rule of the workflow that runs a poeval command with a typed job, as `poeval stale` and `poeval
    provenance` find its outputs again.

    ``build(params, **wildcards)``: the job's one builder, from the resolved params
    (:func:`poeval.params.resolve`) and the rule's wildcards; the rule passes its JSON as ``--job``, and the
    command's stamp records :meth:`Job.recorded`. ``stamped(**wildcards)``: the file holding the output's
    stamp; ``output(**wildcards)``: what Snakemake's ``--forcerun`` gets (default: the stamped file);
    ``applies(params, wildcards)``: whether a file matching ``stamped`` is this rule's in this run;
    ``products``: what the rule writes besides ``output`` that later stamps name as their inputs."""

    rule: str
    build: Callable[..., Job]
    stamped: Callable[..., str]
    output: Callable[..., str] | None = None
    applies: Callable[[dict, dict], bool] = _always
    products: Callable[..., tuple[str, ...]] = _nothing

    def job(self, params: dict, wildcards: dict) -> Job:
        return self.build(params, **wildcards)

    def forced(self, **wildcards: str) -> str:
        return (self.output or self.stamped)(**wildcards)
