"""How `make unit` shares the test modules out among its processes (pytest-xdist's ``--dist loadscope``), and how
often each process collects its garbage."""
import gc
import re

import pytest

# The modules that draw a thousand students' numbers for every graded notebook and answer their problems (lesson 3's
# with the simulator). Their tests of one notebook (named in the test's parameters, or in its name) run in one
# process, so that each student is drawn and each answer computed once (``servingmath.variants`` and
# ``servingmath.answers`` keep them), and the notebooks are shared out among the processes: drawn in one process,
# all the classes held one process for most of the run (540 of 766 s in a profiled `make test`).
A_THOUSAND_STUDENTS = ("tests/test_answer_leak.py", "tests/test_coursegrader_marking.py", "tests/test_variants.py")
NOTEBOOK = re.compile(r"lesson-\d-part-\d|plate-xxiii-\d")
# Started first: the students' notebooks, those whose draws run the simulator most first, and every simulator
# setting they are drawn from, each kind of setting a unit of its own (so that no one long test holds a process to
# the end). Most of the run's simulations are theirs, kept on disk as they are made (``servingmath._kept``), so the
# processes share them out.
SETTINGS = "tests/test_variant_settings.py"
STUDENTS = "a thousand students"
SLOWEST_DRAWN = ("lesson-3-part-4", "plate-xxiii-4", "lesson-3-part-2", "lesson-4-part-3", "lesson-3-part-3",
                 "lesson-4-part-2", "lesson-4-part-1")
# After the slowest notebooks, one for each of `make unit`'s processes (UNIT_JOBS), the modules that wait more than
# they work: the grader's sandboxes sit out time limits (an endless loop, a sleeping cell). Handed out while the book
# and JupyterLab keep both processors busy, their waits cost nothing; handed out last, they left the processors a
# third idle over the run's last 100 s (the tests' own CPU time, 141 of 201 processor-seconds, in a timed `make test`).
UNIT_JOBS = 3
WAITING = ("tests/test_grading.py", "tests/test_nbgrader.py", "tests/test_coursegrader_cgroups.py")
FIRST = (*(f"{STUDENTS}: {notebook}" for notebook in SLOWEST_DRAWN[:UNIT_JOBS]), *WAITING,
         *(f"{STUDENTS}: {notebook}" for notebook in SLOWEST_DRAWN[UNIT_JOBS:]), STUDENTS, SETTINGS)


def students_scope(nodeid: str) -> str:
    """The unit of a test of the students' modules: its notebook's (from its parameters, else its name), or
    the rest's."""
    name, _, parameters = nodeid.partition("[")
    found = NOTEBOOK.search(parameters) or NOTEBOOK.search(name.split("::")[-1].replace("_", "-"))
    return f"{STUDENTS}: {found.group(0) if found else 'the rest'}"


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope`` (each module's tests in one process), with the students' modules' tests of one notebook
    in one process together, each test of ``SETTINGS`` a scope of its own, and the scopes in ``FIRST`` (or those
    they begin) handed out first, in that order."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            module = nodeid.split("::", 1)[0]
            if module == SETTINGS:
                return nodeid
            return students_scope(nodeid) if module in A_THOUSAND_STUDENTS else super()._split_scope(nodeid)

        def _assign_work_unit(self, node):
            for first in reversed(FIRST):
                for scope in [scope for scope in reversed(self.workqueue) if scope.startswith(first)]:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return Scheduling(config, log)


def pytest_configure(config):
    """Python's cyclic collector runs after every 700 new objects more than freed, and each of its full passes walks
    every object alive. A test process keeps a thousand students' numbers, their answers and simulated runs for
    the modules that read them again, so at that pace it spends much of its time walking them (the answer-leak
    module ran about three times slower). The package makes little cyclic garbage for the collector to free."""
    gc.set_threshold(100_000, 50, 100)
