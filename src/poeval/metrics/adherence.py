"""Style adherence: does a style-conditioned model write the rhyme scheme it is prompted with?

A conditioned model is sampled once per scheme, prompted with that scheme's token (``lm.sample(...,
style="abab")``); every quatrain is labelled with poeval's rhyme detector, the one that labelled the
training corpus, so the model is judged by the labels it was trained on. Adherence to a scheme is the
share of its prompted sample whose detected scheme is the prompted one. The baseline is the paired
model sampled unprompted with the same decoding config: its share of that scheme is how often it
writes the scheme unasked. Every conditioned transformer in ``systems`` gets the baseline that params
``style_adherence.pairs`` names for it, else the system of its name minus ``-cond`` when that runs too,
else none (it is left out); paired with itself, a model's own unprompted sample is the baseline.

A match that rhymes can still be a repetition (rhyming lines ending in the same word, as Tables 10 and
11 count them, :mod:`poeval.metrics.schemes`): the table gives the share of repetitions among the
matches, and the real rhymes are the rest (abcd matches have no rhymes: NA).

A cell (one JSON per language, system and prompting) holds, per prompt (a scheme, or ``none`` for the
unprompted sample), the sample size and the detected schemes' counts and repeating counts."""

from __future__ import annotations

import collections

from poeval.errors import PoevalError
from poeval.generators import registry
from poeval.io import read_json, read_jsonl, write_json
from poeval.metrics.schemes import DEFAULT_REPETITION, UNRHYMED, is_repeating_quatrain
from poeval.poetry.schemes import scheme
from poeval.render import fmt, write_tsv

UNPROMPTED = "none"
COLUMNS = ["lang", "system", "baseline", "scheme", "n", "adherence", "baseline_n", "baseline_share",
           "repetitions"]


def conditionable(model: dict) -> bool:
    """Whether a ``models`` entry can be prompted with a scheme: a transformer (style tokens, or a prompt with
    ``api: chat``) or an endpoint (a prompt)."""
    return model.get("arch") in registry.names("llm") or registry.is_prompted(model)


def pairs(config: dict) -> dict[str, str]:
    """Conditioned system -> baseline system, for the conditioned transformers and endpoints in ``systems``
    (in its order): params ``style_adherence.pairs``, else the system's name minus ``-cond`` when that runs
    too, else for a system conditioned by prompt itself (its unprompted sample asks for no scheme)."""
    explicit = config["style_adherence"]["pairs"] or {}
    systems, models = config["systems"], config["models"]
    out = {}
    for s in systems:
        if not (models[s].get("conditioned") and conditionable(models[s])):
            continue
        if s in explicit:
            out[s] = explicit[s]
        elif s.endswith("-cond") and s.removesuffix("-cond") in systems:
            out[s] = s.removesuffix("-cond")
        elif registry.is_prompted(models[s]):
            out[s] = s
    return out


def pair_problems(config: dict) -> list[str]:
    """Params errors of ``style_adherence`` (each naming its key)."""
    section = config["style_adherence"]
    models, problems = config["models"], []
    for cond, base in (section["pairs"] or {}).items():
        model = models.get(cond)
        if model is None or not model.get("conditioned") or not conditionable(model):
            problems.append(f"key style_adherence.pairs.{cond}: not a style-conditioned transformer or endpoint "
                            f"under models (arch one of {', '.join(registry.names('llm'))} or endpoint, "
                            "conditioned: true)")
        if base not in models:
            problems.append(f"key style_adherence.pairs.{cond}: baseline '{base}' is not defined under models")
    decoding = section["decoding"]
    if decoding is not None and decoding not in config["decoding"]:
        problems.append(f"key style_adherence.decoding: unknown decoding config '{decoding}'")
    return problems


def prompt_counts(records: list[dict], lang: str, repetition: str = DEFAULT_REPETITION) -> dict:
    """One sample's size and, per detected scheme, its quatrains and how many of them repeat."""
    detected, repeating = collections.Counter(), collections.Counter()
    for record in records:
        label = scheme(record["lines"], lang)
        detected[label] += 1
        repeating[label] += is_repeating_quatrain(record["lines"], label, lang, repetition)
    return {"n": len(records), "detected": dict(sorted(detected.items())),
            "repeating": dict(sorted((k, v) for k, v in repeating.items() if v))}


