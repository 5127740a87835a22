"""One-off bootstrap of crates/ops/ops.yaml from PyTorch 2.15's native_functions.yaml.

Schemas, overload names and the structure of each operator family (structured groups,
delegates, autogen lines, composite keys) are PyTorch's: they are the compatibility
contract. Only the dispatch keys switchyard has (CPU, Meta, the composite alias keys) are
kept; kernel names are the names of the Rust functions implementing them. After this
bootstrap ops.yaml is maintained by hand; this script documents where it came from.

    python tools/bootstrap/select_ops.py path/to/native_functions.yaml > crates/ops/ops.yaml
"""
import sys, yaml

BASES = set("""empty empty_strided zeros ones full empty_like zeros_like ones_like full_like rand_like randn_like
arange linspace eye rand randn randint normal normal_functional uniform bernoulli
add sub mul div remainder fmod pow maximum minimum atan2 eq ne lt le gt ge logical_and logical_or logical_xor
bitwise_and bitwise_or bitwise_xor where
neg abs exp log log2 log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid relu gelu silu erf floor ceil round trunc sign
reciprocal logical_not bitwise_not clamp clamp_min clamp_max nan_to_num isnan isinf isfinite
sum mean prod max min amax amin argmax argmin all any var std var_mean linalg_vector_norm logsumexp cumsum cumprod
softmax _softmax log_softmax _log_softmax
mm bmm addmm matmul linear dot baddbmm
view reshape _unsafe_view transpose t permute expand squeeze unsqueeze slice select narrow unfold diagonal as_strided
split split_with_sizes chunk unbind flatten movedim alias detach contiguous clone copy _to_copy to fill zero
cat stack index_select gather scatter scatter_add index index_put _index_put_impl masked_fill masked_select repeat
flip roll tril triu constant_pad_nd embedding one_hot sort topk
nll_loss nll_loss_forward nll_loss_nd cross_entropy_loss mse_loss native_layer_norm layer_norm native_dropout dropout
conv2d convolution max_pool2d max_pool2d_with_indices avg_pool2d
_copy_from _copy_from_and_resize _to_cpu resize expand_as view_as reshape_as""".split())
VIEW_COMPANIONS = {"select", "slice", "diagonal", "as_strided"}
# Overloads the issue does not ask for (or whose types switchyard's IValue lacks).
DROP = {
    "bmm.dtype", "bmm.dtype_out", "baddbmm.dtype", "baddbmm.dtype_out", "addmm.dtype", "addmm.dtype_out",
    "mm.dtype", "mm.dtype_out", "conv2d.padding", "linspace.Tensor_Tensor", "linspace.Tensor_Scalar",
    "linspace.Scalar_Tensor", "linspace.Tensor_Tensor_out", "linspace.Tensor_Scalar_out",
    "linspace.Scalar_Tensor_out", "where", "narrow.Tensor",
}
DROP_BASES = {"index_copy", "narrow_copy", "set", "random"}
KEEP_KEYS = ["CPU", "Meta", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
             "CompositeExplicitAutogradNonFunctional"]
FIELDS = ["func", "variants", "structured", "structured_delegate", "structured_inherits", "precomputed",
          "autogen", "device_check", "device_guard", "manual_cpp_binding", "python_module",
          "category_override", "cpp_no_default_args", "tags"]

def name_parts(func):
    name = func.split("(")[0]
    base, _, overload = name.partition(".")
    return base, overload

def wanted(e):
    base, overload = name_parts(e["func"])
    core = base.rstrip("_")
    full = core + ("." + overload if overload else "")
    if core in DROP_BASES or full in DROP or "names" in overload or overload.startswith("Tensor_float") \
            or overload.startswith("float_") or (core == "normal" and not base.endswith("_")):
        return False
    return core in BASES or (core.endswith("_copy") and core[:-5] in BASES) \
        or (core.endswith("_scatter") and core[:-8] in VIEW_COMPANIONS)

def quote(v):
    s = str(v)
    if s in ("True", "False") or isinstance(v, bool):
        return "True" if v else "False"
    needs = any(c in s for c in ":#{}[]&*!|>'\"%@`") or s != s.strip()
    return '"' + s.replace('"', '\\"') + '"' if needs else s

# Which crate implements a dispatch key's kernels: Rust has no overloading, so kernel names
# must be unique within a crate.
CRATE_OF_KEY = {"CPU": "cpu", "Meta": "ops", "CompositeImplicitAutograd": "ops",
                "CompositeExplicitAutograd": "ops", "CompositeExplicitAutogradNonFunctional": "ops"}

def rename_kernels(entries):
    """Drops PyTorch's `_symint` naming convention (all sizes are i64 here) and gives kernels
    that C++ resolves by overloading distinct names: `<kernel>_<overload>`."""
    users = {}
    for e in entries:
        for k, v in (e.get("dispatch") or {}).items():
            e["dispatch"][k] = v = v.replace("_symint", "")
            for key in (x.strip() for x in k.split(",")):
                if key in CRATE_OF_KEY:
                    users.setdefault((CRATE_OF_KEY[key], v), set()).add(e["func"])
    clashing = {name for (crate, name), funcs in users.items() if len(funcs) > 1}
    for e in entries:
        overload = name_parts(e["func"])[1].lower()
        table = e.get("dispatch") or {}
        # A CompositeImplicitAutograd-only table must use the default name (torchgen rule);
        # the generator disambiguates those kernels by overload instead.
        if list(table) == ["CompositeImplicitAutograd"]:
            continue
        for k, v in list(table.items()):
            if v in clashing and overload:
                e["dispatch"][k] = v + "_" + overload

def main(path):
    entries = [e for e in yaml.safe_load(open(path)) if wanted(e)]
    rename_kernels(entries)
    out = ["# switchyard's operators, in PyTorch's native_functions.yaml format (torchgen's keys and",
           "# rules). Schemas are PyTorch 2.15's, character for character. Regenerate the Rust code after",
           "# editing: `cargo run -p switchyard-codegen -- generate` (see ARCHITECTURE.md).", ""]
    for e in entries:
        d = e.get("dispatch") or {}
        kept = {}
        for k, v in d.items():
            keys = [x.strip() for x in k.split(",") if x.strip() in KEEP_KEYS]
            if keys:
                kept[", ".join(keys)] = v
        base = name_parts(e["func"])[0]
        if list(kept) == ["CompositeImplicitAutograd"] and kept["CompositeImplicitAutograd"] in (base, base + "_out"):
            kept = {}  # the implicit composite kernel; an explicit table would be redundant
        if "ufunc_inner_loop" in e:
            kept.setdefault("CPU", name_parts(e["func"])[0] + "_out")
        out.append("- func: " + e["func"])
        for f in FIELDS[1:]:
            if f not in e:
                continue
            v = e[f]
            if isinstance(v, list) and f != "precomputed":
                out.append(f"  {f}: [" + ", ".join(v) + "]")
            elif f == "precomputed":
                out.append("  precomputed:")
                out.extend("  - " + quote(x) for x in v)
            else:
                out.append(f"  {f}: {quote(v)}")
        if kept:
            out.append("  dispatch:")
            out.extend(f"    {k}: {v}" for k, v in kept.items())
        out.append("")
    print("\n".join(out))

main(sys.argv[1])
