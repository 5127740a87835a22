//! Autogen (§3.4–§3.5): for each family of variants, the out= and functional operators torchgen
//! adds, with the schema shapes, names, tags and CompositeExplicitAutograd kernels it gives them.

use std::collections::BTreeSet;

use switchyard_core::DispatchKey;
use switchyard_schema::{
    Annotation, Argument, BaseOperatorName, BaseType, FunctionSchema, OperatorName, Return,
    SchemaKind, Type,
};

use crate::checks;
use crate::dispatch::{BackendMetadata, DEFAULT_KERNEL_NAMESPACE};
use crate::group::Bucket;
use crate::model::{
    DeviceCheckType, NativeFunction, Variants, cpp_name, has_symint, unambiguous_name,
};

/// Out ops whose functional variant exists but cannot be paired with them.
const OUT_OPS_THAT_DONT_GET_GROUPED_PROPERLY: [&str; 2] = [
    "adaptive_avg_pool3d_backward.grad_input",
    "_slow_conv2d_backward.grad_input",
];

/// Mutable ops without tensor returns, which therefore cannot get an out= variant.
const MUTABLE_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT: [&str; 2] = ["_cummax_helper", "_cummin_helper"];

/// Functional ops without tensor returns, which therefore cannot get an out= variant.
const FUNCTIONAL_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT: [&str; 38] = [
    "_assert_async",
    "_assert_async.msg",
    "_assert_tensor_metadata",
    "_cslt_sparse_mm_search",
    "_assert_scalar",
    "_dimI",
    "_dimV",
    "_has_same_storage_numel",
    "_linalg_check_errors",
    "_local_scalar_dense",
    "_nested_tensor_from_mask_left_aligned",
    "_nnz",
    "_use_cudnn_ctc_loss",
    "_use_cudnn_ctc_loss.Tensor",
    "_use_miopen_ctc_loss",
    "_use_miopen_ctc_loss.Tensor",
    "_validate_compressed_sparse_indices",
    "allclose",
    "dense_dim",
    "equal",
    "is_coalesced",
    "is_pinned",
    "is_same_size",
    "is_set_to",
    "q_per_channel_axis",
    "q_scale",
    "q_zero_point",
    "qscheme",
    "record_stream",
    "sparse_dim",
    "sym_constrain_range",
    "sym_constrain_range_for_size",
    "_nested_tensor_storage_offsets",
    "_chunk_grad_outputs_efficient_attention",
    "_fused_sdp_choice",
    "_print",
    "_sink_tokens",
    "_nested_get_ragged_idx",
];

/// In-place ops whose schema does not match their siblings' (a pre-self argument).
const INPLACE_OPS_THAT_DONT_GET_GROUPED_PROPERLY: [&str; 1] = ["polygamma_"];

