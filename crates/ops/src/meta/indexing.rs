//! Meta functions of structured indexing operators.
