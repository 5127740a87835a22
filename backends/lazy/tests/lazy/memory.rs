//! The compiler's memory passes (plan §5.2 steps 5 and 7): scatters written into their dying
//! base, parameters donated to them, fused outputs written into a buffer that died just
//! before. Every program is compared with the same program run eagerly (bit for bit: only
//! element-wise operators, views and copies are involved), each pass must show in the backend
//! text, and a buffer somebody still holds (a kept CPU tensor, a lazy clone, a result) must
//! never be written.

use switchyard_core::{Result, Tensor};
use switchyard_lazy::dump::{DumpFormat, dump_ir};
use switchyard_ops::TensorOps;

use crate::support::{counter, sample, setup};

/// `t`'s values on the CPU as bits (exact comparison).
fn bits(t: &Tensor) -> (Vec<i64>, Vec<u32>) {
    let cpu = if switchyard_lazy::is_lazy(t) {
        switchyard_lazy::to_cpu(t).unwrap()
    } else {
        Clone::clone(t)
    };
    let c = switchyard_ops::op::clone::call(&cpu, Some(switchyard_core::MemoryFormat::Contiguous))
        .unwrap();
    (
        cpu.sizes().to_vec(),
        c.to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect(),
    )
}

/// Each way of writing through a view of an intermediate: the view, then the update.
type Update = fn(&Tensor) -> Result<()>;

const UPDATES: [(&str, Update); 4] = [
    ("slice_scatter", |y| {
        y.narrow(0, 1, 2)?.add_scalar_(1.5)?;
        Ok(())
    }),
    ("select_scatter", |y| {
        y.select(1, 3)?.mul_scalar_(-2.0)?;
        Ok(())
    }),
    ("diagonal_scatter", |y| {
        y.diagonal()?.add_scalar_(10.0)?;
        Ok(())
    }),
    ("as_strided_scatter", |y| {
        y.as_strided(&[2, 2], &[1, 6])?.sub_scalar_(0.5)?;
        Ok(())
    }),
];

#[test]
fn a_scatter_into_a_dying_intermediate_runs_in_place() {
    let _g = setup();
    for (name, update) in UPDATES {
        switchyard_lazy::reset_metrics();
        let x = sample(&[6, 6], 7);
        // Eagerly: an intermediate, written through a view, read afterwards.
        let program = |x: &Tensor| -> Result<Tensor> {
            let y = x.mul_scalar(2.0)?;
            update(&y)?;
            y.exp()
        };
        let want = bits(&program(&x).unwrap());
        let lx = switchyard_lazy::to_lazy(&x).unwrap();
        switchyard_lazy::mark_step().unwrap();
        let out = program(&lx).unwrap();
        let text = dump_ir(std::slice::from_ref(&out), DumpFormat::Backend).unwrap();
        assert!(
            text.contains(&format!("in-place aten::{name}")),
            "{name}: no in-place scatter in\n{text}"
        );
        assert!(text.contains("in-place scatters 1 "), "{name}:\n{text}");
        switchyard_lazy::mark_step().unwrap();
        assert_eq!(bits(&out), want, "{name}\n{text}");
        assert_eq!(counter("InPlaceScatter"), 1, "{name}\n{text}");
        assert_eq!(counter("ScatterCopiedBase"), 0, "{name}\n{text}");
    }
}

#[test]
fn a_base_still_read_later_or_returned_is_copied() {
    let _g = setup();
    let x = sample(&[6, 6], 8);
    // `y` before the update is also a result (a clone taken first): the scatter must copy.
    let program = |x: &Tensor| -> Result<(Tensor, Tensor)> {
        let y = x.mul_scalar(2.0)?;
        let before = TensorOps::clone(&y)?;
        y.narrow(0, 0, 3)?.add_scalar_(1.0)?;
        Ok((y, before))
    };
    let (wy, wb) = program(&x).unwrap();
    let lx = switchyard_lazy::to_lazy(&x).unwrap();
    switchyard_lazy::mark_step().unwrap();
    let (ly, lb) = program(&lx).unwrap();
    let text = dump_ir(&[Clone::clone(&ly), Clone::clone(&lb)], DumpFormat::Backend).unwrap();
    assert!(!text.contains("= in-place"), "{text}");
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(bits(&ly), bits(&wy));
    assert_eq!(bits(&lb), bits(&wb));
}

/// A parameter `p` updated through a view of it, as an optimizer step through a view does.
/// The update waits in `p`'s alias group until `p` is read (as in PyTorch, `mark_step` syncs
/// lazy tensors, not the functional wrappers' queued updates); the `sync` makes its scatter
/// part of this step's graph, as reading `p` does in the next step of a training loop.
fn step(p: &Tensor, g: &Tensor) -> Result<()> {
    p.narrow(0, 2, 3)?.sub_(&g.mul_scalar(0.5)?)?;
    if switchyard_lazy::is_lazy(p) {
        switchyard_functionalize::sync(p)?;
    }
    Ok(())
}

