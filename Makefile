# Two commands do everything: `make book` builds the website, `make test` runs every check.
# Both create .venv with the pinned versions the first time. `make help` lists every target.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
READY  := $(VENV)/.ready
# The oldest Python the pinned versions in requirements.txt install on.
PYTHON_NEEDED := 3.11
# What $(PYTHON) is; set it on the command line to try the check below with another version.
PYTHON_VERSION = $(shell $(PYTHON) -c 'import platform; print(platform.python_version())' 2>/dev/null)
# The browser stages (lab-check, browser-check, screenshots) run in Debian's Chromium, its headless shell
# where installed (chromium-headless-shell: the same Blink and V8 without the browser layer, about 15 % less
# processor time in the JupyterLab test on a 2-core machine), else the full browser; each says it was skipped, in one line, where there
# is neither: `make test CHROMIUM=/nowhere` tries that.
CHROMIUM ?= $(firstword $(wildcard /usr/bin/chromium-headless-shell) /usr/bin/chromium)
export CHROMIUM
# How many processes the site's browser test and the JupyterLab test use (pytest-xdist's -n), and the unit tests
# (UNIT_JOBS). The unit tests keep each module's tests in one process (--dist loadscope), so its fixtures are made
# once, and the tests of one notebook that draw a thousand students' numbers in one process, so each class is drawn
# once, handed out before the simulator settings they are drawn from, with the grader's tests (which wait on its
# sandbox's time limits) early, while the other lanes keep the processors busy (tests/conftest.py). A unit test often
# waits: on a simulation another process is computing (kept on disk, read once done) or on the grader's sandbox; a
# third process keeps both processors busy meanwhile.
JOBS ?= 2
UNIT_JOBS ?= 3
# Under `make test` the two browser stages run in one process each (JOBS=$(TEST_JOBS), unless JOBS is given on the
# command line or in the environment): beside the other lanes both processors are busy already, and one process does
# the same work in less processor time than two. On a 2-core machine, in a clean clone's `.ci/run`, lab-check took
# 112-119 processor-seconds in one process against 127-137 in two, and browser-check 34-36 against 38-42 (three runs
# and two); the whole run 416-438 s.
TEST_JOBS ?= 1
# `make test`'s stages, in three lanes side by side: unit; book-check, then notebooks-check, then browser-check;
# lab-check. (`+` joins lanes, `,` a lane's stages in turn.) The notebook check reads the build's runs and the
# browser test opens the site built; no lane reads what another writes, and together they keep both processors
# busy to the end (one lane after another, one processor idled while the book was built alone).
STAGES ?= unit+book-check,notebooks-check,browser-check+lab-check
SKIPPED = skipped: no Chromium at $(CHROMIUM) (apt-get install chromium-headless-shell, or make CHROMIUM=/path/to/chromium)

# The make running now, for the stages (named apart from $(MAKE) so that `make -n test` runs nothing).
STAGE_MAKE := $(MAKE)

# Lesson 3's slow simulations (load curves, goodput searches), kept on disk between the processes of a
# build or a test run that run the same ones (src/servingmath/_kept.py), filed under a digest of the
# package's files; `make bench` computes afresh.
export SERVINGMATH_RESULTS ?= $(CURDIR)/_build/simulations

# The installer of the pinned versions, itself pinned.
UV_VERSION := 0.13.9
UV = $(BIN)/uv pip

# JupyterLab reads its settings from the venv, so `make lab` changes nothing outside the project.
LAB_CONFIG := $(CURDIR)/$(VENV)/etc/jupyter

.PHONY: help python-check lab book test unit lab-check notebooks-check book-check browser-check colab-check \
	screenshots bench engine-fit exercises grade notebooks pin pins clean engine engine-check

# One line: the interpreter's version and what is needed, before the environment is made.
define check_python
	@v="$(PYTHON_VERSION)"; \
	if [ -z "$$v" ]; then \
		echo "make: no Python runs as '$(PYTHON)'; the course needs Python $(PYTHON_NEEDED) or newer (make PYTHON=/path/to/python3)" >&2; exit 1; \
	elif ! echo "$$v $(PYTHON_NEEDED)" | awk '{ split($$1, v, "."); split($$2, n, "."); exit !(v[1] > n[1] || (v[1] == n[1] && v[2] >= n[2])) }'; then \
		echo "make: $(PYTHON) is Python $$v; the course needs Python $(PYTHON_NEEDED) or newer (make PYTHON=/path/to/python3)" >&2; exit 1; \
	fi
endef

