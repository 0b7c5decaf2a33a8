"""PyTorch work for tools/gpu-check, from marked lines: what a training job
does to the GPU path (tools/gpu-check/run profiles each case under
`scalene-bpf run` and verify.py judges the profile against the truth file).

  torch_check.py probe OUT.json        exit 77 unless PyTorch with CUDA is
                                       importable; write its versions
  torch_check.py CASE OUT.json         run CASE; write what it did

Cases:
  train     forward, loss.backward() (its kernels come from autograd's own
            threads, with no Python frame) and the optimiser step of an MLP
  compile   a torch.compile'd function (Triton kernels) called in a loop
  graph     a CUDA graph captured once and replayed
  libs      cuBLAS (matmul) and cuDNN (conv2d) kernels: long mangled names
  profiler  torch.profiler records CUDA activity inside the run: the program
            must run on, and what its trace holds is reported
  streams   two Python threads, each launching on a stream of its own
  expandable  a 1 GiB tensor under PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
            (run sets it): the caching allocator takes memory with cuMemCreate,
            which CUPTI has no record of; the library makes them
  exit      kernels, then os._exit(0): no exit handlers run
  sigterm   kernels, then SIGTERM to itself (default action: killed)

Each marked line (`# LINE: name`) is where the verifier expects that work;
the truth file says what each line asked for.  Exits 77 with one line when
there is nothing to check (no PyTorch, no CUDA device).
"""
import json
import os
import signal
import sys
import threading
import time

NOTHING_TO_CHECK = 77


def nothing_to_check(why):
    print(f"torch_check.py: {why}: nothing to check", file=sys.stderr)
    sys.exit(NOTHING_TO_CHECK)


try:
    import torch
except Exception as e:  # noqa: BLE001 (any import failure: no PyTorch here)
    nothing_to_check(f"PyTorch is not importable ({type(e).__name__}: {e})")


def write(out, truth):
    truth["program"] = os.path.realpath(__file__)
    with open(out, "w") as f:
        json.dump(truth, f, indent=1)


def probe(out):
    if not torch.cuda.is_available():
        nothing_to_check(f"torch {torch.__version__} sees no CUDA device")
    write(out, {"torch": torch.__version__, "cuda": torch.version.cuda,
                "device": torch.cuda.get_device_name(0),
                "cudnn": torch.backends.cudnn.version()})


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(2048, 8192), torch.nn.ReLU(),
                               torch.nn.Linear(8192, 8192), torch.nn.ReLU(),
                               torch.nn.Linear(8192, 2048)).cuda()


def train(out, steps=40):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(4096, 2048, device="cuda")
    torch.cuda.synchronize()
    for _ in range(steps):
        y = model(x)  # LINE: forward
        loss = y.square().mean()
        loss.backward()  # LINE: backward
        opt.step()  # LINE: step
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    # Backward's kernels are launched by autograd's device thread, with no
    # Python frame: they belong to the line that waits for them.
    write(out, {"steps": steps, "expect": {
        "forward": {"kernels_min": steps * 3},
        "backward": {"kernels_min": steps * 3},
        "step": {"kernels_min": steps}}})


def compiled(out, calls=200):
    @torch.compile
    def f(a, b):
        return torch.nn.functional.gelu(a @ b + 1.0).sin()

    a = torch.randn(2048, 2048, device="cuda")
    b = torch.randn(2048, 2048, device="cuda")
    f(a, b)  # LINE: compile_first
    torch.cuda.synchronize()
    for _ in range(calls):
        f(a, b)  # LINE: compiled
    torch.cuda.synchronize()
    write(out, {"calls": calls, "expect": {"compiled": {"kernels_min": calls}}})


def graph(out, replays=100):
    a = torch.randn(2048, 2048, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up outside the capture, as PyTorch asks
        for _ in range(3):
            b = (a @ a).relu()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        b = (a @ a).relu()
    torch.cuda.synchronize()
    for _ in range(replays):
        g.replay()  # LINE: replay
    torch.cuda.synchronize()
    del b
    write(out, {"replays": replays, "expect": {"replay": {"kernels_min": replays}}})


def libs(out, rounds=50):
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    conv = torch.nn.Conv2d(64, 128, 3, padding=1).cuda()
    img = torch.randn(32, 64, 112, 112, device="cuda")
    torch.backends.cudnn.benchmark = False
    for _ in range(rounds):
        a @ a  # LINE: matmul
    for _ in range(rounds):
        conv(img)  # LINE: conv
    torch.cuda.synchronize()
    write(out, {"rounds": rounds, "expect": {"matmul": {"kernels_min": rounds, "long_names": True},
                                             "conv": {"kernels_min": rounds,
                                                      "long_names": True}}})


def profiler(out, rounds=50):
    from torch.profiler import ProfilerActivity, profile

    a = torch.randn(2048, 2048, device="cuda")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(rounds):
            a @ a  # LINE: profiled
        torch.cuda.synchronize()
    events = prof.events() or []
    cuda_events = [e for e in events if str(getattr(e, "device_type", "")).endswith("CUDA")]
    for _ in range(rounds):
        a @ a  # LINE: after_profiler
    torch.cuda.synchronize()
    write(out, {"rounds": rounds, "torch_profiler_events": len(events),
                "torch_profiler_cuda_events": len(cuda_events),
                "expect": {"after_profiler": {"kernels_min": rounds}}})


def streams(out, rounds=100):
    a = torch.randn(2048, 2048, device="cuda")
    b = torch.randn(2048, 2048, device="cuda")
    barrier = threading.Barrier(2)

    def one(t, stream):
        barrier.wait()
        with torch.cuda.stream(stream):
            for _ in range(rounds):
                t @ t  # LINE: stream_work
            stream.synchronize()

    workers = [threading.Thread(target=one, args=(t, torch.cuda.Stream())) for t in (a, b)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    write(out, {"rounds": rounds, "threads": 2,
                "expect": {"stream_work": {"kernels_min": 2 * rounds}}})


def expandable(out):
    if "expandable_segments:True" not in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""):
        print("torch_check.py: expandable needs PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
              file=sys.stderr)
        sys.exit(2)
    x = torch.ones(1 << 28, device="cuda")  # LINE: expand_alloc
    torch.cuda.synchronize()
    del x
    torch.cuda.empty_cache()  # LINE: expand_release
    write(out, {"expect": {"expand_alloc": {"alloc_mb_min": 1024},
                           "expand_release": {"free_mb_min": 1024}}})


def exit_now(out, rounds=100, how="exit"):
    a = torch.randn(2048, 2048, device="cuda")
    for _ in range(rounds):
        a @ a  # LINE: before_exit
    torch.cuda.synchronize()
    time.sleep(0.5)  # the library's periodic flush hands the records over
    write(out, {"rounds": rounds, "how": how,
                "expect": {"before_exit": {"kernels_min": rounds}}})
    sys.stdout.flush()
    if how == "exit":
        os._exit(0)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(10)


CASES = {"train": train, "compile": compiled, "graph": graph, "libs": libs,
         "profiler": profiler, "streams": streams, "expandable": expandable, "exit": exit_now,
         "sigterm": lambda out: exit_now(out, how="sigterm")}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("probe", *CASES):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    if sys.argv[1] == "probe":
        probe(sys.argv[2])
    else:
        if not torch.cuda.is_available():
            nothing_to_check("no CUDA device")
        CASES[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
