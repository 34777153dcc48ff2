"""Grading the course's problem notebooks: each student's notebook run in a sandbox, marked by a rubric
against the student's own numbers, and written out as the files Canvas and Moodle import.

One module a job:

- ``roster``: the class, and every ID a student may enter; the LMS's submission times;
- ``submissions``: which student and notebook a handed-in file is;
- ``rubric``: the notebooks graded, the points, the deadline and the limits;
- ``sandbox``: bubblewrap, an unprivileged user, limits on processes, memory, files and output;
- ``running``: one notebook run from a clean start within its time;
- ``answers``: each problem's answer for a student's own numbers;
- ``key``: the instructor's key, which makes the graded numbers of each student theirs alone;
- ``marking``: the reference, the course's tolerance, one student's marks;
- ``feedback``: what each student is told;
- ``exports``: the grade files, Canvas's and Moodle's CSVs and feedback zips, the report;
- ``nbgrader``: nbgrader's commands run from the course's environment;
- ``cli``: ``python -m coursegrader`` (``make grade``).
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]     # the course's repository: solutions/, grading/, exercises/
SOLUTIONS = ROOT / "solutions"
RUBRIC = ROOT / "grading" / "rubric.yml"
