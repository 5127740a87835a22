//! The programs of A.11 of the reference note (PyTorch's `test/test_functionalization.py`) as
//! data: what the graph tests trace and what `switchyard functionalize PROGRAM` runs.
//!
//! Each program is written as PyTorch's test writes it (same operators, same order, integer
//! scalars where the test passes Python ints), on the inputs the test uses, so that its traced
//! graph can be compared with the expected text.

use switchyard_core::{Result, ScalarType, Tensor};
use switchyard_ops::TensorOps;

/// One program.
pub struct Program {
    /// PyTorch's test name (`simple`, `everything`, ...).
    pub name: &'static str,
    /// The A.11 case (`F1`).
    pub case: &'static str,
    /// What it exercises.
    pub about: &'static str,
    /// The names of its inputs.
    pub input_names: &'static [&'static str],
    /// Fresh inputs.
    pub inputs: fn() -> Result<Vec<Tensor>>,
    /// The program.
    pub run: fn(&[Tensor]) -> Result<Vec<Tensor>>,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("name", &self.name)
            .field("case", &self.case)
            .finish_non_exhaustive()
    }
}

fn ones(shape: &[i64]) -> Result<Tensor> {
    switchyard_ops::ones(shape)
}

fn ones_4x2() -> Result<Vec<Tensor>> {
    Ok(vec![ones(&[4, 2])?])
}

fn ones_2x2() -> Result<Vec<Tensor>> {
    Ok(vec![ones(&[2, 2])?])
}

fn no_inputs() -> Result<Vec<Tensor>> {
    Ok(Vec::new())
}

fn simple(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let tmp = ones(&[4, 2])?;
    let y = x[0].view(&[4, 2])?;
    y.add_(&tmp)?;
    let _z = switchyard_ops::mul(&x[0], &x[0])?;
    Ok(vec![y])
}

fn simple_out(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let tmp = ones(&[4, 2])?;
    let y = x[0].view(&[4, 2])?;
    let z = switchyard_ops::empty(&[])?;
    switchyard_ops::add_out(&y, &tmp, &z)?;
    Ok(vec![switchyard_ops::mul(&z, &z)?])
}

fn inplace_on_non_view(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let tmp = ones(&[4, 2])?;
    let y = x[0].view(&[4, 2])?;
    x[0].add_(&tmp)?;
    Ok(vec![y])
}

fn as_strided(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let y = switchyard_ops::as_strided_with(&x[0], &[2], &[2], Some(1))?;
    y.add_scalar_(1)?;
    Ok(vec![Clone::clone(&x[0])])
}

fn cat(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let out = switchyard_ops::empty(&[0])?;
    switchyard_ops::cat_out(&[Clone::clone(&x[0])], &out)?;
    Ok(vec![out])
}

fn diagonal(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let tmp = ones(&[2])?;
    let y = switchyard_ops::diagonal(&switchyard_ops::clone(&x[0])?)?;
    y.add_(&tmp)?;
    Ok(vec![switchyard_ops::mul(&x[0], &x[0])?])
}

fn diagonal_mutated_input(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let tmp = ones(&[2])?;
    let y = switchyard_ops::diagonal(&x[0])?;
    y.add_(&tmp)?;
    Ok(vec![Clone::clone(&x[0])])
}

fn split(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let tmp = ones(&[2])?;
    let parts = x[0].split(2)?;
    let y3 = switchyard_ops::diagonal(&parts[1])?;
    y3.add_(&tmp)?;
    let _z = switchyard_ops::mul(&x[0], &x[0])?;
    Ok(vec![y3])
}

fn view_inplace(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let tmp = ones(&[4])?;
    x[0].transpose_(1, 0)?;
    let y = x[0].select(0, 0)?;
    y.add_(&tmp)?;
    Ok(vec![Clone::clone(&x[0])])
}

fn optional_tensor_list(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let y = x[0].view(&[8])?;
    let indices = switchyard_ops::arange(4)?;
    let values = switchyard_ops::arange_with(4, Some(ScalarType::Float), None, None, None)?;
    y.index_put_(&[Some(indices)], &values)?;
    Ok(vec![y])
}

