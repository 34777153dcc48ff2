# Two commands do everything: `make book` builds the website, `make test` runs every check.
# Both create .venv with the pinned versions the first time.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
READY  := $(VENV)/.ready

# JupyterLab reads its settings from the venv, so `make lab` changes nothing outside the project.
LAB_CONFIG := $(CURDIR)/$(VENV)/etc/jupyter

.PHONY: lab book test unit lab-check notebooks-check book-check browser-check colab-check screenshots bench exercises grade notebooks pins clean

$(READY): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed, found " + sys.version.split()[0])'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
	# nbgrader is for instructors, from the command line: keep its menus out of the learners' JupyterLab.
	$(BIN)/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1
	for ext in formgrader assignment_list course_list validate_assignment; do \
		$(BIN)/jupyter server extension disable --sys-prefix nbgrader.server_extensions.$$ext >/dev/null 2>&1; done
	touch $@

# The chapters, exercises and solutions in JupyterLab, the Markdown pages opening as notebooks.
lab: $(READY)
	JUPYTER_CONFIG_DIR=$(LAB_CONFIG) $(BIN)/jupytext-config set-default-viewer markdown myst >/dev/null
	JUPYTER_CONFIG_DIR=$(LAB_CONFIG) $(BIN)/jupyter lab

book: $(READY)
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo "The book is at $(CURDIR)/_build/html/index.html"

# Every check: the package, then every page in JupyterLab, then every notebook under nbval, then the
# book with warnings as errors, then the built site in headless Chromium (the two browser checks are
# skipped, and say so, where Chromium is missing).
test: $(READY)
	$(MAKE) unit lab-check notebooks-check book-check browser-check

unit: $(READY)
	$(BIN)/python -m pytest --ignore=tests/jupyterlab

# Every page and exercise notebook run in JupyterLab (started as `make lab` starts it, on a copy of
# the course) in headless Chromium, and every explorer's controls moved (tests/jupyterlab/).
lab-check: $(READY)
	$(BIN)/python -m pytest tests/jupyterlab -p no:cacheprovider

notebooks-check: $(READY)
	$(BIN)/python scripts/nbgate.py

book-check: $(READY)
	rm -rf _build/html _build/jupyter_execute _build/.doctrees
	$(BIN)/jupyter-book build . -W -n --keep-going
	$(BIN)/python scripts/check_site.py _build/html
	COURSE_SITE=_build/html $(BIN)/python -m pytest tests/test_editorial.py -k built_page -p no:cacheprovider -q

browser-check: $(READY)
	@if [ -x /usr/bin/chromium ]; then \
		COURSE_SITE=_build/html $(BIN)/python -m pytest tests/browser -p no:cacheprovider; \
	else \
		echo "browser test skipped: /usr/bin/chromium not found (apt-get install chromium)"; \
	fi

# Every Colab copy run with nbclient in a clean environment holding Colab's ipywidgets, numpy and
# matplotlib (it installs them from PyPI, so it is not part of `make test`).
colab-check: $(READY)
	$(BIN)/python scripts/colab_check.py

# What each surface shows, as PNGs under _build/screenshots/: every page of the built site
# (make book first) at 1,400 and 400 px wide, light and dark, and each live chart on its own;
# then each explorer in JupyterLab before and after a control moves (jupyterlab/).
screenshots: $(READY)
	$(BIN)/python scripts/site_screenshots.py _build/html --out _build/screenshots
	$(BIN)/python scripts/lab_screenshots.py --out _build/screenshots/jupyterlab

# What Binder and Colab open: .binder/requirements.txt from requirements.txt, and an .ipynb copy
# of every page under notebooks/. Run it after changing a page; a test fails while they differ.
notebooks: $(READY)
	$(BIN)/python scripts/launch_files.py

bench: $(READY)
	$(BIN)/python scripts/bench.py

# The students' notebooks, made from solutions/ (edit those, then run this): the practice release in
# exercises/, the graded release (its cells record answers, show each student's own numbers) in
# exercises/graded/. NBGRADER=folder also writes an nbgrader course there, one assignment a lesson.
exercises: $(READY)
	$(BIN)/python scripts/make_exercises.py $(if $(NBGRADER),--nbgrader "$(NBGRADER)")

# Grade a term's submissions into a folder of grade files (see chapters/instructors.md):
#   make grade SUBMISSIONS=folder [RUBRIC=grading/rubric.yml] [ROSTER=gradebook.csv] [TIMES=worksheet.csv] [OUT=grades]
grade: $(READY)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=folder [RUBRIC=file] [ROSTER=file] [TIMES=file] [OUT=grades]" >&2; exit 2; }
	@command -v bwrap >/dev/null || echo "grade: bubblewrap is missing (apt-get install bubblewrap); the grader will refuse to run" >&2
	$(BIN)/python scripts/grade.py "$(SUBMISSIONS)" --rubric "$(or $(RUBRIC),grading/rubric.yml)" --out "$(or $(OUT),grades)" \
		$(if $(ROSTER),--roster "$(ROSTER)") $(if $(TIMES),--times "$(TIMES)")

pins:
	$(PYTHON) -m venv /tmp/servingmath-pins && /tmp/servingmath-pins/bin/pip install -q -r requirements.in
	{ head -n 2 requirements.txt; /tmp/servingmath-pins/bin/pip freeze; } > requirements.new && mv requirements.new requirements.txt
	$(MAKE) notebooks

clean:
	rm -rf _build
