//! The concrete cases of `shared/reference/codegen.md` §7.2 (22–37, 29a–29z) and further
//! parser cases, each with the exact result of torchgen 2.15 on the same yaml: either the
//! message of its first error (and the line it reports, or for errors torchgen reports without
//! a context, the line of the entry at fault), or the schemas autogen generates.
//!
//! The expectations were produced by running torchgen 2.15 (`parse_native_yaml_struct`, then
//! grouping, view grouping and, for ufunc ops, the ufunc generators) on each yaml.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use switchyard_codegen::{ParseOptions, parse_native_functions};

/// Parses `yaml` and expects success with exactly `generated` as the generated schemas.
fn generates(yaml: &str, generated: &[&str]) {
    let parsed = parse_native_functions(yaml, "case.yaml", &ParseOptions::default())
        .unwrap_or_else(|e| panic!("unexpected errors: {e:#?}"));
    let got: Vec<String> = parsed
        .generated()
        .iter()
        .map(|f| f.func.to_string())
        .collect();
    assert_eq!(got, generated);
}

/// Parses `yaml` and expects its first error (in file order) to be `message` at `line`.
fn fails(yaml: &str, line: Option<usize>, message: &str) {
    let errors = parse_native_functions(yaml, "case.yaml", &ParseOptions::default())
        .expect_err("expected an error");
    assert_eq!(errors[0].message, message, "all errors: {errors:#?}");
    assert_eq!(errors[0].line, line, "all errors: {errors:#?}");
    assert_eq!(errors[0].file, "case.yaml");
}

#[test]
fn case_22() {
    fails(
        r###"- func: binop.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  ufunc_inner_loop:
    Generic: binop (Bool)
"###,
        Some(1),
        "ufunc must be structured",
    );
}

#[test]
fn case_23() {
    fails(
        r###"- func: binop.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  dispatch:
    CPU: binop_cpu
  ufunc_inner_loop:
    Generic: binop (Bool)
"###,
        Some(1),
        "ufunc should not have explicit dispatch entry for CPU",
    );
}

#[test]
fn case_24() {
    fails(
        r###"- func: binop.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  ufunc_inner_loop:
    Generic: binop (Bool)
    ScalarOnly: binop_scalar (Bool)
- func: binop(Tensor self, Tensor other) -> Tensor
  structured_delegate: binop.out
"###,
        Some(1),
        "ScalarOnly and Generic must have same ufunc name",
    );
}

#[test]
fn case_25() {
    fails(
        r###"- func: unop.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  ufunc_inner_loop:
    Generic: unop (All)
    CUDAFunctorOnSelf: unop_self_cuda (All)
- func: unop(Tensor self) -> Tensor
  structured_delegate: unop.out
"###,
        Some(1),
        "cannot use CUDAFunctorOnSelf on non-binary function",
    );
}

#[test]
fn case_26() {
    generates(
        r###"- func: binop.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  ufunc_inner_loop:
    Generic: binop (Bool)
    ScalarOnly: binop (Bool)
- func: binop(Tensor self, Tensor other) -> Tensor
  structured_delegate: binop.out
"###,
        &[],
    );
}

#[test]
fn case_29a() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  structured: True
"###,
        Some(1),
        "Put structured field on the out= variant of a function; did you mean structured_delegate?",
    );
}

#[test]
fn case_29b() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured_delegate: foo.out
"###,
        Some(1),
        "structured_delegate field not allowed on out= functions; did you mean structured?",
    );
}

#[test]
fn case_29c1() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  structured_delegate: foo.out
"###,
        Some(1),
        "foo is marked as a structured_delegate pointing to foo.out, but foo.out is missing.",
    );
}

#[test]
fn case_29c2() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  structured_delegate: foo.out
- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: foo_out
"###,
        Some(1),
        "foo is marked as a structured_delegate pointing to foo.out, but foo.out is not marked as structured. Consider adding 'structured=True' to the delegated operator",
    );
}

#[test]
fn case_29d() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  structured_delegate: foo.out
  dispatch:
    CPU: foo_cpu
