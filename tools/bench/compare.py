"""Issue 5's performance table, measured so that one noisy minute cannot flip a verdict: our
criterion benchmarks and PyTorch's figures for the same rows, taken back to back over several
rounds, each side summarised by its median and spread across the rounds.

Run it with the PyTorch it should measure, from anywhere in the checkout:

    /tmp/torchref/bin/python tools/bench/compare.py [--rounds 5] [--only sum,matmul]
        [--threads 2] [--measurement-time 1.0] [--warm-up-time 0.5]
        [--libtorch-overhead /tmp/libtorch_overhead] [--json results.json]

(if that venv's `bin/python` is broken, `PYTHONPATH=/tmp/torchref/lib/python3.11/site-packages
python3.11 tools/bench/compare.py ...` is the same interpreter.) It first builds the bench
executables the chosen rows need (`cargo bench --no-run`, honouring CARGO_TARGET_DIR) and
links them aside (a target directory shared with other builds cannot swap them mid-run), then
runs `--rounds` rounds. In every round each row is measured twice, back to back: our side (the
criterion bench run alone, `--exact` on its id, with short warm-up and measurement times and
its own CRITERION_HOME; its median is read from `<home>/<id>/new/estimates.json`) and
PyTorch's (timed in this process the way criterion times: a warm-up, then 20 samples of equal
iteration counts, the median per-call time), or for the tiny rows libtorch's C++ figure from
`../shared/bench/libtorch_overhead.cpp`. Which side goes first alternates from round to round,
so a slow drift of the host's load favours neither. A round of every row takes about 30 s.

Rows (`--only` takes a comma-separated list of these keys, or of the criterion ids):

    add_out       binary_16M/add_out_16M_f32          torch.add(x, y, out=out), 16M f32
    sum           reduce/sum_16M_f32                  x.sum(), 16M f32
    softmax       nn/softmax_4096x1024_f32            torch.softmax(a, 1)
    log_softmax   nn/log_softmax_4096x1024_f32        torch.log_softmax(a, 1)
    layer_norm    nn/native_layer_norm_4096x1024_f32  torch.native_layer_norm(a, [1024], w, b)
    matmul        nn/matmul_1024_f32                  m @ k, 1024x1024 f32
    tiny_add      add_tiny                            libtorch add_tiny_nograd_ns
    autograd_add  autograd/add_requires_grad_tiny     libtorch add_requires_grad_tiny_ns
    mlp_step      train/mlp_step_b64                  torch_reference.py's mlp_step_b64 step
    lazy_trace    lazy/trace_1000op                   LTC: trace(500) (1000 operators)
    lazy_mark_step lazy/mark_step_1000op_cached       LTC: trace(500) + mark_step (cached)
    chain8        lazy/chain8_16M                     torch.compile(chain)(x), 16M f32
    chain8_self   lazy/chain8_16M                     our eager/chain8_16M (ours/ours)
    softmax_expr  lazy/softmax_expr_4096x1024         torch.compile(sm_expr)(a)
    layer_norm_expr lazy/layer_norm_expr_4096x1024    torch.compile(ln_expr)(a)
    demo_step     lazy/demo_mlp_step                  our train/demo_mlp_step (ours/ours)
    demo_step_reuse_ir lazy/demo_mlp_step_reuse_ir    the same with set_reuse_ir(true)

The first six are switchyard-cpu's `--bench binary/reduce/nn`, `autograd_add` is
`cargo bench -p switchyard-autograd --bench autograd`, `mlp_step` is
`cargo bench -p switchyard-nn --bench train`, the lazy rows `cargo bench -p switchyard-lazy
--bench lazy` (plan §8.4 of docs/lazy-plan.md; the LTC rows need `torch._lazy` with its
TorchScript backend and are left out without it; `chain8_self` compares two of our own benches,
eager over lazy, run back to back like the others; `demo_step` likewise compares the demo
network's lazy training step with its eager one, as a time ratio lazy/eager). The two libtorch rows need the built
libtorch_overhead binary (its header says how to build it; `--libtorch-overhead`, by default
/tmp/libtorch_overhead when it exists) and are left out without it. Our benches run with
RAYON_NUM_THREADS and PyTorch with torch.set_num_threads set to `--threads`; libtorch_overhead
sets one thread itself, and the tiny calls of our benches stay on the calling thread.

The table starts with the CPU model (/proc/cpuinfo's `model name`), the logical CPUs, the
vector extensions and the thread count, and the load average before and after. Each row then
prints each side's median over the rounds and its spread (the smallest and largest round),
the ratio of the two medians, the range of the per-round ratios (each round's two figures were
taken seconds apart), the target and whether the ratio of medians meets it, with the number of
rounds that met it on their own. Kernel rows give PyTorch's time / ours (above 1: we are
faster; target at least that); the tiny, autograd and MLP rows give our time / PyTorch's
(target at most that). A verdict that holds in only some rounds is noise-bound: take more
rounds (or a quieter host) before believing either way.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The libtorch figures of the tiny rows (printed by libtorch_overhead.cpp).
LIBTORCH = "libtorch"


class Row:
    """One line of the table: our criterion bench and what it is compared with."""

    def __init__(self, key, label, package, bench, bench_id, theirs, target, time_ratio):
        self.key = key
        self.label = label
        self.package = package
        self.bench = bench
        self.bench_id = bench_id
        # Either the name of a PyTorch figure timed in process (see `TorchSide`) or
        # (LIBTORCH, line name of libtorch_overhead's output).
        self.theirs = theirs
        self.target = target
        # False: ratio = PyTorch time / ours, met when >= target (kernel rows).
        # True: ratio = our time / PyTorch's, met when <= target (overhead rows).
        self.time_ratio = time_ratio

    def ratio(self, ours, theirs):
        return ours / theirs if self.time_ratio else theirs / ours

    def meets(self, ratio):
        return ratio <= self.target if self.time_ratio else ratio >= self.target

    def target_text(self):
        return f"{'<=' if self.time_ratio else '>='}{self.target}"


CPU = "switchyard-cpu"
LAZY = "switchyard-lazy"
# `Row.theirs` of a row comparing two of our own benches: (OURS, package, bench, bench_id).
OURS = "ours"
ROWS = [
    Row("add_out", "add out= 16M f32", CPU, "binary", "binary_16M/add_out_16M_f32",
        "add_out", 1.0, False),
    Row("sum", "sum 16M f32", CPU, "reduce", "reduce/sum_16M_f32", "sum", 1.0, False),
    Row("softmax", "softmax [4096,1024] f32", CPU, "nn", "nn/softmax_4096x1024_f32",
        "softmax", 1.0, False),
    Row("log_softmax", "log_softmax [4096,1024] f32", CPU, "nn",
        "nn/log_softmax_4096x1024_f32", "log_softmax", 1.0, False),
    Row("layer_norm", "native_layer_norm [4096,1024]", CPU, "nn",
        "nn/native_layer_norm_4096x1024_f32", "layer_norm", 1.0, False),
    Row("matmul", "matmul 1024^2 f32", CPU, "nn", "nn/matmul_1024_f32", "matmul", 0.7, False),
    Row("tiny_add", "tiny add (time ratio)", CPU, "binary", "add_tiny",
        (LIBTORCH, "add_tiny_nograd_ns"), 0.3, True),
    Row("autograd_add", "add requires_grad (time ratio)", "switchyard-autograd", "autograd",
        "autograd/add_requires_grad_tiny", (LIBTORCH, "add_requires_grad_tiny_ns"), 0.3, True),
    Row("mlp_step", "MLP train step b64 (time ratio)", "switchyard-nn", "train",
        "train/mlp_step_b64", "mlp_step", 1.0, True),
    Row("lazy_trace", "lazy trace 1000 ops (time ratio)", LAZY, "lazy", "lazy/trace_1000op",
        "ltc_trace", 0.2, True),
    Row("lazy_mark_step", "lazy cached step 1000 (time)", LAZY, "lazy",
        "lazy/mark_step_1000op_cached", "ltc_mark_step", 0.2, True),
    Row("chain8", "chain8 16M lazy (time ratio)", LAZY, "lazy", "lazy/chain8_16M",
        "chain8_compiled", 0.8, True),
    Row("chain8_self", "chain8 16M eager/lazy (ours)", LAZY, "lazy", "lazy/chain8_16M",
        (OURS, LAZY, "lazy", "eager/chain8_16M"), 5.0, False),
    Row("softmax_expr", "softmax_expr lazy (time ratio)", LAZY, "lazy",
        "lazy/softmax_expr_4096x1024", "softmax_expr_compiled", 1.0, True),
    Row("layer_norm_expr", "layer_norm_expr lazy (time)", LAZY, "lazy",
        "lazy/layer_norm_expr_4096x1024", "layer_norm_expr_compiled", 1.0, True),
    Row("demo_step", "demo MLP step lazy/eager (ours)", LAZY, "lazy", "lazy/demo_mlp_step",
        (OURS, LAZY, "lazy", "train/demo_mlp_step"), 1.0, True),
    Row("demo_step_reuse_ir", "demo MLP step reuse_ir lazy/eager", LAZY, "lazy",
        "lazy/demo_mlp_step_reuse_ir", (OURS, LAZY, "lazy", "train/demo_mlp_step"), 1.0, True),
]


# ---------------------------------------------------------------------------------------------
# The host
# ---------------------------------------------------------------------------------------------


def cpu_description():
    """(model name, logical CPUs, notable vector extensions) from /proc/cpuinfo."""
    model, flags = platform.processor() or "unknown", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                name, _, value = line.partition(":")
                name = name.strip()
                if name == "model name":
                    model = value.strip()
                elif name == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    ext = [x for x in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile") if x in flags]
    return model, os.cpu_count(), ext


def load_average():
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


# ---------------------------------------------------------------------------------------------
# Our side: criterion benches
# ---------------------------------------------------------------------------------------------


def build_benches(rows, snapshot_dir):
    """Builds the bench executables the rows need and links (or copies) them into
    `snapshot_dir`, so that a build in a shared target directory during the rounds cannot swap
    them; returns {(package, bench): path of the snapshot}."""
    wanted = {}
    for r in rows:
        wanted.setdefault(r.package, set()).add(r.bench)
        if isinstance(r.theirs, tuple) and r.theirs[0] == OURS:
            wanted.setdefault(r.theirs[1], set()).add(r.theirs[2])
    exes = {}
    for package, benches in sorted(wanted.items()):
        cmd = ["cargo", "bench", "--no-run", "--message-format=json", "-p", package]
        for b in sorted(benches):
            cmd += ["--bench", b]
        print("building: " + " ".join(c for c in cmd if c != "--message-format=json"),
              file=sys.stderr, flush=True)
        proc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"cargo failed ({proc.returncode}): {' '.join(cmd)}")
        for line in proc.stdout.splitlines():
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                continue
            target = msg.get("target") or {}
            if (msg.get("reason") == "compiler-artifact" and "bench" in target.get("kind", [])
                    and msg.get("executable") and target.get("name") in benches):
                exes[(package, target["name"])] = msg["executable"]
        for b in benches:
            if (package, b) not in exes:
                raise SystemExit(f"cargo built no executable for {package} --bench {b}")
    for key, path in exes.items():
        copy = os.path.join(snapshot_dir, f"{key[0]}-{key[1]}")
        try:
            # A hard link costs no space, and the linker replaces (unlinks) an executable it
            # rebuilds, so the link keeps the file as built here.
            os.link(path, copy)
        except OSError:
            shutil.copy2(path, copy)
        exes[key] = copy
    return exes


def run_ours(row, exe, args, home):
    """Criterion's median for `row` in seconds, from one run of its bench alone."""
    return run_criterion(row.bench_id, exe, args, home)


