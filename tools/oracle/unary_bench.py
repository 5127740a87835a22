"""PyTorch's timings for `crates/cpu/benches/unary.rs` on this machine (16M f32 elements,
out= variants, best of 7). Run: /tmp/torchref/bin/python tools/oracle/unary_bench.py [threads]"""
import sys
import time

import torch

torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
print("threads", torch.get_num_threads())
n = 16 * 1024 * 1024
x = torch.rand(n) * 8 - 4
o = torch.empty_like(x)
for name in ["exp", "tanh", "sigmoid", "log", "sin", "sqrt", "neg", "relu"]:
    f = getattr(torch, name)
    if name == "relu":
        def call():
            torch.ops.aten.relu.out(x, out=o)
    else:
        def call():
            f(x, out=o)
    call()
    ts = []
    for _ in range(7):
        t0 = time.perf_counter()
        call()
        ts.append(time.perf_counter() - t0)
    t = min(ts)
    print("%s_16M_out_ms %.2f  (%.2f GB/s)" % (name, t * 1e3, 8 * n / t / 1e9))
