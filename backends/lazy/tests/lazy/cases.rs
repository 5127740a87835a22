//! The reference note's LTC cases (B.17) that this slice covers, seed 003's aliasing across
//! `mark_step`, and the coverage of backend.yaml.

use switchyard_core::local_dispatch::ExcludeDispatchKeyGuard;
use switchyard_core::{DispatchKey, DispatchKeySet, ScalarType, Tensor};
use switchyard_ops::{TensorOps, op};

use crate::support::{assert_close, counter, sample, setup};

/// L5 (`test_view_mark_step_preserved`, PyTorch PR #75527): a view mutated after a
/// `mark_step` still updates its base.
#[test]
fn l5_view_mark_step_preserved() {
    let _g = setup();
    let x0 = sample(&[4], 50);
    let run = |x: &Tensor, step: bool| {
        let y = x.view(&[2, 2]).unwrap();
        y.add_scalar_(1).unwrap();
        let _z = x.add(x).unwrap();
        if step {
            switchyard_lazy::mark_step().unwrap();
        }
        y.add_scalar_(1).unwrap();
    };
    let ex = x0.mul_scalar(1).unwrap();
    run(&ex, false);
    let lx = switchyard_lazy::to_lazy(&x0).unwrap();
    run(&lx, true);
    assert_close(&lx, &ex, 0.0);
    assert_close(&lx, &x0.add_scalar(2).unwrap(), 0.0);
}

/// Seed 003: aliasing lives in the functional wrappers above the backend, so views made before
/// a `mark_step` alias their base after it, both ways.
#[test]
fn aliasing_survives_mark_step_both_ways() {
    let _g = setup();
    let x0 = sample(&[3, 4], 51);
    let run = |x: &Tensor, step: bool| -> Vec<Tensor> {
        let base = x.mul_scalar(1).unwrap();
        let col = base.t().unwrap().select(0, 2).unwrap(); // a strided view
        let row = base.narrow(0, 1, 1).unwrap();
        if step {
            switchyard_lazy::mark_step().unwrap();
        }
        col.mul_scalar_(10).unwrap(); // through the view into the base
        if step {
            switchyard_lazy::mark_step().unwrap();
        }
        base.add_scalar_(1).unwrap(); // through the base into both views
        if step {
            switchyard_lazy::mark_step().unwrap();
        }
        row.neg_().unwrap();
        vec![base, col, row]
    };
    let eager = run(&x0, false);
    let lazy = run(&switchyard_lazy::to_lazy(&x0).unwrap(), true);
    for (l, e) in lazy.iter().zip(&eager) {
        assert_close(l, e, 1e-6);
    }
}

/// L6 (`test_tensor_ctr`): a tensor lifted onto the device (`lift_fresh`) and viewed equals
/// eager.
#[test]
fn l6_tensor_constructor_lifts() {
    let _g = setup();
    let cpu = Tensor::from_vec(vec![1i64, 2, 3, 4, 5], &[1, 5]).unwrap();
    // `torch.tensor(..., device="lazy")`: the data moved below the layer, then lifted.
    let plain = {
        let _below =
            ExcludeDispatchKeyGuard::new(DispatchKeySet::from_key(DispatchKey::Functionalize));
        switchyard_lazy::to_lazy(&cpu).unwrap()
    };
    assert!(!switchyard_functionalize::is_functional(&plain));
    let lifted = op::lift_fresh::call(&plain).unwrap();
    assert!(switchyard_functionalize::is_functional(&lifted));
    let v = lifted.view(&[-1]).unwrap();
    assert_close(&v, &cpu.view(&[-1]).unwrap(), 0.0);
}

