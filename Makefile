# SPDX-License-Identifier: BSD-2-Clause
# scalene-bpf: build, test, install.  `make help` lists the targets.

OUT		?= build
PREFIX		?= /usr/local
CC		?= gcc
CLANG		?= clang
BPFTOOL		?= bpftool
ARCH		:= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
PYTHON_TEST	?= $(shell pyenv prefix 3.11.7 2>/dev/null || echo /usr)/bin/python3

WARNINGS	:= -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
CPPFLAGS	+= -I$(OUT) -Iuser -Ibpf -Ipyoffsets -Iuser/sampler -D_GNU_SOURCE
CFLAGS		?= -g -O2
CFLAGS		+= $(WARNINGS) -MMD -MP
LDLIBS		+= -lbpf -lelf -lz -ljson-c -lm
BPF_CFLAGS	:= -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf -Ipyoffsets -Iuser/sampler \
		   -idirafter /usr/include/$(shell $(CC) -dumpmachine) \
		   -Wall -Wno-unused-function -MMD -MP

ifeq ($(SANITIZE),1)
CFLAGS		+= -fsanitize=address,undefined -fno-omit-frame-pointer
LDFLAGS		+= -fsanitize=address,undefined
endif

BPF_SRCS	:= $(wildcard bpf/*.bpf.c)
BPF_OBJS	:= $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS		:= $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRCS))
USER_SRCS	:= $(wildcard user/*.c)
USER_OBJS	:= $(patsubst user/%.c,$(OUT)/user/%.o,$(USER_SRCS))
CORE_OBJS	:= $(filter-out $(OUT)/user/main.o,$(USER_OBJS))
UNIT_SRCS	:= $(wildcard tests/unit/test_*.c)
UNIT_BINS	:= $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRCS))
BPFHOST_SRCS	:= $(wildcard tests/bpf/test_*.c)
BPFHOST_BINS	:= $(patsubst tests/bpf/%.c,$(OUT)/tests/bpf_%,$(BPFHOST_SRCS))

.PHONY: all
all: scalene-bpf

# Renamed into place: a running copy (a test, a benchmark) keeps its inode.
scalene-bpf: $(OUT)/scalene-bpf
	cp $< $@.tmp && mv -f $@.tmp $@

$(OUT)/scalene-bpf: $(USER_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(OUT)/libcore.a: $(CORE_OBJS)
	$(AR) rcs $@ $^

$(OUT)/user/%.o: user/%.c | $(OUT)/user $(SKELS)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BPF_OBJS): $(OUT)/bpf/%.bpf.o: bpf/%.bpf.c | $(OUT)/bpf
	$(CLANG) $(BPF_CFLAGS) -MF $(@:.o=.d) -MT $@ -c $< -o $(@:.o=.tmp.o)
	$(BPFTOOL) gen object $@ $(@:.o=.tmp.o)

$(SKELS): $(OUT)/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(OUT)/tests/test_%: tests/unit/test_%.c $(OUT)/libcore.a | $(OUT)/tests
	$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) $(LDFLAGS) -o $@ $< $(OUT)/libcore.a $(LDLIBS)

# The BPF walker compiled as host C, run against synthetic memory images.
$(OUT)/tests/bpf_test_%: tests/bpf/test_%.c $(OUT)/libcore.a | $(OUT)/tests
	$(CC) $(CPPFLAGS) -Itests/unit -Itests/bpf $(CFLAGS) $(LDFLAGS) -o $@ $< $(OUT)/libcore.a $(LDLIBS)

$(OUT)/user $(OUT)/bpf $(OUT)/tests:
	mkdir -p $@

.PHONY: unit-tests
unit-tests: $(UNIT_BINS) $(BPFHOST_BINS)

# `make test`: unit tests (no root), host-compiled BPF walker tests, then the
# end-to-end suite (root; skipped with a message otherwise).  The last line is
# the total over all suites.
.PHONY: test
test: deps-if-missing
	@if [ "$$(id -u)" -eq 0 ]; then tools/ci-deps; fi
	$(MAKE) scalene-bpf unit-tests test-venv
	@tools/run-tests $(OUT) $(PYTHON_TEST)

# The Python side of the tests: Scalene from PyPI (the format's validator and
# viewers) and pytest, in a venv of their own.
.PHONY: test-venv
test-venv: $(OUT)/venv/.done
$(OUT)/venv/.done: tests/requirements.txt
	$(PYTHON_TEST) -m venv $(OUT)/venv
	$(OUT)/venv/bin/pip install -q -r tests/requirements.txt
	touch $@

# Profiles the bundled example end to end and shows the result.  Installs the
# build dependencies first when they are missing (a fresh machine).
.PHONY: demo
demo: deps-if-missing
	$(MAKE) scalene-bpf
	./scalene-bpf run -o demo-profile.json examples/demo.py
	./scalene-bpf view --cli demo-profile.json

# The benchmark (root; long: about 4 hours on 2 CPUs for both interpreters):
# overhead of every profiler cell on every workload, 10 interleaved rounds,
# Python 3.11 and 3.12 (bench/results-<date>.json, bench/RESULTS.md), then the
# accuracy against known truths (bench/accuracy-<date>.json, ACCURACY.md),
# then the plot docs/bench.png.  Separate from `make test`, which runs only
# the smoke (tools/bench/run --smoke, which includes the accuracy smoke).
BENCH_PYTHONS ?= 3.11.7 3.12.1
.PHONY: bench bench-overhead bench-accuracy bench-plot bench-smoke
bench: bench-overhead bench-accuracy bench-plot

bench-overhead: scalene-bpf sampler
	tools/bench/run --rounds 10 $(foreach v,$(BENCH_PYTHONS),--python $(v))

bench-accuracy: scalene-bpf sampler
	tools/bench/accuracy --reps 10 $(foreach v,$(BENCH_PYTHONS),--python $(v))

bench-plot:
	tools/bench/plot

# One short round of one workload with every installed profiler, and the
# accuracy programs once at a small scale (< 60 s); exits 1 when the harness
# or a profiler run breaks.
bench-smoke: scalene-bpf sampler
	tools/bench/run --smoke

# Debian packages needed to build and test.
DEB_DEPS := clang llvm clang-format systemtap-sdt-dev libbpf-dev bpftool libelf-dev zlib1g-dev libjson-c-dev pkg-config make gcc \
	    python3 python3-venv
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

.PHONY: lint
lint:
	clang-format --dry-run -Werror bpf/*.c bpf/*.h user/*.c user/*.h user/sampler/*.c \
		user/sampler/*.h

.PHONY: install
install: scalene-bpf $(SAMPLER_SO)
	install -D -m 0755 scalene-bpf $(DESTDIR)$(PREFIX)/bin/scalene-bpf
	install -D -m 0644 $(SAMPLER_SO) $(DESTDIR)$(PREFIX)/lib/scalene-bpf/libscalene-bpf-sampler.so

.PHONY: clean
clean:
	rm -rf $(OUT) scalene-bpf

.PHONY: help
help:
	@echo "make            build ./scalene-bpf"
	@echo "make deps       install the Debian build dependencies"
	@echo "make test       run every test (root for the end-to-end part)"
	@echo "make demo       profile examples/demo.py and show the result"
	@echo "make bench      overhead + accuracy benchmark and plot (root, ~4 h); results in bench/, docs/bench.png"
	@echo "make pyoffsets  regenerate pyoffsets/ from each CPython's headers"
	@echo "make vmlinux    regenerate vmlinux/\$$(ARCH)/vmlinux.h from this kernel's BTF"
	@echo "make install    install into \$$(PREFIX) (default /usr/local)"

# The allocation sampler preloaded into profiled programs (memory profiling).
include user/sampler/sampler.mk

-include $(USER_OBJS:.o=.d) $(BPF_OBJS:.o=.d) $(UNIT_BINS:=.d) $(BPFHOST_BINS:=.d)
