# SPDX-License-Identifier: BSD-2-Clause
# scalene-bpf: build, test, install.  `make help` lists the targets.

OUT		?= build
PREFIX		?= /usr/local
CC		?= gcc
CLANG		?= clang
BPFTOOL		?= bpftool
PROTOC_C	?= protoc-c
ARCH		:= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
PYTHON_TEST	?= $(shell pyenv prefix 3.11.7 2>/dev/null || echo /usr)/bin/python3

WARNINGS	:= -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
# The version: VERSION's one line, for --version, the profiles and the wheel.
VERSION		:= $(shell cat VERSION)
CPPFLAGS	+= -I$(OUT) -Iuser -Ibpf -Ipyoffsets -D_GNU_SOURCE -DSCALENE_BPF_VERSION='"$(VERSION)"'
CFLAGS		?= -g -O2
CFLAGS		+= $(WARNINGS) -MMD -MP
LDLIBS		+= -lbpf -lelf -lz -ljson-c -lprotobuf-c -lm -ldl
# The compiler's multiarch triplet, asked for on first use only: a machine
# without a compiler gets to deps-if-missing before anything runs $(CC).
MULTIARCH	= $(eval MULTIARCH := $$(shell $$(CC) -dumpmachine))$(MULTIARCH)
BPF_CFLAGS	= -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf -Ipyoffsets -Iuser/sampler \
		   -idirafter /usr/include/$(MULTIARCH) \
		   -Wall -Wno-unused-function -MMD -MP

ifeq ($(SANITIZE),1)
CFLAGS		+= -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS		+= -fsanitize=address,undefined
endif

