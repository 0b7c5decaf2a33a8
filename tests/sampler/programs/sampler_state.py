# SPDX-License-Identifier: BSD-2-Clause
"""The sampler's state block as ctypes sees it (user/sampler/sampler.h,
struct scalene_bpf_sampler_state), for the programs here: one layout."""
import ctypes

U64 = ctypes.c_uint64
U32 = ctypes.c_uint32


class State(ctypes.Structure):
    _fields_ = [
        ("magic", U32), ("abi", U32), ("size", U32), ("pid", U32),
        ("sample_bytes", U64), ("copy_sample_bytes", U64),
        ("hooks", U32), ("python", U32),
        ("alloc_bytes", U64), ("python_bytes", U64), ("copy_bytes", U64),
        ("malloc_samples", U64), ("python_samples", U64),
        ("sampled_bytes", U64), ("sampled_python_bytes", U64),
        ("free_samples", U64), ("freed_sampled_bytes", U64),
        ("freed_sampled_python_bytes", U64),
        ("live_sampled_bytes", U64), ("peak_sampled_bytes", U64),
        ("copy_samples", U64), ("copy_sampled_bytes", U64),
        ("table_entries", U64), ("table_overflows", U64), ("table_stale", U64),
        ("realloc_restores", U64),
        ("attach_beat", U64), ("attach_ctl", U32), ("attach_state", U32),
        ("reserved", U64 * 6),
    ]


assert ctypes.sizeof(State) == 248
