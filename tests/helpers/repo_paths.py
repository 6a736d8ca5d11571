"""Where things are in this checkout, for tests in any folder under tests/."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository root: tests/helpers/ is two levels down
FIXTURES = ROOT / "tests" / "fixtures"  # synthetic benchmark files in their upstream layouts
HELPERS = ROOT / "tests" / "helpers"  # this folder: a subprocess that imports a test module needs it on sys.path
