import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
# the package from this checkout, and `from helpers import ...` from tests in any subfolder
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(TESTS))


@pytest.fixture
def data_dir() -> Path:
    return TESTS / "data"
