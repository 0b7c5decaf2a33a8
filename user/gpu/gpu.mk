# SPDX-License-Identifier: BSD-2-Clause
# libscalene-bpf-gpu.so, the CUPTI injection library, and its tests.
# Included by the top-level Makefile after its own variables (OUT, CC,
# WARNINGS).  Built only where a CUDA toolkit with CUPTI is found in
# CUDA_HOME (default /usr/local/cuda): cupti.h in include/ or
# extras/CUPTI/include/, libcupti.so in lib64/, lib/ or extras/CUPTI/lib64/.
# Elsewhere `make` builds the rest and says in one line that this library is
# skipped; `make CUDA_HOME=/nonexistent` builds as such a machine would.

# Included anywhere, this file must not become the default goal.
gpu_saved_goal := $(.DEFAULT_GOAL)

CUDA_HOME	?= /usr/local/cuda
GPU_SO		:= $(OUT)/gpu/libscalene-bpf-gpu.so
GPU_CUPTI_INC	:= $(patsubst %/cupti.h,%,$(firstword $(wildcard $(CUDA_HOME)/include/cupti.h \
		   $(CUDA_HOME)/extras/CUPTI/include/cupti.h)))
GPU_CUDA_H	:= $(wildcard $(CUDA_HOME)/include/cuda.h)
GPU_CUPTI_LIB	:= $(patsubst %/libcupti.so,%,$(firstword $(wildcard $(CUDA_HOME)/lib64/libcupti.so \
		   $(CUDA_HOME)/lib/libcupti.so $(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so)))
# The shared CUDA runtime, for the no-driver test only.
GPU_CUDART	:= $(firstword $(wildcard $(CUDA_HOME)/lib64/libcudart.so.[0-9]* \
		   $(CUDA_HOME)/lib/libcudart.so.[0-9]*))
GPU_HEADERS	:= $(if $(and $(GPU_CUPTI_INC),$(GPU_CUDA_H)),yes)
GPU_BUILD	:= $(if $(and $(GPU_HEADERS),$(GPU_CUPTI_LIB)),yes)
GPU_MISSING	:= no CUDA toolkit with CUPTI in CUDA_HOME=$(CUDA_HOME)
# -isystem: the toolkit's headers are not ours to warn about.
GPU_CPPFLAGS	:= -D_GNU_SOURCE -Iuser/gpu -Iuser -isystem $(CUDA_HOME)/include \
		   $(if $(GPU_CUPTI_INC),-isystem $(GPU_CUPTI_INC))
# Own flags, not $(CFLAGS): the library lives in the profiled program, where
# a sanitizer runtime cannot follow.  Only InitializeInjection,
# scalene_bpf_gpu_flush and the state block are exported.  -z nodelete: the
# flush thread and the exit handler run code of the library, which must stay
# mapped even if something dlcloses it.  No libcupti is linked: the library
# opens the one that goes with the program's CUDA (cuptiload.h), and, as
# the last place to look, where this build found one
# (GPU_CUPTI_BUILD_DIR; the wheel's build sets it empty).
GPU_CUPTI_BUILD_DIR ?= $(GPU_CUPTI_LIB)
GPU_CFLAGS	:= -g -O2 -fPIC -fvisibility=hidden -pthread $(WARNINGS) -MMD -MP
GPU_LDFLAGS	:= -shared -pthread -Wl,-z,now -Wl,-z,relro -Wl,-z,nodelete -Wl,--no-undefined
GPU_OBJS	:= $(OUT)/gpu/inject.o $(OUT)/gpu/gpurec.o $(OUT)/gpu/cuptiload.o $(OUT)/gpu/vmm.o
GPU_TESTS	:= $(OUT)/tests/test_gpurec $(OUT)/tests/test_gpu_nodriver $(OUT)/tests/test_cuptiload \
		   $(OUT)/tests/test_gpu_inject $(OUT)/tests/test_vmm

.PHONY: gpu
all: gpu
unit-tests: $(GPU_TESTS)

# What was found, so that the tests are rebuilt when it changes (a stub that
# reports a skip here, the real test there).
GPU_CONFIG	:= $(CUDA_HOME):$(GPU_HEADERS):$(GPU_BUILD):$(GPU_CUDART):$(GPU_CUPTI_BUILD_DIR)
$(OUT)/gpu/config: FORCE | $(OUT)/gpu
	@echo '$(GPU_CONFIG)' | cmp -s - $@ || echo '$(GPU_CONFIG)' > $@
.PHONY: FORCE
FORCE:

ifeq ($(GPU_BUILD),yes)
gpu: $(GPU_SO)

$(GPU_SO): $(GPU_OBJS) $(OUT)/gpu/config user/gpu/gpu.mk
	$(CC) $(GPU_LDFLAGS) -o $@ $(GPU_OBJS) -ldl

$(OUT)/gpu/%.o: user/gpu/%.c $(OUT)/gpu/config | $(OUT)/gpu
	$(CC) $(GPU_CPPFLAGS) $(GPU_CFLAGS) -c $< -o $@

$(OUT)/gpu/cuptiload.o: GPU_CPPFLAGS += $(if $(GPU_CUPTI_BUILD_DIR),-DSBG_CUPTI_BUILD_DIR='"$(GPU_CUPTI_BUILD_DIR)"')

# Its probes, as the sampler's (tests/unit/test_probes.c).
$(OUT)/tests/test_probes: $(GPU_SO)
$(OUT)/tests/test_probes: CPPFLAGS += -DGPU_SO_PATH='"$(abspath $(GPU_SO))"'

# Loads the library into a process without a driver.
$(OUT)/tests/test_gpu_nodriver: tests/unit/test_gpu_nodriver.c user/gpu/gpu.h $(GPU_SO) \
		$(OUT)/gpu/config | $(OUT)/tests
	$(CC) -D_GNU_SOURCE -Iuser/gpu -Itests/unit -g -O2 $(WARNINGS) -MMD -MP \
		-DGPU_SO_PATH='"$(abspath $(GPU_SO))"' -DGPU_CUDART_PATH='"$(GPU_CUDART)"' \
		-o $@ $< -ldl
# The library against a fake libcupti.so.13 (tests/gpu/fake_cupti.c): the
# test program links the fake, so the library loaded into it binds to it.
GPU_FAKE_DIR	:= $(OUT)/tests/fakecupti
$(GPU_FAKE_DIR)/libcupti.so.13: tests/gpu/fake_cupti.c tests/gpu/fake_cupti.h \
		tests/gpu/cupti_walk.h tests/gpu/fake_cupti.map $(OUT)/gpu/config
	@mkdir -p $(@D)
	$(CC) $(GPU_CPPFLAGS) -Itests/gpu -g -O2 -fPIC -shared -pthread $(WARNINGS) \
		-Wl,-soname,libcupti.so.13 -Wl,--version-script=tests/gpu/fake_cupti.map -o $@ $<
# The end-to-end tests' GPU runs (tests/e2e/test_gpu.py) load it, in the
# kernel matrix too (which runs before the unit tests would build it).
e2e vmtest: $(GPU_FAKE_DIR)/libcupti.so.13

# tools/gpu-check's probe log (probelog.c), which the test preloads.
$(OUT)/tests/libprobelog.so: tools/gpu-check/probelog.c user/gpu/gpu.h | $(OUT)/tests
	$(CC) -Iuser/gpu -g -O2 -fPIC -shared -pthread $(WARNINGS) -o $@ $<

$(OUT)/tests/test_gpu_inject: tests/unit/test_gpu_inject.c tests/gpu/fake_cupti.h user/gpu/gpu.h \
		$(GPU_SO) $(GPU_FAKE_DIR)/libcupti.so.13 $(OUT)/tests/libprobelog.so \
		$(OUT)/gpu/config | $(OUT)/tests
	$(CC) $(GPU_CPPFLAGS) -Itests/gpu -Itests/unit -g -O2 $(WARNINGS) -MMD -MP -pthread \
		-DGPU_SO_PATH='"$(abspath $(GPU_SO))"' \
		-DPROBELOG_SO_PATH='"$(abspath $(OUT)/tests/libprobelog.so)"' -o $@ $< \
		$(GPU_FAKE_DIR)/libcupti.so.13 -Wl,-rpath,$(abspath $(GPU_FAKE_DIR)) -ldl

# Where the library finds CUPTI (user/gpu/cuptiload.c), against the fake
# CUPTI and a fake CUDA runtime laid out as the toolkit and the nvidia-*
# pip packages lay them out (tests/unit/test_cuptiload.c says how).
GPU_LAYOUT	:= $(OUT)/tests/cuptiload
$(GPU_LAYOUT)/.made: tests/gpu/fake_cudart.c $(GPU_FAKE_DIR)/libcupti.so.13
	rm -rf $(GPU_LAYOUT) && mkdir -p $(GPU_LAYOUT)/pip12/nvidia/cuda_runtime/lib \
		$(GPU_LAYOUT)/pip12/nvidia/cuda_cupti/lib $(GPU_LAYOUT)/pip13/nvidia/cu13/lib \
		$(GPU_LAYOUT)/toolkit/lib64 $(GPU_LAYOUT)/toolkit/extras/CUPTI/lib64
	for v in 12 13; do $(CC) -g -O2 -fPIC -shared $(WARNINGS) -Wl,-soname,libcudart.so.$$v \
		-o $(GPU_LAYOUT)/libcudart.so.$$v $<; done
	cp $(GPU_LAYOUT)/libcudart.so.12 $(GPU_LAYOUT)/pip12/nvidia/cuda_runtime/lib/
	cp $(GPU_FAKE_DIR)/libcupti.so.13 $(GPU_LAYOUT)/pip12/nvidia/cuda_cupti/lib/libcupti.so.12
	cp $(GPU_LAYOUT)/libcudart.so.13 $(GPU_FAKE_DIR)/libcupti.so.13 $(GPU_LAYOUT)/pip13/nvidia/cu13/lib/
	cp $(GPU_LAYOUT)/libcudart.so.13 $(GPU_LAYOUT)/toolkit/lib64/
	cp $(GPU_FAKE_DIR)/libcupti.so.13 $(GPU_LAYOUT)/toolkit/extras/CUPTI/lib64/
	ln -sf libcupti.so.13 $(GPU_LAYOUT)/toolkit/extras/CUPTI/lib64/libcupti.so
	touch $@

$(OUT)/tests/test_vmm: tests/unit/test_vmm.c user/gpu/vmm.c user/gpu/vmm.h user/gpu/gpu.h \
		$(OUT)/gpu/config | $(OUT)/tests
	$(CC) $(GPU_CPPFLAGS) -Itests/unit -g -O2 $(WARNINGS) -MMD -MP -pthread \
		-o $@ $(filter %.c,$^)

$(OUT)/tests/test_cuptiload: tests/unit/test_cuptiload.c user/gpu/cuptiload.c user/gpu/cuptiload.h \
		user/gpu/gpu.h $(GPU_LAYOUT)/.made $(OUT)/gpu/config | $(OUT)/tests
	$(CC) $(GPU_CPPFLAGS) -Itests/unit -g -O2 $(WARNINGS) -MMD -MP \
		-DLAYOUT_DIR='"$(abspath $(GPU_LAYOUT))"' -o $@ $(filter %.c,$^) -ldl
else
gpu:
	@echo "GPU library skipped: $(GPU_MISSING) (set CUDA_HOME to build libscalene-bpf-gpu.so)"

$(OUT)/tests/test_cuptiload: tests/unit/test_cuptiload.c $(OUT)/gpu/config | $(OUT)/tests
	$(CC) -D_GNU_SOURCE -Iuser/gpu -Itests/unit -g -O2 $(WARNINGS) -MMD -MP \
		-DGPU_SKIP_REASON='"$(GPU_MISSING): libscalene-bpf-gpu.so not built"' -o $@ $<

$(OUT)/tests/test_gpu_nodriver: tests/unit/test_gpu_nodriver.c $(OUT)/gpu/config | $(OUT)/tests
	$(CC) -D_GNU_SOURCE -Iuser/gpu -Itests/unit -g -O2 $(WARNINGS) -MMD -MP \
		-DGPU_SKIP_REASON='"$(GPU_MISSING): libscalene-bpf-gpu.so not built"' -o $@ $<

$(OUT)/tests/test_gpu_inject: tests/unit/test_gpu_inject.c $(OUT)/gpu/config | $(OUT)/tests
	$(CC) -D_GNU_SOURCE -Iuser/gpu -Itests/unit -g -O2 $(WARNINGS) -MMD -MP \
		-DGPU_SKIP_REASON='"$(GPU_MISSING): libscalene-bpf-gpu.so not built"' -o $@ $<

$(OUT)/tests/test_vmm: tests/unit/test_vmm.c $(OUT)/gpu/config | $(OUT)/tests
	$(CC) -D_GNU_SOURCE -Iuser/gpu -Itests/unit -g -O2 $(WARNINGS) -MMD -MP \
		-DGPU_SKIP_REASON='"$(GPU_MISSING): libscalene-bpf-gpu.so not built"' -o $@ $<
endif

# A fake libnvidia-ml.so.1 (tests/gpu/fake_nvml.c) for --pid's NVML
# sampling: no NVIDIA header or driver needed, so built everywhere.
GPU_FAKE_NVML	:= $(OUT)/tests/fakenvml/libnvidia-ml.so.1
unit-tests e2e vmtest: $(GPU_FAKE_NVML)
$(GPU_FAKE_NVML): tests/gpu/fake_nvml.c user/gpu/gpu.mk
	@mkdir -p $(@D)
	$(CC) -D_GNU_SOURCE -g -O2 -fPIC -shared $(WARNINGS) -Wl,-soname,libnvidia-ml.so.1 \
		-o $@ $<
# user/collect/nvml.c against it.
$(OUT)/tests/test_nvml: $(GPU_FAKE_NVML)
$(OUT)/tests/test_nvml: CPPFLAGS += -DFAKE_NVML_PATH='"$(abspath $(GPU_FAKE_NVML))"'

# The decoding needs CUPTI's headers only.
ifeq ($(GPU_HEADERS),yes)
$(OUT)/tests/test_gpurec: tests/unit/test_gpurec.c user/gpu/gpurec.c user/gpu/gpurec.h \
		user/gpu/gpu.h tests/gpu/cupti_walk.h $(OUT)/gpu/config | $(OUT)/tests
	$(CC) $(GPU_CPPFLAGS) -Itests/gpu -Itests/unit -g -O2 $(WARNINGS) -MMD -MP \
		-o $@ $(filter %.c,$^)
else
$(OUT)/tests/test_gpurec: tests/unit/test_gpurec.c $(OUT)/gpu/config | $(OUT)/tests
	$(CC) -D_GNU_SOURCE -Iuser/gpu -Itests/unit -g -O2 $(WARNINGS) -MMD -MP \
		-DGPU_SKIP_REASON='"$(GPU_MISSING): no cupti.h to build the records from"' -o $@ $<
endif

$(OUT)/gpu:
	mkdir -p $@

-include $(GPU_OBJS:.o=.d) $(GPU_TESTS:=.d)

.DEFAULT_GOAL := $(gpu_saved_goal)
