//! Dispatch keys as `native_functions.yaml` sees them: which names torchgen knows, which keys an
//! entry may use, and the per-key kernel metadata.

use std::fmt;

use switchyard_core::DispatchKey;

use crate::pyrepr::str_repr;

/// The members of torchgen's `DispatchKey` enum, in declaration order; a member's enum value is
/// its index here. (torchgen also accepts `CatchAll`, an alias of `Undefined`.) This list is
/// smaller than c10's, and torchgen's "unknown dispatch key" error is about this list.
const TORCHGEN_KEYS: [&str; 140] = [
    "Undefined",
    "FPGA",
    "MAIA",
    "Vulkan",
    "Metal",
    "MKLDNN",
    "OpenGL",
    "OpenCL",
    "IDEEP",
    "CustomRNGKeyId",
    "MkldnnCPU",
    "Sparse",
    "SparseCsr",
    "NestedTensor",
    "Dense",
    "PythonTLSSnapshot",
    "PreDispatch",
    "PythonDispatcher",
    "Python",
    "FuncTorchDynamicLayerBackMode",
    "ZeroTensor",
    "Conjugate",
    "Negative",
    "BackendSelect",
    "Named",
    "AutogradOther",
    "AutogradFunctionality",
    "AutogradNestedTensor",
    "Tracer",
    "Autocast",
    "AutocastCPU",
    "AutocastCUDA",
    "AutocastXPU",
    "Batched",
    "VmapMode",
    "FuncTorchGradWrapper",
    "FuncTorchBatched",
    "BatchedNestedTensor",
    "FuncTorchVmapMode",
    "FuncTorchDynamicLayerFrontMode",
    "Functionalize",
    "TESTING_ONLY_GenericWrapper",
    "TESTING_ONLY_GenericMode",
    "ADInplaceOrView",
    "Autograd",
    "CompositeImplicitAutograd",
    "CompositeImplicitAutogradNestedTensor",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "FuncTorchBatchedDecomposition",
    "CPU",
    "CUDA",
    "HIP",
    "XLA",
    "MTIA",
    "MPS",
    "IPU",
    "XPU",
    "HPU",
    "VE",
    "Lazy",
    "Meta",
    "PrivateUse1",
    "PrivateUse2",
    "PrivateUse3",
    "QuantizedCPU",
    "QuantizedCUDA",
    "QuantizedHIP",
    "QuantizedXLA",
    "QuantizedMTIA",
    "QuantizedMPS",
    "QuantizedIPU",
    "QuantizedXPU",
    "QuantizedHPU",
    "QuantizedVE",
    "QuantizedLazy",
    "QuantizedMeta",
    "QuantizedPrivateUse1",
    "QuantizedPrivateUse2",
    "QuantizedPrivateUse3",
    "SparseCPU",
    "SparseCUDA",
    "SparseHIP",
    "SparseXLA",
    "SparseMTIA",
    "SparseMPS",
    "SparseIPU",
    "SparseXPU",
    "SparseHPU",
    "SparseVE",
    "SparseLazy",
    "SparseMeta",
    "SparsePrivateUse1",
    "SparsePrivateUse2",
    "SparsePrivateUse3",
    "SparseCsrCPU",
    "SparseCsrCUDA",
    "SparseCsrHIP",
    "SparseCsrXLA",
    "SparseCsrMTIA",
    "SparseCsrMPS",
    "SparseCsrIPU",
    "SparseCsrXPU",
    "SparseCsrHPU",
    "SparseCsrVE",
    "SparseCsrLazy",
    "SparseCsrMeta",
    "SparseCsrPrivateUse1",
    "SparseCsrPrivateUse2",
    "SparseCsrPrivateUse3",
    "NestedTensorCPU",
    "NestedTensorCUDA",
    "NestedTensorHIP",
    "NestedTensorXLA",
    "NestedTensorMTIA",
    "NestedTensorMPS",
    "NestedTensorIPU",
    "NestedTensorXPU",
    "NestedTensorHPU",
    "NestedTensorVE",
    "NestedTensorLazy",
    "NestedTensorMeta",
    "NestedTensorPrivateUse1",
    "NestedTensorPrivateUse2",
    "NestedTensorPrivateUse3",
    "AutogradCPU",
    "AutogradCUDA",
    "AutogradHIP",
    "AutogradXLA",
    "AutogradMTIA",
    "AutogradMPS",
    "AutogradIPU",
    "AutogradXPU",
    "AutogradHPU",
    "AutogradVE",
    "AutogradLazy",
    "AutogradMeta",
    "AutogradPrivateUse1",
    "AutogradPrivateUse2",
    "AutogradPrivateUse3",
];