def run_criterion(bench_id, exe, args, home):
    """Criterion's median for `bench_id` in seconds, from one run of its bench alone."""
    env = dict(os.environ, CRITERION_HOME=home, RAYON_NUM_THREADS=str(args.threads))
    cmd = [exe, "--bench", "--exact", bench_id, "--noplot",
           "--warm-up-time", str(args.warm_up_time),
           "--measurement-time", str(args.measurement_time)]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    path = os.path.join(home, *bench_id.split("/"), "new", "estimates.json")
    if proc.returncode != 0 or not os.path.exists(path):
        sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-2000:])
        raise SystemExit(f"{' '.join(cmd)} failed or wrote no {path}")
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"] / 1e9


# ---------------------------------------------------------------------------------------------
# PyTorch's side
# ---------------------------------------------------------------------------------------------


class TorchSide:
    """PyTorch's figures, timed in this process as criterion times ours."""

    SAMPLES = 20

    def __init__(self, args):
        self.args = args
        self.fns = {}
        n = 16 * 1024 * 1024
        keys = {r.theirs for r in args.rows if not isinstance(r.theirs, tuple)}
        if "add_out" in keys or "sum" in keys:
            x, y, out = torch.rand(n), torch.rand(n), torch.empty(n)
            self.fns["add_out"] = lambda: torch.add(x, y, out=out)
            self.fns["sum"] = lambda: x.sum()
        if keys & {"softmax", "log_softmax", "layer_norm"}:
            a, w, b = torch.rand(4096, 1024), torch.rand(1024), torch.rand(1024)
            self.fns["softmax"] = lambda: torch.softmax(a, 1)
            self.fns["log_softmax"] = lambda: torch.log_softmax(a, 1)
            self.fns["layer_norm"] = lambda: torch.native_layer_norm(a, [1024], w, b, 1e-5)
        if "matmul" in keys:
            m, k = torch.rand(1024, 1024), torch.rand(1024, 1024)
            self.fns["matmul"] = lambda: m @ k
        if "mlp_step" in keys:
            # torch_reference.py's mlp_step_b64_us, step for step.
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                        torch.nn.Linear(256, 10))
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            X, Y = torch.rand(64, 784), torch.randint(0, 10, (64,))

            def step():
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(X), Y)
                loss.backward()
                opt.step()

            self.fns["mlp_step"] = step
        self.missing = {}
        if "chain8_compiled" in keys:
            x = torch.rand(n)

            def chain(x):
                y = x * 2.0
                y = y + 1.0
                y = torch.sin(y)
                y = y * y
                y = y - 0.5
                y = torch.exp(y)
                y = y / 3.0
                return torch.relu(y)
            c = torch.compile(chain)
            c(x)
            self.fns["chain8_compiled"] = lambda: c(x)
        if keys & {"softmax_expr_compiled", "layer_norm_expr_compiled"}:
            a = torch.rand(4096, 1024)

            def sm_expr(a):
                return torch.softmax(a * 1.5 - 0.25, dim=1)

            def ln_expr(a):
                return torch.nn.functional.layer_norm(torch.tanh(a) + a, (1024,))
            csm, cln = torch.compile(sm_expr), torch.compile(ln_expr)
            csm(a)
            cln(a)
            self.fns["softmax_expr_compiled"] = lambda: csm(a)
            self.fns["layer_norm_expr_compiled"] = lambda: cln(a)
        if keys & {"ltc_trace", "ltc_mark_step"}:
            # torch_reference.py's LTC figures: 500 turns of `y * 1.0001 + 0.5` on 16 lazy
            # elements, traced (and dropped), or traced and run by a cached mark_step.
            try:
                # `import torch._lazy` here would make `torch` local to this function.
                import torch._lazy as ltc
                import torch._lazy.ts_backend as ts_backend
                ts_backend.init()
                lx = torch.ones(16, device=torch.device("lazy"))
                ltc.mark_step()

                def trace():
                    y = lx
                    for _ in range(500):
                        y = y * 1.0001 + 0.5
                    return y

                def step():
                    y = trace()
                    ltc.mark_step()
                    return y
                step()
                self.fns["ltc_trace"] = trace
                self.fns["ltc_mark_step"] = step
            except Exception as e:  # noqa: BLE001 - any failure means no LTC here
                self.missing["ltc_trace"] = self.missing["ltc_mark_step"] = (
                    f"{type(e).__name__}: {str(e)[:200]}")

    def measure(self, key):
        """Median seconds per call: warm-up, then SAMPLES samples of equal iteration counts."""
        f = self.fns[key]
        calls, t0 = 0, time.perf_counter()
        while True:
            f()
            calls += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= self.args.warm_up_time and calls >= 2:
                break
        per_call = elapsed / calls
        iters = max(1, round(self.args.measurement_time / self.SAMPLES / per_call))
        samples = []
        for _ in range(self.SAMPLES):
            t0 = time.perf_counter()
            for _ in range(iters):
                f()
            samples.append((time.perf_counter() - t0) / iters)
        return statistics.median(samples)


