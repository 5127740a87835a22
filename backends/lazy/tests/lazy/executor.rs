//! The executor: what a sync runs, the computation cache across steps (B.7), counters, and
//! errors raised at trace time.

use switchyard_core::Tensor;
use switchyard_lazy::compiler::{CompilerKind, set_compiler};
use switchyard_ops::TensorOps;

use crate::support::{assert_close, counter, sample, setup};

/// One step of a small training-like loop: forward, a loss, and an SGD-like update of `w`
/// in place (functionalized above the backend) with learning rate `lr`.
fn train_step(x: &Tensor, w: &Tensor, b: &Tensor, lr: f64) -> Tensor {
    let h = b.addmm(x, w).unwrap().relu().unwrap();
    let loss = h.mul(&h).unwrap().mean_dim(None).unwrap();
    let g = x.t().unwrap().mm(&h).unwrap();
    w.sub_(&g.mul_scalar(lr).unwrap()).unwrap();
    b.add_scalar_(-lr).unwrap();
    loss
}

#[test]
fn a_training_loop_compiles_once_and_hits_the_cache_after() {
    let _g = setup();
    let (x, w0, b0) = (sample(&[4, 3], 21), sample(&[3, 2], 22), sample(&[2], 23));
    // Eager reference.
    let (ew, eb) = (w0.mul_scalar(1).unwrap(), b0.mul_scalar(1).unwrap());
    let lrs = [0.1, 0.05, 0.025];
    let eager_losses: Vec<Tensor> = lrs.iter().map(|&lr| train_step(&x, &ew, &eb, lr)).collect();
    // Lazy: three steps, three different learning rates.
    let (lx, lw, lb) = (
        switchyard_lazy::to_lazy(&x).unwrap(),
        switchyard_lazy::to_lazy(&w0).unwrap(),
        switchyard_lazy::to_lazy(&b0).unwrap(),
    );
    let mut lazy_losses = Vec::new();
    for &lr in &lrs {
        lazy_losses.push(train_step(&lx, &lw, &lb, lr));
        switchyard_lazy::mark_step().unwrap();
    }
    assert_eq!(counter("MarkStep"), 3);
    // The scalars are parameters: graphs differing only in them share the program.
    assert_eq!(
        counter("UncachedCompile"),
        1,
        "{}",
        switchyard_lazy::metrics_report()
    );
    assert_eq!(
        counter("CachedCompile"),
        2,
        "{}",
        switchyard_lazy::metrics_report()
    );
    for (l, e) in lazy_losses.iter().zip(&eager_losses) {
        assert_close(l, e, 1e-5);
    }
    assert_close(&lw, &ew, 1e-5);
    assert_close(&lb, &eb, 1e-5);
    // Each kernel counted once per step.
    assert_eq!(counter("lazy::addmm"), 3);
    assert_eq!(counter("lazy::relu"), 3);
    // New scalar values miss the scalar data cache once each (lr and -lr per step at least).
    assert!(counter("DeviceDataCacheMiss") >= 3);
    let report = switchyard_lazy::metrics_report();
    assert!(
        report.contains("Counter: CachedCompile\n  Value: 2\n"),
        "{report}"
    );
    assert!(report.contains("Metric: ExecuteTime"), "{report}");
}

#[test]
fn a_different_shape_compiles_again() {
    let _g = setup();
    for n in [3, 3, 5, 3] {
        let x = switchyard_lazy::to_lazy(&sample(&[n], 30)).unwrap();
        let _y = x.exp().unwrap().add(&x).unwrap();
        switchyard_lazy::mark_step().unwrap();
    }
    assert_eq!(counter("UncachedCompile"), 2);
    assert_eq!(counter("CachedCompile"), 2);
}

#[test]
fn to_cpu_runs_only_what_it_needs_and_keeps_the_ir() {
    let _g = setup();
    let x = sample(&[6], 31);
    let lx = switchyard_lazy::to_lazy(&x).unwrap();
    let a = lx.add_scalar(1).unwrap();
    let b = lx.mul_scalar(2).unwrap();
    assert_close(&a, &x.add_scalar(1).unwrap(), 0.0);
    // Only `a` was synced.
    assert_eq!(counter("SyncedTensorsWithIR"), 1);
    assert_eq!(counter("UncachedCompile"), 1);
    // `a` keeps its IR: an operator on it builds on it, and mark_step syncs `b` and `c` only.
    let c = a.exp().unwrap();
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(counter("SyncedTensorsWithIR"), 3);
    assert_close(&b, &x.mul_scalar(2).unwrap(), 0.0);
    assert_close(&c, &x.add_scalar(1).unwrap().exp().unwrap(), 1e-6);
    // Nothing pending: a second mark_step executes nothing.
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(counter("UncachedCompile") + counter("CachedCompile"), 2);
}

