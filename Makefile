# ipclab: `make bench` runs the lab, `make test` runs every test. Both install what is missing first.
SHELL := /bin/bash
PRESET_BUILD := build/release
ASAN_BUILD := build/asan
TSAN_BUILD := build/tsan
STAMP := build/.setup-done
RESULTS := results/$(shell date -u +%Y%m%dT%H%M%SZ)
REFERENCE := docs/reference/result.json
# `make bench`'s own run (the default preset) on the reference machine: the README's table.
BENCH_REFERENCE := docs/reference/bench.json

.PHONY: all setup build asan tsan bundle bench reference docs test test-release test-asan test-tsan test-report test-guests format format-check clean

# `make docs` without the reference result stops here, before building anything.
ifneq ($(filter docs,$(MAKECMDGOALS)),)
ifeq ($(wildcard $(REFERENCE)),)
$(error $(REFERENCE) is missing: produce it with `make reference` on the reference machine (it measures), then `make docs`)
endif
endif

all: build

$(STAMP): scripts/setup.sh
	bash scripts/setup.sh
	@mkdir -p build && touch $@

setup: $(STAMP)

build: $(STAMP)
	cmake --preset release >/dev/null
	cmake --build --preset release

asan: $(STAMP)
	cmake --preset asan >/dev/null
	cmake --build --preset asan

# Only what runs under TSan: the concurrent structures' tests, over the suites they run (the
# preset's IPCLAB_SUITES).
TSAN_TARGETS := ipclab_concurrent_tests ipcrt_test_cross_thread ipcrt_test_channel
tsan: $(STAMP)
	cmake --preset tsan >/dev/null
	cmake --build --preset tsan --target $(TSAN_TARGETS)

# One tarball to carry ipclab to another x86-64 Linux and run it there, installing nothing:
# build/bundle/ipclab-bundle.tar.gz (scripts/bundle.sh; README, "Carrying ipclab to another machine").
# Its own build, for any x86-64-v2 CPU: the release build's -march=native would stop with SIGILL on
# a CPU that lacks an instruction of this one's.
bundle: $(STAMP)
	cmake --preset bundle >/dev/null
	cmake --build --preset bundle --target bundle

# The default preset: its first answer (the main transports at 64 B, same and cross CPU, round
# trip and throughput) is printed first, then every mechanism at its defaults, within its budget;
# after the build's load has settled (or a line saying it did not).
bench: build
	@mkdir -p $(RESULTS)
	@bash scripts/wait-idle.sh 90 60
	$(PRESET_BUILD)/ipclab run --out $(RESULTS); rc=$$?; \
	if [ -f report/pyproject.toml ]; then \
	  $(PRESET_BUILD)/ipclab report $(RESULTS)/results.json -o $(RESULTS)/report.html --markdown $(RESULTS)/summary.md || rc=1; \
	fi; \
	echo "results in $(RESULTS)"; exit $$rc

# The reference result (the quick preset, reduced to its medians) and the pages made from it:
# docs/results/<suite>.md and the README's table. `reference` measures: the reference machine only.
reference: build
	bash scripts/reference.sh $(PRESET_BUILD)/ipclab

# The pages again from the committed reference result, e.g. after editing docs/results/notes/.
docs: build
	@if [ -f $(BENCH_REFERENCE) ]; then $(PRESET_BUILD)/ipclab report $(BENCH_REFERENCE) --pages docs/results --readme README.md; fi
	$(PRESET_BUILD)/ipclab report $(REFERENCE) --pages docs/results $(if $(wildcard $(BENCH_REFERENCE)),,--readme README.md)
	@if [ -f docs/reference/bulk.json ]; then $(PRESET_BUILD)/ipclab report docs/reference/bulk.json --pages docs/results; fi
	@if [ -f docs/reference/libs.json ]; then $(PRESET_BUILD)/ipclab report docs/reference/libs.json --pages docs/results --suites libs; fi

# Each test is built and run once per preset: the release build runs the end-to-end tests (every
# benchmark, the CLI, the fault injection, the Go and Rust peers); the unit and concurrent tests
# run under ASan+UBSan; the concurrent structures again under TSan.
test: test-release test-asan test-tsan test-report

test-release: build
	ctest --preset release

# Two at a time: most of these tests wait on their workers rather than compute, and they do not
# collide (IPC objects named after the pid, private temporary directories, ephemeral ports).
test-asan: asan
	ctest --preset asan -L 'unit|concurrent' -j2

test-tsan: tsan
	ctest --preset tsan -L concurrent

# Emulated machines of other shapes (tests/guest: 2 sockets with SMT and 2 NUMA nodes; one socket
# with two last-level caches; 72 CPUs on 4 nodes), QEMU guests running the bundle build's ipclab
# (x86-64-v2: the guests' CPU model lacks what -march=native may use). Its own CI step, after
# `make test`: the guests boot under TCG, minutes each.
test-guests: $(STAMP)
	cmake --preset bundle >/dev/null
	cmake --build --preset bundle --target ipclab
	python3 -m pytest -q -rs -p no:cacheprovider tests/guest

# On every CPU (pytest-xdist): the report's tests are independent, each in its own folder.
test-report: build
	@if [ -f report/pyproject.toml ]; then cd report && python3 -m pytest -q -n auto; fi

# C++ formatting (.clang-format), by one pinned clang-format: another version formats some
# constructs otherwise, and the check would flip between machines.
CLANG_FORMAT := clang-format-14
FORMAT_FILES = $(shell git ls-files '*.cpp' '*.hpp' '*.h')
format: $(STAMP)
	$(CLANG_FORMAT) -i $(FORMAT_FILES)

format-check: $(STAMP)
	@command -v $(CLANG_FORMAT) >/dev/null || { echo "format-check: $(CLANG_FORMAT) is missing: make setup"; exit 2; }
	@if ! $(CLANG_FORMAT) --dry-run -Werror $(FORMAT_FILES) 2>&1 | grep -m20 'error:'; then \
	  echo "format-check: $(words $(FORMAT_FILES)) files formatted as .clang-format says"; \
	else echo "format-check: the files above differ from .clang-format: run \`make format\` and commit"; exit 1; fi

clean:
	rm -rf build
