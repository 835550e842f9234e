//! Data across the JavaScript edge: the one casing rule (camelCase in JavaScript, snake_case
//! in the core) and where it stops (the app's and the model's own data pass untouched).
//!
//! - [`keys`]: the rule for one key, and for the binding's own objects (their first level
//!   and the nested objects each call names);
//! - [`neutral`]: the rule for provider-neutral values, renamed at every level except under
//!   the keys of its one table of data-holding keys;
//! - [`camel_json`]: the rule applied while serializing results, on the hot path.

pub mod camel_json;
pub mod keys;
pub mod neutral;
