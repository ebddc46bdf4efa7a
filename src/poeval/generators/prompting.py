"""What a prompted generator is asked: an instruction-tuned model's chat messages, or the text a base model
continues, with a requested rhyme scheme put into words (style conditioning by prompt).

A :class:`Prompt` is the params ``prompt`` block of one system (``$defs/prompt``) resolved for one language,
with the system's ``api``. The sample job carries it (:mod:`poeval.jobs.sample`), so a changed prompt makes
the samples stale and their stamp records it; the endpoint generator (:mod:`poeval.generators.endpoint`)
and an in-process chat checkpoint (:mod:`poeval.generators.lm.generation`) both render it here, so that the
same params ask the same thing of a served model and of a local one.

Templates name two fields: ``{scheme}``, the scheme in capitals (``ABAB``), and ``{scheme_words}``, which
lines rhyme, in the corpus language (:func:`scheme_words`). They are filled by plain replacement, never by
``str.format``, so a brace elsewhere in a user's prompt is sent as written.
"""

from __future__ import annotations

import dataclasses

from poeval import config
from poeval.errors import PoevalError
from poeval.poetry.style import SCHEMES

APIS = ("completions", "chat")
NODE = "#/$defs/prompt"
# The words of scheme_words per language: how a pair (or group) of rhyming lines is said, and the rest.
_WORDS = {
    "en": {"and": " and ", "rhyme": "lines {lines} rhyme", "alone": "line {line} rhymes with no other",
           "none": "no two lines rhyme", "all": "all four lines rhyme", "sep": ", "},
    "de": {"and": " und ", "rhyme": "die Verse {lines} reimen sich", "alone": "Vers {line} reimt sich auf keinen",
           "none": "kein Vers reimt sich auf einen anderen", "all": "alle vier Verse reimen sich", "sep": ", "},
}


def scheme_words(scheme: str, lang: str) -> str:
    """Which lines of ``scheme`` (e.g. ``abab``) rhyme, in ``lang``: "lines 1 and 3 rhyme, lines 2 and 4
    rhyme"; an unrhymed line is said only when another pair rhymes (``abcb``: "lines 2 and 4 rhyme, line 1
    rhymes with no other, line 3 rhymes with no other")."""
    if scheme not in SCHEMES:
        raise PoevalError(f"style {scheme!r} is not a four-line rhyme scheme (one of {', '.join(SCHEMES)})")
    words = _WORDS.get(lang) or _WORDS["en"]
    groups: dict[str, list[int]] = {}
    for position, letter in enumerate(scheme, 1):
        groups.setdefault(letter, []).append(position)
    rhymed = [g for g in groups.values() if len(g) > 1]
    if not rhymed:
        return words["none"]
    if len(rhymed[0]) == 4:
        return words["all"]
    said = [words["rhyme"].format(lines=_joined([str(p) for p in g], words["and"])) for g in rhymed]
    said += [words["alone"].format(line=g[0]) for g in groups.values() if len(g) == 1]
    return words["sep"].join(said)


def _joined(items: list[str], conjunction: str) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + conjunction + items[-1]


def fill(template: str, style: str, lang: str) -> str:
    """``template`` with ``{scheme}`` and ``{scheme_words}`` filled for the rhyme scheme ``style``."""
    return template.replace("{scheme}", style.upper()).replace("{scheme_words}", scheme_words(style, lang))


@dataclasses.dataclass(frozen=True)
class Prompt:
    """``api``: ``chat`` (messages) or ``completions`` (a text to continue); the other fields are the params
    ``prompt`` block for ``lang`` (``$defs/prompt``)."""

    api: str
    lang: str
    system: str | None
    user: str
    user_style: str
    text: str
    text_style: str | None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Prompt":
        known = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(data, dict) or sorted(data) != sorted(known):
            raise PoevalError(f"prompt: expected an object with exactly the keys {', '.join(known)}")
        return cls(**data)

    def messages(self, style: str | None) -> list[dict]:
        """The chat messages of one request: the system message if any, then the user's (asking for
        ``style`` in words when given)."""
        user = self.user if style is None else fill(self.user_style, style, self.lang)
        return ([{"role": "system", "content": self.system}] if self.system else []) + [
            {"role": "user", "content": user}]

    def completion(self, style: str | None) -> str:
        """The text a completions request continues (asking for ``style`` when given)."""
        if style is None:
            return self.text
        if self.text_style is None:
            raise PoevalError("a style was requested from a completions prompt without prompt.text_style "
                              "(the text that asks for a rhyme scheme)")
        return fill(self.text_style, style, self.lang)

    def sent(self, style: str | None) -> dict:
        """What a request of this prompt carries, for the stamp: the messages or the text."""
        return {"messages": self.messages(style)} if self.api == "chat" else {"prompt": self.completion(style)}


def prompt_for(model: dict, lang: str) -> Prompt | None:
    """The prompt a ``models`` entry samples with in ``lang``: None for a checkpoint that starts at its BOS
    (an in-process model with ``api: completions``, the paper's start), else the entry's ``prompt`` block
    with the schema's defaults, each per-language value resolved."""
    api = model.get("api")   # required of an endpoint; a checkpoint's default (completions) starts at its BOS
    if model.get("arch") != "endpoint" and api != "chat":
        return None
    block = config.resolve_section(model.get("prompt") or {}, NODE, "prompt")
    values = {key: config.for_lang(value, lang) for key, value in block.items()}
    missing = [key for key in ("user", "user_style") if values[key] is None]
    if missing:
        raise PoevalError(f"prompt.{missing[0]}: no text for language '{lang}'")
    return Prompt(api=api, lang=lang, **values)
