"""poeval.evaluate, the notebook entry point: its doctest, the CLI's numbers, in-memory poems read as files."""

import doctest
import json
import subprocess
import sys

import pytest

import poeval.api
from poeval import evaluate
from poeval.cli import main
from poeval.errors import PoevalError

SUN = ["The sun is warm,", "the sea is blue;", "I walk the shore", "and think of you."]
ROSES = ["Roses are red,", "violets are blue,", "sugar is sweet", "and so are you."]
NIGHT = ["The night is long,", "the stars are bright,", "we sing a song", "until the light."]
SHORT = ["only", "three", "verses"]
FAMILIES = ["length", "lexical", "memorization"]


def _write_jsonl(path, poems):
    path.write_text("".join(json.dumps({"id": str(i), "lines": p}) + "\n" for i, p in enumerate(poems)))
    return path


def test_the_docstring_example_runs_and_holds():
    """The example's numbers are hand-checked in the docstring; a changed number fails here."""
    failed, attempted = doctest.testmod(poeval.api, optionflags=doctest.ELLIPSIS)
    assert (failed, attempted) == (0, 9)


def test_a_file_gives_what_the_cli_writes(tmp_path):
    samples = _write_jsonl(tmp_path / "s.jsonl", [SUN, ROSES, SHORT])
    ref = _write_jsonl(tmp_path / "ref.jsonl", [SUN, NIGHT])
    out = tmp_path / "m.json"
    assert main(["evaluate", str(samples), "--reference", str(ref), "--lang", "en", "--out", str(out), "--quiet",
                 "--metrics", ",".join(FAMILIES), "--bootstrap-reps", "20", "--seed", "3"]) == 0
    cli = json.loads(out.read_text())
    assert "provenance" in cli and cli["lexical"]["ci"]
    result = evaluate(str(samples), reference=ref, metrics=FAMILIES, bootstrap_reps=20, seed=3)
    assert result == {key: value for key, value in cli.items() if key != "provenance"}
    assert result["skipped"] == {"not_4_lines": 1} and result["length"]["per_poem"] == [16, 13]


def test_in_memory_poems_give_the_numbers_of_the_same_poems_in_a_file(tmp_path):
    sample = [SUN, tuple(ROSES), {"lines": NIGHT, "id": "n"}, SHORT]   # a tuple, a record with an id, a skip
    as_file = [SUN, ROSES, NIGHT, SHORT]
    # QuaTrain's text (one string), as a file may hold it
    reference = [{"id": "s", "lines": SUN}, {"id": "n2", "text": "\n".join(NIGHT)}]
    path, ref_path = tmp_path / "s.jsonl", tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({"id": rid, "lines": p}) + "\n" for rid, p in zip("01n3", as_file)))
    ref_path.write_text("".join(json.dumps(r) + "\n" for r in reference))
    memory = evaluate(sample, reference=reference, metrics=FAMILIES, bootstrap_reps=10)
    files = evaluate(path, reference=ref_path, metrics=FAMILIES, bootstrap_reps=10)
    assert (memory["samples"], memory["reference"]) == ("<poems>", "<reference>")
    assert {k: v for k, v in memory.items() if k not in ("samples", "reference")} == \
           {k: v for k, v in files.items() if k not in ("samples", "reference")}
    # by hand: SHORT is skipped; the sun and the night are in the reference, the roses are not
    assert memory["n_poems"] == 3 and memory["skipped"] == {"not_4_lines": 1}
    assert memory["memorization"]["quatrain"] == pytest.approx(2 / 3)
    hits = memory["memorization"]["hits"]["quatrain"]
    assert [(hit["sample"], hit["train"]) for hit in hits] == [("0", "s"), ("n", "n2")]


