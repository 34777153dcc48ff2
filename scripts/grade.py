"""Grade a term's problem notebooks: now the package ``coursegrader`` (``python -m coursegrader --help``,
or ``make grade``). This entry stays for those who call the script by its old name."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from coursegrader.cli import main  # noqa: E402
from coursegrader.marking import notebook_names, reference  # noqa: E402,F401
from coursegrader.rubric import load_rubric  # noqa: E402,F401
from coursegrader.running import run_many, run_notebook  # noqa: E402,F401
from coursegrader.sandbox import sandbox_problem  # noqa: E402,F401

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
