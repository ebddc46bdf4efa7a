"""Cleaning of chat answers into a quatrain (poeval.generators.chat_answers): each rule on hand-made
answers, the answers it must leave alone, properties (idempotent, a bare quatrain untouched, no word
changed), and 60 real answers read by hand.

Provenance of tests/fixtures/chat_answers_smollm2.jsonl (collected 2026-12-07): SmolLM2-135M-Instruct as
imported by ``poeval import smollm2-135m --out /tmp/smol`` (the Q4_1 GGUF, dequantized to float32), served
on loopback by transformers 5.24.0 (``OMP_NUM_THREADS=1 transformers serve /tmp/smol --host 127.0.0.1
--port 8790``) and asked with the openai client 3.63.0::

    client.chat.completions.create(model="/tmp/smol", messages=[...], temperature=0.7, max_tokens=120,
                                   seed=SEED, extra_body={"generation_config": json.dumps({"do_sample": True})})

for seeds 1 to 60, the five prompts in turn (seed 1: the first prompt, seed 2: the second, ...; the third
has a system message). Each line holds ``prompt``, ``system``, ``seed``, ``temperature``, ``text`` (the
answer as the server sent it) and ``finish_reason``.
"""

import json
import re
from pathlib import Path

import pytest

from poeval.generators.chat_answers import RULES, Cleaned, clean
from poeval.generators.sampling import check_quatrain

ANSWERS = Path(__file__).parents[1] / "fixtures" / "chat_answers_smollm2.jsonl"
POEM = "The sea is wide and deep\nThe gulls above it cry\nAnd sailors, lulled to sleep,\nDream of the open sky"
VERSES = POEM.split("\n")


def _answers() -> dict[int, dict]:
    return {row["seed"]: row for row in map(json.loads, ANSWERS.read_text(encoding="utf-8").splitlines())}


def _valid(text: str, finish_reason: str = "stop") -> bool:
    return check_quatrain(text.split("\n"), finish_reason == "stop")[0] is not None


# --- each rule on a hand-made answer -------------------------------------------------------------

@pytest.mark.parametrize("text, rules", [
    (f"```\n{POEM}\n```", ("fence",)),
    (f"```text\n{POEM}\n```", ("fence",)),
    ("**The sea** is wide and deep\nThe gulls above it *cry*\nAnd sailors, lulled to sleep,\n"
     "Dream of the `open` __sky__", ("emphasis",)),
    (f"Here is a quatrain:\n\n{POEM}", ("preamble",)),
    (f"Here is a quatrain:\n{POEM}", ("preamble",)),
    (f"Sure! I'll write a poem about the sea.\n\n{POEM}", ("preamble",)),
    (f"Certainly, a poem of four lines\n\n{POEM}", ("preamble",)),
    (f"The Sea\n\n{POEM}", ("title",)),
    (f"**The Sea**\n{POEM}", ("emphasis", "title")),
    (f"## The Sea\n{POEM}", ("heading", "title")),
    (f"# The Sea\n\n{POEM}", ("heading", "title")),
    (f'"The Sea"\n{POEM}', ("title",)),
    (f"Title: The Sea\n{POEM}", ("title",)),
    (f"{POEM}\n\nThis poem uses an ABAB rhyme scheme", ("closing",)),
    (f"{POEM}\n\nI hope you enjoy it! The sea is a wonderful subject for a short poem of four lines.",
     ("closing",)),
    (f"{POEM}\n\n#sea #poetry #quatrain", ("closing",)),
    ("1. The sea is wide and deep\n2. The gulls above it cry\n3. And sailors, lulled to sleep,\n"
     "4) Dream of the open sky", ("numbering",)),
    ("The sea is wide and deep\nThe gulls above it cry\n\nAnd sailors, lulled to sleep,\nDream of the open sky",
     ("stanza_break",)),
    (f"Here is a quatrain:\n\n```\n**The Sea**\n\n{POEM}\n```\n\nThis quatrain rhymes ABAB.\n\n#poem",
     ("fence", "emphasis", "preamble", "title", "closing")),
])
def test_each_rule_gives_the_poem(text, rules):
    assert clean(text) == Cleaned(POEM, rules)


GEDICHT = "Das Meer ist weit und tief\nDie Möwen schrein im Wind\nDer Seemann, der da schlief,\nträumt wie ein Kind"


