"""PyTorch timings of the copy kernels, for crates/cpu/tests/copy_perf.rs (same cases):

    /tmp/torchref/bin/python tools/oracle/copy_bench.py
"""
import torch, time
torch.set_num_threads(2)
def bench(name, f, reps=20):
    f()
    t0=time.perf_counter()
    for _ in range(reps): f()
    dt=(time.perf_counter()-t0)/reps
    print(f"{name}: {dt*1e3:.3f} ms")
n=1<<24
a=torch.randn(n); b=torch.empty(n)
bench("f32 contiguous 16M", lambda: b.copy_(a))
h=torch.empty(n, dtype=torch.half)
bench("f32->f16 16M", lambda: h.copy_(a))
bench("f16->f32 16M", lambda: b.copy_(h))
i=torch.empty(n, dtype=torch.int32)
bench("f32->i32 16M", lambda: i.copy_(a))
d=torch.empty(n, dtype=torch.float64)
bench("f32->f64 16M", lambda: d.copy_(a))
m=torch.randn(4096,4096); o=torch.empty(4096,4096)
bench("transpose f32 4096^2", lambda: o.copy_(m.t()))
s=torch.randn(1000); so=torch.empty(1000)
bench("f32 1000", lambda: so.copy_(s), reps=10000)
x=torch.randn(2048, 8192)[:, ::2]; xo=torch.empty(2048,4096)
bench("strided f32 2048x4096 step2", lambda: xo.copy_(x))
bench("zero_ 16M", lambda: b.zero_())
bench("fill_ 16M", lambda: b.fill_(1.5))
bench("clone 16M", lambda: a.clone())