/// Adds the generated functions of every non-poisoned bucket to `functions`. Returns the index
/// of each generated function's source, and the problems as (function index, message).
pub(crate) fn add_generated_native_functions(
    functions: &mut Vec<NativeFunction>,
    buckets: &[Bucket],
) -> (Vec<usize>, Vec<(usize, String)>) {
    let mut errors = Vec::new();
    let mut sources = Vec::new();
    for bucket in buckets.iter().filter(|b| !b.poisoned) {
        let members: Vec<&NativeFunction> =
            bucket.members.iter().map(|(_, i)| &functions[*i]).collect();
        let has = |k: SchemaKind| bucket.get(k);
        let is_core = members.iter().any(|f| f.has_tag("core"));
        let are_manual = members.iter().all(|f| f.manual_cpp_binding);
        // set_ is an in-place view that codegen treats as an ordinary in-place op.
        let has_view_ops = members
            .iter()
            .any(|f| f.is_view_op() && f.func.name.name.to_string() != "set_");
        let are_composite_implicit = members
            .iter()
            .all(|f| f.has_composite_implicit_autograd_kernel);
        if are_manual || has_view_ops || (are_composite_implicit && !is_core) {
            continue;
        }
        if let Some(out) = has(SchemaKind::Out)
            && bucket.members.len() == 1
        {
            let name = functions[out].func.name.to_string();
            if !OUT_OPS_THAT_DONT_GET_GROUPED_PROPERLY.contains(&name.as_str()) {
                errors.push((
                    out,
                    format!(
                        "Found an out= operator that we could not find any other variants of: {}",
                        functions[out].func
                    ),
                ));
            }
            continue;
        }
        if let Some(i) = has(SchemaKind::Inplace)
            && INPLACE_OPS_THAT_DONT_GET_GROUPED_PROPERLY
                .contains(&functions[i].func.name.to_string().as_str())
        {
            continue;
        }
        let Some(base) = has(SchemaKind::Mutable)
            .or(has(SchemaKind::Inplace))
            .or(has(SchemaKind::Out))
            .or(has(SchemaKind::Functional))
        else {
            continue;
        };
        let base_fn = &functions[base];
        let has_out = has(SchemaKind::Out).is_some();
        let base_valid = base_fn.kind() == SchemaKind::Inplace
            || base_fn.func.returns.iter().any(|r| r.ty.is_tensor_like());
        let needs_out = base_fn
            .autogen
            .iter()
            .any(|n| n.to_string().contains("out"));
        let gets_out_variant = !has_out && base_valid && needs_out;
        if !has_out && !base_valid {
            let name = base_fn.func.name.to_string();
            if !MUTABLE_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT.contains(&name.as_str())
                && !FUNCTIONAL_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT.contains(&name.as_str())
            {
                errors.push((
                    base,
                    format!(
                        "Found an operator that we could not generate an out= variant for: {}.\nThis type of operators don't have tensor-like return, making it difficult to generate a proper out= variant. If\nout= variant is not needed, please add the function name into FUNCTIONAL_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT list.",
                        base_fn.func
                    ),
                ));
            }
        }
        let mut generated = Vec::new();
        if gets_out_variant {
            match generate_function(base_fn, SchemaKind::Out) {
                Ok(f) => generated.push(f),
                Err(e) => errors.push((base, e)),
            }
        }
        if has(SchemaKind::Functional).is_none() && (has_out || gets_out_variant) {
            match generate_function(base_fn, SchemaKind::Functional) {
                Ok(f) => generated.push(f),
                Err(e) => errors.push((base, e)),
            }
        }
        sources.extend(generated.iter().map(|_| base));
        functions.extend(generated);
    }
    (sources, errors)
}