#[test]
fn graph_hash_and_the_computation_cache() {
    let _g = setup();
    // The naive backend's program text is checked below; the default compiler comes back
    // when the test ends.
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            set_compiler(CompilerKind::Fusing);
        }
    }
    let _restore = Restore;
    set_compiler(CompilerKind::Naive);
    switchyard_lazy::clear_computation_cache();
    assert_eq!(switchyard_lazy::computation_cache_size(), 0);
    let a = switchyard_lazy::to_lazy(&sample(&[2, 2], 32)).unwrap();
    let b = switchyard_lazy::to_lazy(&sample(&[2, 2], 33)).unwrap();
    let c = a.add(&b).unwrap();
    let hash = switchyard_lazy::get_graph_hash(std::slice::from_ref(&c))
        .unwrap()
        .unwrap();
    // The same structure on other data hashes equal; another operator does not.
    let d = b.add(&a).unwrap();
    let e = a.mul(&b).unwrap();
    assert_eq!(
        switchyard_lazy::get_graph_hash(std::slice::from_ref(&d)).unwrap(),
        Some(hash)
    );
    assert_ne!(
        switchyard_lazy::get_graph_hash(std::slice::from_ref(&e)).unwrap(),
        Some(hash)
    );
    switchyard_lazy::sync(std::slice::from_ref(&c)).unwrap();
    assert_eq!(switchyard_lazy::computation_cache_size(), 1);
    assert!(
        switchyard_lazy::executor::program_text(hash)
            .unwrap()
            .contains("aten::add.Tensor(%0, %1, %2)")
    );
    // Synced: nothing pending for `c` any more.
    assert_eq!(
        switchyard_lazy::get_graph_hash(std::slice::from_ref(&c)).unwrap(),
        None
    );
    switchyard_lazy::remove_from_computation_cache(hash);
    switchyard_lazy::remove_from_computation_cache(hash);
    assert_eq!(switchyard_lazy::computation_cache_size(), 0);
    switchyard_lazy::mark_step().unwrap();
    assert!(switchyard_lazy::computation_cache_size() >= 1);
    switchyard_lazy::clear_computation_cache();
    assert_eq!(switchyard_lazy::computation_cache_size(), 0);
}

#[test]
fn lru_cache_evicts_the_least_recently_used() {
    // L17's LRU case: capacity 2, add a, b, c: a is evicted; erase; clear.
    let mut cache = switchyard_lazy::executor::LruCache::new(2);
    cache.insert('a', 1);
    cache.insert('b', 2);
    cache.insert('c', 3);
    assert_eq!(cache.get('a'), None);
    assert_eq!(cache.get('b'), Some(2));
    cache.insert('d', 4); // c is now the least recently used
    assert_eq!(cache.get('c'), None);
    cache.erase('d');
    cache.erase('d');
    assert_eq!(cache.len(), 1);
    cache.clear();
    assert!(cache.is_empty());
}

/// The error of `f` on CPU tensors and on lazy copies of them.
fn both_errors(
    inputs: &[Tensor],
    f: impl Fn(&[Tensor]) -> switchyard_core::Result<Tensor>,
) -> (String, String) {
    let eager = f(inputs)
        .map(|_| ())
        .expect_err("eager call succeeded")
        .to_string();
    let lazy_in: Vec<Tensor> = inputs
        .iter()
        .map(|t| switchyard_lazy::to_lazy(t).unwrap())
        .collect();
    let lazy = f(&lazy_in)
        .map(|_| ())
        .expect_err("lazy call succeeded")
        .to_string();
    (lazy, eager)
}