/// The 30 keys a `native_functions.yaml` entry may name in `dispatch:` (torchgen's
/// `dispatch_keys`), in torchgen's order.
pub const SUPPORTED_DISPATCH_KEYS: [DispatchKey; 30] = [
    DispatchKey::CPU,
    DispatchKey::SparseCPU,
    DispatchKey::SparseCsrCPU,
    DispatchKey::MkldnnCPU,
    DispatchKey::CUDA,
    DispatchKey::MPS,
    DispatchKey::XPU,
    DispatchKey::SparseXPU,
    DispatchKey::SparseCsrXPU,
    DispatchKey::SparseCUDA,
    DispatchKey::SparseCsrCUDA,
    DispatchKey::SparseMPS,
    DispatchKey::SparseCsrMPS,
    DispatchKey::QuantizedCPU,
    DispatchKey::QuantizedCUDA,
    DispatchKey::CompositeImplicitAutograd,
    DispatchKey::CompositeImplicitAutogradNestedTensor,
    DispatchKey::CompositeExplicitAutograd,
    DispatchKey::CompositeExplicitAutogradNonFunctional,
    DispatchKey::NestedTensorCPU,
    DispatchKey::NestedTensorCUDA,
    DispatchKey::NestedTensorXPU,
    DispatchKey::NestedTensorHPU,
    DispatchKey::Meta,
    DispatchKey::SparseMeta,
    DispatchKey::SparseCsrMeta,
    DispatchKey::QuantizedMeta,
    DispatchKey::NestedTensorMeta,
    DispatchKey::ZeroTensor,
    DispatchKey::MTIA,
];

/// The keys whose kernels of a structured op are structured (meta + impl) rather than ordinary
/// wrappers.
pub const STRUCTURED_DISPATCH_KEYS: [DispatchKey; 5] = [
    DispatchKey::MPS,
    DispatchKey::CUDA,
    DispatchKey::CPU,
    DispatchKey::XPU,
    DispatchKey::MTIA,
];

/// The keys that get ufunc kernels (in the order we check and add them).
pub const UFUNC_DISPATCH_KEYS: [DispatchKey; 2] = [DispatchKey::CPU, DispatchKey::CUDA];

/// The keys `torchgen/gen.py` drops by default (without `--mps`, `--xpu`, `--mtia`).
pub const GEN_PY_DEFAULT_IGNORED_KEYS: [DispatchKey; 8] = [
    DispatchKey::MPS,
    DispatchKey::SparseMPS,
    DispatchKey::SparseCsrMPS,
    DispatchKey::XPU,
    DispatchKey::SparseXPU,
    DispatchKey::SparseCsrXPU,
    DispatchKey::NestedTensorXPU,
    DispatchKey::MTIA,
];

/// The default kernel namespace.
pub const DEFAULT_KERNEL_NAMESPACE: &str = "at::native";

/// Whether `key` is one of the four composite (alias) keys.
pub fn is_composite_key(key: DispatchKey) -> bool {
    matches!(
        key,
        DispatchKey::CompositeExplicitAutograd
            | DispatchKey::CompositeExplicitAutogradNonFunctional
            | DispatchKey::CompositeImplicitAutograd
            | DispatchKey::CompositeImplicitAutogradNestedTensor
    )
}

/// Whether a structured op's kernel at `key` is structured.
pub fn is_structured_dispatch_key(key: DispatchKey) -> bool {
    STRUCTURED_DISPATCH_KEYS.contains(&key)
}

/// A key name from a `dispatch:` table, as torchgen reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum YamlKey {
    /// A key switchyard knows.
    Known(DispatchKey),
    /// A member of torchgen's enum that c10 2.15 no longer has (`MKLDNN`, `Named`, ...), given
    /// by its torchgen name; never a supported key.
    TorchgenOnly(&'static str),
}

impl YamlKey {
    /// torchgen's printed name (`CatchAll` prints as `Undefined`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            YamlKey::Known(k) => k.name(),
            YamlKey::TorchgenOnly(n) => n,
        }
    }
}

