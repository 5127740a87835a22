//! Meta functions of structured factory operators.