/// L16 (`test_meta_kernel`): half-precision linear layers keep their dtype, mixed dtypes raise,
/// and a CPU tensor meeting a lazy one is "not a lazy tensor".
#[test]
fn l16_meta_kernels_types_and_devices() {
    let _g = setup();
    let half = |t: Tensor| t.to_dtype(ScalarType::Half).unwrap();
    let (x, w, b) = (
        half(sample(&[3, 2], 52)),
        half(sample(&[2, 2], 53)),
        half(sample(&[2], 54)),
    );
    let (lx, lw, lb) = (
        switchyard_lazy::to_lazy(&x).unwrap(),
        switchyard_lazy::to_lazy(&w).unwrap(),
        switchyard_lazy::to_lazy(&b).unwrap(),
    );
    let with_bias = switchyard_ops::linear_with(&lx, &lw, Some(&lb)).unwrap();
    let without = switchyard_ops::linear(&lx, &lw).unwrap();
    assert_eq!(with_bias.dtype(), ScalarType::Half);
    assert_eq!(without.dtype(), ScalarType::Half);
    switchyard_lazy::mark_step().unwrap();
    assert_close(
        &with_bias,
        &switchyard_ops::linear_with(&x, &w, Some(&b)).unwrap(),
        1e-3,
    );
    // float32 weights with a float16 input: the meta kernel raises eager's error.
    let w32 = sample(&[2, 2], 55);
    let eager = switchyard_ops::linear(&x, &w32).unwrap_err().to_string();
    let lazy = switchyard_ops::linear(&lx, &switchyard_lazy::to_lazy(&w32).unwrap())
        .unwrap_err()
        .to_string();
    assert_eq!(lazy, eager);
    // tensor([1]) on the CPU + tensor([1]) on the device.
    let one = Tensor::from_slice(&[1.0f32]).unwrap();
    let lone = switchyard_lazy::to_lazy(&one).unwrap();
    let e = one.add(&lone).unwrap_err().to_string();
    assert!(e.contains("not a lazy tensor"), "{e}");
}

/// Every entry of backend.yaml names an operator of ops.yaml (the generator's parser refuses
/// others) and every generated or hand-written kernel is registered at `Lazy`.
#[test]
fn every_yaml_operator_exists_and_is_registered_at_lazy() {
    let _g = setup();
    let root = switchyard_codegen::emit::workspace::find_workspace_root(std::path::Path::new(
        env!("CARGO_MANIFEST_DIR"),
    ))
    .unwrap();
    let model = switchyard_codegen::emit::workspace::parse_ops_yaml(&root).unwrap();
    let text = std::fs::read_to_string(root.join("backends/lazy/backend.yaml")).unwrap();
    let yaml = switchyard_codegen::parse_backend_yaml(&text, "backend.yaml", &model)
        .unwrap()
        .unwrap();
    assert!(yaml.full_codegen.len() >= 40, "{}", yaml.full_codegen.len());
    let d = switchyard_dispatch::Dispatcher::singleton();
    for k in &yaml.supported {
        let name = model.functions[k.function].func.name.unqualified();
        let handle = d
            .find_schema(&format!("aten::{name}"))
            .unwrap_or_else(|| panic!("{name}"));
        let slot = handle.describe_slot(DispatchKey::Lazy);
        assert!(
            slot.as_ref()
                .is_some_and(|(debug, _)| debug.contains("wrapper_Lazy_")),
            "{name}: {slot:?}"
        );
    }
}

/// A kernel counts `lazy::<op>` per call, the fallback `aten::<op>` per call.
#[test]
fn counters_name_kernels_and_fallbacks() {
    let _g = setup();
    let x = switchyard_lazy::to_lazy(&sample(&[3], 56)).unwrap();
    let _a = x.add(&x).unwrap().add(&x).unwrap();
    let _b = x.cos().unwrap();
    let _c = switchyard_ops::op::nonzero::call(&x).unwrap();
    assert_eq!(counter("lazy::add"), 2);
    assert_eq!(counter("lazy::cos"), 1);
    assert_eq!(counter("aten::nonzero"), 1);
    assert!(switchyard_lazy::counter_names().contains(&"lazy::add".to_string()));
    switchyard_lazy::reset_metrics();
    assert_eq!(switchyard_lazy::counter_value("lazy::add"), None);
}