"###,
        Some(1),
        "if structured_delegate, then must not have CPU in dispatch dictionary (it is delegated!)",
    );
}

#[test]
fn case_29e() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  variants: function, method
  dispatch:
    CPU: foo
"###,
        Some(1),
        "Native functions with out arguments MUST be declared with only function variant; e.g., variants: function; otherwise you will tickle a Python argument binding bug (which usually manifests itself as the result variable being undefined.)",
    );
}

#[test]
fn case_29f1() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  dispatch:
    CompositeImplicitAutograd: foo
"###,
        Some(1),
        "unnecessary dispatch table for this function; just delete the dispatch key entirely",
    );
}

#[test]
fn case_29f2() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  dispatch:
    CompositeImplicitAutograd: bar
"###,
        Some(1),
        "unexpected name for singleton CompositeImplicitAutograd dispatch entry: expected foo but got BackendMetadata(kernel='bar', structured=False, cpp_namespace='at::native').  Rename your implementation to the expected name, then delete the dispatch table",
    );
}

#[test]
fn case_29g() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  dispatch:
    CompositeImplicitAutograd: foo
    CompositeExplicitAutograd: foo2
"###,
        Some(1),
        "cannot specify more than one of CompositeExplicitAutograd, CompositeExplicitAutogradNonFunctional, or CompositeImplicitAutograd on a single kernel; each strictly subsumes the other.  If you wanted to provide an explicit autograd implementation, specify CompositeExplicitAutograd; otherwise specify CompositeImplicitAutograd only",
    );
}

#[test]
fn case_29h() {
    fails(
        r###"- func: new_foo(Tensor self) -> Tensor
"###,
        Some(1),
        "expected new_foo to have a CompositeExplicitAutograd dispatch entry, but there was no dispatch table.  Factory functions should not have implicit dispatch as they should not be decomposed for __torch_dispatch__",
    );
}

#[test]
fn case_29h2() {
    fails(
        r###"- func: foo_like(Tensor self) -> Tensor
"###,
        Some(1),
        "expected foo_like to have a CompositeExplicitAutograd dispatch entry, but there was no dispatch table.  Factory functions should not have implicit dispatch as they should not be decomposed for __torch_dispatch__",
    );
}

#[test]
fn case_29h3() {
    fails(
        r###"- func: fac(*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
"###,
        Some(1),
        "expected fac to have a CompositeExplicitAutograd dispatch entry, but there was no dispatch table.  Factory functions should not have implicit dispatch as they should not be decomposed for __torch_dispatch__",
    );
}

#[test]
fn case_29i1() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  dispatch:
    XLA: foo
"###,
        Some(1),
        "Dispatch key XLA of kernel foo is not a supported dispatch key.",
    );
}

#[test]
fn case_29i2() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  dispatch:
    Bogus: foo
"###,
        Some(1),
        "unknown dispatch key Bogus",
    );
}

#[test]
fn case_29i3() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  dispatch:
    MKLDNN: foo
"###,
        Some(1),
        "Dispatch key MKLDNN of kernel foo is not a supported dispatch key.",
    );
}

#[test]
fn case_29i4() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  dispatch:
    CatchAll: foo
"###,
        Some(1),
        "Dispatch key Undefined of kernel foo is not a supported dispatch key.",
    );
}

#[test]
fn case_29j() {
    fails(
        r###"- func: my_rand(int n) -> Tensor
  dispatch:
    CompositeExplicitAutograd: my_rand
"###,
        Some(1),
        "nondeterministic_seeded tag missing for my_rand",
    );
}

#[test]
fn case_29j2() {
    fails(
        r###"- func: my_op(Tensor self, Generator? g=None) -> Tensor
  dispatch:
    CompositeExplicitAutograd: my_op
"###,
        Some(1),
        "nondeterministic_seeded tag missing for my_op",
    );
}

