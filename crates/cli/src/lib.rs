//! The library half of the `switchyard` command: turning text into boxed operator arguments
//! by schema (call by name). The command-line tool uses it, and so do tests that call every
//! operator generically (the external-backend tests run the whole operator set that way).

pub mod args;
mod literal;