/// torchgen's `generate_function`: a new function of kind `target` (out or functional) from `f`.
pub(crate) fn generate_function(
    f: &NativeFunction,
    target: SchemaKind,
) -> Result<NativeFunction, String> {
    let func = match target {
        SchemaKind::Functional => functional_signature(&f.func)?,
        SchemaKind::Out => match f.kind() {
            SchemaKind::Inplace => self_to_out_signature(&f.func)?,
            SchemaKind::Mutable => mutable_to_out_signature(&f.func)?,
            SchemaKind::Functional => functional_to_out_signature(&f.func)?,
            _ => {
                return Err(
                    "We only bother generating out= functions from either inplace or mutable or functional variants"
                        .to_owned(),
                );
            }
        },
        _ => {
            return Err(
                "We currently only generate either functional or out= NativeFunctions".to_owned(),
            );
        }
    };
    // torchgen validates every schema it builds, generated ones included.
    func.validate().map_err(|e| e.message)?;
    // Out kernels are named after the full operator name so that overloads do not collide
    // (`randn.names_out` → `randn_names_out`).
    let mut kernel = if func.kind() == SchemaKind::Out {
        unambiguous_name(&func.name)
    } else {
        cpp_name(&func)
    };
    if has_symint(&f.func) {
        kernel.push_str("_symint");
    }
    let mut tags: BTreeSet<String> = ["nondeterministic_seeded", "view_copy", "pt2_compliant_tag"]
        .into_iter()
        .filter(|t| f.has_tag(t))
        .map(str::to_owned)
        .collect();
    tags.insert("generated".to_owned());
    if func.is_out_fn() {
        tags.insert("out".to_owned());
    }
    if func.name.name.inplace {
        tags.insert("inplace".to_owned());
    }
    let generated = NativeFunction {
        namespace: f.namespace.clone(),
        func,
        use_const_ref_for_mutable_tensors: f.use_const_ref_for_mutable_tensors,
        device_guard: false,
        device_check: DeviceCheckType::NoCheck,
        python_module: None,
        category_override: None,
        variants: Variants::FUNCTION,
        manual_kernel_registration: false,
        manual_cpp_binding: false,
        line: f.line,
        autogen: Vec::new(),
        ufunc_inner_loop: Default::default(),
        structured: false,
        structured_delegate: None,
        structured_inherits: None,
        precomputed: None,
        cpp_no_default_args: Vec::new(),
        is_abstract: f.is_abstract,
        has_composite_implicit_autograd_kernel: false,
        has_composite_implicit_autograd_nested_tensor_kernel: false,
        has_composite_explicit_autograd_kernel: true,
        has_composite_explicit_autograd_non_functional_kernel: false,
        tags,
        dispatch: vec![(
            DispatchKey::CompositeExplicitAutograd,
            BackendMetadata {
                kernel,
                structured: false,
                cpp_namespace: DEFAULT_KERNEL_NAMESPACE.to_owned(),
            },
        )],
    };
    // torchgen builds generated functions through the same constructor, checks included.
    let fields = checks::Fields {
        func: Some(&generated.func),
        variants: Some(generated.variants),
        structured: Some(false),
        structured_delegate: Some(&None),
        structured_inherits: Some(&None),
        device_guard: Some(false),
        device_check: Some(generated.device_check),
        cpp_no_default_args: Some(&[]),
        tags: Some(&generated.tags),
    };
    if let Some(e) = checks::post_init(&fields).into_iter().next() {
        return Err(e);
    }
    Ok(generated)
}

/// `out` for an operator without overload, else `<overload>_out`.
fn out_overload(overload: &str) -> String {
    if overload.is_empty() {
        "out".to_owned()
    } else {
        format!("{overload}_out")
    }
}

fn out_name(name: &OperatorName) -> OperatorName {
    OperatorName {
        namespace: None,
        name: BaseOperatorName {
            base: name.name.base.clone(),
            inplace: false,
            dunder_method: name.name.dunder_method,
            functional_overload: false,
        },
        overload_name: out_overload(&name.overload_name),
    }
}

/// Marks `args` as trailing kwarg-only out arguments.
fn as_out(mut arg: Argument) -> Argument {
    arg.kwarg_only = true;
    arg.is_out = true;
    arg
}

/// From `foo_(Tensor(a!) self, ...) -> Tensor(a!)`: `foo.out(Tensor self, ..., *, Tensor(a!) out)
/// -> Tensor(a!)` (the returns now alias `out`).
fn self_to_out_signature(func: &FunctionSchema) -> Result<FunctionSchema, String> {
    let self_index = func
        .self_index()
        .ok_or_else(|| "Expected self_arg to be non-None".to_owned())?;
    let self_arg = func.arguments[self_index].clone();
    let mut arguments = func.arguments.clone();
    arguments[self_index].annotation = None;
    arguments.push(as_out(Argument {
        name: "out".to_owned(),
        ty: self_arg.ty,
        default: None,
        annotation: self_arg.annotation,
        kwarg_only: true,
        is_out: true,
    }));
    Ok(FunctionSchema {
        name: out_name(&func.name),
        arguments,
        returns: func.returns.clone(),
    })
}

