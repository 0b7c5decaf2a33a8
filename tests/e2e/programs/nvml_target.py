"""A process to attach to with a fake NVML (tests/gpu/fake_nvml.c): it
alternates between two lines, 0.8 s each, and before each says what the
"GPU" is doing by rewriting the fake's state file (argv[1]): on the gpu
line, 100 % busy with 512 MiB of device memory for this process; on the cpu
line, idle with none.  argv[3] "device": the fake gives no per-process
utilisation, only the device's.  Says "ready" on stdout, then runs until
the file argv[2] appears."""
import os
import sys
import time

STATE, STOP = sys.argv[1], sys.argv[2]
DEVICE_WIDE = len(sys.argv) > 3 and sys.argv[3] == "device"
PHASE_S = 0.8
MIB = 1 << 20


def set_state(util, mem):
    lines = ["devices 1", "name 0 Fake H100"]
    if DEVICE_WIDE:
        lines += ["per_process 0 0", f"util 0 {util}"]
    if util or mem:
        lines.append(f"proc 0 {os.getpid()} {util} {mem}")
    tmp = STATE + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, STATE)


def spin(end):
    while time.monotonic() < end: pass  # LINE: gpu


def wait(end):
    while time.monotonic() < end: pass  # LINE: cpu


set_state(0, 0)
print("ready", flush=True)
while not os.path.exists(STOP):
    set_state(100, 512 * MIB)
    spin(time.monotonic() + PHASE_S)
    set_state(0, 0)
    wait(time.monotonic() + PHASE_S)
