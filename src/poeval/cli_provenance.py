"""`poeval provenance`, `poeval stale` and `poeval repro`: the chain behind a number, the outputs whose stamps
disagree with the params or inputs now, and the Snakemake run that rebuilds them (:mod:`poeval.report`);
:mod:`poeval.cli` adds them to the command."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from poeval.cli_args import add_lang, positive_int, seed_int
from poeval.errors import PoevalError


def _recompute(args) -> int:
    """``--recompute``: metric cell files, one table number, or ``--sample K`` numbers of a table."""
    from poeval.report import recompute

    if all(t.endswith(".json") for t in args.table):
        diffs = [d for cell in args.table for d in recompute.recompute_cell(cell, args.root or ".")[0]]
        checked = args.table
    elif len(args.table) != 1 or (args.sample is None) == (args.row is None or args.column is None):
        raise PoevalError("--recompute takes metric cell files (.json), or one table with either --row and "
                          "--column or --sample K")
    else:
        picks = (recompute.sample_cells(args.table[0], args.sample, args.seed) if args.sample is not None
                 else [(args.row, args.column, args.lang, args.decoding)])
        diffs, checked = [], []
        for row, column, lang, decoding in picks:
            diffs += recompute.recompute(args.table[0], row, column, lang=lang, decoding=decoding, root=args.root)
            checked.append(f"{'/'.join(part for part in (lang, row, decoding) if part)} {column}")
    print("\n".join([f"  ! {d}" for d in diffs] + [f"{'DIFFERS' if diffs else 'OK'}: {len(checked)} checked "
                                                  f"({', '.join(checked)}); {len(diffs)} difference(s)"]))
    return 3 if diffs else 0


def cmd_provenance(args) -> int:
    from poeval.report import chain_text, provenance

    if args.recompute:
        return _recompute(args)
    if len(args.table) != 1 or args.row is None or args.column is None:
        raise PoevalError("give one table, --row and --column (or --recompute)")
    result = provenance.trace(args.table[0], args.row, args.column, lang=args.lang, decoding=args.decoding,
                              root=args.root, params=args.params, configfiles=tuple(args.configfile),
                              ask_server=args.check)
    print(json.dumps(result, indent=2, ensure_ascii=False) if args.json else chain_text.format_text(result))
    return 3 if args.check and result["stale"] else 0


def parser_provenance(sub) -> None:
    p = sub.add_parser("provenance", help="the chain of artifacts, hashes and params behind one table number")
    p.add_argument("table", nargs="+", help="a metric table, e.g. results/tables/table2.tsv (--recompute: or "
                                            "metric cell files, results/metrics/.../<family>.json)")
    p.add_argument("--row",
                   help="system name (HUMAN for the human samples' row, 'HUMAN (train)' for the whole training set)")
    p.add_argument("--column", help="column name in the table header, e.g. mattr_pct")
    add_lang(p, help="language of the row, when the table has several")
    p.add_argument("--decoding", help="decoding config of the row (tables with a row per decoding)")
    p.add_argument("--root", help="working directory of the run (default: the one holding results/tables/)")
    p.add_argument("--params", help="params file (default: ROOT/params.yaml)")
    p.add_argument("--configfile", nargs="+", action="extend", default=[],
                   help="overlays the run was made with, as for snakemake (later wins)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--check", action="store_true", help="exit with status 3 when the chain is stale")
    p.add_argument("--recompute", action="store_true",
                   help="rerun the evaluation of each cell behind the number(s) from its stamped inputs and params; "
                        "exit with status 3 when any number differs")
    p.add_argument("--sample", type=positive_int, metavar="K",
                   help="with --recompute: K numbers of the table drawn at random")
    p.add_argument("--seed", type=seed_int, default=1, help="seed of --sample")
    p.set_defaults(func=cmd_provenance)


def cmd_stale(args) -> int:
    from poeval import config
    from poeval.report import stale

    root = Path(args.root)
    cfg_path = Path(args.params) if args.params else root / "params.yaml"
    cfg = config.read(cfg_path, tuple(args.configfile))
    found = stale.stale_outputs(cfg, root, args.rule or None, code=args.code)
    if args.json:
        print(json.dumps([vars(s) for s in found], indent=2, ensure_ascii=False))
    for item in [] if args.json else found:
        print("\n".join([f"{item.output}  ({item.rule}; stamp in {item.stamped})"] + [f"  ! {r}" for r in item.reasons]))
    if not (found or args.json):
        print(f"nothing stale ({', '.join(args.rule) if args.rule else 'every rule'}; params "
              f"{' + '.join([str(cfg_path)] + list(args.configfile))})")
    return 3 if args.check and found else 0


def parser_stale(sub) -> None:
    from poeval.report.stale import rules

    p = sub.add_parser("stale", help="stamped outputs whose provenance stamp disagrees with the params or inputs now")
    p.add_argument("--rule", nargs="+", choices=rules(), help="only the outputs of these rules (default: all)")
    p.add_argument("--root", default=".", help="working directory of the run (default: the current one)")
    p.add_argument("--params", help="params file (default: ROOT/params.yaml)")
    p.add_argument("--configfile", nargs="+", action="extend", default=[], help="overlays, as for snakemake")
    p.add_argument("--code", action="store_true", help="also outputs built by another code revision")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--check", action="store_true", help="exit with status 3 when any output is stale")
    p.set_defaults(func=cmd_stale)


def cmd_repro(args) -> int:
    from poeval.report import stale

    extra = args.snakemake_args[1:] if args.snakemake_args[:1] == ["--"] else args.snakemake_args
    return stale.run_stage(args.until, tuple(args.configfile), tuple(extra), code=args.code,
                           report=lambda line: print(line, file=sys.stderr))


def parser_repro(sub) -> None:
    p = sub.add_parser("repro", help="run Snakemake for the rules of a stage after removing their stale stamped "
                       "outputs (dvc.yaml's stages)")
    p.add_argument("--until", nargs="+", default=[], metavar="RULE",
                   help="the stage's rules in DAG order, one Snakemake run each (default: the whole DAG)")
    p.add_argument("--configfile", nargs="+", action="extend", default=[], help="overlays, as for snakemake")
    p.add_argument("--code", action="store_true", help="also rebuild outputs built by another code revision")
    p.add_argument("snakemake_args", nargs=argparse.REMAINDER, help="after --: more snakemake arguments (-c all)")
    p.set_defaults(func=cmd_repro)
