//! The extension module `switchyard._C` built as an example (`target/debug/examples/libext.so`),
//! for `tools/test`: the `#[pymodule]` entry point `PyInit__C` is the library's, exported from
//! this cdylib as every C-level symbol of its dependencies is.

pub use switchyard_python::*;
