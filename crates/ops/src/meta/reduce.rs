//! Meta functions of structured reduce operators.