fn scalars(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let y = x[0].view(&[4, 2])?;
    y.add_scalar_(1)?;
    let z = y.mul_scalar(2)?;
    z.div_scalar_(1)?;
    Ok(vec![z])
}

fn metadata_change(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let y = switchyard_ops::clone(&x[0])?;
    Ok(vec![y.ge_scalar_(0)?])
}

fn only_one_view(x: &[Tensor]) -> Result<Vec<Tensor>> {
    Ok(vec![x[0].view(&[4, 2])?])
}

fn everything(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let tmp = ones(&[2, 2])?;
    let x2 = switchyard_ops::add(&x[0], &x[0])?;
    let y = x2.view(&[8])?;
    let z0 = y.reshape(&[2, 4])?;
    let z1 = z0.transpose(1, 0)?;
    z1.unsqueeze_(0)?;
    z1.squeeze_()?;
    let parts = z1.split(2)?;
    parts[0].add_(&tmp)?;
    let _z4 = switchyard_ops::add(&z0.select(0, 0)?, &parts[0].reshape(&[4])?)?;
    Ok(vec![Clone::clone(&parts[0])])
}

fn aliases_maintained(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let tmp = ones(&[4, 2])?;
    let y = x[0].view(&[4, 2])?;
    let z = x[0].view(&[4, 2])?;
    y.add_(&tmp)?;
    Ok(vec![y, z])
}

fn copy(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let tmp = switchyard_ops::zeros(&[2, 2])?;
    let s = switchyard_ops::diagonal(&tmp)?;
    let y = s.copy_(&x[0])?;
    Ok(vec![y.add_(&x[0])?])
}

fn expand_symint(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let s = x[0].sizes();
    Ok(vec![x[0].expand(&[s[0], s[1]])?])
}

fn fill(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let y = switchyard_ops::add(&x[0], &x[0])?;
    let z = switchyard_ops::diagonal(&y)?;
    z.fill_scalar_(0)?;
    Ok(vec![y])
}

fn nested_functions(x: &[Tensor]) -> Result<Vec<Tensor>> {
    fn g(x: &Tensor) -> Result<()> {
        let y = x.select(0, 0)?;
        y.add_scalar_(1)?;
        Ok(())
    }
    g(&x[0])?;
    Ok(vec![switchyard_ops::add(&x[0], &x[0])?])
}

fn index_mutation_on_non_input(_: &[Tensor]) -> Result<Vec<Tensor>> {
    let tmp = switchyard_ops::zeros(&[10])?;
    tmp.select(0, 5)?.fill_scalar_(1)?;
    Ok(vec![tmp])
}

fn multiple_views_of_same_base(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let y = x[0].view(&[-1])?;
    let z = x[0].view(&[-1])?;
    x[0].add_scalar_(1)?;
    let _y1 = y.add_scalar(1)?;
    Ok(vec![z.add_scalar(1)?])
}

fn copy_stride_mismatch(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let y = switchyard_ops::empty_strided(&[2, 2], &[5, 1])?;
    y.copy_(&x[0])?;
    Ok(vec![y])
}

/// `sizes` filled with small exact values, `((i * 7 + 3) mod 23 - 11) / 4` (the oracle
/// scripts' generated values): deterministic inputs with some spread.
fn spread(sizes: &[i64]) -> Result<Tensor> {
    let n: i64 = sizes.iter().product();
    let values: Vec<f32> = (0..n)
        .map(|i| ((i * 7 + 3) % 23 - 11) as f32 / 4.0)
        .collect();
    Tensor::from_vec(values, sizes)
}

fn multi_out(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let out_min = switchyard_ops::empty(&[4])?;
    let out_max = switchyard_ops::empty(&[4])?;
    // PyTorch's test passes `out=(out_max, out_min)`: the minimum goes to `out_max`.
    switchyard_ops::op::aminmax_out::call(&x[0], Some(0), false, &out_max, &out_min)?;
    Ok(vec![out_max])
}