def _nested(depth: int) -> dict:
    """``{"a": {"a": ...}}``, ``depth`` levels deep (built in a loop: a literal would hit the parser's limit)."""
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("call, message", [
    (lambda: evaluate([SUN], reference=[SUN], metrics=["length", "rhymes"]), "unknown metric family rhymes"),
    (lambda: evaluate([SUN], reference=[SUN], metrics="length"), "metrics: expected a list of family names"),
    (lambda: evaluate([], reference=[SUN]), r"<poems>: nothing usable: no poems \(an empty list\)"),
    (lambda: evaluate([SUN], reference=[]), r"<reference>: nothing usable: no poems \(an empty list\)"),
    (lambda: evaluate(SUN, reference=[SUN]), "<poems>: poem 1: expected a list of verse strings .* got str"),
    (lambda: evaluate([SUN, SUN[:3] + [4]], reference=[SUN]), "poem 2: .* got list holding int"),
    (lambda: evaluate([{"text": 5}], reference=[SUN]), "poem 1: .* got dict without"),
    (lambda: evaluate([SHORT], reference=[SUN]),
     "<poems>: nothing usable: read 1 poems, kept 0; skipped: not_4_lines 1"),
    (lambda: evaluate([{"id": "a", "lines": SUN}] * 2, reference=[SUN]), "<poems>: id 'a' occurs more than once"),
    (lambda: evaluate([SUN], reference=[SUN], options={"memorization": {"index": "idx"}}),
     "options.memorization.index: a cache of the reference needs the reference as a file"),
    (lambda: evaluate({"lines": SUN}, reference=[SUN]), "poems: expected a path or a list of poems, got dict"),
    (lambda: evaluate([SUN], reference=[SUN], bootstrap_reps=2.5), "bootstrap_reps: expected an integer .* got 2.5"),
    (lambda: evaluate([SUN], reference=[SUN], seed=-1), "seed: expected an integer from 0 .* got -1"),
    (lambda: evaluate([SUN], reference=[SUN], seed="1"), "seed: expected an integer .* got '1'"),
    (lambda: evaluate([SUN], reference=[SUN], options={"length": _nested(20_000)}),
     "options.length: nested too deeply"),
    (lambda: evaluate([SUN], reference=[SUN], options=[("length", {})]), "options: expected an object"),
])
def test_bad_input_is_a_one_line_poeval_error(call, message):
    with pytest.raises(PoevalError, match=message) as err:
        call()
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("bootstrap_reps, seed", [(-5, 1), (100_001, 1), (True, 1), (20, 2 ** 40),
                                                  (20, 2 ** 32)])
def test_the_api_takes_the_bootstrap_bounds_of_the_cli_and_the_params_schema(bootstrap_reps, seed):
    """One check for both: `poeval evaluate --bootstrap-reps/--seed` and params metrics.bootstrap refuse the same
    values (tests/unit/test_bounds_errors.py); the schema's bounds are 0..100000 and 0..2**32-1."""
    with pytest.raises(PoevalError, match=r"(bootstrap_reps: expected an integer from 0 to 100000|"
                                          r"seed: expected an integer from 0 to 4294967295), got"):
        evaluate([SUN, ROSES], reference=[SUN], metrics=["length"], bootstrap_reps=bootstrap_reps, seed=seed)
    within = evaluate([SUN, ROSES], reference=[SUN], metrics=["length"], bootstrap_reps=3, seed=2 ** 32 - 1)
    assert within["length"]["ci"]


def test_a_misspelt_option_is_named():
    # the params schema's message, as the CLI prints it: one line per problem
    with pytest.raises(PoevalError, match=r"unknown key options.length.bin \(allowed: bins, tokens\)"):
        evaluate([SUN], reference=[SUN], metrics=["length"], options={"length": {"bin": 3}})


def test_import_poeval_stays_cheap_and_exports_evaluate():
    """`import poeval` (every command's start) loads no numpy; the name resolves to the API's function."""
    code = ("import sys, poeval; cheap = 'numpy' not in sys.modules; "
            "print(cheap, poeval.evaluate is poeval.api.evaluate)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True"]
    with pytest.raises(AttributeError, match="no attribute 'evaluat'"):
        poeval.evaluat  # noqa: B018
