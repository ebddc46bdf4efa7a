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
        """The record of a section's value: the schema's defaults filled and checked (an unknown key, a bad
        value: one error naming ``where.<key>``)."""
        where = where or cls.WHERE
        filled = config.resolve_section({} if given is None else given, cls.POINTER, where)
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [name for name in names if name not in filled]
        if missing:
            raise PoevalError(f"{where}: missing key {', '.join(map(repr, missing))}")
        return cls(**{name: filled[name] for name in names})