#[test]
fn case_29j3() {
    fails(
        r###"- func: my_op(Tensor self, float dropout_p) -> Tensor
  dispatch:
    CompositeExplicitAutograd: my_op
"###,
        Some(1),
        "nondeterministic_seeded tag missing for my_op",
    );
}

#[test]
fn case_29k() {
    fails(
        r###"- func: _foreach_foo(Tensor[] self) -> Tensor[]
  dispatch:
    CPU: foo
"###,
        Some(1),
        "foreach kernels fall back to slow path when tensor are on different devices, device_check not allowed to be enabled",
    );
}

#[test]
fn case_29l() {
    fails(
        r###"- func: foo(Tensor self, int lambda) -> Tensor
  dispatch:
    CPU: foo
"###,
        Some(1),
        "Argument name 'lambda' in function 'foo' is a reserved Python keyword.",
    );
}

#[test]
fn case_29m() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  manual_kernel_registration: True
  dispatch:
    CPU: foo
"###,
        Some(1),
        "cannot specify both manual_kernel_registration and dispatch; with manual registration, dispatch has no effect!",
    );
}

#[test]
fn case_29n1() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  precomputed:
  - dim -> int dim
"###,
        Some(1),
        "precomputed requires structured=True, got structured=False",
    );
}

#[test]
fn case_29n2() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured_inherits: TensorIteratorBase
  dispatch:
    CPU: foo
"###,
        Some(1),
        "structured_inherits must also imply structured: True",
    );
}

#[test]
fn case_29o() {
    fails(
        r###"- func: foo(Tensor self, int x) -> Tensor
  cpp_no_default_args: ['x']
  dispatch:
    CPU: foo
"###,
        Some(1),
        "Invalid cpp_no_default_args: {'x'}",
    );
}

#[test]
fn case_29p1() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  variants: function,method
"###,
        Some(1),
        "illegal variant function,method",
    );
}

#[test]
fn case_29p2() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  bogus_key: 1
"###,
        Some(1),
        "leftover entries: {'bogus_key': 1}",
    );
}

#[test]
fn case_29p3() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  tags: not_a_tag
"###,
        Some(1),
        "illegal tag not_a_tag",
    );
}

#[test]
fn case_29q() {
    fails(
        r###"- func: foo_(Tensor self) -> Tensor
"###,
        Some(1),
        "Inplace op foo_ must have a self argument with a mutable annotation",
    );
}

#[test]
fn case_29r() {
    fails(
        r###"- func: foo_(Tensor(a!) self) -> Tensor
"###,
        Some(1),
        "Inplace op foo_ with Tensor self must return self",
    );
}

#[test]
fn case_29s() {
    fails(
        r###"- func: foo(Tensor self, Tensor(a!) out) -> Tensor(a!)
"###,
        Some(1),
        "If you have a schema with mutable positional args, we expect them to not be returned. schema: foo(Tensor self, Tensor(a!) out) -> Tensor(a!)",
    );
}

#[test]
fn case_29t() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out0, Tensor(b!) out1) -> Tensor(a!)
"###,
        Some(1),
        "Must return as many arguments as there are out arguments, or no return at all. Got 2 non-scratch out args and 1 returns",
    );
}

#[test]
fn case_29u() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out, int x) -> Tensor(a!)
"###,
        Some(1),
        "non-mutable argument 'x' cannot follow mutable out arguments",
    );
}

#[test]
fn case_29v() {
    fails(
        r###"- func: foo_out(Tensor self) -> Tensor
"###,
        Some(1),
        "_out suffix is reserved and not permitted for operator names; did you mean to specify an out overload name instead?",
    );
}

#[test]
fn case_29w1() {
    fails(
        r###"- func: foo(Tensor self)->Tensor
"###,
        Some(1),
        "Invalid function schema: foo(Tensor self)->Tensor",
    );
}

#[test]
fn case_29w2() {
    fails(
        r###"- func: foo(Tensor self) -> (Tensor)
"###,
        Some(1),
        "foo(Tensor self) -> Tensor != foo(Tensor self) -> (Tensor)",
    );
}

