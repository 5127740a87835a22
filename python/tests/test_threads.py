"""The module from several Python threads (docs/python-plan.md §9): large calls release the GIL,
so threads run kernels at the same time; results stay exact because storage access is
serialised underneath; kernels and hooks written in Python take the GIL back themselves.
Expected values are computed by hand."""

import threading
import time

import switchyard as sy
from switchyard.library import Library

# Above the binding's release threshold (32768 elements in all), so these calls run with the
# GIL released.
ROW = 1 << 15


def run_threads(n, target):
    start = threading.Barrier(n)
    errors = []

    def body(i):
        try:
            start.wait()
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread is stuck (deadlock?)"
    assert not errors, errors


def test_in_place_adds_into_one_storage_are_exact():
    x = sy.zeros(4, ROW)

    def work(i):
        row = x[i]  # a view of x's storage
        for _ in range(25):
            row.add_(1.0)  # this thread's row
            x.add_(1.0)  # every row, racing the other threads

    run_threads(4, work)
    # Each row: 25 of its own thread's adds plus 4 × 25 whole-tensor adds.
    assert x.sum().item() == 4 * ROW * (25 + 100)
    assert x.amin().item() == x.amax().item() == 125.0


def test_out_of_place_results_are_independent():
    a = sy.arange(3 * ROW, dtype=sy.float64).reshape(3, ROW)
    results = [None] * 4

    def work(i):
        y = a * (i + 1) + i
        results[i] = y.sum().item()

    run_threads(4, work)
    n = 3 * ROW
    base = n * (n - 1) / 2
    assert results == [base * (i + 1) + i * n for i in range(4)]


def test_python_kernel_called_with_the_gil_released():
    lib = Library("pytest_gil", "DEF")
    try:
        lib.define("double(Tensor x) -> Tensor")
        calls = []

        def double(x):
            calls.append(threading.current_thread().name)
            return sy.ops.aten.add.Tensor(x, x)

        lib.impl("double", double, "CPU")
        big = sy.ones(ROW * 2)
        outs = [None] * 3

        def work(i):
            outs[i] = sy.ops.pytest_gil.double(big).sum().item()

        run_threads(3, work)
        assert outs == [4.0 * ROW] * 3 and len(calls) == 3
    finally:
        lib._destroy()


def test_hook_running_while_another_thread_reads_grad():
    w = sy.ones(ROW, requires_grad=True)
    seen = []

    def slow_hook(grad):
        time.sleep(0.05)
        seen.append(threading.current_thread().name)
        return grad * 2

    w.register_hook(slow_hook)
    done = threading.Event()
    reads = []

    def backward():
        (w * 3).sum().backward()
        done.set()

    def reader():
        while not done.is_set():
            reads.append(w.grad is None)
            time.sleep(0.001)

    threads = [threading.Thread(target=backward), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "backward and a .grad reader deadlocked"
    assert len(seen) == 1 and reads  # the reader ran while the hook slept
    assert w.grad.sum().item() == 6.0 * ROW


def test_concurrent_backward_on_separate_graphs():
    grads = [None] * 4

    def work(i):
        p = sy.full((ROW,), float(i), requires_grad=True)
        ((p * p).sum() * 0.5).backward()
        grads[i] = p.grad.sum().item()

    run_threads(4, work)
    assert grads == [float(i) * ROW for i in range(4)]


def test_large_calls_let_other_threads_run():
    import sys

    # With a 5 s switch interval a thread holding the GIL keeps it while it runs Python code,
    # so the other thread below only runs while the big calls have released it.
    old = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    try:
        x = sy.ones(1 << 21)
        ticks_during = []
        stop = threading.Event()
        started = threading.Event()

        def ticker():
            started.set()
            n = 0
            while not stop.is_set():
                n += 1
                time.sleep(0.0002)  # releases the GIL, so the worker can take it back
            ticks_during.append(n)

        t = threading.Thread(target=ticker)
        t.start()
        started.wait()
        begin = time.perf_counter()
        for _ in range(30):
            x.add_(1.0)
        elapsed = time.perf_counter() - begin
        stop.set()
        t.join(timeout=30)
        assert elapsed < 4.0, "the worker waited for a switch interval: its calls held the GIL"
        assert ticks_during[0] >= 5, f"the other thread ran only {ticks_during[0]} times"
        assert x[0].item() == 31.0
    finally:
        sys.setswitchinterval(old)