def write_cell(samples: dict[str, str], lang: str, system: str, out: str,
               repetition: str = DEFAULT_REPETITION) -> dict:
    """The cell of one system: ``samples`` maps each prompt (a scheme, or ``none``) to its JSONL file."""
    cell = {"lang": lang, "system": system, "repetition": repetition,
            "prompts": {prompt: prompt_counts(list(read_jsonl(path)), lang, repetition)
                        for prompt, path in samples.items()}}
    write_json(out, cell)
    return cell


def _share(counts: dict | None, target: str, field: str = "detected") -> float | None:
    if not counts or not counts["n"]:
        return None
    return counts[field].get(target, 0) / counts["n"]


def _cell(path: str) -> dict:
    cell = read_json(path)
    if "prompts" not in cell:
        raise PoevalError(f"{path}: not a style adherence cell")
    return cell


def rows(pair_cells: list[tuple[str, str]], schemes: list[str]) -> list[dict]:
    """Per (conditioned cell, baseline cell) and scheme: the prompted sample's share of that scheme
    (adherence), the baseline's unprompted share, and the repetitions among the matches."""
    out = []
    for cond_path, base_path in pair_cells:
        cond, base = _cell(cond_path), _cell(base_path)
        unprompted = base["prompts"].get(UNPROMPTED)
        if unprompted is None:
            raise PoevalError(f"{base_path}: the baseline cell has no unprompted sample")
        for s in schemes:
            prompted = cond["prompts"].get(s)
            if prompted is None:
                raise PoevalError(f"{cond_path}: no sample prompted with {s}")
            matches = prompted["detected"].get(s, 0)
            out.append({
                "lang": cond["lang"], "system": cond["system"],
                "baseline": base["system"] + (" (unprompted)" if base["system"] == cond["system"] else ""),
                "scheme": s, "n": prompted["n"], "adherence": _share(prompted, s),
                "baseline_n": unprompted["n"], "baseline_share": _share(unprompted, s),
                "repetitions": None if s == UNRHYMED or not matches else prompted["repeating"].get(s, 0) / matches,
            })
    return out


def write_table(pair_cells: list[tuple[str, str]], schemes: list[str], out: str) -> list[dict]:
    """results/tables/style_adherence.tsv: shares with 4 decimals (byte-deterministic)."""
    table = rows(pair_cells, schemes)
    write_tsv(out, COLUMNS, [[str(r[c]) if c in ("lang", "system", "baseline", "scheme", "n", "baseline_n")
                              else fmt(r[c], 4) for c in COLUMNS] for r in table])
    return table


def write_figure(pair_cells: list[tuple[str, str]], schemes: list[str], out: str) -> None:
    """Grouped bars per scheme, one panel per pair: adherence of the prompted model next to the
    baseline's unprompted share."""
    import numpy as np

    from poeval.render import finish_figure, load_pyplot, note_panel

    table = rows(pair_cells, schemes)
    panels = list(dict.fromkeys((r["lang"], r["system"], r["baseline"]) for r in table))
    plt = load_pyplot()
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(3.2 * max(len(panels), 1), 2.8), squeeze=False)
    x, width = np.arange(len(schemes)), 0.4
    for ax, (lang, system, baseline) in zip(axes[0], panels):
        mine = [r for r in table if (r["lang"], r["system"], r["baseline"]) == (lang, system, baseline)]
        ax.bar(x - width / 2, [r["adherence"] or 0 for r in mine], width, label=f"{system}, prompted")
        unprompted = baseline if baseline.endswith("(unprompted)") else f"{baseline}, unprompted"
        ax.bar(x + width / 2, [r["baseline_share"] or 0 for r in mine], width, label=unprompted)
        ax.set_xticks(x, schemes)
        ax.set_ylim(0, 1)
        ax.set_title(f"{lang}: {system}")
        ax.set_ylabel("share with the scheme")
        ax.legend(fontsize=6)
    if not panels:
        note_panel(axes[0][0], "no conditioned model with a baseline in this run")
        axes[0][0].set_axis_off()
    finish_figure(plt, fig, out)


def parse_items(items: list[str], what: str) -> list[tuple[str, str]]:
    """``A=B`` command-line items as pairs."""
    bad = [item for item in items if "=" not in item]
    if bad:
        raise PoevalError(f"expected {what} items of the form A=B, got {bad[0]!r}")
    return [tuple(item.split("=", 1)) for item in items]

