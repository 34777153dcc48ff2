"""How `make unit` shares the test modules out among its processes (pytest-xdist's ``--dist loadscope``)."""
import pytest

# The modules that draw a thousand students' numbers for every graded notebook and answer their problems (lesson 3's
# with the simulator): in one process, each student is drawn and each answer computed once (``servingmath.variants``
# and ``servingmath.answers`` keep them), where each module in a process of its own would do it all again.
A_THOUSAND_STUDENTS = ("tests/test_answer_leak.py", "tests/test_coursegrader_marking.py", "tests/test_variants.py")
# Started first, one a process: the students, and every simulator setting they are drawn from. Most of the run's
# simulations are theirs, kept on disk as they are made (``servingmath._kept``), so the two processes share them out.
FIRST = ("a thousand students", "tests/test_variant_settings.py")


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope`` (each module's tests in one process), with the modules above in one process together,
    and the scopes in ``FIRST`` handed out first."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            module = nodeid.split("::", 1)[0]
            return "a thousand students" if module in A_THOUSAND_STUDENTS else super()._split_scope(nodeid)

        def _assign_work_unit(self, node):
            for scope in reversed(FIRST):
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return Scheduling(config, log)
