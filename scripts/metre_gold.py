"""Build the metre gold sets of resources/gold/ from two public annotated corpora (resources/gold/README.md).

English: For Better for Verse (manexagirrezabal/for_better_for_verse, ``poems/*.xml``: TEI, each stanza's
``met`` names its foot, e.g. ``-+(4/4/4/4)``) and the English Poetry Gold of Haider (2021)
(tnhaider/metrical-tagging-in-the-wild, ``data/English/SmallGold/repo_EPG64/meter/*.xml``: each line's ``met``
with its feet separated by ``|``). German: the same repository's ``antikoerperchen`` corpus
(``data/German/SmallGold/antikoerperchen.lines.prosody.emotions.v4.tsv``: each line's hand-annotated
``measure``, e.g. ``iambic.tetra``).

Each line becomes ``{"id", "corpus", "poet", "author", "poem", "stanza", "text", "pattern", "measure", "label",
"split"}``: ``label`` is the metre family (:data:`LABELS`), ``poet`` the key the folds group by (a surname),
``split`` ``dev`` or ``test``: poets are dealt to the smaller part in the order of their key's sha256, so
dev and test share no poet. Run on checkouts of the two repositories at the commits resources/gold/README.md names:

    python scripts/metre_gold.py --fbfv FBFV_DIR --mtw MTW_DIR --out resources/gold
"""

from __future__ import annotations

import argparse
import collections
import csv
import hashlib
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

TEI = "{http://www.tei-c.org/ns/1.0}"
LABELS = ("iambic", "trochaic", "anapaestic", "dactylic", "amphibrachic", "alexandrine", "other")
FEET = {"-+": "iambic", "+-": "trochaic", "--+": "anapaestic", "+--": "dactylic", "-+-": "amphibrachic",
        "+--+": "iambic"}   # a choriamb is an iambic line's inverted first foot
# antikoerperchen's measure families; the aeolic and single-foot measures are "other"
DE_FAMILIES = {"iambic": "iambic", "trochaic": "trochaic", "anapaest": "anapaestic", "dactylic": "dactylic",
               "hexameter": "dactylic", "amphibrach": "amphibrachic", "alexandrine": "alexandrine"}
POET_ALIASES = {"houseman": "housman"}


def family_of_feet(met: str) -> str:
    """The family of a ``|``-separated foot pattern: its most common foot; a tie goes to the triple foot (binary
    lines take triple substitutions less often than triple lines end on a binary foot)."""
    counts = collections.Counter(FEET[f] for f in met.split("|") if f in FEET)
    if not counts:
        return "other"
    return max(counts, key=lambda k: (counts[k], k in ("anapaestic", "dactylic", "amphibrachic")))


def _poet(surname: str) -> str:
    key = re.sub(r"[^a-z]", "", surname.lower())
    return POET_ALIASES.get(key, key)


def _text(elem) -> str:
    return re.sub(r"\s+", " ", "".join(t for t in elem.itertext() if t)).strip()


def _line_text(l_elem) -> str:
    """A FBFV line's words: the text inside its feet (``seg``, which carry a word's own spaces and split words
    at syllable marks), without the notes and the layout between the feet."""
    segs = l_elem.findall(f"{TEI}seg")
    parts = ["".join(s.itertext()) for s in segs] if segs else [l_elem.text or ""]
    return re.sub(r"\s+", " ", "".join(parts)).strip()


