//! Operator coverage (plan §3.2): every functional operator of ops.yaml has a decision, the
//! operators added to backend.yaml trace (no `aten::` fallback) and give the CPU's values,
//! the documented composites stay on the device, and `set_force_fallback` sends one operator
//! (every overload) to the eager fallback and back.

use std::collections::BTreeSet;

use switchyard_core::{Device, DispatchKey, ScalarType, Tensor};
use switchyard_ops::{TensorOps, op};

use crate::support::{assert_close, counter, sample, setup};

/// The `# fallback:` / `# composite:` lists of backend.yaml's header comment.
fn yaml_list(text: &str, kind: &str) -> BTreeSet<String> {
    let prefix = format!("# {kind}:");
    text.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .flat_map(|l| l.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn aten_counters() -> Vec<String> {
    switchyard_lazy::counter_names()
        .into_iter()
        .filter(|n| n.starts_with("aten::"))
        .collect()
}

/// Fails when an operator of ops.yaml has no decision: generated or hand-written at `Lazy`,
/// decomposed or functionalized above, or listed as a fallback or a kept composite (and then
/// served at `Lazy` by what the list says).
#[test]
fn every_ops_yaml_operator_has_a_decision() {
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
    let fallback = yaml_list(&text, "fallback");
    let composite = yaml_list(&text, "composite");
    let listed: BTreeSet<usize> = yaml
        .full_codegen
        .iter()
        .chain(&yaml.ir_gen)
        .copied()
        .chain(yaml.supported.iter().map(|k| k.function))
        .collect();
    let d = switchyard_dispatch::Dispatcher::singleton();
    let mut missing = Vec::new();
    let mut wrong = Vec::new();
    let mut names = BTreeSet::new();
    for (i, f) in model.functions.iter().enumerate() {
        let name = f.func.name.unqualified();
        names.insert(name.clone());
        if f.namespace != "aten"
            || f.kind() != switchyard_schema::SchemaKind::Functional
            || f.func.is_view_op()
            || f.has_composite_implicit_autograd_kernel
        {
            continue;
        }
        let in_fallback = fallback.contains(&name);
        let in_composite = composite.contains(&name);
        if listed.contains(&i) {
            if in_fallback || in_composite {
                wrong.push(format!("{name}: in backend.yaml and in a decision list"));
            }
            continue;
        }
        let slot = d
            .find_schema(&format!("aten::{name}"))
            .and_then(|h| h.describe_slot(DispatchKey::Lazy));
        if in_fallback {
            if slot
                .as_ref()
                .is_some_and(|(debug, _)| debug.contains("wrapper_Lazy_"))
            {
                wrong.push(format!(
                    "{name}: listed as a fallback but has a lazy kernel"
                ));
            }
        } else if in_composite {
            if !f.has_composite_explicit_autograd_kernel {
                wrong.push(format!("{name}: listed as a composite but has none"));
            }
        } else {
            missing.push(name);
        }
    }
    for n in fallback.iter().chain(&composite) {
        if !names.contains(n) {
            wrong.push(format!(
                "{n}: listed in backend.yaml but not an operator of ops.yaml"
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "operators without a lazy decision: {missing:?}"
    );
    assert!(wrong.is_empty(), "{wrong:?}");
}

/// Runs `f` on CPU copies and on lazy copies of `inputs` (with a `mark_step`), compares every
/// output, and checks that nothing fell back.
fn check_traced(inputs: &[Tensor], tol: f32, f: impl Fn(&[Tensor]) -> Vec<Tensor>) {
    let eager = f(inputs);
    switchyard_lazy::reset_metrics();
    let lazy_in: Vec<Tensor> = inputs
        .iter()
        .map(|t| switchyard_lazy::to_lazy(t).unwrap())
        .collect();
    let lazy = f(&lazy_in);
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(aten_counters(), Vec::<String>::new(), "fell back");
    assert_eq!(lazy.len(), eager.len());
    for (l, e) in lazy.iter().zip(&eager) {
        assert!(switchyard_lazy::is_lazy(l));
        assert_eq!(l.dtype(), e.dtype());
        assert_close(l, e, tol);
    }
}

#[test]
fn added_pointwise_operators_trace_and_match_the_cpu() {
    let _g = setup();
    let x = sample(&[3, 4], 101);
    let y = sample(&[3, 4], 102);
    check_traced(&[x, y], 1e-6, |t| {
        let (a, b) = (&t[0], &t[1]);
        vec![
            a.sin().unwrap(),
            a.cos().unwrap(),
            a.floor().unwrap(),
            op::clamp::call(a, Some((-0.5).into()), Some(0.5.into())).unwrap(),
            op::gelu::call(a, "tanh").unwrap(),
            op::logical_not::call(a).unwrap(),
            op::logical_and::call(a, b).unwrap(),
            op::minimum::call(a, b).unwrap(),
            op::atan2::call(a, b).unwrap(),
            op::ge_Tensor::call(a, b).unwrap(),
            op::pow_Tensor_Tensor::call(&a.abs().unwrap(), b).unwrap(),
            op::masked_fill_Scalar::call(a, &op::gt_Scalar::call(b, 0.into()).unwrap(), 3.into())
                .unwrap(),
            a.add_scalar(2).unwrap(),
            a.mul_scalar(0.5).unwrap(),
        ]
    });
}

#[test]
fn added_reductions_nn_and_data_movement_trace_and_match_the_cpu() {
    let _g = setup();
    let x = sample(&[2, 3, 5, 5], 103);
    let w = sample(&[4, 3, 3, 3], 104);
    let m = sample(&[4, 6], 105);
    let idx = Tensor::from_vec(vec![2i64, 0, 1], &[3]).unwrap();
    check_traced(&[x, w, m, idx], 1e-5, |t| {
        let (x, w, m, idx) = (&t[0], &t[1], &t[2], &t[3]);
        let (vals, ind) = op::topk::call(m, 2, -1, true, true).unwrap();
        let (pool, pool_ind) =
            op::max_pool2d_with_indices::call(x, &[2, 2], &[2, 2], &[0, 0], &[1, 1], false)
                .unwrap();
        vec![
            op::convolution::call(x, w, None, &[1, 1], &[1, 1], &[1, 1], false, &[0, 0], 1)
                .unwrap(),
            op::var_correction::call(m, Some(&[1]), Some(1.into()), false).unwrap(),
            op::std_correction::call(m, None, None, true).unwrap(),
            op::argmax::call(m, Some(0), false).unwrap(),
            op::cumsum::call(m, 1, None).unwrap(),
            op::index_select::call(m, 0, idx).unwrap(),
            op::flip::call(m, &[0, 1]).unwrap(),
            op::tril::call(m, 0).unwrap(),
            op::diagonal_copy::call(m, 0, 0, 1).unwrap(),
            vals,
            ind,
            pool,
            pool_ind,
        ]
    });
}

/// The kept composites (factories, Scalar overloads) build their results on the lazy device;
/// `arange` and `eye` end in their out= kernel, which falls back (as in PyTorch's LTC).
#[test]
fn composites_stay_on_the_device() {
    let _g = setup();
    let on = |d: Device| {
        vec![
            op::zeros::call(&[2, 3], None, None, Some(d), None).unwrap(),
            op::full::call(&[3], 2.5.into(), None, None, Some(d), None).unwrap(),
            op::arange_start_step::call(1.into(), 7.into(), 2.into(), None, None, Some(d), None)
                .unwrap(),
            op::eye_m::call(2, 3, Some(ScalarType::Long), None, Some(d), None).unwrap(),
        ]
    };
    let eager = on(Device::CPU);
    switchyard_lazy::reset_metrics();
    let lazy = on(switchyard_lazy::device());
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(
        aten_counters(),
        vec![
            "aten::arange.start_out".to_string(),
            "aten::eye.m_out".to_string()
        ]
    );
    for (l, e) in lazy.iter().zip(&eager) {
        assert!(switchyard_lazy::is_lazy(l));
        assert_eq!(l.dtype(), e.dtype());
        assert_close(l, e, 0.0);
    }
}

/// Random operators are traced with their generator in the graph: an explicitly seeded
/// generator gives the CPU's values.
#[test]
fn random_operators_with_generators_trace() {
    let _g = setup();
    let run = |lazy: bool| {
        let x = sample(&[4, 4], 106);
        let x = if lazy {
            switchyard_lazy::to_lazy(&x).unwrap()
        } else {
            x
        };
        let g = switchyard_core::Generator::new(Device::CPU);
        g.manual_seed(7);
        let u = op::uniform::call(&x, -1.0, 1.0, Some(&g)).unwrap();
        let n = op::normal_functional::call(&x, 0.0, 2.0, Some(&g)).unwrap();
        let b = op::bernoulli_p::call(&x, 0.3, Some(&g)).unwrap();
        if lazy {
            switchyard_lazy::mark_step().unwrap();
        }
        [u, n, b]
    };
    let eager = run(false);
    switchyard_lazy::reset_metrics();
    let lazy = run(true);
    assert_eq!(aten_counters(), Vec::<String>::new(), "fell back");
    assert_eq!(counter("lazy::uniform"), 1);
    for (l, e) in lazy.iter().zip(&eager) {
        assert_close(l, e, 0.0);
    }
}

/// L3's mechanism: `set_force_fallback("aten::sub")` sends every overload of `sub` to the
/// eager fallback (counted `aten::sub.Tensor`), other operators stay traced; `""` restores.
#[test]
fn force_fallback_one_operator_by_name() {
    let _g = setup();
    let x = sample(&[2, 3], 107);
    let y = sample(&[2, 3], 108);
    let (lx, ly) = (
        switchyard_lazy::to_lazy(&x).unwrap(),
        switchyard_lazy::to_lazy(&y).unwrap(),
    );
    switchyard_lazy::set_force_fallback("aten::sub").unwrap();
    assert_eq!(switchyard_lazy::get_force_fallback(), "aten::sub");
    let r = lx.sub(&ly).unwrap().add(&lx).unwrap();
    assert_eq!(counter("aten::sub.Tensor"), 1);
    assert_eq!(counter("lazy::sub"), 0);
    assert_eq!(counter("lazy::add"), 1);
    assert_close(&r, &x.sub(&y).unwrap().add(&x).unwrap(), 1e-6);
    switchyard_lazy::set_force_fallback("").unwrap();
    assert_eq!(switchyard_lazy::get_force_fallback(), "");
    let _s = lx.sub(&ly).unwrap();
    assert_eq!(counter("lazy::sub"), 1);
    assert_eq!(counter("aten::sub.Tensor"), 1);
    let e = switchyard_lazy::set_force_fallback("aten::no_such_op")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no operator named aten::no_such_op"), "{e}");
    assert_eq!(switchyard_lazy::get_force_fallback(), "");
}
