# ipclab: `make bench` runs the lab, `make test` runs every test. Both install what is missing first.
SHELL := /bin/bash
PRESET_BUILD := build/release
ASAN_BUILD := build/asan
TSAN_BUILD := build/tsan
STAMP := build/.setup-done
RESULTS := results/$(shell date -u +%Y%m%dT%H%M%SZ)

.PHONY: all setup build asan tsan bench test test-release test-asan test-tsan test-report clean

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

bench: build
	@mkdir -p $(RESULTS)
	$(PRESET_BUILD)/ipclab run --preset quick --out $(RESULTS); rc=$$?; \
	if [ -f report/pyproject.toml ]; then \
	  $(PRESET_BUILD)/ipclab report $(RESULTS)/results.json -o $(RESULTS)/report.html --markdown $(RESULTS)/summary.md || rc=1; \
	fi; \
	echo "results in $(RESULTS)"; exit $$rc

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

test-report: $(STAMP)
	@if [ -f report/pyproject.toml ]; then cd report && python3 -m pytest -q; fi

clean:
	rm -rf build
