//! Sending the spans of `spans.rs` to an OpenTelemetry collector over OTLP/HTTP.
//!
//! [`export`] installs, once per process, the global `tracing` subscriber with
//! `tracing-opentelemetry`'s layer over an OTLP exporter (`opentelemetry-otlp`, protobuf or
//! JSON over HTTP, exported in batches from its own thread). A Rust app with a subscriber of
//! its own adds that layer to it instead. [`adopt`] makes a batch's span a child of the trace
//! a W3C `traceparent` names.

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

/// Where and how [`export`] sends spans.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtlpOptions {
    /// The collector's OTLP/HTTP address: `http://localhost:4318` (`/v1/traces` is added
    /// when the path does not end with it).
    pub endpoint: String,
    /// `http/protobuf` (the default) or `http/json`.
    #[serde(default)]
    pub protocol: Option<String>,
    /// The `service.name` of the spans; default `tooljig`.
    #[serde(default)]
    pub service_name: Option<String>,
    /// Headers every export carries (a collector's API key).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// Spans being exported; [`OtlpExport::flush`] sends what is buffered.
pub struct OtlpExport {
    provider: SdkTracerProvider,
}

impl OtlpExport {
    /// Sends every span ended so far, waiting until the collector has them.
    pub fn flush(&self) -> Result<(), String> {
        self.provider.force_flush().map_err(|e| e.to_string())
    }

    /// Flushes and stops exporting (spans after this are dropped).
    pub fn shutdown(&self) -> Result<(), String> {
        self.provider.shutdown().map_err(|e| e.to_string())
    }
}

/// Starts exporting tooljig's spans over OTLP; refused when the process already has a global
/// `tracing` subscriber (add `tracing_opentelemetry::layer()` to it instead).
pub fn export(options: &OtlpOptions) -> Result<OtlpExport, String> {
    let protocol = match options.protocol.as_deref().unwrap_or("http/protobuf") {
        "http/protobuf" => Protocol::HttpBinary,
        "http/json" => Protocol::HttpJson,
        other => {
            return Err(format!(
                "unknown OTLP protocol {other:?}: expected \"http/protobuf\" or \"http/json\""
            ));
        }
    };
    let mut endpoint = options.endpoint.trim_end_matches('/').to_string();
    if !endpoint.ends_with("/v1/traces") {
        endpoint.push_str("/v1/traces");
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .with_protocol(protocol)
        .with_headers(options.headers.clone().into_iter().collect())
        .build()
        .map_err(|e| format!("the OTLP exporter did not start: {e}"))?;
    let service = options
        .service_name
        .clone()
        .unwrap_or_else(|| "tooljig".into());
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name(service).build())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("tooljig"));
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::set_global_default(subscriber).map_err(|_| {
        "a tracing subscriber is already installed in this process; add \
         tracing_opentelemetry's layer to it instead"
            .to_string()
    })?;
    Ok(OtlpExport { provider })
}

/// Makes `span` a child of the trace `traceparent` names; a malformed one is ignored (the
/// batch starts a trace of its own).
pub(crate) fn adopt(span: &tracing::Span, traceparent: &str) {
    let carrier = HashMap::from([("traceparent".to_string(), traceparent.to_string())]);
    let parent = TraceContextPropagator::new().extract(&carrier);
    let _ = span.set_parent(parent);
}
