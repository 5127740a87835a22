//! Meta functions of structured linalg operators.
