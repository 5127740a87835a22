"""``switchyard.library``: operators defined from Python, Python kernels and fallbacks in the
dispatcher (docs/python-plan.md §7). Expectations are computed by hand or by calling the same
operators without the Python kernel."""

import threading

import pytest

import switchyard as sy
from switchyard.library import Library


@pytest.fixture
def libs():
    made = []

    def make(*args):
        lib = Library(*args)
        made.append(lib)
        return lib

    yield make
    for lib in reversed(made):
        lib._destroy()


def test_custom_operator_on_cpu_and_meta(libs):
    lib = libs("pytest_ops", "DEF")
    assert lib.define("scale(Tensor x, float factor=2.0, *, bool negate=False) -> Tensor") == "scale"
    seen = []

    def scale_cpu(x, factor=2.0, *, negate=False):
        seen.append((factor, negate))
        y = sy.ops.aten.mul.Tensor(x, sy.tensor(factor))
        return sy.ops.aten.neg.default(y) if negate else y

    lib.impl("scale", scale_cpu, "CPU")
    lib.impl("scale", lambda x, factor=2.0, *, negate=False: sy.ops.aten.empty_like.default(x), "Meta")
    t = sy.tensor([1.0, -2.0])
    assert sy.ops.pytest_ops.scale(t).tolist() == [2.0, -4.0]
    assert sy.ops.pytest_ops.scale.default(t, 0.5, negate=True).tolist() == [-0.5, 1.0]
    # Trailing arguments equal to their defaults are left out, as PyTorch leaves them out:
    # the kernel saw its own defaults the first time and the given values the second.
    assert seen == [(2.0, False), (0.5, True)]
    m = sy.ops.pytest_ops.scale(sy.ops.aten.empty.memory_format([3], device="meta"))
    assert m.device == sy.device("meta") and m.shape == (3,)


def test_kernel_needs_no_parameters_for_defaults(libs):
    lib = libs("pytest_defaults", "DEF")
    lib.define("twice(Tensor x, int n=1, *, str mode='a') -> Tensor")
    lib.impl("twice", lambda x: sy.ops.aten.add.Tensor(x, x), "CPU")
    assert sy.ops.pytest_defaults.twice(sy.tensor([3])).tolist() == [6]


def test_several_returns_and_wrong_returns(libs):
    lib = libs("pytest_returns", "DEF")
    lib.define("split2(Tensor x) -> (Tensor, Tensor)")
    lib.define("bad(Tensor x) -> Tensor")
    lib.impl("split2", lambda x: (sy.ops.aten.neg.default(x), x), "CPU")
    lib.impl("bad", lambda x: "not a tensor", "CPU")
    a, b = sy.ops.pytest_returns.split2(sy.tensor([1.0]))
    assert a.tolist() == [-1.0] and b.tolist() == [1.0]
    with pytest.raises(Exception) as info:
        sy.ops.pytest_returns.bad(sy.tensor([1.0]))
    assert type(info.value).__name__ in ("RuntimeError", "TypeError")


class _KernelError(ValueError):
    pass


def test_exceptions_from_kernels_arrive_unchanged(libs):
    lib = libs("pytest_raises", "DEF")
    lib.define("boom(Tensor x) -> Tensor")
    raised = _KernelError("boom from Python")

    def boom(x):
        raise raised

    lib.impl("boom", boom, "CPU")
    with pytest.raises(_KernelError) as info:
        sy.ops.pytest_raises.boom(sy.tensor([1.0]))
    assert info.value is raised


def test_overriding_an_aten_kernel_and_restoring_it(libs):
    x = sy.tensor([0.0, 1.0])
    expected_sin = sy.ops.aten.sin.default(x).tolist()
    expected_cos = sy.ops.aten.cos.default(x).tolist()
    lib = Library("aten", "IMPL", "CPU")
    lib.impl("sin", lambda x: sy.ops.aten.cos.default(x))
    try:
        assert sy.ops.aten.sin.default(x).tolist() == expected_cos
    finally:
        lib._destroy()
    assert sy.ops.aten.sin.default(x).tolist() == expected_sin


def test_python_fallback_logs_and_redispatches(libs):
    log = []
    lib = libs("_", "IMPL")

    def logging_fallback(keyset, op, *args, **kwargs):
        log.append(op.name())
        assert keyset.has("TESTING_ONLY_GenericMode")
        return op.redispatch(keyset.remove("TESTING_ONLY_GenericMode"), *args, **kwargs)

    lib.fallback(logging_fallback, "TESTING_ONLY_GenericMode", with_keyset=True)
    a, b = sy.tensor([1.0, 2.0]), sy.tensor([10.0, 20.0])
    plain = sy.ops.aten.mul.Tensor(a, b).tolist()
    assert log == []  # the key is not included outside the guard
    with sy._C._IncludeDispatchKeyGuard("TESTING_ONLY_GenericMode"):
        got = sy.ops.aten.mul.Tensor(a, b)
    assert got.tolist() == plain
    assert log == ["aten::mul.Tensor"]


def test_fallback_needs_the_global_namespace(libs):
    lib = libs("pytest_fb", "IMPL")
    with pytest.raises(RuntimeError, match='Fallback can only be registered using library fragment on the global namespace "_" but it is pytest_fb'):
        lib.fallback(lambda op, *a: None, "CPU")


def test_one_def_library_per_namespace(libs):
    libs("pytest_once", "DEF")
    with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY can be used to register the namespace pytest_once"):
        Library("pytest_once", "DEF")
    # A fragment may add to it.
    libs("pytest_once", "FRAGMENT").define("extra(Tensor x) -> Tensor")


def test_destroyed_library_releases_its_function(libs):
    import gc
    import weakref

    lib = Library("pytest_release", "DEF")
    lib.define("f(Tensor x) -> Tensor")

    class Kernel:
        def __call__(self, x):
            return x

    k = Kernel()
    ref = weakref.ref(k)
    lib.impl("f", k, "CPU")
    del k
    gc.collect()
    assert ref() is not None  # held by the registration
    lib._destroy()
    gc.collect()
    assert ref() is None


def test_python_kernel_from_four_threads(libs):
    lib = libs("pytest_threads", "DEF")
    lib.define("inc(Tensor x) -> Tensor")
    counts = []
    lock = threading.Lock()

    def inc(x):
        with lock:
            counts.append(threading.current_thread().name)
        return sy.ops.aten.add.Tensor(x, sy.tensor(1.0))

    lib.impl("inc", inc, "CPU")
    results = [None] * 4
    start = threading.Barrier(4)

    def work(i):
        start.wait()
        t = sy.tensor([float(i)])
        for _ in range(50):
            t = sy.ops.pytest_threads.inc(t)
        results[i] = t.tolist()

    threads = [threading.Thread(target=work, args=(i,), name=f"worker{i}") for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == [[50.0], [51.0], [52.0], [53.0]]
    assert len(counts) == 200 and len(set(counts)) == 4


def test_dispatch_key_sets():
    ks = sy._C.DispatchKeySet("CPU").add("AutogradCPU")
    assert ks.has("CPU") and ks.has("AutogradCPU")
    assert ks.highestPriorityTypeId() == "AutogradCPU"
    assert not ks.remove("AutogradCPU").has("AutogradCPU")
