import os
from pathlib import Path

import pytest

# Nothing in the tests may reach a model hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
# as `poeval` sets it (cli.main): busy-waiting OpenMP threads crawl when pytest shares the cores
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip("../shared/data is not available")
    return SHARED_DATA
