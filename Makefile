# idlewave: `make demo` installs everything into .venv and runs the demo;
# `make test` installs and runs every test (Rust and Python).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SOURCES := $(shell find src python -name '*.rs' -o -name '*.py' 2>/dev/null) Cargo.toml pyproject.toml

export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1

.PHONY: install demo test bench clean

install: $(STAMP)

# pip builds the Rust extension (release) through maturin, the build backend.
$(STAMP): $(SOURCES)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: install
	$(BIN)/idlewave demo --out demo-out

test: install
	cargo test --quiet
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/idlewave bench
	$(BIN)/python -m idlewave.stats.bench

clean:
	rm -rf $(VENV) target demo-out