def read_fbfv(root: Path) -> list[dict]:
    out = []
    for path in sorted((root / "poems").glob("*.xml")):
        xml = re.sub(r"<!DOCTYPE[^>]*>", "", path.read_text(encoding="utf-8"))
        tree = ET.fromstring(xml)
        author = _text(tree.find(f".//{TEI}author")) if tree.find(f".//{TEI}author") is not None else ""
        title = _text(tree.find(f".//{TEI}title")) if tree.find(f".//{TEI}title") is not None else ""
        poet = _poet(path.stem.split(" - ")[0].split()[-1])
        for s, lg in enumerate(tree.iter(f"{TEI}lg"), 1):
            foot = (lg.get("met") or "").split("(")[0]
            if not foot:
                continue
            for n, line in enumerate(lg.findall(f"{TEI}l"), 1):
                text = _line_text(line)
                if text:
                    out.append({"id": f"fbfv/{path.stem}/{s}/{n}", "corpus": "fbfv", "poet": poet, "author": author,
                                "poem": title, "stanza": f"fbfv/{path.stem}/{s}", "text": text,
                                "pattern": line.get("met") or "", "measure": foot, "label": FEET.get(foot, "other")})
    return out


def read_epg64(root: Path) -> list[dict]:
    out = []
    for path in sorted((root / "data/English/SmallGold/repo_EPG64/meter").glob("*.xml")):
        tree = ET.fromstring(path.read_text(encoding="utf-8"))
        name = path.stem.split("_")[0]
        poet = _poet(re.findall(r"[A-Z][a-z]+", name)[-1])
        author = " ".join(re.findall(r"[A-Z][a-z]+", name))
        for s, lg in enumerate((g for g in tree.iter(f"{TEI}lg") if g.get("type") == "stanza"), 1):
            for n, line in enumerate(lg.findall(f"{TEI}l"), 1):
                met = line.get("met") or ""
                text = re.sub(r" ([,.;:!?'])", r"\1", _text(line)).replace(" 's", "'s")
                if text and met:
                    out.append({"id": f"epg64/{path.stem}/{s}/{n}", "corpus": "epg64", "poet": poet, "author": author,
                                "poem": "", "stanza": f"epg64/{path.stem}/{s}", "text": text, "pattern": met,
                                "measure": met, "label": family_of_feet(met)})
    return out


def read_antikoerperchen(root: Path) -> list[dict]:
    path = root / "data/German/SmallGold/antikoerperchen.lines.prosody.emotions.v4.tsv"
    out = []
    with open(path, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            measure = row["measure"]
            stanza = f"antikoerperchen/{row['poem_id']}/{row['id_stanza_in_poem']}"
            out.append({"id": f"{stanza}/{row['id_line_in_stanza']}", "corpus": "antikoerperchen",
                        "poet": _poet(row["author"].split(",")[0]), "author": row["author"], "poem": row["title"],
                        "stanza": stanza, "text": row["line_text"].strip(), "pattern": row["meter"], "measure": measure,
                        "label": DE_FAMILIES.get(measure.split(".")[0], "other")})
    return out


def split_by_poet(records: list[dict]) -> None:
    """``split`` of every record: whole poets dealt to the part with fewer lines so far."""
    lines = collections.Counter(r["poet"] for r in records)
    size, part = {"dev": 0, "test": 0}, {}
    for poet in sorted(lines, key=lambda p: hashlib.sha256(p.encode()).hexdigest()):
        part[poet] = min(size, key=lambda k: (size[k], k))
        size[part[poet]] += lines[poet]
    for r in records:
        r["split"] = part[r["poet"]]


def write(records: list[dict], path: Path) -> None:
    split_by_poet(records)
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records)
    path.write_text(text, encoding="utf-8")
    counts = collections.Counter((r["split"], r["label"]) for r in records)
    print(path, len(records), "lines,", len({r["poet"] for r in records}), "poets;", dict(sorted(counts.items())))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fbfv", type=Path, required=True, help="checkout of manexagirrezabal/for_better_for_verse")
    ap.add_argument("--mtw", type=Path, required=True, help="checkout of tnhaider/metrical-tagging-in-the-wild")
    ap.add_argument("--out", type=Path, default=Path("resources/gold"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    write(read_fbfv(args.fbfv) + read_epg64(args.mtw), args.out / "metre_en.jsonl")
    write(read_antikoerperchen(args.mtw), args.out / "metre_de.jsonl")


if __name__ == "__main__":
    main()
