# Thin front door over CMake presets. `make demo` and `make test` are the README's Quick start.
JOBS ?= $(shell nproc)

.PHONY: deps build demo test asan test-asan test-simgrid test-package test-python python bench format tidy clean fuzz

deps:
	@scripts/install-deps.sh

build: deps
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)

demo: build
	build/release/stepcast predict examples/resnet50-ps.yaml --workers 1,2,4,8,16,32

test: build
	ctest --preset release -j $(JOBS)

# Install into a temporary prefix and build examples/cpp against it (find_package(stepcast));
# builds only the libraries and the command, not the tests.
test-package: deps
	JOBS=$(JOBS) scripts/test-package.sh

# One clang build (preset asan, build/asan) under AddressSanitizer and UndefinedBehaviorSanitizer
# serves the test suite and the libFuzzer targets (`make fuzz`); clang comes with the fuzz deps.
asan:
	@STEPCAST_WITH_FUZZ=1 scripts/install-deps.sh
	cmake --preset asan >/dev/null
	cmake --build --preset asan -j $(JOBS)

test-asan: asan
	ctest --preset asan -j $(JOBS)

bench: build
	scripts/run-benchmarks.sh

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

tidy: build
	clang-tidy -p build/release $$(git ls-files 'src/*.cpp')

clean:
	rm -rf build

# libFuzzer on every reader and loader (tests/fuzz/README.md): the targets of the asan build
# (clang with ASan and UBSan), each FUZZ_SECONDS (60) seconds after the pinned reproducers of
# tests/data/fuzz/; corpora in build/fuzz/corpus/<target>. `FUZZ_SECONDS=30 make fuzz`;
# FUZZ_TARGETS="scenario kineto" picks.
FUZZ_SECONDS ?= 60
fuzz:
	@STEPCAST_WITH_FUZZ=1 scripts/install-deps.sh
	cmake --preset asan >/dev/null
	cmake --build --preset asan -j $(JOBS) --target fuzz_targets
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/run-fuzz.sh

# Cross-check of the flow model against SimGrid's max-min model (docs/development.md), in the
# release build (which builds it by itself wherever SimGrid is installed: `make test` runs it).
test-simgrid:
	@STEPCAST_WITH_SIMGRID=1 scripts/install-deps.sh
	cmake --preset release -DSTEPCAST_WITH_SIMGRID=ON >/dev/null
	cmake --build --preset release -j $(JOBS) --target net_tests simgrid_flows
	ctest --preset release -R SimGrid

# The Python module (python/stepcast_module.cpp) and the command its tests compare with, in the
# release build: PYTHONPATH=build/release python3 -c "import stepcast" (docs/library.md, Python).
# Its pytest suite is the ctest test python_tests, which `make test` runs too. Debian's
# interpreter, the one its python3-* packages (pybind11, pytest, pandas) are installed for,
# unless PYTHON=... (the next `make test` builds the module for the preset's interpreter again).
PYTHON ?= /usr/bin/python3
python:
	@STEPCAST_WITH_PYTHON=1 scripts/install-deps.sh
	cmake --preset release -DPYTHON_EXECUTABLE=$(PYTHON) >/dev/null
	cmake --build --preset release -j $(JOBS) --target stepcast_python stepcast

test-python: python
	ctest --preset release -L python
