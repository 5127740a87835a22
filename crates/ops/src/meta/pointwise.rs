//! Meta functions of structured pointwise operators.