#[test]
fn a_parameter_updated_through_a_view_is_donated() {
    let _g = setup();
    let (p0, g0) = (sample(&[8, 4], 9), sample(&[3, 4], 10));
    let eager = Clone::clone(&p0).mul_scalar(1.0).unwrap();
    let p = switchyard_lazy::to_lazy(&p0).unwrap();
    let g = switchyard_lazy::to_lazy(&g0).unwrap();
    switchyard_lazy::mark_step().unwrap();
    let compiled = counter("UncachedCompile");
    for k in 0..4 {
        step(&eager, &g0).unwrap();
        step(&p, &g).unwrap();
        let text = dump_ir(std::slice::from_ref(&p), DumpFormat::Backend).unwrap();
        assert!(text.contains("in-place aten::slice_scatter"), "{text}");
        assert!(text.contains("donating %"), "{text}");
        switchyard_lazy::mark_step().unwrap();
        assert_eq!(bits(&p), bits(&eager), "step {k}");
        // Each step's base (the uploaded data, then the previous step's result) is held by
        // nothing else.
        assert_eq!(counter("DonatedParameter"), k + 1, "step {k}\n{text}");
        assert_eq!(counter("ScatterCopiedBase"), 0, "step {k}\n{text}");
    }
    // One program (compiled by the first step, or by an earlier test of the same shapes),
    // whether the buffer was donated or not.
    assert!(counter("UncachedCompile") <= compiled + 1);
    assert_eq!(
        counter("CachedCompile") + counter("UncachedCompile"),
        compiled + 4
    );
}

#[test]
fn a_parameter_someone_else_holds_is_copied_not_written() {
    let _g = setup();
    let (p0, g0) = (sample(&[8, 4], 11), sample(&[3, 4], 12));
    let eager = Clone::clone(&p0).mul_scalar(1.0).unwrap();
    let p = switchyard_lazy::to_lazy(&p0).unwrap();
    let g = switchyard_lazy::to_lazy(&g0).unwrap();
    switchyard_lazy::mark_step().unwrap();
    // A step with nothing else holding `p`: donated.
    step(&eager, &g0).unwrap();
    step(&p, &g).unwrap();
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(counter("DonatedParameter"), 1);
    switchyard_lazy::reset_metrics();
    let compiled = counter("UncachedCompile");
    // The executor's own CPU tensor of `p`'s data, taken before the step (`to_cpu` would
    // copy).
    let cpu = switchyard_lazy::get_ltc_tensor(&p)
        .unwrap()
        .to_tensor()
        .unwrap();
    let cpu_bits = bits(&cpu);
    // A lazy clone of `p` (its IR is `p`'s device data).
    let lazy_copy = TensorOps::clone(&p).unwrap();
    let copy_bits = bits(&lazy_copy);
    assert_eq!(copy_bits, cpu_bits);
    for k in 0..2 {
        step(&eager, &g0).unwrap();
        step(&p, &g).unwrap();
        switchyard_lazy::mark_step().unwrap();
        assert_eq!(bits(&p), bits(&eager), "step {k}");
    }
    assert_eq!(bits(&cpu), cpu_bits, "the kept CPU tensor was written");
    assert_eq!(bits(&lazy_copy), copy_bits, "the lazy clone was written");
    // The first of those steps copied (the kept tensors hold the old buffer). Same program
    // throughout: donation is decided at run time, never in the cache key.
    assert!(counter("ScatterCopiedBase") >= 1);
    assert_eq!(counter("UncachedCompile"), compiled);
}

#[test]
fn a_fused_output_takes_a_buffer_that_died_just_before() {
    let _g = setup();
    let x = sample(&[64, 64], 13);
    // `a` is read twice (so its group ends there) and dies at the matmul; `c`'s group comes
    // next, has `a`'s layout and does not read `a`: it writes into `a`'s buffer.
    let program = |x: &Tensor| -> Result<Tensor> {
        let a = x.sin()?;
        let m = a.mm(&a)?;
        m.mul_scalar(0.25)?.exp()
    };
    let want = bits(&program(&x).unwrap());
    let lx = switchyard_lazy::to_lazy(&x).unwrap();
    switchyard_lazy::mark_step().unwrap();
    for k in 0..2 {
        let out = program(&lx).unwrap();
        let text = dump_ir(std::slice::from_ref(&out), DumpFormat::Backend).unwrap();
        assert!(text.contains(" into %"), "{text}");
        assert!(text.contains("reused buffers 1"), "{text}");
        switchyard_lazy::mark_step().unwrap();
        assert_eq!(bits(&out), want, "run {k}\n{text}");
        assert_eq!(counter("BufferReused"), k + 1, "run {k}\n{text}");
    }
    // When `a` is a result too, its buffer is the caller's: nothing reuses it.
    let a = lx.sin().unwrap();
    let out = a.mm(&a).unwrap().mul_scalar(0.25).unwrap().exp().unwrap();
    let text = dump_ir(&[Clone::clone(&a), Clone::clone(&out)], DumpFormat::Backend).unwrap();
    assert!(!text.contains(" into %"), "{text}");
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(bits(&out), want);
    assert_eq!(bits(&a), bits(&x.sin().unwrap()));
}

