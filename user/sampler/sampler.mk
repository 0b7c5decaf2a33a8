# SPDX-License-Identifier: BSD-2-Clause
# libscalene-bpf-sampler.so, the allocation sampler that `scalene-bpf run`
# preloads, and its tests.  Included by the top-level Makefile after its own
# variables (OUT, CC, WARNINGS).

# Included anywhere, this file must not become the default goal.
sampler_saved_goal := $(.DEFAULT_GOAL)

SAMPLER_SO	:= $(OUT)/sampler/libscalene-bpf-sampler.so
SAMPLER_SRCS	:= $(wildcard user/sampler/*.c)
SAMPLER_OBJS	:= $(patsubst user/sampler/%.c,$(OUT)/sampler/%.o,$(SAMPLER_SRCS))
SAMPLER_TESTS	:= $(OUT)/tests/test_ptrtab $(OUT)/tests/test_sampler $(OUT)/tests/libfakealloc.so

# Own flags, not $(CFLAGS): a sanitizer build must not reach a library that
# replaces malloc.  -fvisibility=hidden: only the hooks and the state block are
# exported.  initial-exec TLS: no __tls_get_addr (which can allocate) in a
# hook.  -fno-builtin and no fortify: the library defines memcpy and
# __memcpy_chk itself.  -z now: no lazy binding inside a hook.  -z nodelete:
# the thread-exit destructor must stay mapped.
SAMPLER_CFLAGS	:= -g -O2 -fPIC -fvisibility=hidden -ftls-model=initial-exec -fno-builtin \
		   -U_FORTIFY_SOURCE $(WARNINGS) -MMD -MP
SAMPLER_LDFLAGS	:= -shared -Wl,-z,now -Wl,-z,relro -Wl,-z,nodelete -Wl,--no-undefined
SAMPLER_LDLIBS	:= -lm

.PHONY: sampler
sampler: $(SAMPLER_SO)
all: sampler
unit-tests: $(SAMPLER_TESTS)

# The probes of the library this build made (tests/unit/test_probes.c).
$(OUT)/tests/test_probes: $(SAMPLER_SO)
$(OUT)/tests/test_probes: CPPFLAGS += -DSAMPLER_SO_PATH='"$(abspath $(SAMPLER_SO))"'

$(SAMPLER_SO): $(SAMPLER_OBJS)
	$(CC) $(SAMPLER_LDFLAGS) -o $@ $^ $(SAMPLER_LDLIBS)

$(OUT)/sampler/%.o: user/sampler/%.c | $(OUT)/sampler
	$(CC) -D_GNU_SOURCE -Iuser/sampler -Iuser $(SAMPLER_CFLAGS) -c $< -o $@

# The table on its own, with threads racing on it.
$(OUT)/tests/test_ptrtab: tests/sampler/test_ptrtab.c user/sampler/ptrtab.c | $(OUT)/tests
	$(CC) -D_GNU_SOURCE -Iuser/sampler -Itests/unit -g -O2 $(WARNINGS) -MMD -MP -pthread \
		-o $@ $(filter %.c,$^)

# A plain program: it runs itself again under LD_PRELOAD of the library.
$(OUT)/tests/test_sampler: tests/sampler/test_sampler.c | $(OUT)/tests $(SAMPLER_SO) \
		$(OUT)/tests/libfakealloc.so
	$(CC) -D_GNU_SOURCE -Iuser/sampler -Itests/unit -g -O2 $(WARNINGS) -MMD -MP -pthread \
		-o $@ $< -ldl -lm

# A strict stand-in for jemalloc, preloaded before and after the sampler.
$(OUT)/tests/libfakealloc.so: tests/sampler/fake_alloc.c | $(OUT)/tests
	$(CC) -D_GNU_SOURCE -g -O2 -fPIC -shared -fvisibility=hidden -fno-builtin $(WARNINGS) \
		-o $@ $<

# A malloc-heavy C program for the overhead measurements (tests/sampler/bench).
$(OUT)/tests/sampler_mbench: tests/sampler/mbench.c | $(OUT)/tests
	$(CC) -D_GNU_SOURCE -g -O2 $(WARNINGS) -pthread -o $@ $<

$(OUT)/sampler:
	mkdir -p $@

-include $(SAMPLER_OBJS:.o=.d) $(SAMPLER_TESTS:=.d)

# Last: the dependency files above hold rules too.  Empty (included before
# the first rule) lets make pick the next rule it reads, as without us.
.DEFAULT_GOAL := $(sampler_saved_goal)