/// Parses one key of a `dispatch:` table with torchgen's rules: the name must be a member of
/// torchgen's enum (`unknown dispatch key X` otherwise).
pub(crate) fn parse_yaml_key(name: &str) -> Result<YamlKey, String> {
    let canonical = if name == "CatchAll" {
        "Undefined"
    } else {
        name
    };
    let Some(&member) = TORCHGEN_KEYS.iter().find(|k| **k == canonical) else {
        return Err(format!("unknown dispatch key {name}"));
    };
    Ok(match DispatchKey::parse(member) {
        Ok(k) if k.name() == member => YamlKey::Known(k),
        _ => YamlKey::TorchgenOnly(member),
    })
}

/// Python's `repr` of a torchgen `DispatchKey` member (`<DispatchKey.CPU: 50>`).
pub(crate) fn torchgen_key_repr(key: DispatchKey) -> String {
    let value = TORCHGEN_KEYS
        .iter()
        .position(|k| *k == key.name())
        .unwrap_or(0);
    format!("<DispatchKey.{}: {value}>", key.name())
}

/// torchgen's enum value of `key` (for ordering keys as Python prints them).
pub(crate) fn torchgen_key_value(key: DispatchKey) -> usize {
    TORCHGEN_KEYS
        .iter()
        .position(|k| *k == key.name())
        .unwrap_or(usize::MAX)
}

/// What a `dispatch:` entry says about one operator's kernel for one key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BackendMetadata {
    /// The kernel's name without its namespace (`add_out`).
    pub kernel: String,
    /// Whether the kernel is structured (the op is structured and the key is one of
    /// [`STRUCTURED_DISPATCH_KEYS`]).
    pub structured: bool,
    /// The C++ namespace of the kernel: `<written namespace>::native`, default `at::native`.
    pub cpp_namespace: String,
}

impl BackendMetadata {
    /// Whether the kernel takes SymInts (its name contains `_symint`).
    pub fn supports_symint(&self) -> bool {
        self.kernel.contains("_symint")
    }
}

/// Python's dataclass `repr`, which torchgen prints in some messages.
impl fmt::Display for BackendMetadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "BackendMetadata(kernel={}, structured={}, cpp_namespace={})",
            str_repr(&self.kernel),
            if self.structured { "True" } else { "False" },
            str_repr(&self.cpp_namespace)
        )
    }
}

/// Splits `a::b::name` into its namespace (`a::b`, empty when absent) and `name`, allowing at most
/// `max_level` namespace levels (torchgen's `NamespaceHelper`).
pub(crate) fn split_namespace(text: &str, max_level: usize) -> Result<(&str, &str), String> {
    let (namespace, entity) = match text.rfind("::") {
        Some(i) => (&text[..i], &text[i + 2..]),
        None => ("", text),
    };
    let levels = namespace.split("::").count();
    if levels > max_level {
        return Err(format!(
            "Codegen doesn't support more than {max_level} level(s) of custom namespace. Got {namespace}."
        ));
    }
    Ok((namespace, entity))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_keys_parse() {
        for key in SUPPORTED_DISPATCH_KEYS {
            assert_eq!(parse_yaml_key(key.name()), Ok(YamlKey::Known(key)));
        }
        assert_eq!(
            parse_yaml_key("Bogus"),
            Err("unknown dispatch key Bogus".to_owned())
        );
        assert_eq!(
            parse_yaml_key("CPUTensorId"),
            Err("unknown dispatch key CPUTensorId".to_owned())
        );
        assert_eq!(
            parse_yaml_key("MKLDNN"),
            Ok(YamlKey::TorchgenOnly("MKLDNN"))
        );
        assert_eq!(
            parse_yaml_key("CatchAll").map(YamlKey::name),
            Ok("Undefined")
        );
        assert_eq!(torchgen_key_repr(DispatchKey::CPU), "<DispatchKey.CPU: 50>");
    }

    #[test]
    fn namespaces() {
        assert_eq!(split_namespace("foo", 3), Ok(("", "foo")));
        assert_eq!(split_namespace("a::b::foo", 3), Ok(("a::b", "foo")));
        assert_eq!(
            split_namespace("a::b::foo(", 1),
            Err(
                "Codegen doesn't support more than 1 level(s) of custom namespace. Got a::b."
                    .to_owned()
            )
        );
    }
}
