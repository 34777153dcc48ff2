"""nbgrader's commands from the course's environment: now ``python -m coursegrader.nbgrader`` (see there)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from coursegrader.nbgrader import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
