import sys
from pathlib import Path

# The vector and worker helpers (tests/), the fixture (tests/fixture) and the apps the
# adapter and process tests run (tests/apps).
HERE = Path(__file__).resolve().parent
for path in (HERE, HERE / "fixture", HERE / "apps"):
    sys.path.insert(0, str(path))
