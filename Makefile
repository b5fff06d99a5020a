# ndval — `make validate` (main job) and `make test`; both create or refresh .venv themselves.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.ndval-installed

.PHONY: setup test test-mutation fuzz validate lint report bench clean browser

$(STAMP): pyproject.toml setup.py analyzer/ingest/_kineto_scan.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -n auto tests

# the fuzz suite (tests/fuzz) with many more examples than its bounded run inside `make test`, and the fault
# suite (tests/faults) with its long variants (validate interrupted by SIGINT/SIGTERM at every point)
fuzz: $(STAMP)
	NDVAL_FUZZ=long $(BIN)/pytest -p no:randomly tests/fuzz tests/faults

# targeted mutants of the seed formulas, analyzer weights/gains and assertion bands (slow; not in `make test`):
# each must be killed by its tests; extra arguments: make test-mutation MUTATION_ARGS="-k weight"
test-mutation: $(STAMP)
	$(BIN)/python tools/mutation.py $(MUTATION_ARGS)

# extra arguments: make validate VALIDATE_ARGS="--cases 'recorded/*' --baseline old/summary.json"
# GNU make exits 2 whenever a recipe fails; the gate's own code (1 gate failed, 2 broken input) is
# ndval validate's exit status, printed here and in make's "Error N" line.
validate: $(STAMP)
	@$(BIN)/ndval validate $(VALIDATE_ARGS) || { rc=$$?; \
	  echo "make validate: gate exit $$rc ($$( [ $$rc -eq 1 ] && echo 'gate failed' || echo 'broken input'))" >&2; exit $$rc; }

report: $(STAMP)
	$(BIN)/ndval report

# headless Chromium for the browser tests (Debian package, as root) + the Playwright driver (no browser
# download) + the Allure 3 command line; without them those tests skip with the reason. See ../shared/reference/browser-testing.md.
CHROMIUM ?= /usr/bin/chromium
ALLURE_NPM ?= allure@3
browser: $(STAMP)
	@if [ ! -x $(CHROMIUM) ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; \
	  else echo "make browser: $(CHROMIUM) missing and not root: see ../shared/reference/browser-testing.md" >&2; exit 1; fi; \
	fi
	$(BIN)/python -m pip install --quiet 'playwright>=1.44'
	@$(CHROMIUM) --version
	@# the Allure 3 command line (npm, into node_modules/: gitignored): `ndval validate` then renders the
	@# single-file Allure report and its browser test runs; without npm that test skips with the reason
	@if command -v npm >/dev/null; then npm install --no-save --no-package-lock --no-audit --no-fund --silent $(ALLURE_NPM) \
	  && node_modules/.bin/allure --version; else echo "make browser: npm missing: no Allure 3 command line" >&2; fi

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) reports/allure-results reports/*.json reports/*.xml reports/*.md reports/*.html
