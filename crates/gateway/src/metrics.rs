//! Prometheus metrics, hand-rolled over atomics.
//!
//! Why not a metrics crate: every series here has a label set known at compile time, so fixed
//! arrays of atomics do the job with no lock, no map lookup and no allocation on the request
//! path (the gateway's CPU budget is a tenth of a millisecond per request), and the text
//! exposition format is a few lines to write. Nothing secret can reach a label: labels are
//! status codes, `true`/`false`, and the fixed error kinds of `ProviderError::kind`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Statuses with their own series; anything else is counted as `other`.
const STATUSES: [u16; 14] = [
    200, 400, 401, 403, 404, 405, 408, 413, 429, 431, 500, 502, 503, 504,
];
const STATUS_SLOTS: usize = STATUSES.len() + 1;

/// Whether a request streamed; `unknown` for requests refused before their body was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamLabel {
    No = 0,
    Yes = 1,
    Unknown = 2,
}

const STREAM_LABELS: [&str; 3] = ["false", "true", "unknown"];

/// The kinds of `ProviderError::kind`.
const UPSTREAM_KINDS: [&str; 9] = [
    "auth",
    "not_found",
    "rate_limited",
    "upstream",
    "timeout",
    "connect",
    "bad_response",
    "config",
    "cancelled",
];

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 15] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0, 300.0,
];

#[derive(Default)]
struct Histogram {
    /// Per bucket (not cumulative), plus one for `+Inf`.
    counts: [AtomicU64; BUCKETS.len() + 1],
    sum_micros: AtomicU64,
}

impl Histogram {
    fn observe(&self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        let slot = BUCKETS
            .iter()
            .position(|&b| secs <= b)
            .unwrap_or(BUCKETS.len());
        self.counts[slot].fetch_add(1, Relaxed);
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Relaxed);
    }
}

/// The gateway's counters.
#[derive(Default)]
pub struct Metrics {
    requests: [[AtomicU64; STATUS_SLOTS]; 3],
    durations: [Histogram; 2],
    upstream_errors: [AtomicU64; UPSTREAM_KINDS.len() + 1],
    tool_calls: AtomicU64,
    /// Malformed, truncated.
    malformed: [AtomicU64; 2],
    fallbacks: AtomicU64,
    retries: AtomicU64,
}

impl Metrics {
    pub(crate) fn request(&self, status: u16, stream: StreamLabel) {
        let slot = STATUSES
            .iter()
            .position(|&s| s == status)
            .unwrap_or(STATUSES.len());
        self.requests[stream as usize][slot].fetch_add(1, Relaxed);
    }

    /// A chat completion's time from its arrival to its last byte.
    pub(crate) fn duration(&self, stream: bool, elapsed: Duration) {
        self.durations[usize::from(stream)].observe(elapsed);
    }

    pub(crate) fn upstream_error(&self, kind: &str) {
        let slot = UPSTREAM_KINDS
            .iter()
            .position(|&k| k == kind)
            .unwrap_or(UPSTREAM_KINDS.len());
        self.upstream_errors[slot].fetch_add(1, Relaxed);
    }

    pub(crate) fn tool_calls(&self, n: usize) {
        if n > 0 {
            self.tool_calls.fetch_add(n as u64, Relaxed);
        }
    }

    /// A call that did not parse; `truncated` when the token limit cut it off.
    pub(crate) fn malformed(&self, truncated: bool) {
        self.malformed[usize::from(truncated)].fetch_add(1, Relaxed);
    }

    pub(crate) fn fallback(&self) {
        self.fallbacks.fetch_add(1, Relaxed);
    }

    pub(crate) fn malformed_retry(&self) {
        self.retries.fetch_add(1, Relaxed);
    }