/// From a functional op: its arguments without annotations or TensorOptions, plus one out
/// argument per tensor-like return.
fn functional_to_out_signature(func: &FunctionSchema) -> Result<FunctionSchema, String> {
    let (returns, outs) = out_args_from_returns(func)?;
    let tensor_options = func.tensor_options().unwrap_or(0..0);
    let mut arguments: Vec<Argument> = func
        .arguments
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.is_out && !tensor_options.contains(i))
        .map(|(_, a)| Argument {
            annotation: None,
            ..a.clone()
        })
        .collect();
    arguments.extend(outs);
    Ok(FunctionSchema {
        name: OperatorName {
            namespace: None,
            name: func.name.name.clone(),
            overload_name: out_overload(&func.name.overload_name),
        },
        arguments,
        returns,
    })
}

/// From a mutable op: all its arguments (still mutable) plus out arguments for its returns.
fn mutable_to_out_signature(func: &FunctionSchema) -> Result<FunctionSchema, String> {
    let (returns, outs) = out_args_from_returns(func)?;
    let mut arguments = func.arguments.clone();
    arguments.extend(outs);
    Ok(FunctionSchema {
        name: out_name(&func.name),
        arguments,
        returns,
    })
}

/// One out argument per tensor-like return (`out`, or `out<i>` when there are several
/// returns), annotated with the first letters no argument uses. If all returns are plain
/// Tensors they become the aliased outs; otherwise only the non-tensor returns remain.
fn out_args_from_returns(func: &FunctionSchema) -> Result<(Vec<Return>, Vec<Argument>), String> {
    if func.returns.iter().any(Return::is_write) {
        return Err("Mutable schema kinds should not return mutable arguments".to_owned());
    }
    if !func.returns.iter().any(|r| r.ty.is_tensor_like()) {
        return Err("Expected at least one tensor-like return".to_owned());
    }
    let used: Vec<&str> = func
        .arguments
        .iter()
        .filter_map(|a| a.annotation.as_ref())
        .flat_map(|a| a.alias_set.iter().map(String::as_str))
        .collect();
    let letters: Vec<char> = ('a'..='z')
        .filter(|c| !used.contains(&c.to_string().as_str()))
        .collect();
    let all_tensors = func
        .returns
        .iter()
        .all(|r| r.ty == Type::Base(BaseType::Tensor));
    let mut returns = Vec::new();
    let mut outs = Vec::new();
    for (i, r) in func.returns.iter().enumerate() {
        if !r.ty.is_tensor_like() {
            returns.push(r.clone());
            continue;
        }
        let letter = letters
            .get(i)
            .ok_or_else(|| "list index out of range".to_owned())?;
        let annotation = Annotation {
            alias_set: vec![letter.to_string()],
            is_write: true,
            alias_set_after: Vec::new(),
        };
        let name = if func.returns.len() == 1 {
            "out".to_owned()
        } else {
            format!("out{i}")
        };
        if all_tensors {
            returns.push(Return {
                name: None,
                ty: r.ty.clone(),
                annotation: Some(annotation.clone()),
            });
        }
        outs.push(as_out(Argument {
            name,
            ty: r.ty.clone(),
            default: None,
            annotation: Some(annotation),
            kwarg_only: true,
            is_out: true,
        }));
    }
    Ok((returns, outs))
}

/// The functional form of an in-place, out or mutable op: its `signature()` with return names
/// kept (mutated inputs become `<arg>_out` returns), renamed `<base>_functional` when the source
/// is mutable, overload kept.
fn functional_signature(func: &FunctionSchema) -> Result<FunctionSchema, String> {
    if func.kind() == SchemaKind::Functional {
        return Err("Cannot generate functional from functional schema".to_owned());
    }
    let mut signature = func.signature(false, false, true);
    signature.name = OperatorName {
        namespace: None,
        name: BaseOperatorName {
            base: func.name.name.base.clone(),
            inplace: false,
            dunder_method: func.name.name.dunder_method,
            functional_overload: func.kind() == SchemaKind::Mutable,
        },
        overload_name: func.name.overload_name.clone(),
    };
    Ok(signature)
}
