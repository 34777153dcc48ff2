"""The expected answer of each student's variant: now ``coursegrader.answers`` (see there)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from coursegrader.answers import ANSWERS, SLIPS, expected, has_variant, slips  # noqa: E402,F401