/// A step whose program donates `p`'s buffer and then fails (an index out of range, which only
/// the CPU kernel can see): the error names the failing operator, and reading `p` afterwards
/// says its donated value is lost (the failed run may have written it in place), not that an
/// operation is in flight.
#[test]
fn a_donated_parameter_of_a_failed_step_reads_as_lost() {
    let _g = setup();
    let (p0, g0) = (sample(&[8, 4], 13), sample(&[3, 4], 14));
    let p = switchyard_lazy::to_lazy(&p0).unwrap();
    let g = switchyard_lazy::to_lazy(&g0).unwrap();
    let index = Tensor::from_vec(vec![0_i64, 100], &[2]).unwrap();
    let index = switchyard_lazy::to_lazy(&index).unwrap();
    switchyard_lazy::mark_step().unwrap();
    // Created after the update, so it runs after the in-place scatter.
    step(&p, &g).unwrap();
    let bad = g.index_select(0, &index).unwrap();
    let err = switchyard_lazy::mark_step().unwrap_err().to_string();
    assert!(err.contains("index"), "{err}");
    assert_eq!(counter("DonatedParameter"), 1);
    drop(bad);
    let read = switchyard_lazy::to_cpu(&p).unwrap_err().to_string();
    assert!(
        read.contains("donated to an execution that failed"),
        "{read}"
    );
    // `g` was not donated: it still reads.
    assert_eq!(bits(&g), bits(&g0));
}

/// An indexed write (`y[i] = v`, `y[i] += v`), which functionalization makes an
/// `index_put` of the whole of `y`, into a dying intermediate: the CPU's in-place kernel on
/// the intermediate's buffer (the functional kernel runs it on a copy), the same bits; with
/// the intermediate also a result, the base is copied.
#[test]
fn an_indexed_write_into_a_dying_intermediate_runs_in_place() {
    let _g = setup();
    let x = sample(&[6, 5], 13);
    let v = sample(&[5], 14);
    // Rows 4, 1, 4 (a repeated row: the last write wins, or both add with accumulate).
    let rows = Tensor::from_vec(vec![4i64, 1, 4], &[3]).unwrap();
    type Write = fn(&Tensor, &Tensor, &Tensor) -> Result<()>;
    // (A Bool mask is no case here: its write needs the mask's values at trace time, so it
    // runs then, not in the compiled program.)
    let writes: [(&str, Write); 2] = [
        ("assign", |y, i, v| {
            y.index_put_(&[Some(Clone::clone(i))], v)?;
            Ok(())
        }),
        ("accumulate", |y, i, v| {
            switchyard_ops::op::index_put_::call(y, &[Some(Clone::clone(i))], v, true)?;
            Ok(())
        }),
    ];
    for keep in [false, true] {
        for (name, write) in writes {
            switchyard_lazy::reset_metrics();
            let program = |x: &Tensor, i: &Tensor, v: &Tensor| -> Result<(Tensor, Tensor)> {
                let y = x.mul_scalar(2.0)?;
                let before = if keep {
                    TensorOps::clone(&y)?
                } else {
                    x.neg()?
                };
                write(&y, i, v)?;
                Ok((y.exp()?, before))
            };
            let (want, want_before) = program(&x, &rows, &v).unwrap();
            let (lx, li, lv) = (
                switchyard_lazy::to_lazy(&x).unwrap(),
                switchyard_lazy::to_lazy(&rows).unwrap(),
                switchyard_lazy::to_lazy(&v).unwrap(),
            );
            switchyard_lazy::mark_step().unwrap();
            let (out, before) = program(&lx, &li, &lv).unwrap();
            let text = dump_ir(
                &[Clone::clone(&out), Clone::clone(&before)],
                DumpFormat::Backend,
            )
            .unwrap();
            switchyard_lazy::mark_step().unwrap();
            assert_eq!(bits(&out), bits(&want), "{name} keep={keep}\n{text}");
            assert_eq!(bits(&before), bits(&want_before), "{name} keep={keep}");
            if keep {
                assert!(!text.contains("= in-place"), "{name}\n{text}");
                assert_eq!(counter("InPlaceScatter"), 0, "{name}\n{text}");
            } else {
                assert!(text.contains("in-place aten::index_put"), "{name}\n{text}");
                assert_eq!(counter("InPlaceScatter"), 1, "{name}\n{text}");
                assert_eq!(counter("ScatterCopiedBase"), 0, "{name}\n{text}");
            }
        }
    }
}