#[test]
fn bad_shapes_raise_the_cpu_kernels_message_at_trace_time() {
    let _g = setup();
    let (l, e) = both_errors(&[sample(&[2, 3], 40), sample(&[2, 3], 41)], |x| {
        x[0].mm(&x[1])
    });
    assert_eq!(l, e);
    assert!(
        e.contains("mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
        "{e}"
    );
    let (l, e) = both_errors(&[sample(&[2, 3], 42), sample(&[4], 43)], |x| {
        x[0].add(&x[1])
    });
    assert_eq!(l, e);
    let (l, e) = both_errors(&[sample(&[2, 3], 44)], |x| x[0].view(&[4, 2]));
    assert_eq!(l, e);
    let (l, e) = both_errors(&[sample(&[2, 3], 45)], |x| x[0].softmax(2));
    assert_eq!(l, e);
    // Nothing was recorded by the failed calls beyond the inputs: mark_step runs nothing.
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(counter("UncachedCompile") + counter("CachedCompile"), 0);
}

#[test]
fn execution_errors_are_the_kernels_and_leave_the_ir_in_place() {
    let _g = setup();
    // The meta function accepts abs of a bool tensor; the CPU kernel's dtype coverage does not:
    // the error comes at execution, worded and tagged as eager's.
    let b = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    let eager = b.abs().map(|_| ()).unwrap_err().to_string();
    let lb = switchyard_lazy::to_lazy(&b).unwrap();
    let bad = lb.abs().unwrap();
    let good = lb.logical_not().unwrap(); // a fallback operator, fine on bools
    let e = switchyard_lazy::mark_step().unwrap_err().to_string();
    assert_eq!(e, eager);
    // The IR came back: the same step fails the same way again...
    let again = switchyard_lazy::mark_step().unwrap_err().to_string();
    assert_eq!(again, eager);
    // ...and once the failing tensor is gone, the rest runs.
    drop(bad);
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(switchyard_lazy::to_cpu(&good).unwrap().dim(), 1);
}

#[test]
fn scalar_values_are_parameters_their_kinds_are_structure() {
    let _g = setup();
    let x = switchyard_lazy::to_lazy(&sample(&[3], 60)).unwrap();
    let hash = |t: &Tensor| {
        switchyard_lazy::get_graph_hash(std::slice::from_ref(t))
            .unwrap()
            .unwrap()
    };
    let a = x.add_scalar(1.5).unwrap();
    let b = x.add_scalar(-7.25).unwrap();
    let c = x.add_scalar(2).unwrap();
    let d = x.add_scalar_with(1.5, 3.0).unwrap();
    // Other float values: the same graph. An integer scalar: another parameter dtype.
    assert_eq!(hash(&a), hash(&b));
    assert_ne!(hash(&a), hash(&c));
    assert_ne!(hash(&a), hash(&d));
    // Equal values share one parameter: x + 1.5 * 1.5 differs from x + 1.5 * 3.0 in its
    // parameter sequence only.
    let e = x.add_scalar_with(1.5, 1.5).unwrap();
    assert_ne!(hash(&d), hash(&e));
}

#[test]
fn a_clone_of_data_reads_without_an_execution() {
    let _g = setup();
    let x = sample(&[4], 61);
    let lx = switchyard_lazy::to_lazy(&x).unwrap();
    let y = lx.exp().unwrap();
    switchyard_lazy::mark_step().unwrap();
    // `y` is data now; its clone shares the data's leaf as IR.
    let c = y.clone_with(None).unwrap();
    assert_close(&c, &x.exp().unwrap(), 1e-6);
    assert_eq!(counter("UncachedCompile") + counter("CachedCompile"), 1);
    assert_eq!(counter("lazy::clone"), 1);
}

/// `run_cached_graph`: the program cached for `a + b` (parameters `a`, `b` and the lifted
/// `alpha`) runs again on other inputs without tracing; a hash not in the cache is PyTorch's
/// error (sic), as is a wrong input count.
#[test]
fn run_cached_graph_runs_a_cached_program_on_new_inputs() {
    let _g = setup();
    let (a, b) = (sample(&[2, 3], 501), sample(&[2, 3], 502));
    let (la, lb) = (
        switchyard_lazy::to_lazy(&a).unwrap(),
        switchyard_lazy::to_lazy(&b).unwrap(),
    );
    let c = la.add(&lb).unwrap();
    let hash = switchyard_lazy::get_graph_hash(&[Clone::clone(&c)])
        .unwrap()
        .unwrap();
    switchyard_lazy::mark_step().unwrap();
    let (a2, b2) = (sample(&[2, 3], 503), sample(&[2, 3], 504));
    let alpha = Tensor::from_slice(&[1i64]).unwrap().view(&[]).unwrap();
    let out =
        switchyard_lazy::run_cached_graph(hash, &[Clone::clone(&a2), Clone::clone(&b2), alpha])
            .unwrap();
    assert_eq!(out.len(), 1);
    assert!(switchyard_lazy::is_lazy(&out[0]));
    assert_close(&out[0], &a2.add(&b2).unwrap(), 0.0);
    assert_eq!(counter("UncachedCompile"), 1);
    let e = switchyard_lazy::run_cached_graph(hash, &[a2])
        .unwrap_err()
        .to_string();
    assert!(e.contains("parameters"), "{e}");
    switchyard_lazy::clear_computation_cache();
    let e = switchyard_lazy::run_cached_graph(hash, &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "Failed to get computation by hash. Maybe the entry get kicked out of the LRU cache"
        ),
        "{e}"
    );
}