#[test]
fn case_29x() {
    fails(
        r###"- func: foo(Tensor self, int[2] x=[1, 1]) -> Tensor
"###,
        Some(1),
        "illegal argument '1]'",
    );
}

#[test]
fn case_29y() {
    fails(
        r###"- func: foo(Tensor self, *, int x, *, int y) -> Tensor
"###,
        Some(1),
        "invalid syntax: kwarg-only specifier * can only occur once",
    );
}

#[test]
fn case_29z() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
- func: foo.x(Tensor self) -> Tensor
"###,
        Some(2),
        "Duplicate schema kind SchemaKind.functional for foo.x(Tensor self) -> Tensor",
    );
}

#[test]
fn case_30() {
    generates(
        r###"- func: op(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: op
  autogen: op.out
"###,
        &["op.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"],
    );
}

#[test]
fn case_31() {
    generates(
        r###"- func: op_2() -> (Tensor, Tensor)
  dispatch:
    CPU: kernel_1
  autogen: op_2.out
"###,
        &["op_2.out(*, Tensor(a!) out0, Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))"],
    );
}

#[test]
fn case_32() {
    generates(
        r###"- func: op_3.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor
  tags: core
  autogen: op_3.vec_out
"###,
        &[
            "op_3.vec_out(Tensor input, SymInt[]? output_size, float[]? scale_factors, *, Tensor(a!) out) -> Tensor(a!)",
        ],
    );
}

#[test]
fn case_32b() {
    generates(
        r###"- func: op_3.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor
  autogen: op_3.vec_out
"###,
        &[],
    );
}

#[test]
fn case_33a() {
    generates(
        r###"- func: foo_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: foo_
  autogen: foo, foo.out
"###,
        &[
            "foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
            "foo(Tensor self) -> Tensor",
        ],
    );
}

#[test]
fn case_33b() {
    fails(
        r###"- func: foo_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: foo_
  autogen: foo.out
"###,
        Some(1),
        "The codegen expects to be able to generate 'foo, foo.out'. To do so, it expects a line: 'autogen: foo, foo.out'. Instead, it found 'autogen: foo.out'",
    );
}

#[test]
fn case_33c() {
    generates(
        r###"- func: foo_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: foo_
"###,
        &[],
    );
}

#[test]
fn case_34() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: foo_out
- func: foo_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: foo_
"###,
        Some(4),
        "The codegen expects to be able to generate 'foo'. In order to generate them however, we expect them to be called out explicitly in the yaml. Please add an 'autogen: foo' line to the entry for foo_",
    );
}

#[test]
fn case_35() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: foo_out
"###,
        Some(1),
        "Found an out= operator that we could not find any other variants of: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    );
}

#[test]
fn case_36() {
    generates(
        r###"- func: foo(Tensor self, Tensor(a!) buf) -> Tensor
  dispatch:
    CPU: foo
  autogen: foo_functional, foo.out
"###,
        &[
            "foo.out(Tensor self, Tensor(a!) buf, *, Tensor(b!) out) -> Tensor(b!)",
            "foo_functional(Tensor self, Tensor buf) -> (Tensor, Tensor buf_out)",
        ],
    );
}

#[test]
fn case_37a() {
    fails(
        r###"- func: myview(Tensor(a) self, int x) -> Tensor(a)
  dispatch:
    CompositeExplicitAutograd: myview
"###,
        Some(1),
        "myview appears to be a new operator that aliases its inputs. The codegen expects you to add a corresponding operator to native_functions.yaml: myview_copy. See Note [view_copy NativeFunctions] for details.",
    );
}

#[test]
fn case_37b() {
    fails(
        r###"- func: myview(Tensor(a) self, int x) -> Tensor(a)
  dispatch:
    CompositeExplicitAutograd: myview
- func: myview_copy(Tensor self, int x) -> Tensor
  dispatch:
    CompositeExplicitAutograd: myview_copy
"###,
        Some(4),
        "('myview_copy', \"{'pt2_compliant_tag'}\") appears to be a view_copy operator. The codegen expects view_copy operators to be annotated with the 'view_copy' tag in native_functions.yaml. See Note [view_copy NativeFunction] for details.",
    );
}