def libtorch_figure(binary, name):
    """`name`'s figure (ns) printed by ../shared/bench/libtorch_overhead.cpp, in seconds."""
    text = subprocess.run([binary], capture_output=True, text=True, check=True).stdout
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == name:
            return float(value) * 1e-9
    raise SystemExit(f"{binary} printed no {name} line")


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------


def fmt_time(seconds, unit):
    scale, suffix, digits = {"ms": (1e3, "ms", 3), "us": (1e6, "us", 1), "ns": (1e9, "ns", 0)}[unit]
    return f"{seconds * scale:.{digits}f}", suffix


def unit_for(seconds):
    return "ns" if seconds < 1e-6 else "us" if seconds < 1e-3 else "ms"


def side_text(values):
    med = statistics.median(values)
    unit = unit_for(med)
    m, suffix = fmt_time(med, unit)
    lo, _ = fmt_time(min(values), unit)
    hi, _ = fmt_time(max(values), unit)
    return f"{m} {suffix} ({lo}-{hi})"


def select_rows(only, have_libtorch):
    if only:
        keys = [k.strip() for k in only.split(",") if k.strip()]
        by_key = {r.key: r for r in ROWS} | {r.bench_id: r for r in ROWS}
        unknown = [k for k in keys if k not in by_key]
        if unknown:
            raise SystemExit(f"unknown rows {unknown}; rows: {', '.join(r.key for r in ROWS)}")
        rows = [r for r in ROWS if r in {by_key[k] for k in keys}]
    else:
        rows = list(ROWS)
    if not have_libtorch:
        skipped = [r.key for r in rows if isinstance(r.theirs, tuple) and r.theirs[0] == LIBTORCH]
        if skipped:
            print(f"no libtorch_overhead binary (--libtorch-overhead): leaving out "
                  f"{', '.join(skipped)}", file=sys.stderr)
        rows = [r for r in rows
                if not (isinstance(r.theirs, tuple) and r.theirs[0] == LIBTORCH)]
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--rounds", type=int, default=5, help="rounds of every row (default 5)")
    ap.add_argument("--only", help="comma-separated rows (keys or criterion ids)")
    ap.add_argument("--threads", type=int, default=2,
                    help="RAYON_NUM_THREADS and torch.set_num_threads (default 2)")
    ap.add_argument("--measurement-time", type=float, default=1.0,
                    help="seconds of measurement per row and side in each round (default 1)")
    ap.add_argument("--warm-up-time", type=float, default=0.5,
                    help="seconds of warm-up per row and side in each round (default 0.5)")
    default_lt = "/tmp/libtorch_overhead" if os.path.exists("/tmp/libtorch_overhead") else None
    ap.add_argument("--libtorch-overhead", default=default_lt,
                    help="the built libtorch_overhead.cpp (default /tmp/libtorch_overhead if "
                         "present); the tiny_add and autograd_add rows need it")
    ap.add_argument("--json", help="also write every round's figures to this file")
    args = ap.parse_args()
    if args.rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    args.rows = select_rows(args.only, args.libtorch_overhead is not None)
    if not args.rows:
        raise SystemExit("no rows to measure")

    with tempfile.TemporaryDirectory(prefix="compare-") as tmp:
        exes = build_benches(args.rows, tmp)
        torch.set_num_threads(args.threads)
        torch_side = TorchSide(args)
        for r in [r for r in args.rows if not isinstance(r.theirs, tuple)
                  and r.theirs in torch_side.missing]:
            print(f"leaving out {r.key}: {torch_side.missing[r.theirs]}", file=sys.stderr)
        args.rows = [r for r in args.rows if isinstance(r.theirs, tuple)
                     or r.theirs not in torch_side.missing]

        model, ncpu, ext = cpu_description()
        load_before = load_average()
        ours = {r.key: [] for r in args.rows}
        theirs = {r.key: [] for r in args.rows}
        start = time.time()
        for rnd in range(args.rounds):
            for i, row in enumerate(args.rows):
                home = os.path.join(tmp, f"r{rnd}-{i}")

                def mine():
                    ours[row.key].append(run_ours(row, exes[(row.package, row.bench)], args,
                                                  home))

                def other():
                    if isinstance(row.theirs, tuple) and row.theirs[0] == OURS:
                        _, package, bench, bench_id = row.theirs
                        theirs[row.key].append(run_criterion(
                            bench_id, exes[(package, bench)], args, home + "-theirs"))
                    elif isinstance(row.theirs, tuple):
                        theirs[row.key].append(libtorch_figure(args.libtorch_overhead,
                                                               row.theirs[1]))
                    else:
                        theirs[row.key].append(torch_side.measure(row.theirs))

                for side in ((mine, other) if rnd % 2 == 0 else (other, mine)):
                    side()
            print(f"round {rnd + 1}/{args.rounds} done ({time.time() - start:.0f} s)",
                  file=sys.stderr, flush=True)
        load_after = load_average()

    print(f"CPU: {model}; {ncpu} logical CPUs; {' '.join(ext) or 'no AVX2'}")
    print(f"threads: {args.threads} (RAYON_NUM_THREADS / torch.set_num_threads; libtorch rows: "
          f"1); PyTorch {torch.__version__}")
    print(f"{args.rounds} rounds, each row ours and PyTorch's back to back (first side "
          f"alternating), {args.warm_up_time} s warm-up + {args.measurement_time} s "
          f"measurement per side; {time.time() - start:.0f} s in all; load average "
          f"{load_before} before, {load_after} after")
    fmt = "{:<31} {:>26} {:>26} {:>6} {:>13} {:>7} {:>9}"
    print(fmt.format("row", "ours median (min-max)", "PyTorch median (min-max)", "ratio",
                     "round ratios", "target", "met"))
    for row in args.rows:
        o, t = ours[row.key], theirs[row.key]
        ratio = row.ratio(statistics.median(o), statistics.median(t))
        per_round = [row.ratio(a, b) for a, b in zip(o, t)]
        met_rounds = sum(row.meets(r) for r in per_round)
        print(fmt.format(row.label, side_text(o), side_text(t), f"{ratio:.2f}",
                         f"{min(per_round):.2f}-{max(per_round):.2f}", row.target_text(),
                         f"{'yes' if row.meets(ratio) else 'no'} {met_rounds}/{len(per_round)}"))
    print("ratio: PyTorch time / ours for >= targets, our time / PyTorch's for <= targets; "
          "met: the ratio of medians, and in how many rounds on their own")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({
                "cpu": model, "logical_cpus": ncpu, "extensions": ext,
                "threads": args.threads, "torch": torch.__version__, "rounds": args.rounds,
                "load_before": load_before, "load_after": load_after,
                "rows": [{"key": r.key, "bench_id": r.bench_id, "ours_s": ours[r.key],
                          "theirs_s": theirs[r.key], "target": r.target_text()}
                         for r in args.rows],
            }, f, indent=1)


if __name__ == "__main__":
    main()
