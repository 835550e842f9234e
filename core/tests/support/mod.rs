//! Helpers shared by the integration tests. Each test crate includes what it needs with
//! `mod support;`.

pub mod conformance;