#[test]
fn case_37c() {
    generates(
        r###"- func: myview(Tensor(a) self, int x) -> Tensor(a)
  dispatch:
    CompositeExplicitAutograd: myview
- func: myview_copy(Tensor self, int x) -> Tensor
  dispatch:
    CompositeExplicitAutograd: myview_copy
  tags: view_copy
  autogen: myview_copy.out
"###,
        &["myview_copy.out(Tensor self, int x, *, Tensor(a!) out) -> Tensor(a!)"],
    );
}

#[test]
fn case_x_autogen_notstr() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  autogen: [foo.out]
"###,
        Some(1),
        "autogen is not a str: ['foo.out']",
    );
}

#[test]
fn case_x_bool() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  device_guard: maybe
"###,
        Some(1),
        "not a bool: maybe",
    );
}

#[test]
fn case_x_bool_yes() {
    generates(
        r###"- func: foo(Tensor self) -> Tensor
  device_guard: yes
  dispatch:
    CPU: foo
"###,
        &[],
    );
}

#[test]
fn case_x_cnda_notlist() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  cpp_no_default_args: x
"###,
        Some(1),
        "cpp_no_default_args is not a list: x",
    );
}

#[test]
fn case_x_constref() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  use_const_ref_for_mutable_tensors: True
"###,
        Some(1),
        "see https://github.com/pytorch/pytorch/issues/145522",
    );
}

#[test]
fn case_x_delegate_ns() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  structured_delegate: aten::foo.out
"###,
        Some(1),
        "namespace is not supported in structured delegate, using the same namespace as the native function",
    );
}

#[test]
fn case_x_devcheck() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  device_check: Sometimes
"###,
        Some(1),
        "illegal device_check: Sometimes",
    );
}

#[test]
fn case_x_devcheck2() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  device_check: [1]
"###,
        Some(1),
        "not a str: [1]",
    );
}

#[test]
fn case_x_dispatch_badkey() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  dispatch:
    1: foo
"###,
        Some(1),
        "illegal dispatch key '1' in {1: 'foo', '__line__': 3}",
    );
}

#[test]
fn case_x_dispatch_badval() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  dispatch:
    CPU: 1
"###,
        Some(1),
        "illegal dispatch value '1' in {'CPU': 1, '__line__': 3}",
    );
}

#[test]
fn case_x_dispatch_notdict() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  dispatch: CPU
  autogen: foo.out
"###,
        Some(1),
        "dispatch is not a dict: {'autogen': 'foo.out', '__line__': 1}",
    );
}

#[test]
fn case_x_dup_op() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  dispatch:
    CPU: foo
- func: foo(Tensor self) -> Tensor
  dispatch:
    CPU: foo
"###,
        Some(4),
        "duplicate operator foo for dispatch key CPU",
    );
}

#[test]
fn case_x_empty() {
    fails(
        r###""###,
        None,
        "Expected 'es' to be a list, but got <class 'NoneType'>",
    );
}

#[test]
fn case_x_inherits_ns() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  structured_inherits: at::Foo
"###,
        Some(1),
        "namespace is not supported in structured inherits, using the same namespace as the native function",
    );
}

#[test]
fn case_x_inplace_view1() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  tags: inplace_view
  dispatch:
    CPU: foo
"###,
        Some(1),
        "foo is marked with tag: inplace_view, but it doesn't follow the naming convention for inplace ops - the codegen expects the base name to have a trailing underscore.",
    );
}

#[test]
fn case_x_inplace_view2() {
    fails(
        r###"- func: myview_(Tensor(a!) self) -> Tensor(a!)
  tags: inplace_view
  dispatch:
    CPU: foo
"###,
        Some(1),
        "myview_ is marked with tag: inplace_view. The codegen expects there to be a corresponding out-of-place view op with the name 'myview_' and matching schema, but it didn't find one.",
    );
}