/// L12 (`test_generator`), its values half: random operators with explicit generators give
/// the CPU's values, whatever the global seed. (They run through the fallback in this slice;
/// the recompile half needs them traced, with the generator in the graph.)
#[test]
fn l12_explicit_generators_give_the_cpus_values() {
    let _g = setup();
    let run = |device_lazy: bool, global: u64| -> (Tensor, Tensor) {
        switchyard_core::generator::manual_seed(global).unwrap();
        let one = |v: f32| {
            let t = Tensor::from_slice(&[v]).unwrap();
            if device_lazy {
                switchyard_lazy::to_lazy(&t).unwrap()
            } else {
                t
            }
        };
        let g1 = switchyard_core::Generator::new(switchyard_core::Device::CPU);
        g1.manual_seed(2023);
        let t1 = one(1.0);
        t1.uniform__with(0.0, 1.0, Some(&g1)).unwrap();
        let g2 = switchyard_core::Generator::new(switchyard_core::Device::CPU);
        g2.manual_seed(2024);
        let t2 = one(1.0);
        t2.normal__with(0.0, 1.0, Some(&g2)).unwrap();
        if device_lazy {
            switchyard_lazy::mark_step().unwrap();
        }
        (t1, t2)
    };
    let (c1, c2) = run(false, 1);
    let (l1, l2) = run(true, 2);
    assert_close(&l1, &c1, 0.0);
    assert_close(&l2, &c2, 0.0);
}

/// L12 (`test_generator`), its recompile half: an explicit generator is part of the graph,
/// hashed by its seed: seeds 1, 2, 1 compile twice and hit the cache once; the IR names the
/// generator and `aten::uniform` (PyTorch checks the TorchScript text for both).
#[test]
fn l12_generator_seeds_are_part_of_the_graph() {
    let _g = setup();
    let x = switchyard_lazy::to_lazy(&Tensor::from_slice(&[1.0f32]).unwrap()).unwrap();
    switchyard_lazy::mark_step().unwrap();
    switchyard_lazy::reset_metrics();
    let mut text = String::new();
    for (seed, uncached, cached) in [(1u64, 1u64, 0u64), (2, 2, 0), (1, 2, 1)] {
        let g = switchyard_core::Generator::new(switchyard_core::Device::CPU);
        g.manual_seed(seed);
        x.uniform__with(-1.0, 1.0, Some(&g)).unwrap();
        // Eagerly, with a generator of the same seed: the value the lazy step must give,
        // also when it runs a program compiled for another generator object of that seed.
        let ge = switchyard_core::Generator::new(switchyard_core::Device::CPU);
        ge.manual_seed(seed);
        let eager = Tensor::from_slice(&[1.0f32]).unwrap();
        eager.uniform__with(-1.0, 1.0, Some(&ge)).unwrap();
        if seed == 1 && uncached == 1 {
            text = switchyard_lazy::dump_ir(&[Clone::clone(&x)], switchyard_lazy::DumpFormat::Text)
                .unwrap();
        }
        switchyard_lazy::mark_step().unwrap();
        assert_close(&x, &eager, 0.0);
        assert_eq!(counter("UncachedCompile"), uncached, "seed {seed}");
        assert_eq!(counter("CachedCompile"), cached, "seed {seed}");
    }
    assert!(
        text.contains("torch.Generator(device=\"cpu\", seed=1)"),
        "{text}"
    );
    assert!(text.contains("aten::uniform"), "{text}");
    assert_eq!(counter("lazy::uniform"), 3);
}

/// L15 (`test_step_closures`): a synchronous closure has run when `mark_step` returns; an
/// asynchronous one may run after it returns; a synchronous closure's error comes out of
/// `mark_step`; an asynchronous closure's error surfaces at a later `mark_step` that queues
/// another asynchronous closure, which never runs.
#[test]
fn l15_step_closures() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let _g = setup();
    let x = switchyard_lazy::to_lazy(&sample(&[3], 401)).unwrap();
    let y = x.add(&x).unwrap();
    // Sync: runs after the step's sync, so it can read the synced value without a new graph.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (s, yc) = (Arc::clone(&seen), Clone::clone(&y));
    switchyard_lazy::add_step_closure(
        Box::new(move || {
            let v = switchyard_lazy::to_cpu(&yc)?.to_vec::<f32>()?;
            s.lock().unwrap().extend(v);
            Ok(())
        }),
        false,
    );
    switchyard_lazy::mark_step().unwrap();
    let want = switchyard_lazy::to_cpu(&y)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), want);
    assert_eq!(counter("UncachedCompile"), 1);

    // Async: runs on the worker, after mark_step returned.
    let ran = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(std::sync::Barrier::new(2));
    let (r, g) = (Arc::clone(&ran), Arc::clone(&gate));
    switchyard_lazy::add_step_closure(
        Box::new(move || {
            g.wait();
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }),
        true,
    );
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "mark_step waited for the async closure"
    );
    gate.wait();
    switchyard_lazy::wait_async_closures();
    assert_eq!(ran.load(Ordering::SeqCst), 1);

    // A sync closure's error comes out of mark_step.
    switchyard_lazy::add_step_closure(
        Box::new(|| Err(switchyard_core::Error::runtime("sync closure failed"))),
        false,
    );
    let e = switchyard_lazy::mark_step().unwrap_err().to_string();
    assert!(e.contains("sync closure failed"), "{e}");

    // An async closure's error: reported when the next async closure is queued, which never
    // runs.
    switchyard_lazy::add_step_closure(
        Box::new(|| Err(switchyard_core::Error::runtime("async closure failed"))),
        true,
    );
    switchyard_lazy::mark_step().unwrap();
    switchyard_lazy::wait_async_closures();
    let r = Arc::clone(&ran);
    switchyard_lazy::add_step_closure(
        Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }),
        true,
    );
    let e = switchyard_lazy::mark_step().unwrap_err().to_string();
    assert!(
        e.contains("Cannot run asynchronous closure due to previously raised exception"),
        "{e}"
    );
    assert!(e.contains("async closure failed"), "{e}");
    switchyard_lazy::wait_async_closures();
    assert_eq!(
        ran.load(Ordering::SeqCst),
        1,
        "the closure after the error ran"
    );
    // The error was reported once: async closures work again.
    switchyard_lazy::add_step_closure(Box::new(|| Ok(())), true);
    switchyard_lazy::mark_step().unwrap();
    switchyard_lazy::wait_async_closures();
}

