"""PyTorch's figures for the kernel benchmarks of crates/cpu/benches (binary, reduce, nn) that
../shared/bench/torch_reference.py does not print: softmax, log_softmax and layer_norm over
[4096, 1024] f32, plus add out= 16M, sum 16M and matmul 1024 again (so one run gives every
ratio). Best of 7 after a warm-up, 2 threads unless told otherwise.

Run: /tmp/torchref/bin/python tools/bench/torch_kernels.py [threads]"""
import sys
import time

import torch


def best(f, reps=7):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return min(ts)


torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
print("threads", torch.get_num_threads())
n = 16 * 1024 * 1024
x = torch.rand(n)
y = torch.rand(n)
out = torch.empty(n)
t = best(lambda: torch.add(x, y, out=out))
print("add_out_16M_f32      %8.3f ms  %6.2f GB/s" % (t * 1e3, 12 * n / t / 1e9))
t = best(lambda: x.sum())
print("sum_16M_f32          %8.3f ms  %6.2f GB/s" % (t * 1e3, 4 * n / t / 1e9))
a = torch.rand(4096, 1024)
t = best(lambda: torch.softmax(a, 1))
print("softmax_4096x1024    %8.3f ms  %6.2f GB/s" % (t * 1e3, 8 * a.numel() / t / 1e9))
t = best(lambda: torch.log_softmax(a, 1))
print("log_softmax_4096x1024 %7.3f ms  %6.2f GB/s" % (t * 1e3, 8 * a.numel() / t / 1e9))
w = torch.rand(1024)
b = torch.rand(1024)
t = best(lambda: torch.native_layer_norm(a, [1024], w, b, 1e-5))
print("layer_norm_4096x1024 %8.3f ms  %6.2f GB/s" % (t * 1e3, 8 * a.numel() / t / 1e9))
m = torch.rand(1024, 1024)
k = torch.rand(1024, 1024)
t = best(lambda: m @ k)
print("matmul_1024_f32      %8.3f ms  %6.1f GFLOP/s" % (t * 1e3, 2 * 1024**3 / t / 1e9))