#[test]
fn case_x_kns() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  dispatch:
    CPU: a::b::c::d::foo
"###,
        Some(1),
        "Codegen doesn't support more than 3 level(s) of custom namespace. Got a::b::c::d.",
    );
}

#[test]
fn case_x_leftover_many() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  zz: [1, 'a', True, ~, 1.5]
  yy: {q: 2}
"###,
        Some(1),
        "leftover entries: {'zz': [1, 'a', True, None, 1.5], 'yy': {'q': 2, '__line__': 3}}",
    );
}

#[test]
fn case_x_missed() {
    fails(
        r###"- variants: function
  dispatch:
    CPU: a
"###,
        Some(1),
        "Missed 'func' in {'variants': 'function', 'dispatch': {'CPU': 'a', '__line__': 3}, '__line__': 1}",
    );
}

#[test]
fn case_x_multi_dtype_cpu() {
    fails(
        r###"- func: binop.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  ufunc_inner_loop:
    CPUVector: binop (Float)
    ScalarOnly: binop (Bool)
- func: binop(Tensor self, Tensor other) -> Tensor
  structured_delegate: binop.out
"###,
        Some(1),
        "Float, dict_keys([<UfuncKey.CPUVector: 5>])",
    );
}

#[test]
fn case_x_mutable_nofunc() {
    generates(
        r###"- func: foo_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: foo
- func: foo(Tensor self, Tensor(b!) buf) -> Tensor
  dispatch:
    CPU: foo
"###,
        &[],
    );
}

#[test]
fn case_x_no_out_variant() {
    fails(
        r###"- func: foo(Tensor self) -> int
  dispatch:
    CPU: foo
"###,
        Some(1),
        "Found an operator that we could not generate an out= variant for: foo(Tensor self) -> int.\nThis type of operators don't have tensor-like return, making it difficult to generate a proper out= variant. If\nout= variant is not needed, please add the function name into FUNCTIONAL_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT list.",
    );
}

#[test]
fn case_x_nofunc() {
    fails(
        r###"- variants: function
"###,
        Some(1),
        "Missed 'func' in {'variants': 'function', '__line__': 1}",
    );
}

#[test]
fn case_x_notdict() {
    fails(
        r###"- foo
"###,
        Some(1),
        "Expected to be dict: foo",
    );
}

#[test]
fn case_x_notlist() {
    fails(
        r###"func: foo
"###,
        Some(1),
        "Expected 'es' to be a list, but got <class 'dict'>",
    );
}

#[test]
fn case_x_notstr() {
    fails(
        r###"- func: 1
"###,
        Some(1),
        "not a str: 1",
    );
}

#[test]
fn case_x_ns() {
    generates(
        r###"- func: custom::foo(Tensor self) -> Tensor
  dispatch:
    CPU: foo
"###,
        &[],
    );
}

#[test]
fn case_x_ns2() {
    fails(
        r###"- func: a::b::foo(Tensor self) -> Tensor
"###,
        Some(1),
        "Codegen doesn't support more than 1 level(s) of custom namespace. Got a::b.",
    );
}

#[test]
fn case_x_ns_per_op() {
    fails(
        r###"- func: op_2() -> bool
  dispatch:
    CPU: kernel_2
    QuantizedCPU: custom::kernel_3
"###,
        Some(1),
        "Found an operator that we could not generate an out= variant for: op_2() -> bool.\nThis type of operators don't have tensor-like return, making it difficult to generate a proper out= variant. If\nout= variant is not needed, please add the function name into FUNCTIONAL_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT list.",
    );
}

#[test]
fn case_x_nullfunc() {
    fails(
        r###"- func: ~
  variants: method
"###,
        Some(1),
        "Missed 'func' in {'func': None, 'variants': 'method', '__line__': 1}",
    );
}

#[test]
fn case_x_precomp_bad() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  precomputed:
  - dim -> int dim,int x
"###,
        Some(1),
        "r.to_list() != src: ['dim -> int dim, int x'] != ['dim -> int dim,int x']",
    );
}