/// One of L11's programs: the traced function over the arguments.
type Program = fn(&[Tensor]) -> switchyard_core::Result<Vec<Tensor>>;

/// L11's programs (`test_extract_compiled_graph.py`), with the number of arguments.
/// `addcmul` is not in ops.yaml: its case is `a + (b * c) * 5`, which keeps what the case
/// checks (a scalar payload lifted into a scalar graph input).
const L11_PROGRAMS: [(&str, usize, Program); 6] = [
    ("a - b", 2, |a| Ok(vec![a[0].sub(&a[1])?])),
    ("a * 2", 1, |a| Ok(vec![a[0].mul_scalar(2)?])),
    ("a + b * c * 5", 3, |a| {
        Ok(vec![a[0].add(&a[1].mul(&a[2])?.mul_scalar(5)?)?])
    }),
    ("(b + 1, a - 1)", 2, |a| {
        Ok(vec![a[1].add_scalar(1)?, a[0].sub_scalar(1)?])
    }),
    ("(a - b, c, a + 1, c) with c = a + b", 2, |a| {
        let c = a[0].add(&a[1])?;
        Ok(vec![
            a[0].sub(&a[1])?,
            Clone::clone(&c),
            a[0].add_scalar(1)?,
            c,
        ])
    }),
    ("a.sub_(b); (b - 1, b + 1)", 2, |a| {
        a[0].sub_(&a[1])?;
        Ok(vec![a[1].sub_scalar(1)?, a[1].add_scalar(1)?])
    }),
];

/// L11 (`test_extract_compiled_graph.py`, B.15): each program traced once, then 10 calls on
/// random arguments give eager's outputs and leave the arguments as eager leaves them; the
/// calls trace nothing and compile nothing. With `aten::sub` forced to the fallback,
/// extracting `a - b` fails naming it.
#[test]
fn l11_extract_compiled_graph_matches_eager() {
    let _g = setup();
    for (p, (name, arity, program)) in L11_PROGRAMS.into_iter().enumerate() {
        let examples: Vec<Tensor> = (0..arity)
            .map(|i| sample(&[2, 3], 900 + i as u64))
            .collect();
        let compiled = switchyard_lazy::extract_compiled_graph(program, &examples).unwrap();
        switchyard_lazy::reset_metrics();
        for call in 0..10u64 {
            let args: Vec<Tensor> = (0..arity)
                .map(|i| sample(&[2, 3], 1000 + 100 * p as u64 + 10 * call + i as u64))
                .collect();
            let eager_args: Vec<Tensor> = args.iter().map(|a| a.mul_scalar(1).unwrap()).collect();
            let want = program(&eager_args).unwrap();
            let got = compiled.call(&args).unwrap();
            assert_eq!(got.len(), want.len(), "{name}");
            for (g, w) in got.iter().zip(&want) {
                assert!(!switchyard_lazy::is_lazy(g), "{name}");
                assert_close(g, w, 1e-6);
            }
            for (a, e) in args.iter().zip(&eager_args) {
                assert_close(a, e, 1e-6);
            }
        }
        assert_eq!(counter("UncachedCompile"), 0, "{name}: a call compiled");
        assert_eq!(counter("CachedCompile"), 0, "{name}: a call traced a graph");
        assert!(
            counter_names_with("lazy::").is_empty(),
            "{name}: a call traced {:?}",
            counter_names_with("lazy::")
        );
    }

    switchyard_lazy::set_force_fallback("aten::sub").unwrap();
    let examples = [sample(&[2, 3], 1), sample(&[2, 3], 2)];
    let e = switchyard_lazy::extract_compiled_graph(L11_PROGRAMS[0].2, &examples);
    switchyard_lazy::set_force_fallback("").unwrap();
    let e = e.err().expect("a fallback was accepted").to_string();
    assert!(
        e.contains("Fail to extact the compiled graph because of fallback: aten::sub.Tensor=1"),
        "{e}"
    );
}

