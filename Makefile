# ndval — `make validate` (main job) and `make test`; both create or refresh .venv themselves.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.ndval-installed

.PHONY: setup test validate lint report bench clean

$(STAMP): pyproject.toml
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

# extra arguments: make validate VALIDATE_ARGS="--cases 'recorded/*' --baseline old/summary.json"
# GNU make exits 2 whenever a recipe fails; the gate's own code (1 gate failed, 2 broken input) is
# ndval validate's exit status, printed here and in make's "Error N" line.
validate: $(STAMP)
	@$(BIN)/ndval validate $(VALIDATE_ARGS) || { rc=$$?; \
	  echo "make validate: gate exit $$rc ($$( [ $$rc -eq 1 ] && echo 'gate failed' || echo 'broken input'))" >&2; exit $$rc; }

report: $(STAMP)
	$(BIN)/ndval report

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) reports/allure-results reports/*.json reports/*.xml reports/*.md reports/*.html
