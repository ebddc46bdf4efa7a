"""One odd end word (a word of hundreds of letters, control characters, other scripts, punctuation only)
changes no later stanza's rhyme label: the persistent espeak-ng pipe stays in step (docs/rhyme.md,
"Phonemes from espeak-ng")."""

import json
import shutil
import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from poeval.cli import main
from poeval.poetry import espeak

pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng not installed")

# every German end word and the English ones CMUdict lacks (Jabberwocky's, and made-up aabb ones) go through
# espeak-ng
STANZAS = {
    "de": [
        ["Ich weiß nicht, was soll es bedeuten,", "Daß ich so traurig bin;", "Ein Märchen aus alten Zeiten,",
         "Das kommt mir nicht aus dem Sinn."],
        ["Die Luft ist kühl und es dunkelt,", "Und ruhig fließt der Rhein;", "Der Gipfel des Berges funkelt",
         "Im Abendsonnenschein."],
        ["Es war, als hätt der Himmel", "Die Erde still geküßt,", "Daß sie im Blütenschimmer",
         "Von ihm nun träumen müßt."],
        ["Sah ein Knab ein Röslein stehn,", "Röslein auf der Heiden,", "War so jung und morgenschön,",
         "Lief er schnell es nah zu sehn."],
        ["Über allen Gipfeln ist Ruh,", "In allen Wipfeln spürest du", "Kaum einen Hauch;",
         "Die Vögelein schweigen im Walde."],
        ["Der Wald steht schwarz und schweiget,", "Und aus den Wiesen steiget", "Der weiße Nebel wunderbar.",
         "Wie ist die Welt so stille,"],
    ],
    "en": [
        ["'Twas brillig, and the slithy toves", "Did gyre and gimble in the wabe:", "All mimsy were the borogoves,",
         "And the mome raths outgrabe."],
        ["Beware the Jabberwock, my son!", "The jaws that bite, the claws that catch!",
         "Beware the Jubjub bird, and shun", "The frumious Bandersnatch!"],
        ["And, as in uffish thought he stood,", "The Jabberwock, with eyes of flame,",
         "Came whiffling through the tulgey wood,", "And burbled as it came!"],
        ["One, two! One, two! And through and through", "The vorpal blade went snicker-snack!",
         "He left it dead, and with its head", "He went galumphing back."],
        ["It was brillig", "He took his vorpal", "Deep in the tulgey", "O day so frabjous"],
        ["The light upon the glimmerflay", "Was softer than the shimmersleigh,", "And down beside the quonkaboo",
         "There slept a little snorkelgoo."],
        ["I wandered to the brimblefight", "Beneath the starry flonderkite,", "And there I met the gallumphrey",
         "Who sang beside the tumblefrey."],
        ["He sought the frumious wiggletoe", "Across the hills of borrowglow,", "But found instead the snickerpane",
         "That drifted on the yonderlane."],
    ],
}
LONG_800 = "a" * 800   # espeak-ng wraps a word of about 700 letters over several output lines


def _rhyme(tmp_path, name: str, stanzas, lang: str, fresh: bool) -> list[str]:
    """`poeval rhyme`'s labels: in a fresh process (empty phone caches), or in this one."""
    src, out = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.out.jsonl"
    src.write_text("".join(json.dumps({"lines": s}) + "\n" for s in stanzas), encoding="utf-8")
    argv = ["rhyme", str(src), "--lang", lang, "--out", str(out)]
    if fresh:
        run = subprocess.run([sys.executable, "-m", "poeval.cli", *argv], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
    else:
        assert main(argv) == 0
    return [json.loads(line)["scheme"] for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """Each fixed stanza's label, from a process that never saw an odd word."""
    tmp = tmp_path_factory.mktemp("clean")
    return {lang: _rhyme(tmp, lang, stanzas, lang, fresh=True) for lang, stanzas in STANZAS.items()}


@pytest.mark.parametrize("lang", ["de", "en"])
def test_a_poisoned_line_changes_no_later_label(tmp_path, clean, lang):
    """An 800-letter end word before the stanzas: on the old pipe every later word got the previous one's
    phones (21 of 60 labels changed); no phones of it or after it are cached either."""
    poisoned = [["und so", "weiter", "immer", "und " + LONG_800]] + STANZAS[lang]
    assert _rhyme(tmp_path, "poisoned", poisoned, lang, fresh=True)[1:] == clean[lang]
    assert _rhyme(tmp_path, "inproc", poisoned, lang, fresh=False)[1:] == clean[lang]
    assert _rhyme(tmp_path, "after", STANZAS[lang], lang, fresh=False) == clean[lang]   # the caches hold no poison


def test_a_wrapped_answer_is_dropped_and_the_pipe_restarted(monkeypatch):
    """The sentinel behind the cap: with the cap lifted espeak-ng wraps the 800 letters over lines, the line
    after the first is not the sentinel's, so the word gets no phones (twice asked, each time on a fresh
    process) and the next word its own."""
    monkeypatch.setattr(espeak, "MAX_LETTERS", 10_000)
    pipe, fresh = espeak.Espeak("en-us"), espeak.Espeak("en-us")
    try:
        assert pipe.ipa("night") == fresh.ipa("night") != ""
        assert pipe.ipa(LONG_800) == "" and pipe.cache[LONG_800] == ""
        assert pipe.ipa("world") == fresh.ipa("world") != fresh.ipa("night")
    finally:
        pipe.close()
        fresh.close()


def _long_word(chunk: str, n: int) -> str:
    return (chunk * (n // len(chunk) + 1))[:n]


LETTERS = "abcdefghijklmnopqrstuvwxyzäöüßéñ"
SCRIPTS = LETTERS + "Ωμέγαжизньبيتשלוםกขคकखग日本語한글"
ODD_LINES = st.one_of(
    st.builds(_long_word, st.text(LETTERS, min_size=1, max_size=6), st.integers(600, 3000)),        # long words
    st.builds(_long_word, st.text(SCRIPTS, min_size=1, max_size=6), st.integers(600, 3000)),        # long, mixed scripts
    st.text(SCRIPTS + "\x00\r\x0b\x0c\x1b\x7f\u0085\u2028\u200b\u0301\ufeff", min_size=1, max_size=40),  # control chars
    st.text("!?.,;:-–—…«»\"'()[]/*†§0123456789", min_size=1, max_size=40),                          # punctuation only
    st.builds(lambda n: "wort " * n, st.integers(100, 2000)),                                       # a very long line
    st.just(""),
)


@settings(max_examples=15, deadline=None, derandomize=True)   # espeak is slow: few examples, the same every run
@given(lang=st.sampled_from(sorted(STANZAS)), odd=ODD_LINES, data=st.data())
@example(lang="de", odd="und " + LONG_800, data=None)
def test_any_odd_line_in_front_changes_no_later_label(tmp_path_factory, clean, lang, odd, data):
    picks = list(range(len(STANZAS[lang]))) if data is None else data.draw(
        st.lists(st.integers(0, len(STANZAS[lang]) - 1), min_size=1, max_size=8))
    stanzas = [["Ein Anfang", "noch eine", "Zeile", odd]] + [STANZAS[lang][i] for i in picks]
    got = _rhyme(tmp_path_factory.mktemp("odd"), "odd", stanzas, lang, fresh=True)
    assert got[1:] == [clean[lang][i] for i in picks]