fn counter_names_with(prefix: &str) -> Vec<String> {
    switchyard_lazy::counter_names()
        .into_iter()
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// L14 (`test_debug_util.test_get_python_frames`, B.13): with `LTC_SAVE_TENSORS_FILE` set, a
/// lazy `Linear(5, 5)` forward and `mark_step` append the sync's graph to the file, headed by
/// the caller of `mark_step` (a Rust location in place of LTC's Python frames); the format
/// follows `LTC_SAVE_TENSORS_FMT`.
#[test]
fn l14_saved_graph_file_names_the_mark_step_caller() {
    let _g = setup();
    let path = std::env::temp_dir().join(format!("switchyard-l14-{}.txt", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let linear =
        |x: &Tensor, w: &Tensor, b: &Tensor| x.mm(&w.t().unwrap()).unwrap().add(b).unwrap();
    let lazy = |t: Tensor| switchyard_lazy::to_lazy(&t).unwrap();
    let (x, w, b) = (
        lazy(sample(&[3, 5], 1401)),
        lazy(sample(&[5, 5], 1402)),
        lazy(sample(&[5], 1403)),
    );
    set_env("LTC_SAVE_TENSORS_FILE", Some(path.as_os_str()));
    set_env("LTC_SAVE_TENSORS_FMT", None);
    let _y = linear(&x, &w, &b);
    let line = line!() + 1;
    let stepped = switchyard_lazy::mark_step();
    set_env("LTC_SAVE_TENSORS_FMT", Some("dot".as_ref()));
    let _z = linear(&x, &w, &b).relu().unwrap();
    let dot_step = switchyard_lazy::mark_step();
    set_env("LTC_SAVE_TENSORS_FILE", None);
    set_env("LTC_SAVE_TENSORS_FMT", None);
    stepped.unwrap();
    dot_step.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let records: Vec<&str> = text
        .split("[ScheduleSyncTensorsGraph]\n")
        .filter(|r| !r.is_empty())
        .collect();
    assert_eq!(records.len(), 2, "{text}");
    let first = records[0];
    let frames = "Rust Stacktrace:\n  mark_step (backends/lazy/src/lib.rs:";
    assert!(first.starts_with(frames), "{first}");
    assert!(
        first.contains(&format!("  caller ({}:{line})\n", file!())),
        "{first}"
    );
    assert!(first.contains("\nHashes: ("), "{first}");
    let graph = first
        .split("## BEGIN_GRAPH\n")
        .nth(1)
        .and_then(|g| g.split("## END_GRAPH\n").next())
        .unwrap();
    assert!(
        graph.starts_with("IR {\n") && graph.ends_with("}\n"),
        "{graph}"
    );
    assert!(
        graph.contains("aten::mm(") && graph.contains("aten::add("),
        "{graph}"
    );
    // The second step in Graphviz.
    assert!(
        records[1].contains("## BEGIN_GRAPH\ndigraph G {\n"),
        "{}",
        records[1]
    );
    assert!(records[1].contains("aten::relu"), "{}", records[1]);
}

/// Sets (or removes) an environment variable the lazy backend reads at each sync.
fn set_env(name: &str, value: Option<&std::ffi::OsStr>) {
    // SAFETY: only the lazy tests of this binary read these variables, on the thread holding
    // `setup()`'s lock, as this test's caller does; nothing reads the environment concurrently
    // through libc here.
    unsafe {
        match value {
            Some(v) => std::env::set_var(name, v),
            None => std::env::remove_var(name),
        }
    }
}

/// `dump_ir(.., Backend)` (B.13): the program the backend would compile for the tensors'
/// pending IR, compiled afresh and neither cached nor run.
#[test]
fn backend_dump_is_the_program_text_and_runs_nothing() {
    let _g = setup();
    let x = switchyard_lazy::to_lazy(&sample(&[4], 1501)).unwrap();
    let y = x.mul(&x).unwrap().add_scalar(1).unwrap().sin().unwrap();
    let cached = switchyard_lazy::computation_cache_size();
    let text = switchyard_lazy::dump_ir(&[Clone::clone(&y)], switchyard_lazy::DumpFormat::Backend)
        .unwrap();
    assert!(!text.is_empty() && !text.starts_with("IR {"), "{text}");
    assert_eq!(switchyard_lazy::computation_cache_size(), cached);
    assert_eq!(counter("UncachedCompile"), 0);
    // The same text as the program the step then caches.
    switchyard_lazy::clear_computation_cache();
    let hash = switchyard_lazy::get_graph_hash(&[Clone::clone(&y)])
        .unwrap()
        .unwrap();
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(switchyard_lazy::executor::program_text(hash).unwrap(), text);
    assert_close(
        &y,
        &sample(&[4], 1501)
            .mul(&sample(&[4], 1501))
            .unwrap()
            .add_scalar(1)
            .unwrap()
            .sin()
            .unwrap(),
        1e-6,
    );
}

/// L13 (`test_functionalization.test_lazy_init_with_view`): a `Linear(4, 2, bias=False)` made
/// on the lazy device (its weight `empty` there and initialised in place, as under
/// `torch.device("lazy")`: kaiming-uniform with `a = √5` is U(-1/√4, 1/√4)). PyTorch's
/// `mark_step` after construction syncs two tensors with IR — the weight and its functional
/// storage's base, which its test calls "an extra tensor being unnecessarily synced" — and one
/// once `unsafe_reset_storage(weight)` detached the weight from that base. Ours syncs the one
/// necessary tensor in both cases: no second live lazy tensor with pending IR stands for the
/// storage's base (a difference in our favour, plan §9.2.1). The forward, `x @
/// weight.transpose(0, 1)` with `x = ones(4)`, equals the CPU's (the same seed draws the same
/// weight).
#[test]
fn l13_lazy_init_with_view() {
    let _g = setup();
    let run = |device: switchyard_core::Device, reset: bool| -> (Tensor, u64) {
        let lazy = device.kind() == switchyard_core::DeviceType::Lazy;
        switchyard_core::generator::manual_seed(2023).unwrap();
        switchyard_lazy::reset_metrics();
        let weight = op::empty_memory_format::call(
            &[2, 4],
            Some(ScalarType::Float),
            None,
            Some(device),
            None,
            None,
        )
        .unwrap();
        weight.uniform__with(-0.5, 0.5, None).unwrap();
        let mut synced = 0;
        if lazy {
            if reset {
                switchyard_functionalize::unsafe_reset_storage(&weight).unwrap();
            }
            switchyard_lazy::mark_step().unwrap();
            synced = counter("SyncedTensorsWithIR");
        }
        let ones = Tensor::from_slice(&[1.0f32; 4]).unwrap();
        let x = if lazy {
            switchyard_lazy::to_lazy(&ones).unwrap()
        } else {
            ones
        };
        let y = x.matmul(&weight.transpose(0, 1).unwrap()).unwrap();
        if lazy {
            switchyard_lazy::mark_step().unwrap();
        }
        (y, synced)
    };
    let (cpu, _) = run(switchyard_core::Device::CPU, false);
    let (lazy, synced) = run(switchyard_lazy::device(), false);
    assert_close(&lazy, &cpu, 1e-6);
    assert_eq!(
        synced, 1,
        "without a storage reset (PyTorch: 2, one unnecessary)"
    );
    let (lazy, synced) = run(switchyard_lazy::device(), true);
    assert_close(&lazy, &cpu, 1e-6);
    assert_eq!(synced, 1, "after unsafe_reset_storage");
}
