//! The library half of the `switchyard` command: turning text into boxed operator arguments
//! by schema (call by name). The command-line tool uses it, and so do tests that call every
//! operator generically (the external-backend tests run the whole operator set that way).
//!
//! The implementation lives in `switchyard-call`, which the Python module shares; this crate
//! re-exports it under its old path.

pub use switchyard_call::args;
