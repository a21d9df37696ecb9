//! Logs of `run`, `chat`, `tools` and `skills`: `tracing` output on standard error (never
//! standard output, which carries the answer), switched on by `-v` (repeatable) or `RUST_LOG`.

use std::io::IsTerminal;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::Registry;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::telemetry::TelemetryConfig;

/// `-v/--verbose`, shared by the commands that run an agent.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct VerboseArgs {
    /// Log to standard error: -v info (model requests, tool calls, their durations), -vv debug
    /// (with MCP servers' stderr), -vvv trace. The level applies to toolbridge's own crates;
    /// other crates log warnings (everything at -vvv).
    /// RUST_LOG directives (e.g. RUST_LOG=toolbridge_mcp=trace) are added on top; without -v,
    /// RUST_LOG alone decides, and with neither nothing is logged.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// The filter for `verbose` and RUST_LOG's value; `None`: no logging at all.
pub fn directives(verbose: u8, rust_log: Option<&str>) -> Option<String> {
    let base = match verbose {
        0 => None,
        1 => Some("warn,toolbridge=info"),
        2 => Some("warn,toolbridge=debug"),
        _ => Some("trace"),
    };
    let rust_log = rust_log.map(str::trim).filter(|s| !s.is_empty());
    match (base, rust_log) {
        (None, None) => None,
        (Some(base), None) => Some(base.to_owned()),
        (None, Some(env)) => Some(env.to_owned()),
        (Some(base), Some(env)) => Some(format!("{base},{env}")),
    }
}

/// Installs the subscriber (once; a second call keeps the first) with the `[telemetry]` export
/// when configured. A RUST_LOG that does not parse is reported and its bad directives are left
/// out.
pub fn init(args: &VerboseArgs, telemetry: Option<&TelemetryConfig>) {
    let rust_log = std::env::var("RUST_LOG").ok();
    install(directives(args.verbose, rust_log.as_deref()), telemetry);
}

/// The subscriber: log lines on standard error filtered by `directives` (none: no log lines),
/// and the OpenTelemetry layer with its own filter (spans are exported whatever the log level).
pub fn install(directives: Option<String>, telemetry: Option<&TelemetryConfig>) {
    let mut layers: Vec<Box<dyn Layer<Registry> + Send + Sync>> = Vec::new();
    if let Some(directives) = directives {
        let filter = match EnvFilter::builder().parse(&directives) {
            Ok(filter) => filter,
            Err(e) => {
                eprintln!("toolbridge: warning: RUST_LOG: {e}; using what parses");
                EnvFilter::builder().parse_lossy(&directives)
            }
        };
        layers.push(Box::new(
            tracing_subscriber::fmt::layer()
                .with_ansi(std::io::stderr().is_terminal())
                .with_writer(std::io::stderr)
                .with_filter(filter),
        ));
    }
    if let Some(otel) = telemetry.and_then(crate::telemetry::layer) {
        layers.push(otel);
    }
    if layers.is_empty() {
        return;
    }
    let _ = tracing_subscriber::registry().with(layers).try_init();
}

#[cfg(test)]
mod tests {
    use super::directives;

    #[test]
    fn verbosity_and_rust_log_combine() {
        assert_eq!(directives(0, None), None);
        assert_eq!(directives(0, Some("  ")), None);
        assert_eq!(directives(0, Some("debug")).as_deref(), Some("debug"));
        assert_eq!(directives(1, None).as_deref(), Some("warn,toolbridge=info"));
        assert_eq!(
            directives(2, None).as_deref(),
            Some("warn,toolbridge=debug")
        );
        assert_eq!(directives(5, None).as_deref(), Some("trace"));
        assert_eq!(
            directives(1, Some("rmcp=debug")).as_deref(),
            Some("warn,toolbridge=info,rmcp=debug")
        );
    }
}
