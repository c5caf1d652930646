# Thin front door over CMake presets. `make demo` and `make test` are the README's Quick start.
JOBS ?= $(shell nproc)

.PHONY: deps build demo test test-asan test-simgrid test-package bench format tidy clean

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

test-asan: deps
	cmake --preset asan >/dev/null
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

bench: build
	scripts/run-benchmarks.sh

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

tidy: build
	clang-tidy -p build/release $$(git ls-files 'src/*.cpp')

clean:
	rm -rf build

# Cross-check of the flow model against SimGrid's max-min model (README, Development).
test-simgrid:
	@STEPCAST_WITH_SIMGRID=1 scripts/install-deps.sh
	cmake --preset simgrid >/dev/null
	cmake --build --preset simgrid -j $(JOBS) --target net_tests simgrid_flows
	ctest --preset simgrid -R SimGrid