BPF_SRCS	:= $(wildcard bpf/*.bpf.c)
BPF_OBJS	:= $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS		:= $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRCS))
# The loader's stages, in the order a sample goes through them: each
# folder includes only the folders before it (make layers checks it).
STAGES		:= base collect target symbolize model report session view deliver cli
USER_SRCS	:= $(foreach s,$(STAGES),$(wildcard user/$(s)/*.c))
# pprof's profile.proto (the part the export writes), compiled by protoc-c.
PROTO_SRCS	:= $(wildcard user/view/proto/*.proto)
PROTO_GEN	:= $(patsubst user/view/proto/%.proto,$(OUT)/proto/%.pb-c.c,$(PROTO_SRCS))
PROTO_OBJS	:= $(PROTO_GEN:.c=.o)
USER_OBJS	:= $(patsubst user/%.c,$(OUT)/user/%.o,$(USER_SRCS)) $(PROTO_OBJS) \
		   $(OUT)/user/html_assets.o $(OUT)/user/asyncprobe_script.o \
		   $(OUT)/user/bpf_objects.o
# The HTML view's page, style and script, embedded with .incbin.
HTML_ASSETS	:= $(wildcard user/view/html/*.html user/view/html/*.css user/view/html/*.js)
CORE_OBJS	:= $(filter-out $(OUT)/user/cli/main.o,$(USER_OBJS))
UNIT_SRCS	:= $(wildcard tests/unit/test_*.c)
UNIT_BINS	:= $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRCS))
BPFHOST_SRCS	:= $(wildcard tests/bpf/test_*.c)
BPFHOST_BINS	:= $(patsubst tests/bpf/%.c,$(OUT)/tests/bpf_%,$(BPFHOST_SRCS))

# Everything `scalene-bpf run` needs by default: the program and the
# allocation sampler it preloads for memory profiling (user/sampler/sampler.mk).
.PHONY: all
all: scalene-bpf sampler
	@$(give-back)

# Under sudo, the build outputs go back to the user who ran sudo, so that a
# later plain `make` by that user can write them again.
give-back	= if [ -n "$${SUDO_UID:-}" ] && [ "$$(id -u)" -eq 0 ] && [ "$$SUDO_UID" != 0 ]; then \
		  chown -hR "$$SUDO_UID:$${SUDO_GID:-$$SUDO_UID}" $(OUT) \
			$$(ls -d scalene-bpf demo-profile.json 2>/dev/null); fi

# Renamed into place: a running copy (a test, a benchmark) keeps its inode.
scalene-bpf: $(OUT)/scalene-bpf
	cp $< $@.tmp && mv -f $@.tmp $@

$(OUT)/scalene-bpf: $(USER_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(OUT)/libcore.a: $(CORE_OBJS)
	$(AR) rcs $@ $^

$(OUT)/user/%.o: user/%.c | $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# What prints the version is built again when it changes.
$(OUT)/user/cli/main.o $(OUT)/user/report/output_facts.o $(OUT)/tests/test_facts: VERSION

$(OUT)/user/html_assets.o: user/view/html/assets.S $(HTML_ASSETS) | $(OUT)/user
	$(CC) -c $< -o $@

# The asyncio layout probe's Python source, embedded the same way.
$(OUT)/user/asyncprobe_script.o: user/session/asyncprobe_script.S user/session/asyncprobe.py | $(OUT)/user
	$(CC) -c $< -o $@

# Generated C and header together; user code includes "proto/X.pb-c.h".
$(OUT)/proto/%.pb-c.c $(OUT)/proto/%.pb-c.h: user/view/proto/%.proto | $(OUT)/proto
	$(PROTOC_C) --proto_path=user/view/proto --c_out=$(OUT)/proto $<

$(OUT)/proto/%.pb-c.o: $(OUT)/proto/%.pb-c.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(OUT)/user/view/export.o: $(PROTO_GEN:.c=.h)

$(BPF_OBJS): $(OUT)/bpf/%.bpf.o: bpf/%.bpf.c | $(OUT)/bpf
	$(CLANG) $(BPF_CFLAGS) -MF $(@:.o=.d) -MT $@ -c $< -o $(@:.o=.tmp.o)
	$(BPFTOOL) gen object $@ $(@:.o=.tmp.o)

$(SKELS): $(OUT)/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# The same programs built for older kernels (profile.bpf.c, SBPF_LOOPS):
# profile_loop with bpf_loop for the walker's loops (Linux 5.17-6.3, no
# numeric iterators), profile_bounded with plain loops and without what came
# after 5.10 (5.10-5.16).  The loader opens them through profile.skel.h, so
# their maps, programs and variables must be the same: the skeletons may
# differ only in the object's bytes, which are left out of the comparison.
SKEL_LAYOUT	= sed -n '1,/^static inline const void \*profile_bpf__elf_bytes(size_t \*sz)$$/p'
BPF_VARIANTS	:= $(OUT)/bpf/profile_loop.bpf.o $(OUT)/bpf/profile_bounded.bpf.o
$(OUT)/bpf/profile_loop.bpf.o: VARIANT := SBPF_LOOPS_BPF_LOOP
$(OUT)/bpf/profile_bounded.bpf.o: VARIANT := SBPF_LOOPS_BOUNDED
$(BPF_VARIANTS): $(OUT)/bpf/%.bpf.o: bpf/profile.bpf.c $(OUT)/profile.skel.h | $(OUT)/bpf
	$(CLANG) $(BPF_CFLAGS) -DSBPF_LOOPS=$(VARIANT) -MF $(@:.o=.d) -MT $@ -c $< \
		-o $(@:.o=.tmp.o)
	$(BPFTOOL) gen object $@ $(@:.o=.tmp.o)
	$(BPFTOOL) gen skeleton $@ name profile_bpf | $(SKEL_LAYOUT) > $(@:.o=.layout)
	$(SKEL_LAYOUT) $(OUT)/profile.skel.h > $(OUT)/bpf/profile.layout
	@diff $(OUT)/bpf/profile.layout $(@:.o=.layout) >/dev/null || { \
		echo "$@: its skeleton is not profile.skel.h's (maps, programs or variables differ):"; \
		diff $(OUT)/bpf/profile.layout $(@:.o=.layout) | head; rm -f $@; exit 1; }

$(OUT)/user/bpf_objects.o: user/collect/bpf_objects.S $(BPF_VARIANTS) | $(OUT)/user
	$(CC) -DBPF_LOOP_OBJECT='"$(OUT)/bpf/profile_loop.bpf.o"' \
		-DBPF_BOUNDED_OBJECT='"$(OUT)/bpf/profile_bounded.bpf.o"' -c $< -o $@

$(OUT)/tests/test_%: tests/unit/test_%.c $(OUT)/libcore.a | $(OUT)/tests
	$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) $(LDFLAGS) -o $@ $< $(OUT)/libcore.a $(LDLIBS)

# The BPF walker compiled as host C, run against synthetic memory images.
$(OUT)/tests/bpf_test_%: tests/bpf/test_%.c $(OUT)/libcore.a | $(OUT)/tests
	$(CC) $(CPPFLAGS) -Itests/unit -Itests/bpf $(CFLAGS) $(LDFLAGS) -o $@ $< $(OUT)/libcore.a $(LDLIBS)

$(OUT)/user $(OUT)/bpf $(OUT)/tests $(OUT)/proto:
	mkdir -p $@

# Fuzzing (libFuzzer, clang): the harnesses of tests/fuzz/ linked against
# the project's objects built again with the sanitizers, in $(OUT)/fuzz/.
# `make fuzz` runs each for FUZZ_SECONDS (new inputs go to $(OUT)/fuzz/,
# crashes to $(OUT)/fuzz/artifacts/); `make test` runs a short round.
FUZZ_CC		?= $(CLANG)
FUZZ_SECONDS	?= 180
FUZZ_CFLAGS	:= -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
		   -fno-sanitize-recover=undefined $(WARNINGS)
FUZZ_SRCS	:= $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS	:= $(patsubst tests/fuzz/%.c,$(OUT)/fuzz/%,$(FUZZ_SRCS))
# The project's C again with the sanitizers; the embedded files and the
# generated protobuf code as they are.
EMBED_OBJS	:= $(OUT)/user/html_assets.o $(OUT)/user/asyncprobe_script.o $(OUT)/user/bpf_objects.o
FUZZ_OBJS	:= $(patsubst $(OUT)/user/%.o,$(OUT)/fuzz/user/%.o,\
		     $(filter-out $(EMBED_OBJS),$(CORE_OBJS))) $(EMBED_OBJS)

$(OUT)/fuzz/user/%.o: user/%.c | $(SKELS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(OUT)/fuzz/user/view/export.o: $(PROTO_GEN:.c=.h)

$(OUT)/fuzz/libcore.a: $(FUZZ_OBJS)
	$(AR) rcs $@ $^

$(OUT)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(OUT)/fuzz/libcore.a
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer -MMD -MP -o $@ $< \
		$(OUT)/fuzz/libcore.a $(LDLIBS)

.PHONY: fuzz-build fuzz
fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	tools/fuzz-run $(OUT) $(FUZZ_SECONDS) keep

# The test programs' own shared libraries, each from one C file.
TEST_LIB = $(CC) -g -O2 -fPIC -shared -pthread $(WARNINGS) -o $@ $<

# A library whose constructor holds a program back before its interpreter
# starts (SLOW_START_MS), for the end-to-end tests of a slow start.
SLOW_START_SO	:= $(OUT)/tests/libslowstart.so
$(SLOW_START_SO): tests/e2e/programs/slow_start.c | $(OUT)/tests
	$(TEST_LIB)

# churn_forever(): libc allocations from a thread that never returns to
# Python, for the sampler's test of a program exiting under its hooks.
CHURN_SO	:= $(OUT)/tests/libchurn.so
$(CHURN_SO): tests/sampler/programs/churn.c | $(OUT)/tests
	$(TEST_LIB)

# spin_threads(): a pool of threads with no Python thread state, for the
# end-to-end tests of how their CPU time is credited.
NATIVE_POOL_SO	:= $(OUT)/tests/libnativepool.so
$(NATIVE_POOL_SO): tests/e2e/programs/native_pool.c | $(OUT)/tests
	$(TEST_LIB)

# tests/unit/test_tlsslot.c: one thread-local, built with two TLS models.
TLS_SOS		:= $(OUT)/tests/libtls_ie.so $(OUT)/tests/libtls_gd.so
$(OUT)/tests/libtls_%.so: tests/unit/tls_lib.c | $(OUT)/tests
	$(CC) -g -O2 -fPIC -shared $(WARNINGS) -ftls-model=$(if $(filter ie,$*),initial-exec,global-dynamic) -o $@ $<

.PHONY: unit-tests
unit-tests: $(UNIT_BINS) $(BPFHOST_BINS) $(SLOW_START_SO) $(CHURN_SO) $(NATIVE_POOL_SO) $(TLS_SOS)

# `make test`: unit tests (no root), host-compiled BPF walker tests, then the
# end-to-end suite (root; skipped with a message otherwise).  The last line is
# the total over all suites.
.PHONY: test
test: deps-if-missing
	@if [ "$$(id -u)" -eq 0 ]; then \
		echo "make test (root) also installs, where missing: chromium, golang-go, protobuf-compiler"; \
		echo "  (Scalene GUI and pprof checks: tools/ci-deps), the system user sbpftest (sudo"; \
		echo "  tests), pytest and Scalene from PyPI in $(OUT)/venv, and numpy's wheels for each"; \
		echo "  interpreter in $(OUT)/numpy"; \
		tools/ci-deps; \
	fi
	$(MAKE) all unit-tests fuzz-build test-venv test-numpy
	@tools/run-tests $(OUT) $(PYTHON_TEST); rc=$$?; $(give-back); exit $$rc

# `make check`: the quick suite for work in progress, no root, no apt, no
# network: every unit test and host-compiled BPF walker test (T=NAME: only
# tests/unit/test_NAME.c or tests/bpf/test_NAME.c), and every fuzz harness
# over its committed corpus.
.PHONY: check
check: all unit-tests fuzz-build
	@tools/run-tests --quick $(T) $(OUT)

# `make e2e K=expr`: the end-to-end tests whose names match pytest's -k
# expression (all of them without K); root.
.PHONY: e2e
e2e: all test-venv test-numpy $(SLOW_START_SO) $(NATIVE_POOL_SO) $(CHURN_SO)
	@tools/run-tests --e2e $(if $(K),"$(K)") $(OUT); rc=$$?; $(give-back); exit $$rc

# `make vmtest`: the kernel matrix (tools/vmtest): Debian's 5.10, 6.1 and
# 6.12 kernels booted in QEMU over this machine's root file system, each
# running a subset of the end-to-end tests with this build; root.
# KERNEL=label for one, K=expr for another subset.
.PHONY: vmtest
vmtest: all test-venv $(SLOW_START_SO) $(NATIVE_POOL_SO) $(CHURN_SO)
	@tools/vmtest $(if $(KERNEL),--kernel $(KERNEL)) $(if $(K),-k "$(K)"); rc=$$?; $(give-back); exit $$rc

# The Python side of the tests: Scalene from PyPI (the format's validator and
# viewers) and pytest, in a venv of their own.
.PHONY: test-venv
test-venv: $(OUT)/venv/.done
$(OUT)/venv/.done: tests/requirements.txt
	$(PYTHON_TEST) -m venv $(OUT)/venv
	$(OUT)/venv/bin/pip install -q -r tests/requirements.txt
	touch $@

# numpy for each interpreter the end-to-end tests run (BLAS frames under a
# numpy line, tests/e2e/test_native.py): binary wheels from PyPI, a folder
# per ABI that the tests put on PYTHONPATH.  An ABI with no wheel is left
# out, and its test says so as it skips.
NUMPY_ABIS := 3.9:cp39 3.10:cp310 3.11:cp311 3.12:cp312 3.13:cp313 3.13:cp313t 3.14:cp314 3.15:cp315
.PHONY: test-numpy
test-numpy: $(OUT)/numpy/.done
$(OUT)/numpy/.done: $(OUT)/venv/.done
	@for va in $(NUMPY_ABIS); do v=$${va%%:*}; a=$${va##*:}; \
		[ -d $(OUT)/numpy/$$a/numpy ] || $(OUT)/venv/bin/pip install -q --no-deps \
			--only-binary=:all: --ignore-requires-python --python-version $$v \
			--implementation cp --abi $$a \
			--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
			--target $(OUT)/numpy/$$a numpy || echo "no numpy wheel for $$a on PyPI"; \
	done; touch $@

# Profiles the bundled example end to end and shows the result.  Installs the
# build dependencies first when they are missing (a fresh machine).
.PHONY: demo
demo: deps-if-missing
	$(MAKE) all
	./scalene-bpf run -o demo-profile.json examples/demo.py
	./scalene-bpf view --cli demo-profile.json
	@$(give-back)

# The benchmark (root; long: about 3 hours on 2 CPUs for both interpreters):
# overhead of every profiler cell on every workload, 10 interleaved rounds
# (3 for the two extra cells, scalene-bpf+stats and py-spy at 997 Hz), Python
# 3.11 and 3.12 (bench/results-<date>.json, bench/RESULTS.md), then the
# accuracy against known truths, 4 repetitions (bench/accuracy-<date>.json,
# ACCURACY.md), then the plot docs/bench.png.  Separate from `make test`,
# which runs only the smoke (tools/bench/run --smoke, which includes the
# accuracy smoke).  BENCH_ROUNDS / BENCH_REPS change the counts.
BENCH_PYTHONS ?= 3.11.7 3.12.1
BENCH_ROUNDS ?= 10
BENCH_REPS ?= 4
.PHONY: bench bench-overhead bench-accuracy bench-plot bench-smoke
bench: bench-overhead bench-accuracy bench-plot

bench-overhead: scalene-bpf sampler
	tools/bench/run --rounds $(BENCH_ROUNDS) --rounds-for scalene-bpf+stats=3 \
		--rounds-for py-spy-997=3 $(foreach v,$(BENCH_PYTHONS),--python $(v))

bench-accuracy: scalene-bpf sampler
	tools/bench/accuracy --reps $(BENCH_REPS) $(foreach v,$(BENCH_PYTHONS),--python $(v))

bench-plot:
	tools/bench/plot

# One short round of one workload with every installed profiler, and the
# accuracy programs once at a small scale (< 60 s); exits 1 when the harness
# or a profiler run breaks.
bench-smoke: scalene-bpf sampler
	tools/bench/run --smoke
	tools/bench/system-wide --smoke

# The cost of system-wide profiling (--all): busy, idle and short-lived
# Python processes unprofiled, under --all and under --all --comm, and the
# loader's CPU against the sample rate; 3 rounds, about 12 min on 2 CPUs
# (root): bench/<date>-system-wide/.
.PHONY: bench-system-wide
bench-system-wide: scalene-bpf
	tools/bench/system-wide

# Render speed of `view --cli` on a generated ~100 MB profile (target < 2 s):
# bench/view-speed-<date>.json.
.PHONY: bench-view
bench-view: scalene-bpf
	tools/bench/view-speed

# The loader's RSS over a long --pid run of a service that keeps making code
# objects, threads and processes: growth per hour, extrapolated to 24 h.
SOAK_MINUTES	?= 30
.PHONY: soak
soak: scalene-bpf
	tools/soak/run --minutes $(SOAK_MINUTES)

# The README's pictures, docs/view-terminal.png and docs/view-html.png, from
# a profile of examples/demo.py made now (root) and headless Chromium
# (tools/ci-deps installs it).  DOCS_PROFILE=FILE uses that profile instead.
.PHONY: docs-images
docs-images: scalene-bpf sampler
	tools/docs-images $(if $(DOCS_PROFILE),--profile $(DOCS_PROFILE))

# Debian packages needed to build and test.
DEB_DEPS := clang libclang-rt-dev llvm clang-format systemtap-sdt-dev libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev libjson-c-dev pkg-config make gcc \
	    protobuf-c-compiler libprotobuf-c-dev libcurl4-openssl-dev python3 python3-venv
.PHONY: deps
deps:
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_DEPS)

.PHONY: deps-if-missing
deps-if-missing:
	@missing=$$(for p in $(DEB_DEPS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing build dependencies:" $$missing; \
		$(MAKE) deps; \
	fi

.PHONY: vmlinux
vmlinux:
	mkdir -p vmlinux/$(ARCH)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/$(ARCH)/vmlinux.h

.PHONY: pyoffsets
pyoffsets:
	tools/pyoffsets/generate

# The C formatting, and the stages' order (tools/layers).
.PHONY: lint
lint:
	clang-format --dry-run -Werror bpf/*.c bpf/*.h user/*.h user/*/*.c user/*/*.h
	tools/layers $(STAGES)

.PHONY: install
# The GPU library goes along where it was built (a CUDA toolkit was found).
install: scalene-bpf $(SAMPLER_SO) gpu
	install -D -m 0755 scalene-bpf $(DESTDIR)$(PREFIX)/bin/scalene-bpf
	install -D -m 0644 $(SAMPLER_SO) $(DESTDIR)$(PREFIX)/lib/scalene-bpf/libscalene-bpf-sampler.so
	if [ -f $(OUT)/gpu/libscalene-bpf-gpu.so ]; then install -D -m 0644 \
		$(OUT)/gpu/libscalene-bpf-gpu.so $(DESTDIR)$(PREFIX)/lib/scalene-bpf/libscalene-bpf-gpu.so; fi

# `make wheel`: build/wheel/dist/scalene_bpf-V-py3-none-manylinux_2_28_x86_64.whl,
# the program and its libraries for any x86_64 Linux with glibc 2.28 or
# later (tools/wheel/build: zig's compiler from PyPI, the libraries from
# Debian's sources, linked in); `make dist`: the same files as a tarball.
.PHONY: wheel dist
wheel dist:
	tools/wheel/build $@
	@$(give-back)

.PHONY: clean
clean:
	rm -rf $(OUT) scalene-bpf

.PHONY: help
help:
	@echo "make            build ./scalene-bpf and the sampler library it preloads"
	@echo "make deps       install the Debian build dependencies"
	@echo "make test       run every test (root for the end-to-end part); installs what they need"
	@echo "make check      unit, BPF walker and fuzz-corpus tests only (no root, under a minute); T=NAME for one"
	@echo "make wheel      the pip wheel for x86_64 Linux, glibc 2.28+ (build/wheel/dist); make dist: a tarball"
	@echo "make e2e        the end-to-end tests (root); K=expr selects them as pytest -k does"
	@echo "make vmtest     the end-to-end subset on Linux 5.10, 6.1 and 6.12 in QEMU (root); KERNEL=, K="
	@echo "make lint       check the C formatting (clang-format) and the stages' order (tools/layers)"
	@echo "make clean      remove the build"
	@echo "make demo       profile examples/demo.py and show the result"
	@echo "make bench      overhead + accuracy benchmark and plot (root, ~3 h); results in bench/, docs/bench.png"
	@echo "make bench-view render speed of view --cli on a ~100 MB profile"
	@echo "make bench-system-wide  cost of --all with 1-50 Python processes (root, ~12 min)"
	@echo "make docs-images  regenerate docs/view-terminal.png and docs/view-html.png (root)"
	@echo "make fuzz       fuzz every parser of untrusted input (FUZZ_SECONDS each)"
	@echo "make soak       the loader's memory over a long --pid run (SOAK_MINUTES)"
	@echo "make pyoffsets  regenerate pyoffsets/ from each CPython's headers"
	@echo "make vmlinux    regenerate vmlinux/\$$(ARCH)/vmlinux.h from this kernel's BTF"
	@echo "make install    install into \$$(PREFIX) (default /usr/local)"

# The allocation sampler preloaded into profiled programs (memory profiling).
include user/sampler/sampler.mk

# The CUPTI injection library, where a CUDA toolkit is found (user/gpu/gpu.mk).
include user/gpu/gpu.mk

-include $(USER_OBJS:.o=.d) $(BPF_OBJS:.o=.d) $(UNIT_BINS:=.d) $(BPFHOST_BINS:=.d) \
	 $(FUZZ_OBJS:.o=.d) $(FUZZ_BINS:=.d)
