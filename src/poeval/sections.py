"""A params section as a typed record: a frozen dataclass whose fields are the section's keys, read from
the section as written or resolved (the schema's defaults filled in, checked, an unknown key named) and
written back as the plain mapping the params give. The jobs (:mod:`poeval.jobs`) hold such records, and the
library functions that a job's command calls receive them, so that no step re-parses its section."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, TypeVar

from poeval import config
from poeval.errors import PoevalError

S = TypeVar("S", bound="Section")


@dataclasses.dataclass(frozen=True)
class Section:
    """Base of the records: ``POINTER`` is the section's schema node, ``WHERE`` its params key (named in errors)."""

    POINTER: ClassVar[str] = ""
    WHERE: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls: type[S], given: Any, where: str | None = None) -> S:
        """The record of a section's value: with a ``POINTER``, the schema's defaults filled and checked (an
        unknown key, a bad value: one error naming ``where.<key>``); without one (a record a job builds
        from sections already resolved), exactly its fields, an unknown or missing key named."""
        where = where or cls.WHERE
        names = [f.name for f in dataclasses.fields(cls)]
        if cls.POINTER:
            given = config.resolve_section({} if given is None else given, cls.POINTER, where)
        elif not isinstance(given, dict):
            raise PoevalError(f"{where}: expected a JSON object, got {type(given).__name__}")
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise PoevalError(f"{where}: unknown key {', '.join(map(repr, unknown))} (known: {', '.join(names)})")
        missing = [name for name in names if name not in given]
        if missing:
            raise PoevalError(f"{where}: missing key {', '.join(map(repr, missing))}")
        return cls(**{name: given[name] for name in names})


def of_schema(name: str, pointer: str, where: str) -> type[Section]:
    """The record type of the schema section at ``pointer``: the one a module declares with that ``POINTER``
    (typed fields), else one made here with a field per property (a section whose keys are many and plain: a
    metric family's, an MLM entry), filled and checked by the schema when read. One type per section."""
    declared = [c for c in _subclasses(Section) if c.POINTER == pointer]
    if declared:
        return declared[0]
    return dataclasses.make_dataclass(name, [(key, Any) for key in config.properties(pointer)], bases=(Section,),
                                      frozen=True, namespace={"POINTER": pointer, "WHERE": where})


def _subclasses(cls: type) -> list[type]:
    return [c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))]