def test_german_answer():
    text = f"Hier ist ein Vierzeiler:\n\n{GEDICHT}\n\nDas Gedicht hat das Reimschema ABAB."
    assert clean(text) == Cleaned(GEDICHT, ("preamble", "closing"))


@pytest.mark.parametrize("text", [
    "Natürlich! Gerne schreibe ich ein Gedicht.\n\nDas Meer ist weit und tief\nDie Möwen schrein im Wind\n"
    "Der Seemann, der da schlief,\nträumt wie ein kleines Kind",
    "Gerne:\nDas Meer ist weit und tief\nDie Möwen schrein im Wind\nDer Seemann, der da schlief,\n"
    "träumt wie ein kleines Kind\n\n#Gedicht #Meer",
])
def test_german_preamble_words(text):
    assert clean(text).text.split("\n")[0] == "Das Meer ist weit und tief"


# --- what the rules must leave alone -------------------------------------------------------------

@pytest.mark.parametrize("text", [
    POEM,
    "The snake_like river winds\nThrough 2_000 fields of grain\nThe sky is wide, 2 * 3 = 6\nAnd then it rains again",
    "A poem of the sea, a quatrain of the night.\nThe rhyme is wide and deep\nThe scheme above it cries\n"
    "Dream of the open sky",
])
def test_a_bare_quatrain_is_unchanged(text):
    assert clean(text) == Cleaned(text, ())


@pytest.mark.parametrize("text, rules", [
    # two stanzas: more than a quatrain, never cut down to four
    (f"{POEM}\n\n{POEM}", ()),
    (f"Here is a poem:\n\n{POEM}\n\n{POEM}", ()),
    (f"**The Sea**\n{POEM}\n{POEM}", ("emphasis",)),
    # a second stanza after the poem is no closing remark, even one that names a poem
    (f"{POEM}\n\nA poem is but a verse,\nA song of wind and sea,", ()),
    # five verses, the first short: not a title (a title is alone in its paragraph or marked)
    (f"The sea\n{POEM}", ()),
    # a verse that opens like a preamble is no preamble when no other paragraph follows
    (f"Sure as the tide, the moon\n{POEM}", ()),
    # a title alone with no poem after it
    ("**The Sea**", ("emphasis",)),
    # a heading, then too few lines: only the markup goes
    ("### The Sea\nThe sea is wide", ("heading",)),
])
def test_no_quatrain_only_markup_goes(text, rules):
    cleaned = clean(text)
    assert cleaned.rules == rules
    assert not _valid(cleaned.text)


def test_numbering_needs_1_to_4():
    text = "1. The sea is wide\n2. The gulls cry\n3. The sailors sleep\n5. The sky"
    assert clean(text) == Cleaned(text, ())


def test_a_verse_ending_like_a_title_in_a_split_poem_is_kept():
    # 1 + 3 verses: the first ends with a comma, so it is a verse, not a title
    text = "I am the sea,\n\nThe gulls above it cry\nAnd sailors, lulled to sleep,\nDream of the open sky"
    assert clean(text).text == text.replace("\n\n", "\n")
    assert clean(text).rules == ("stanza_break",)


def test_rules_are_named_once_in_order():
    cleaned = clean(f"**Here** is a *poem*:\n\n**The Sea**\n\n{POEM}\n\nThe poem *rhymes* ABAB.")
    assert cleaned.rules == ("emphasis", "preamble", "title", "closing")
    assert set(RULES) >= set(cleaned.rules)


# --- properties, on the real answers and the hand-made ones ---------------------------------------

def _markup_free(line: str) -> str:
    """A line without markdown's markers, to compare words (a test-side reading, not the module's)."""
    return re.sub(r"[*_`]|^\s*#+\s+", "", line).strip()


def _texts() -> list[str]:
    made = [POEM, f"Here is a quatrain:\n\n```\n**The Sea**\n\n{POEM}\n```\n\nThis quatrain rhymes ABAB.\n\n#poem",
            "1. The sea is wide and deep\n2. The gulls above it cry\n3. And sailors, lulled to sleep,\n4. Dream"]
    return made + [row["text"] for row in _answers().values()]