#[test]
fn case_x_precomp_bad2() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  precomputed:
  - int X
"###,
        Some(1),
        "precomputed argument name must not be all uppercase: X",
    );
}

#[test]
fn case_x_precomp_bad3() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  precomputed:
  - int x
  - dim -> int dim
"###,
        Some(1),
        "precomputed parameters without replacement are allowed only in the last line, got: int x",
    );
}

#[test]
fn case_x_precomp_bad4() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  precomputed:
  - d m -> int dim
"###,
        Some(1),
        "illegal kernel param name 'd m' in precomputed parameters",
    );
}

#[test]
fn case_x_precomp_str() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  precomputed: dim
"###,
        Some(1),
        "precomputed must be a list, got <class 'str'>",
    );
}

#[test]
fn case_x_pymod() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  python_module: nn
  variants: method
"###,
        Some(1),
        "functions in modules cannot be methods",
    );
}

#[test]
fn case_x_struct_cia() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  structured_delegate: foo.out
- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CompositeImplicitAutograd: foo_out
"###,
        Some(3),
        "unnecessary dispatch table for this function; just delete the dispatch key entirely",
    );
}

#[test]
fn case_x_struct_guard() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  device_guard: False
"###,
        Some(1),
        "device_guard: False is not respected by structured kernels",
    );
}

#[test]
fn case_x_struct_mismatch() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  dispatch:
    CPU: foo
- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU: foo_out
"###,
        Some(1),
        "NativeFunctionsGroup constructed from structured and unstructured functions: foo.out and foo",
    );
}

#[test]
fn case_x_tags_notlist() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  tags: {a: 1}
"###,
        Some(1),
        "tags is not a list: {'a': 1, '__line__': 2}",
    );
}

#[test]
fn case_x_ufunc_bad() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  ufunc_inner_loop: [1]
"###,
        Some(1),
        "ufunc_inner_loop not str or dict: [1]",
    );
}

#[test]
fn case_x_ufunc_dt() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  ufunc_inner_loop:
    Generic: foo (Boool)
"###,
        Some(1),
        "unknown dtype Boool",
    );
}

#[test]
fn case_x_ufunc_key() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  ufunc_inner_loop:
    Bogus: foo (Bool)
"###,
        Some(1),
        "unknown ufunc key Bogus",
    );
}

#[test]
fn case_x_ufunc_nonout() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  structured: True
  ufunc_inner_loop:
    Generic: foo (Bool)
"###,
        Some(1),
        "ufunc.kernel_name should only be invoked on out schemas",
    );
}

#[test]
fn case_x_ufunc_paren() {
    fails(
        r###"- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  ufunc_inner_loop:
    Generic: foo Bool
"###,
        Some(1),
        "expected '(' at start of supported_dtypes, got: Bool",
    );
}

#[test]
fn case_x_variants_ns() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  variants: 1
"###,
        Some(1),
        "variants is not a str: 1",
    );
}

#[test]
fn case_x_view_cia_mismatch() {
    fails(
        r###"- func: v(Tensor(a) self) -> Tensor(a)
- func: v_(Tensor(a!) self) -> Tensor(a!)
  tags: inplace_view
  dispatch:
    CPU: v_
"###,
        Some(2),
        "v and v_ must either both have CompositeImplicitAutograd kernels, or both not have composite kernels.",
    );
}

#[test]
fn case_x_view_dupkind() {
    fails(
        r###"- func: foo(Tensor self) -> Tensor
  dispatch:
    CPU: foo
- func: foo_copy(Tensor self) -> Tensor
  dispatch:
    CPU: foo
"###,
        Some(4),
        "Duplicate schema kind SchemaKind.functional in dict_keys([<SchemaKind.functional: 1>])",
    );
}

#[test]
fn case_x_view_inplace_notag() {
    fails(
        r###"- func: foo_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: foo
- func: bar(Tensor(a -> *) self) -> Tensor
  dispatch:
    CPU: foo
"###,
        Some(4),
        "bar appears to be a new operator that aliases its inputs. The codegen expects you to add a corresponding operator to native_functions.yaml: bar_copy. See Note [view_copy NativeFunctions] for details.",
    );
}

