"""The English corpus read by hand (issue 28): draw the quatrains a person judges, and turn the judged
sheets into the fixture that tests/unit/test_cleaning.py checks the cleaning rules against.

    python scripts/corpus_read.py draw data/en/train.jsonl --read after --out after.jsonl   # 200, seed 28
    # a person sets each record's "verdict" (verse / not_verse / crosses) and, unless verse, a "reason"
    python scripts/corpus_read.py fixture before.jsonl after.jsonl --out tests/fixtures/corpus_read_en.jsonl

A sheet record carries ``CONTEXT`` raw rows of the Gutenberg lines on each side of its quatrain, as many
as the reader's rolling prose window needs to classify the quatrain's lines as in the whole corpus.
``before`` is read from a build with ``corpus.en.clean: false``, ``after`` with the rules.
"""

from __future__ import annotations

import argparse
import sys

from poeval import io
from poeval.data.corpus_read import draw, fixture_record
from poeval.errors import PoevalError


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
    try:
        if args.command == "draw":
            records = draw(args.train, args.read, args.n, args.seed)
        else:
            records = [fixture_record(rec) for sheet in args.sheets for rec in io.read_jsonl(sheet)]
    except PoevalError as err:
        raise SystemExit(str(err)) from None
    io.write_jsonl(args.out, records)


if __name__ == "__main__":
    main(sys.argv[1:])
