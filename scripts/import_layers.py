#!/usr/bin/env python3
"""The package's import graph by stage: circles and upward imports (poeval.devtools.import_layers).
Usage: python scripts/import_layers.py [src/poeval]; exit status 1 when there is a circle."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))   # this checkout's tool, installed or not

from poeval.devtools.import_layers import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv))
