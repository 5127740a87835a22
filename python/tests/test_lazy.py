"""The lazy device from Python (``switchyard._lazy``, as ``torch._lazy``): programs on
``device="lazy"`` give the values of the same program run eagerly on the CPU (the independent
expectation here), ``mark_step`` compiles a graph once and then takes it from the cache, views
keep aliasing their base across steps, and autograd runs through lazy tensors."""

import pytest

import switchyard as sy
import switchyard._lazy
import switchyard._lazy.metrics as metrics

switchyard._lazy.ts_backend.init()


def program(x, w, b):
    h = (x @ w + b).relu()
    return (h * h).mean(1), h.softmax(-1), h.amax(0)


def inputs():
    sy.manual_seed(0)
    return sy.randn(8, 5), sy.randn(5, 3), sy.randn(3)


def close(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and (a - b).abs().max().item() <= 1e-5


def test_lazy_values_equal_eager_ones():
    eager = program(*inputs())
    lazy_inputs = [t.to("lazy") for t in inputs()]
    assert all(t.device == sy.device("lazy", 0) for t in lazy_inputs)  # lazy:0, as PyTorch's
    outs = program(*lazy_inputs)
    assert all(o.device.type == "lazy" for o in outs)
    switchyard._lazy.mark_step()
    for got, want in zip(outs, eager):
        assert close(got.to("cpu"), want)


def test_a_step_compiles_once_then_hits_the_cache():
    switchyard._lazy.mark_step()
    metrics.reset()
    x, w, b = (t.to("lazy") for t in inputs())
    for step in range(3):
        # The same graph each step; only the scalar differs, and scalars are parameters.
        w = w - (0.1 + step) * x.t() @ x @ w / 8.0
        switchyard._lazy.mark_step()
    assert metrics.counter_value("MarkStep") == 3
    assert metrics.counter_value("UncachedCompile") == 1
    assert metrics.counter_value("CachedCompile") == 2
    assert "MarkStep" in metrics.counter_names()
    assert "UncachedCompile" in metrics.metrics_report()
    # The same loop eagerly.
    xe, we, _ = inputs()
    for step in range(3):
        we = we - (0.1 + step) * xe.t() @ xe @ we / 8.0
    assert close(w.to("cpu"), we)


def test_a_view_updates_its_base_across_mark_step():
    base = sy.arange(6.0).reshape(2, 3).to("lazy")
    row = base[1]
    switchyard._lazy.mark_step()
    row.mul_(10)
    switchyard._lazy.mark_step()
    assert base.to("cpu").tolist() == [[0.0, 1.0, 2.0], [30.0, 40.0, 50.0]]


def test_sync_multi_runs_only_what_is_asked():
    a = sy.ones(3).to("lazy") * 2
    b = sy.ones(3).to("lazy") * 3
    assert switchyard._lazy.get_graph_hash([a]) is not None
    switchyard._lazy.sync_multi([a])
    assert switchyard._lazy.get_graph_hash([a]) is None
    assert switchyard._lazy.get_graph_hash([b]) is not None
    assert b.to("cpu").tolist() == [3.0, 3.0, 3.0]


def test_autograd_through_lazy_tensors():
    x, w, b = inputs()
    w.requires_grad_()
    loss = program(x, w, b)[0].sum()
    loss.backward()
    want = w.grad

    x, w, b = inputs()
    wl = w.to("lazy").detach().requires_grad_()
    loss = program(x.to("lazy"), wl, b.to("lazy"))[0].sum()
    loss.backward()
    switchyard._lazy.mark_step()
    assert close(wl.grad.to("cpu"), want)


def test_errors_are_raised_when_traced():
    a = sy.ones(2, 3).to("lazy")
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        a @ a


def test_ir_dumps():
    y = (sy.ones(2, 3).to("lazy") * 2 + 1).relu()
    text = switchyard._lazy.debug.dump_ir([y], "text")
    lines = text.strip().splitlines()
    assert lines[0] == "IR {" and lines[-1] == "}"
    # The program's three operators, in order, the last one the root (LTC's text layout).
    ops = [line.split("] ", 1)[1].split("(")[0] for line in lines if "aten::" in line]
    assert ops == ["aten::mul", "aten::add", "aten::relu"]
    assert "ROOT=0" in lines[-2]
    assert switchyard._lazy.debug.dump_ir([y], "dot").startswith("digraph")
    with pytest.raises(RuntimeError, match="Unrecognized IR format: svg"):
        switchyard._lazy.debug.dump_ir([y], "svg")


def test_backend_dump_is_the_program_the_step_runs():
    # torch._lazy.debug.dump_ir(tensors, "backend"): the active backend's program for the
    # pending IR (ours: the fusing compiler's), compiled but neither cached nor run.
    x = sy.tensor([-1.0, 0.5, 2.0]).to("lazy")
    y = (x * 2 + 1).relu()
    metrics.reset()
    cached = switchyard._C._computation_cache_size()
    text = switchyard._lazy.debug.dump_ir([y], "backend")
    assert "fused[mul, add, relu]" in text, text
    assert not text.startswith("IR {")
    assert switchyard._C._computation_cache_size() == cached
    assert metrics.counter_value("UncachedCompile") is None
    # Still pending: the step then compiles and runs it (hand-computed values).
    switchyard._lazy.mark_step()
    assert y.to("cpu").tolist() == [0.0, 2.0, 5.0]
