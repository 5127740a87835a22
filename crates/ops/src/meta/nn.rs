//! Meta functions of structured nn operators.