# uv fetches and unpacks the 160 packages side by side (pip takes them one at a time); `sync` leaves the
# environment holding exactly those listed (the list is complete: see its head), removing any other. Their
# bytecode is compiled now, once, as pip does: where PYTHONDONTWRITEBYTECODE is set (it is on the machines the
# course's CI runs on), every kernel, server and test process would otherwise compile what it imports from
# source, about 3 s of processor each. nbgrader is for instructors, from the command line: lab_settings.py keeps
# its menus out of the learners' JupyterLab, and has the kernel spec start kernels over IPC, each through sockets
# of its own (src/coursegrader/kernels.py: over TCP, a port jupyter_client picks and releases can be taken by
# another process before the kernel binds it). The commands run without being echoed: one line says what happens.
$(READY): requirements.txt pyproject.toml
	$(check_python)
	@echo "make: installing the pinned versions into $(VENV) (once; about 810 MB)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q uv==$(UV_VERSION)
	@$(UV) sync -q --compile-bytecode --python $(BIN)/python requirements.txt
	@$(UV) install -q --compile-bytecode --python $(BIN)/python --no-deps -e .
	@$(BIN)/python -m compileall -q src
	@$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
	@$(BIN)/python scripts/lab_settings.py $(VENV)
	@touch $@

help: ## every target, one line each
	@awk -F ':[^#]*## ' '/^[a-z][a-z-]*:.*## / { printf "  make %-16s %s\n", $$1, $$2 }' $(firstword $(MAKEFILE_LIST))

python-check: ## say whether the Python that makes .venv is new enough (PYTHON=..., or PYTHON_VERSION=3.10.12 to try one)
	$(check_python)
	@echo "$(PYTHON) is Python $(PYTHON_VERSION); the course needs $(PYTHON_NEEDED) or newer"

lab: $(READY) ## the pages, exercises and solutions in JupyterLab, Markdown pages opening as notebooks
	JUPYTER_CONFIG_DIR=$(LAB_CONFIG) $(BIN)/jupytext-config set-default-viewer markdown myst >/dev/null
	JUPYTER_CONFIG_DIR=$(LAB_CONFIG) $(BIN)/jupyter lab

# A line a page as it runs, with its time, and every warning; the build's whole output in _build/book.log.
book: $(READY) ## the website, into _build/html (a line a page as it runs; the whole output in _build/book.log)
	@$(BIN)/python scripts/book.py -W -n --keep-going

# Every check, stage by stage (STAGES above), then one line a stage with its time and result.
test: $(READY) ## every check, in three lanes side by side: unit; book-check, then notebooks-check, then browser-check; lab-check (the browser stages in TEST_JOBS=1 process each); then each stage's time
	@MAKE="$(STAGE_MAKE)" JOBS="$(if $(filter command line environment,$(origin JOBS)),$(JOBS),$(TEST_JOBS))" $(BIN)/python scripts/stages.py $(STAGES)

unit: $(READY) ## the package's tests, the published numbers, the widgets (pytest, in UNIT_JOBS=3 processes)
	$(BIN)/python -m pytest -n $(UNIT_JOBS) --dist loadscope --ignore=tests/jupyterlab --ignore=tests/browser --durations=10 --durations-min=5

# The book with warnings as errors: it runs every page once, and notebooks-check reads those runs.
book-check: $(READY) ## the book built with warnings as errors, then the built site checked
	rm -rf _build/html _build/jupyter_execute _build/.doctrees
	$(BIN)/jupyter-book build . -W -n --keep-going
	$(BIN)/python scripts/check_site.py _build/html
	COURSE_SITE=_build/html $(BIN)/python -m pytest tests/test_editorial.py -k built_page -p no:cacheprovider -q

notebooks-check: $(READY) ## every notebook's outputs: no error, no stderr, no figure shown as text
	$(BIN)/python scripts/nbgate.py

# The pages with controls (explorers, quizzes, exercises' checks) run in JupyterLab (started as
# `make lab` starts it, on a copy of the course) in headless Chromium, every explorer's controls moved.
# In JOBS processes, each with its own JupyterLab and browser: the test mostly waits on kernels and
# the page, so two of them finish in about half the time for little more processor.
lab-check: $(READY) ## the pages with controls run in JupyterLab in Chromium, every explorer moved (in JOBS=2 processes)
	@if [ -x "$(CHROMIUM)" ]; then \
		echo "$(BIN)/python -m pytest tests/jupyterlab -p no:cacheprovider -n $(JOBS) --durations=10"; \
		$(BIN)/python -m pytest tests/jupyterlab -p no:cacheprovider -n $(JOBS) --durations=10; \
	else echo "lab-check $(SKIPPED)"; fi

browser-check: $(READY) ## every page of the built site in Chromium, offline, every chart moved (in JOBS=2 processes)
	@if [ -x "$(CHROMIUM)" ]; then \
		echo "COURSE_SITE=_build/html $(BIN)/python -m pytest tests/browser -p no:cacheprovider -n $(JOBS)"; \
		COURSE_SITE=_build/html $(BIN)/python -m pytest tests/browser -p no:cacheprovider -n $(JOBS); \
	else echo "browser-check $(SKIPPED)"; fi