fn mutable_op_not_inplace_or_other(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let x = &x[0];
    let (output, mask) =
        switchyard_ops::_fused_moving_avg_obs_fq_helper(x, x, x, x, x, x, x, 1.0, 0, 1, 0)?;
    Ok(vec![output, mask])
}

fn tensor_list_composite(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let xs = [Clone::clone(&x[0]), Clone::clone(&x[0])];
    Ok(vec![switchyard_ops::block_diag(&xs)?])
}

fn batch_norm_inputs() -> Result<Vec<Tensor>> {
    Ok(vec![
        spread(&[4, 3, 5])?,
        switchyard_ops::zeros(&[3])?,
        ones(&[3])?,
    ])
}

fn batch_norm(x: &[Tensor]) -> Result<Vec<Tensor>> {
    Ok(vec![switchyard_ops::batch_norm(
        &x[0],
        None,
        None,
        Some(&x[1]),
        Some(&x[2]),
        true,
        0.1,
        1e-5,
        false,
    )?])
}

fn instance_norm_inputs() -> Result<Vec<Tensor>> {
    Ok(vec![
        spread(&[2, 3, 4, 5])?,
        switchyard_ops::zeros(&[3])?,
        ones(&[3])?,
    ])
}

fn instance_norm(x: &[Tensor]) -> Result<Vec<Tensor>> {
    Ok(vec![switchyard_ops::instance_norm(
        &x[0],
        None,
        None,
        Some(&x[1]),
        Some(&x[2]),
        true,
        0.1,
        1e-5,
        false,
    )?])
}