    /// The Prometheus text exposition (version 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        // Writing to a String cannot fail.
        let _ = self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) -> std::fmt::Result {
        writeln!(
            out,
            "# HELP toolbridge_requests_total Chat completion requests by HTTP status and streaming."
        )?;
        writeln!(out, "# TYPE toolbridge_requests_total counter")?;
        for (s, per_status) in self.requests.iter().enumerate() {
            for (i, count) in per_status.iter().enumerate() {
                let n = count.load(Relaxed);
                if n == 0 {
                    continue;
                }
                let status = STATUSES
                    .get(i)
                    .map_or_else(|| "other".to_owned(), u16::to_string);
                writeln!(
                    out,
                    "toolbridge_requests_total{{status=\"{status}\",stream=\"{}\"}} {n}",
                    STREAM_LABELS[s]
                )?;
            }
        }

        writeln!(
            out,
            "# HELP toolbridge_request_duration_seconds Chat completion time from arrival to the last byte."
        )?;
        writeln!(out, "# TYPE toolbridge_request_duration_seconds histogram")?;
        for (s, h) in self.durations.iter().enumerate() {
            let stream = STREAM_LABELS[s];
            let mut cumulative = 0u64;
            for (i, bound) in BUCKETS.iter().enumerate() {
                cumulative += h.counts[i].load(Relaxed);
                writeln!(
                    out,
                    "toolbridge_request_duration_seconds_bucket{{stream=\"{stream}\",le=\"{bound}\"}} {cumulative}"
                )?;
            }
            cumulative += h.counts[BUCKETS.len()].load(Relaxed);
            writeln!(
                out,
                "toolbridge_request_duration_seconds_bucket{{stream=\"{stream}\",le=\"+Inf\"}} {cumulative}"
            )?;
            let sum = h.sum_micros.load(Relaxed) as f64 / 1e6;
            writeln!(
                out,
                "toolbridge_request_duration_seconds_sum{{stream=\"{stream}\"}} {sum}"
            )?;
            writeln!(
                out,
                "toolbridge_request_duration_seconds_count{{stream=\"{stream}\"}} {cumulative}"
            )?;
        }

        writeln!(
            out,
            "# HELP toolbridge_upstream_errors_total Failed upstream calls by error kind."
        )?;
        writeln!(out, "# TYPE toolbridge_upstream_errors_total counter")?;
        for (i, count) in self.upstream_errors.iter().enumerate() {
            let kind = UPSTREAM_KINDS.get(i).copied().unwrap_or("other");
            writeln!(
                out,
                "toolbridge_upstream_errors_total{{kind=\"{kind}\"}} {}",
                count.load(Relaxed)
            )?;
        }

        let simple: [(&str, &str, u64); 3] = [
            (
                "toolbridge_tool_calls_total",
                "Tool calls handed to clients.",
                self.tool_calls.load(Relaxed),
            ),
            (
                "toolbridge_fallbacks_total",
                "Responses answered by a fallback arm (not the model's first).",
                self.fallbacks.load(Relaxed),
            ),
            (
                "toolbridge_malformed_retries_total",
                "Upstream requests re-asked after a malformed tool call.",
                self.retries.load(Relaxed),
            ),
        ];
        for (name, help, value) in simple {
            writeln!(out, "# HELP {name} {help}")?;
            writeln!(out, "# TYPE {name} counter")?;
            writeln!(out, "{name} {value}")?;
        }

        writeln!(
            out,
            "# HELP toolbridge_malformed_calls_total Tool calls in model text that did not parse."
        )?;
        writeln!(out, "# TYPE toolbridge_malformed_calls_total counter")?;
        for (i, kind) in ["malformed", "truncated"].iter().enumerate() {
            writeln!(
                out,
                "toolbridge_malformed_calls_total{{kind=\"{kind}\"}} {}",
                self.malformed[i].load(Relaxed)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn renders_every_series() {
        let m = Metrics::default();
        m.request(200, StreamLabel::Yes);
        m.request(418, StreamLabel::Unknown);
        m.duration(true, Duration::from_millis(3));
        m.upstream_error("timeout");
        m.tool_calls(2);
        m.malformed(false);
        m.fallback();
        let text = m.render();
        for line in [
            "toolbridge_requests_total{status=\"200\",stream=\"true\"} 1",
            "toolbridge_requests_total{status=\"other\",stream=\"unknown\"} 1",
            "toolbridge_request_duration_seconds_bucket{stream=\"true\",le=\"0.005\"} 1",
            "toolbridge_request_duration_seconds_bucket{stream=\"true\",le=\"0.001\"} 0",
            "toolbridge_request_duration_seconds_count{stream=\"true\"} 1",
            "toolbridge_upstream_errors_total{kind=\"timeout\"} 1",
            "toolbridge_tool_calls_total 2",
            "toolbridge_malformed_calls_total{kind=\"malformed\"} 1",
            "toolbridge_fallbacks_total 1",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }
}
