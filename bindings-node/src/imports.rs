//! Importing tool definitions written for other systems (`importTools`): the core's
//! importers (`tooljig::import`), their specs handed back for `engine.registerSpec`.

use crate::convert::{keys, shape};
use crate::engine::{JsEngine, spec_value};
use napi::Status;
use napi_derive::napi;
use serde_json::Value;
use tooljig::import::openapi::OpenApiOptions;
use tooljig::import::{ImportOptions, import_tools as import};

/// Imports OpenAI function specs or BFCL docs (`definitions` as JSON text); `options` as
/// JSON text (`format`, `category`, `closeObjects`). Returns the specs as JSON text, with
/// camelCase keys as `engine.specs()` gives them.
#[napi]
pub fn import_tools(definitions: String, options: String) -> napi::Result<String> {
    let invalid = |what: &str, e: &dyn std::fmt::Display| {
        napi::Error::new(Status::InvalidArg, format!("invalid {what}: {e}"))
    };
    let defs: Value =
        serde_json::from_str(&definitions).map_err(|e| invalid("tool definitions", &e))?;
    let options: Value = serde_json::from_str(&options).map_err(|e| invalid("options", &e))?;
    let options: ImportOptions =
        serde_json::from_value(keys::from_js(options, shape::IMPORT_OPTIONS))
            .map_err(|e| invalid("options", &e))?;
    let specs = import(&defs, &options).map_err(|e| invalid("tool definitions", &e))?;
    let specs: Vec<Value> = specs.iter().map(spec_value).collect();
    serde_json::to_string(&specs).map_err(|e| invalid("tool definitions", &e))
}

#[napi]
impl JsEngine {
    /// Registers one tool per operation of an OpenAPI document (`doc`); `options` with
    /// camelCase keys (`baseUrl`, `prefix`, `include`, `credentials`, `headers`, `policy`).
    /// Returns the report (`registered`, `skipped`).
    #[napi]
    pub fn register_open_api(&self, doc: Value, options: Value) -> napi::Result<Value> {
        let invalid = |what: &str, e: &dyn std::fmt::Display| {
            napi::Error::new(Status::InvalidArg, format!("invalid {what}: {e}"))
        };
        let options: OpenApiOptions =
            serde_json::from_value(keys::from_js(options, shape::OPENAPI_OPTIONS))
                .map_err(|e| invalid("OpenAPI options", &e))?;
        let report = self
            .core()
            .register_openapi(&doc, &options)
            .map_err(|e| invalid("OpenAPI document", &e))?;
        serde_json::to_value(report).map_err(|e| invalid("OpenAPI report", &e))
    }
}
