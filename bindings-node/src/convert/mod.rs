//! Data across the JavaScript edge: the one casing rule (camelCase in JavaScript, snake_case
//! in the core) and where it stops (the app's and the model's own data pass untouched).
//!
//! - [`shape`]: the one table: for each kind of object, where the binding's own keys are (and,
//!   for provider-neutral values, which keys hold data);
//! - [`keys`]: the rule for one key, and for a value of a given shape;
//! - [`neutral`]: the rule for provider-neutral values, renamed at every level but the data;
//! - [`camel_json`]: a value of a given shape written as JSON text with its keys renamed, on
//!   the hot path;
//! - [`rows`]: a batch's results as rows, the compact text `run` hands the JS layer;
//! - [`items`]: an array of the JS layer read item by item, so one unreadable item fails alone.

pub mod camel_json;
pub mod items;
pub mod keys;
pub mod neutral;
pub mod rows;
pub mod shape;