@pytest.mark.parametrize("text", _texts())
def test_cleaning_is_idempotent(text):
    once = clean(text).text
    assert clean(once) == Cleaned(once, ())


@pytest.mark.parametrize("text", _texts())
def test_no_word_is_changed(text):
    source = [_markup_free(line) for line in text.splitlines()]
    for line in clean(text).text.split("\n"):
        assert not line or any(_markup_free(line) in raw for raw in source), line


# --- the 60 real answers, read by hand ------------------------------------------------------------

# The answers that give a quatrain: the four verses expected, and the rules that fire.
REAL_QUATRAINS = {
    13: ((), "In the deep abyss, where the waves stretch, a poet's song,\nA poem of the sea, where the words are no "
             "words,\nA tale of the salty sea, a tale of the sea,\nA quatrain of the sea's own."),
    19: (("title", "stanza_break"),   # a title, then each verse in its own paragraph
         "IN THE ENCOGRENADEMENTS OF THE LION,\nA DRAGON EMPLOYED,\nTO CONSUME THE LYING STONE,\n"
         "A DRACON COULD NOT CREATE it."),
    31: (("closing",), "Blessed in the poem of thy words,\nIn this song, thou art a mother's touch,\n"
                       "A mother's touch, a mother's touch true,\nA mother's touch true."),
    58: ((), "The waves that crash against the shore, a fleeting, unforgiving refrain,\nA song of joy, a tale of "
             "laughter, a song of love,\nA sea of wonder, a sea of peace,\nA sea of the soul, a sea of delight."),
}
# The answers that stay invalid, with the markup rules that fire (the text is the answer without that markup).
REAL_INVALID_MARKUP = {
    1: (("heading",), ("### ", "")),                        # a prose line twice around a heading
    30: (("emphasis",), ("**Guten Morgen**", "Guten Morgen")),   # one bold line repeated to the budget
}
# The answers that stay invalid and untouched, by why no block rule may make a quatrain of them:
REAL_INVALID = {
    # prose, or one to three lines (the German prompt often read as a question about the phrase)
    2, 5, 6, 10, 11, 12, 20, 21, 25, 26, 32, 33, 34, 40, 45, 46, 47, 48, 50, 51, 52, 55, 56, 60,
    # a title over prose (14, 44: its closing would go, but no four verses are left)
    14, 44,
    # several stanzas, or one too long: more than a quatrain, never cut to four (38, 39: 4 + 4 + 4...)
    3, 7, 8, 9, 15, 16, 17, 18, 23, 24, 28, 29, 35, 36, 37, 38, 39, 42, 49, 53, 54, 59,
    # four verses and a one-line verse-like question after them: no prose remark, so kept (extra verse)
    27,
    # five verses and a closing remark (4), five quoted verses and a closing remark (43)
    4, 43,
    # a real preamble, but 2 (22) or 3 + 6 (41) or 7 (57) verses after it
    22, 41, 57,
}


def test_every_real_answer_is_labelled():
    assert sorted([*REAL_QUATRAINS, *REAL_INVALID_MARKUP, *REAL_INVALID]) == sorted(_answers())


@pytest.mark.parametrize("seed", sorted(REAL_QUATRAINS))
def test_real_answers_that_become_quatrains(seed):
    row = _answers()[seed]
    rules, poem = REAL_QUATRAINS[seed]
    assert clean(row["text"]) == Cleaned(poem, rules)
    assert _valid(poem, row["finish_reason"])


@pytest.mark.parametrize("seed", sorted(REAL_INVALID_MARKUP) + sorted(REAL_INVALID))
def test_real_answers_that_stay_invalid(seed):
    row = _answers()[seed]
    rules, (markup, plain) = REAL_INVALID_MARKUP.get(seed, ((), ("", "")))
    trimmed = "\n".join(line.strip() for line in row["text"].strip().splitlines())
    assert clean(row["text"]) == Cleaned(trimmed.replace(markup, plain) if markup else trimmed, rules)
    assert not _valid(clean(row["text"]).text, row["finish_reason"])


def test_real_valid_share_before_and_after():
    rows = _answers().values()
    before = sum(_valid(row["text"], row["finish_reason"]) for row in rows)
    after = sum(_valid(clean(row["text"]).text, row["finish_reason"]) for row in rows)
    assert (before, after, len(rows)) == (2, 4, 60)
