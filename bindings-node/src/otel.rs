//! `exportTraces`: the core's OTLP export of batch and call spans (`tooljig::otel`).

use crate::convert::keys;
use napi::Status;
use napi_derive::napi;
use serde_json::Value;
use tooljig::otel::{OtlpExport, OtlpOptions, export};

/// The options' own keys (`serviceName`); `headers` are data.
const OTLP_OPTIONS: crate::convert::shape::Shape = &[""];

/// Spans being exported to an OTLP collector.
#[napi]
pub struct TraceExport(OtlpExport);

#[napi]
impl TraceExport {
    /// Sends every span ended so far; blocks until the collector has them.
    #[napi]
    pub fn flush(&self) -> napi::Result<()> {
        self.0.flush().map_err(|e| {
            napi::Error::new(
                Status::GenericFailure,
                format!("the spans were not exported: {e}"),
            )
        })
    }

    /// Flushes and stops exporting.
    #[napi]
    pub fn shutdown(&self) -> napi::Result<()> {
        self.0.shutdown().map_err(|e| {
            napi::Error::new(
                Status::GenericFailure,
                format!("the export did not stop cleanly: {e}"),
            )
        })
    }
}

/// Starts exporting spans over OTLP: `{endpoint, protocol?, serviceName?, headers?}`.
#[napi]
pub fn export_traces(options: Value) -> napi::Result<TraceExport> {
    let options: OtlpOptions = serde_json::from_value(keys::from_js(options, OTLP_OPTIONS))
        .map_err(|e| {
            napi::Error::new(
                Status::InvalidArg,
                format!("invalid trace export options: {e}"),
            )
        })?;
    export(&options)
        .map(TraceExport)
        .map_err(|e| napi::Error::new(Status::InvalidArg, e))
}
