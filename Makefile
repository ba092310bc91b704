# idlewave: `make demo` installs everything into .venv and runs the demo;
# `make test` installs and runs the tests CI needs (Rust and Python, all but
# the `slow` ones), `make test-full` every test (docs/maintaining.md, "Tests").
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SOURCES := $(shell find src python -name '*.rs' -o -name '*.py' 2>/dev/null) Cargo.toml pyproject.toml

export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1

.PHONY: install demo test test-full lint bench clean system-deps check-examples fuzz wheel wheel-check check-ops check-structure

install: $(STAMP)

# pip builds the Rust extension (release) through maturin, the build backend.
$(STAMP): $(SOURCES)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,test,docs]'
	touch $@

demo: install
	$(BIN)/idlewave demo --out demo-out

# Fortran tracer tests need gfortran and Debian's Open MPI (a second MPI, apart
# from the wheel's): installed when root with apt-get, else those tests skip.
system-deps:
	@if command -v gfortran >/dev/null 2>&1 && [ -x /usr/bin/mpifort ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gfortran libopenmpi-dev openmpi-bin >/dev/null; } \
		|| echo "system-deps: could not install gfortran and Open MPI: the Fortran tracer tests will be skipped"; \
	else echo "system-deps: gfortran or /usr/bin/mpifort missing (not root or no apt-get): the Fortran tracer tests will be skipped"; fi
	@# the report is checked in headless Chromium (skipped where it cannot be installed)
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| echo "system-deps: could not install chromium: the report's browser check will be skipped"; \
	else echo "system-deps: chromium missing (not root or no apt-get): the report's browser check will be skipped"; fi

# The house habits: formatting, clippy without warnings, ruff and mypy clean; the
# generated record-code files current; no import cycle beyond the known ones.
lint: install check-ops check-structure
	cargo fmt --check
	cargo clippy --quiet --all-targets -- -D warnings
	$(BIN)/ruff check --no-cache python tests scripts
	$(BIN)/mypy

# The trace's record codes are written once (src/trace/ops.txt): fails if the Rust, C
# or Python file generated from it is stale (rewrite them with python3 scripts/gen_ops.py).
check-ops:
	$(PYTHON) scripts/gen_ops.py --check

# Import cycles among the Rust crate's modules and among the Python package's (failing
# on one the script does not list with its reason); functions over 80 lines, files over 800.
check-structure:
	$(PYTHON) scripts/check_cycles.py

# pytest in two calls: the tests that may run beside each other on PYTEST_WORKERS
# workers (pytest-xdist; a module's tests on one worker, so its module-scoped
# fixtures are built once), then the `serial` ones (they compare times of real
# runs) alone. test-full adds the `slow` tier: full-size studies, the whole demo,
# the IDLEWAVE_SLOW=1 cases (the wheel built and installed, 1 Mi-rank memory estimates).
# (PYTEST_ARGS: more options for both calls, e.g. PYTEST_ARGS=--durations=15)
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?=
PYTEST_PARALLEL = $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadscope $(PYTEST_ARGS)
PYTEST_SERIAL = $(BIN)/python -m pytest -q $(PYTEST_ARGS)

test: install system-deps lint docs
	cargo test --quiet --lib
	$(PYTEST_PARALLEL) -m "not slow and not serial"
	$(PYTEST_SERIAL) -m "serial and not slow"
	$(BIN)/python scripts/hash_examples.py --check tests/example_hashes.json

test-full: install system-deps lint docs
	cargo test --quiet --lib
	IDLEWAVE_SLOW=1 $(PYTEST_PARALLEL) -m "not serial"
	IDLEWAVE_SLOW=1 $(PYTEST_SERIAL) -m "serial"
	$(BIN)/python scripts/hash_examples.py --check tests/example_hashes.json

# The documentation site (docs/, mkdocs.yml) into site/: the reference pages are generated
# first (docs/reference/, not committed); --strict fails on a dead link or anchor and on a
# page missing from the nav or left out of it.
.PHONY: docs
docs: install
	$(BIN)/python scripts/gen_reference.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d site

# The property tests (src/fuzz.rs, tests/test_fuzz.py) at length; `make test` runs a few cases of each.
fuzz: install
	FUZZ_CASES=$${FUZZ_CASES:-5000} cargo test --release --quiet fuzz
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-3000} $(BIN)/python -m pytest -q tests/test_fuzz.py

# Every example's results against the stored hashes: a refactoring must not change them
# (after a deliberate change of results: scripts/hash_examples.py --write tests/example_hashes.json).
check-examples: install
	$(BIN)/python scripts/hash_examples.py --check tests/example_hashes.json

# The validation table on real applications with Debian's Open MPI (docs/validation.md),
# e.g. make validation VALIDATION_ARGS="--repeat 5 --out validation-out".
.PHONY: validation
validation: install
	$(BIN)/python scripts/validation.py $(VALIDATION_ARGS)

bench: install
	$(BIN)/idlewave bench --repeat 3
	$(BIN)/python -m idlewave.stats.bench

# Breaks each model in a listed way (scripts/mutants.py) and shows the fast tests catch it
.PHONY: mutants
mutants: install
	$(BIN)/python scripts/mutants.py

# idlewave and LogGOPSim on the same GOAL schedules (CPU time, peak memory, end times):
# make bench-loggopsim LOGGOPSIM=path/to/LogGOPSim [RANKS="131072 1048576"]
.PHONY: bench-loggopsim
bench-loggopsim: install
	@test -n "$(LOGGOPSIM)" || { echo "give LOGGOPSIM=path to LogGOPSim's source (git clone https://github.com/spcl/LogGOPSim)"; exit 2; }
	$(BIN)/python scripts/bench_loggopsim.py "$(LOGGOPSIM)" $(if $(RANKS),--ranks $(RANKS))

# The wheel (release engine, no debug info) in dist/; wheel-check installs it into a
# fresh venv with only the core dependencies (linked from .venv: no index needed)
# and runs `idlewave --version` and a small simulation (tests/test_packaging.py).
wheel:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	rm -f dist/idlewave-*.whl
	$(BIN)/python -m pip wheel . --no-deps --quiet -w dist/

wheel-check: install wheel
	IDLEWAVE_SLOW=1 IDLEWAVE_WHEEL="$$(ls dist/idlewave-*.whl)" $(BIN)/python -m pytest -q tests/test_packaging.py

clean:
	rm -rf $(VENV) target demo-out dist
