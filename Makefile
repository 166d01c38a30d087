# Skilldesk: `make run` sets everything up and serves; `make test` runs the whole suite.
VENV   ?= .venv
PY     := $(VENV)/bin/python
PYTHON ?= python3
FLASK  := $(VENV)/bin/flask --app wsgi
VENDOR := app/static/vendor

.PHONY: run test setup vendor lint bench clean

run: setup
	$(FLASK) db upgrade
	$(FLASK) serve

test: setup
	bash scripts/test.sh

setup: $(VENV)/.installed $(VENDOR)/htmx.min.js

# Reinstall only when the dependency list changes: quick the second time.
$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test,postgres,redis]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(VENDOR)/htmx.min.js: node_modules/.installed
	mkdir -p $(VENDOR)
	cp node_modules/htmx.org/dist/htmx.min.js node_modules/htmx-ext-sse/dist/sse.min.js $(VENDOR)/

vendor: $(VENDOR)/htmx.min.js

lint: setup
	$(VENV)/bin/ruff check app tests benchmarks
	PYTHONPATH=. $(VENV)/bin/lint-imports --no-cache

bench: setup
	for script in benchmarks/[!_]*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean:
	rm -rf $(VENV) node_modules $(VENDOR)
