//! `[telemetry]`: optional OpenTelemetry export of the model-call and tool-execution spans.
//!
//! A section of its own, not under `[server]`: `run` and `chat` make the same spans as `serve`,
//! and one place configures all three. Off unless `otlp_endpoint` is set. Spans go out over
//! OTLP/HTTP with protobuf bodies (`{otlp_endpoint}/v1/traces`) from a batch processor on its
//! own thread; what is still queued is sent by [`shutdown`] when the command ends.
//!
//! Only toolbridge's spans are exported, never log events: events can carry raw model output
//! (malformed calls are logged with their text), and spans carry content only with
//! `capture_content = true` (see `toolbridge_providers::telemetry`).

use std::sync::OnceLock;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde::Deserialize;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::registry::Registry;
use tracing_subscriber::Layer;

/// `[telemetry]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP collector's base URL, e.g. `http://127.0.0.1:4318`; unset: no export.
    #[serde(default)]
    pub otlp_endpoint: Option<String>,
    /// The `service.name` resource attribute.
    #[serde(default = "default_service_name")]
    pub service_name: String,
    /// Put prompts, answers, tool arguments and tool results into the spans.
    #[serde(default)]
    pub capture_content: bool,
}

fn default_service_name() -> String {
    "toolbridge".to_owned()
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            otlp_endpoint: None,
            service_name: default_service_name(),
            capture_content: false,
        }
    }
}

/// The provider whose batch is flushed at the end.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// The traces URL of a base endpoint; `None` for one that is not an http(s) URL.
pub fn traces_url(endpoint: &str) -> Option<String> {
    let endpoint = endpoint.trim();
    let scheme_ok = endpoint.starts_with("http://") || endpoint.starts_with("https://");
    scheme_ok.then(|| format!("{}/v1/traces", endpoint.trim_end_matches('/')))
}

/// The exporting layer for `config`, or `None` when export is off (or cannot start: said on
/// standard error, and the command goes on without it).
pub fn layer(config: &TelemetryConfig) -> Option<Box<dyn Layer<Registry> + Send + Sync>> {
    let endpoint = config.otlp_endpoint.as_deref()?;
    let Some(url) = traces_url(endpoint) else {
        eprintln!(
            "toolbridge: warning: [telemetry] otlp_endpoint {endpoint:?} is not an http(s) URL; no traces are exported"
        );
        return None;
    };
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url)
        .build()
    {
        Ok(e) => e,
        Err(e) => {
            eprintln!("toolbridge: warning: [telemetry] cannot start the exporter: {e}");
            return None;
        }
    };
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(config.service_name.clone())
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("toolbridge");
    if PROVIDER.set(provider).is_err() {
        // A second set-up in one process keeps the first (as the log subscriber does).
        return None;
    }
    toolbridge_providers::telemetry::set_capture_content(config.capture_content);
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(filter_fn(|m| {
            m.is_span() && m.target().starts_with("toolbridge")
        }));
    Some(Box::new(layer))
}

/// Sends what is still queued and stops the exporter (at the end of a command).
pub fn shutdown() {
    if let Some(provider) = PROVIDER.get() {
        if let Err(e) = provider.shutdown() {
            eprintln!("toolbridge: warning: [telemetry] exporting the last spans: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::traces_url;

    #[test]
    fn the_traces_path_is_added_to_http_endpoints_only() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318/").as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        assert_eq!(traces_url("127.0.0.1:4318"), None);
    }
}