/// Every program, in A.11 order.
pub static PROGRAMS: &[Program] = &[
    Program {
        name: "simple",
        case: "F1",
        about: "one view of the input, mutated in place, then a read of the input",
        input_names: &["x"],
        inputs: ones_4x2,
        run: simple,
    },
    Program {
        name: "simple_out",
        case: "F2",
        about: "add(out=) into a 0-d tensor made inside the program, which it resizes",
        input_names: &["x"],
        inputs: ones_4x2,
        run: simple_out,
    },
    Program {
        name: "inplace_on_non_view",
        case: "F5",
        about: "the input mutated in place after a view of it was taken; the view sees it",
        input_names: &["x"],
        inputs: ones_4x2,
        run: inplace_on_non_view,
    },
    Program {
        name: "as_strided",
        case: "F7",
        about: "an as_strided view of the input mutated in place",
        input_names: &["x"],
        inputs: || Ok(vec![ones(&[9])?]),
        run: as_strided,
    },
    Program {
        name: "cat",
        case: "F9",
        about: "cat(out=) into an empty tensor",
        input_names: &["x"],
        inputs: ones_2x2,
        run: cat,
    },
    Program {
        name: "diagonal",
        case: "F10",
        about: "a diagonal of a clone mutated in place; the input is untouched",
        input_names: &["x"],
        inputs: ones_2x2,
        run: diagonal,
    },
    Program {
        name: "diagonal_mutated_input",
        case: "F11",
        about: "the diagonal of the input mutated in place",
        input_names: &["x"],
        inputs: ones_2x2,
        run: diagonal_mutated_input,
    },
    Program {
        name: "split",
        case: "F12",
        about: "a view of one output of a multi-output view (split) mutated in place",
        input_names: &["x"],
        inputs: ones_4x2,
        run: split,
    },
    Program {
        name: "view_inplace",
        case: "F13",
        about: "transpose_ of the input (an in-place view), then a view of it mutated",
        input_names: &["x"],
        inputs: ones_4x2,
        run: view_inplace,
    },
    Program {
        name: "optional_tensor_list",
        case: "F14",
        about: "index_put_ with a Tensor?[] argument on a view of the input",
        input_names: &["x"],
        inputs: ones_4x2,
        run: optional_tensor_list,
    },
    Program {
        name: "scalars",
        case: "F15",
        about: "in-place ops with scalar operands, which stay scalars",
        input_names: &["x"],
        inputs: ones_4x2,
        run: scalars,
    },
    Program {
        name: "metadata_change",
        case: "F16",
        about: "ge_ on a float tensor: the bool result is converted back to float",
        input_names: &["x"],
        inputs: || Ok(vec![ones(&[2])?]),
        run: metadata_change,
    },
    Program {
        name: "only_one_view",
        case: "F17",
        about: "a view of an unmutated input: exactly one node",
        input_names: &["x"],
        inputs: ones_4x2,
        run: only_one_view,
    },
    Program {
        name: "everything",
        case: "F18",
        about: "view, reshape, transpose, unsqueeze_, squeeze_, split, add_ on a split output",
        input_names: &["x"],
        inputs: ones_4x2,
        run: everything,
    },
    Program {
        name: "aliases_maintained_after_pass_when_reapplying_views",
        case: "F20",
        about: "two views of the input, one mutated; both returned",
        input_names: &["x"],
        inputs: ones_4x2,
        run: aliases_maintained,
    },
    Program {
        name: "copy_",
        case: "F21",
        about: "copy_ into a diagonal of zeros, then add_",
        input_names: &["x"],
        inputs: || Ok(vec![ones(&[2])?]),
        run: copy,
    },
    Program {
        name: "expand_symint",
        case: "F22",
        about: "expand to the input's own sizes: one expand_copy",
        input_names: &["x"],
        inputs: ones_2x2,
        run: expand_symint,
    },
    Program {
        name: "fill_",
        case: "F23",
        about: "fill_ of a diagonal of an intermediate",
        input_names: &["x"],
        inputs: ones_2x2,
        run: fill,
    },
    Program {
        name: "nested_functions_propagate_updates",
        case: "F27",
        about: "a mutation through a view that dies before the input is read again",
        input_names: &["x"],
        inputs: ones_2x2,
        run: nested_functions,
    },
    Program {
        name: "index_mutation_on_non_input",
        case: "F29",
        about: "fill_ of an element of a tensor made inside the program",
        input_names: &[],
        inputs: no_inputs,
        run: index_mutation_on_non_input,
    },
    Program {
        name: "multiple_views_of_same_base",
        case: "F33",
        about: "two views of the input, then the input mutated in place",
        input_names: &["x"],
        inputs: || Ok(vec![ones(&[4])?]),
        run: multiple_views_of_same_base,
    },
    Program {
        name: "copy_stride_mismatch",
        case: "F34",
        about: "copy_ into a tensor with strides (5, 1)",
        input_names: &["x"],
        inputs: ones_2x2,
        run: copy_stride_mismatch,
    },
    Program {
        name: "multi_out",
        case: "F3",
        about: "aminmax(out=(out_max, out_min)): each out tensor takes its functional output",
        input_names: &["x"],
        inputs: || {
            Ok(vec![switchyard_ops::arange_with(
                8,
                Some(ScalarType::Float),
                None,
                None,
                None,
            )?])
        },
        run: multi_out,
    },
    Program {
        name: "mutable_op_not_inplace_or_other",
        case: "F6",
        about: "a mutable operator writing four arguments that are not `self`, all one tensor",
        input_names: &["x"],
        inputs: || Ok(vec![ones(&[1])?]),
        run: mutable_op_not_inplace_or_other,
    },
    Program {
        name: "tensor_list_composite",
        case: "F8",
        about: "block_diag of a list: a composite with a Tensor[] argument passes through",
        input_names: &["x"],
        inputs: ones_2x2,
        run: tensor_list_composite,
    },
    Program {
        name: "batch_norm",
        case: "F31",
        about: "training batch norm, which writes the running statistics",
        input_names: &["x", "running_mean", "running_var"],
        inputs: batch_norm_inputs,
        run: batch_norm,
    },
    Program {
        name: "instance_norm",
        case: "F36",
        about: "instance norm: batch norm over repeated running statistics, averaged back",
        input_names: &["x", "running_mean", "running_var"],
        inputs: instance_norm_inputs,
        run: instance_norm,
    },
];

/// The program called `name`.
pub fn program(name: &str) -> Option<&'static Program> {
    PROGRAMS.iter().find(|p| p.name == name)
}