# Every Colab copy run with nbclient in a clean environment holding Colab's ipywidgets, numpy and
# matplotlib (it installs them from PyPI, so it is not part of `make test`).
colab-check: $(READY) ## every Colab copy run in a clean environment with Colab's versions
	$(BIN)/python scripts/colab_check.py

# What each surface shows, as PNGs under _build/screenshots/: every page of the built site
# (make book first) at 1,400 and 400 px wide, light and dark, and each live chart on its own;
# then each explorer in JupyterLab before and after a control moves (jupyterlab/).
screenshots: $(READY) ## PNGs of every page and explorer under _build/screenshots (make book first)
	@if [ -x "$(CHROMIUM)" ]; then \
		$(BIN)/python scripts/site_screenshots.py _build/html --out _build/screenshots && \
		$(BIN)/python scripts/lab_screenshots.py --out _build/screenshots/jupyterlab; \
	else echo "screenshots $(SKIPPED)"; fi

# What Binder and Colab open: .binder/requirements.txt from requirements.txt, and an .ipynb copy
# of every page under notebooks/. Run it after changing a page; a test fails while they differ.
notebooks: $(READY) ## refresh notebooks/ and .binder/ (what Colab and Binder open) after editing a page
	$(BIN)/python scripts/launch_files.py

# The commit the Colab copies install the package from: pin the current one once the package's
# changes are committed, then commit the pin (a test fails while the package differs from it).
pin: $(READY) ## pin the current commit as the package the Colab copies install, and refresh them
	$(BIN)/python scripts/launch_files.py --pin

bench: $(READY) ## the speed figures, and each stage's time in the last make test
	$(BIN)/python scripts/bench.py

engine-fit: $(READY) ## fit the engines' overheads on the published runs again (minutes), print predicted against published
	$(BIN)/python scripts/engine_fit.py

# The students' notebooks, made from solutions/ (edit those, then run this): the practice release in
# exercises/, the graded release (its cells record answers, show each student's own numbers) in
# exercises/graded/, and the instructor's key outside the repository (kept if it exists; see
# chapters/instructors.md). NBGRADER=folder also writes an nbgrader course there, one assignment a lesson.
exercises: $(READY) ## write exercises/ and exercises/graded/ from solutions/, and the instructor's key (NBGRADER=folder: an nbgrader course too)
	$(BIN)/python scripts/make_exercises.py $(if $(NBGRADER),--nbgrader "$(NBGRADER)")
	PYTHONPATH=src $(BIN)/python -m coursegrader key

# llama.cpp on this machine (the lab's page "A real engine"): built once from the pinned llama-cpp-python
# source into ~/.cache/servingmath-engine (SERVINGMATH_ENGINE_CACHE), outside the repository; it needs
# cmake and a C++ compiler. engine-check is not part of `make test`: it takes a few minutes of both processors.
engine: $(READY) ## build llama.cpp's server and benchmarks once (cached), and write the random-weight model
	$(BIN)/python scripts/engine.py build

engine-check: $(READY) ## llama.cpp's benchmarks and a load test of its server, beside the simulator's three predictions
	$(BIN)/python scripts/engine.py check
	$(BIN)/python -m pytest tests/test_engine_lab.py -p no:cacheprovider -q

# Grade a term's submissions into a folder of grade files (see chapters/instructors.md; python -m coursegrader --help):
#   make grade SUBMISSIONS=folder [RUBRIC=grading/rubric.yml] [ROSTER=gradebook.csv] [TIMES=worksheet.csv] [OUT=grades]
grade: $(READY) ## grade a term's submissions: make grade SUBMISSIONS=folder [ROSTER=file] [OUT=grades]
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=folder [RUBRIC=file] [ROSTER=file] [TIMES=file] [OUT=grades]" >&2; exit 2; }
	@command -v bwrap >/dev/null || echo "grade: bubblewrap is missing (apt-get install bubblewrap); the grader will refuse to run" >&2
	PYTHONPATH=src $(BIN)/python -m coursegrader "$(SUBMISSIONS)" --rubric "$(or $(RUBRIC),grading/rubric.yml)" --out "$(or $(OUT),grades)" \
		$(if $(ROSTER),--roster "$(ROSTER)") $(if $(TIMES),--times "$(TIMES)")

pins: ## regenerate requirements.txt from requirements.in, then make notebooks
	$(check_python)
	$(PYTHON) -m venv /tmp/servingmath-pins && /tmp/servingmath-pins/bin/pip install -q -r requirements.in
	{ sed -n '/^#/p' requirements.txt; /tmp/servingmath-pins/bin/pip freeze --all | grep -v -e '^rfc3987-syntax==' -e '^lark=='; } \
		> requirements.new && mv requirements.new requirements.txt
	$(MAKE) notebooks

clean: ## remove _build
	rm -rf _build