#[test]
fn case_y_delegate_badname() {
    fails(
        r###"- func: sfoo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU: sfoo_out
- func: sfoo(Tensor self) -> Tensor
  structured_delegate: sfoo.out
- func: sfoo_(Tensor(a!) self) -> Tensor(a!)
  structured_delegate: sfoo.out
- func: sfoo.other(Tensor self) -> Tensor
  structured_delegate: sfoo.out
"###,
        Some(9),
        "Duplicate schema kind SchemaKind.functional for sfoo.other(Tensor self) -> Tensor",
    );
}

#[test]
fn case_y_dunder() {
    fails(
        r###"- func: __ibar__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
  variants: method
  dispatch:
    CPU: ibar
  autogen: __bar__.Tensor, __bar__.Tensor_out
"###,
        Some(1),
        "unexpected dunder method starting with 'i': __ibar__",
    );
}

#[test]
fn case_y_foreach() {
    generates(
        r###"- func: _foreach_bar_(Tensor(a!)[] self) -> ()
  device_check: NoCheck
  dispatch:
    CPU: bar_
  autogen: _foreach_bar, _foreach_bar.out
"###,
        &[
            "_foreach_bar.out(Tensor[] self, *, Tensor(a!)[] out) -> ()",
            "_foreach_bar(Tensor[] self) -> Tensor[] self_out",
        ],
    );
}

#[test]
fn case_y_listout() {
    generates(
        r###"- func: split_foo(Tensor self, int n) -> Tensor[]
  dispatch:
    CompositeExplicitAutograd: split_foo
  autogen: split_foo.out
"###,
        &["split_foo.out(Tensor self, int n, *, Tensor(a!)[] out) -> ()"],
    );
}

#[test]
fn case_y_mixed_ret() {
    fails(
        r###"- func: mixed(Tensor self) -> (Tensor, int)
  dispatch:
    CPU: mixed
  autogen: mixed.out
"###,
        Some(1),
        "Out arguments must have matching return Tensor; furthermore, the ith-argument needs to correspond to the ith return. arg.annotation=a!, ret.annotation=None",
    );
}

#[test]
fn case_y_mutable_ret() {
    generates(
        r###"- func: fq(Tensor self, Tensor(a!) running_min, Tensor(b!) running_max) -> (Tensor output, Tensor mask)
  dispatch:
    CPU: fq
  autogen: fq_functional, fq.out
"###,
        &[
            "fq.out(Tensor self, Tensor(a!) running_min, Tensor(b!) running_max, *, Tensor(c!) out0, Tensor(d!) out1) -> (Tensor(c!), Tensor(d!))",
            "fq_functional(Tensor self, Tensor running_min, Tensor running_max) -> (Tensor output, Tensor mask, Tensor running_min_out, Tensor running_max_out)",
        ],
    );
}

#[test]
fn case_y_rand_gen() {
    generates(
        r###"- func: my_rand.names(int n, *, Generator? generator=None, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
  tags: nondeterministic_seeded
  dispatch:
    CompositeExplicitAutograd: my_rand
  autogen: my_rand.names_out
"###,
        &["my_rand.names_out(int n, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)"],
    );
}

#[test]
fn case_y_structured_group() {
    generates(
        r###"- func: sfoo.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  precomputed:
  - dim -> int dim, bool keep
  - int extra
  dispatch:
    CPU, CUDA: sfoo_out
    SparseCPU: sfoo_sparse
- func: sfoo(Tensor self, int dim) -> Tensor
  structured_delegate: sfoo.out
  variants: function, method
- func: sfoo_(Tensor(a!) self, int dim) -> Tensor(a!)
  structured_delegate: sfoo.out
  variants: method
"###,
        &[],
    );
}

#[test]
fn case_y_valid_tags_empty_ok() {
    generates(
        r###"- func: foo(Tensor self) -> Tensor
"###,
        &[],
    );
}
