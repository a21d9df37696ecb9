//! HTTP plumbing shared by the HTTP clients: deadlines, retries with backoff, error mapping, and a
//! body reader that enforces the idle and total deadlines while streaming.

use std::cell::RefCell;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use rand::Rng;
use reqwest::header::HeaderMap;
use tokio::time::Instant;

use crate::error::{ProviderError, TimeoutKind};

/// The deadlines of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the TCP/TLS connection.
    pub connect: Duration,
    /// From sending the request to the response headers (local models can take a while to read a
    /// long prompt, hence the generous default).
    pub first_byte: Duration,
    /// The longest silence between two chunks of a streamed body.
    pub idle: Duration,
    /// The whole request, retries included.
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(120),
            idle: Duration::from_secs(60),
            total: Duration::from_secs(600),
        }
    }
}

/// When and how often a failed request is tried again. Retries happen only before anything was
/// streamed to the consumer, and only for transient errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    /// The first backoff; it doubles each time, with ±25 % jitter.
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// A `Retry-After` longer than this is not waited for: the error goes up (to the next arm).
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(4),
            max_retry_after: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The wait before retry number `attempt` (0-based) after `error`, or `None` when no retry
    /// should happen (not transient, out of retries, or it would pass the deadline).
    pub fn delay(
        &self,
        attempt: u32,
        error: &ProviderError,
        deadline: Instant,
    ) -> Option<Duration> {
        if attempt >= self.max_retries || !error.is_transient() {
            return None;
        }
        let delay = match error {
            ProviderError::RateLimited {
                retry_after: Some(after),
                ..
            } => {
                if *after > self.max_retry_after {
                    return None;
                }
                *after
            }
            _ => {
                let base = self
                    .base_delay
                    .saturating_mul(1u32 << attempt.min(16))
                    .min(self.max_delay);
                let jitter = rand::rng().random_range(0.75..1.25);
                base.mul_f64(jitter)
            }
        };
        (Instant::now() + delay < deadline).then_some(delay)
    }
}

/// The default cap on an upstream response: a whole non-streamed body, and the text, reasoning
/// and call arguments of a streamed one (like the SSE event cap, far beyond any sane reply).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 << 20;

/// The error for a response past the cap (a 502 `upstream_bad_response` at the gateway).
pub fn too_large(limit: usize) -> ProviderError {
    ProviderError::BadResponse(format!(
        "the response is larger than the limit of {limit} bytes (max_response_bytes)"
    ))
}

/// Reads a whole (non-streamed) body, at most `limit` bytes, within the deadline. A larger body
/// is an error as soon as it is announced (`Content-Length`) or read past the limit, so memory
/// stays bounded whatever the upstream sends.
pub async fn read_body(
    mut response: reqwest::Response,
    limit: usize,
    deadline: Instant,
) -> Result<Bytes, ProviderError> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(too_large(limit));
    }
    let mut body = bytes::BytesMut::new();
    loop {
        let chunk = match tokio::time::timeout_at(deadline, response.chunk()).await {
            Err(_) => return Err(ProviderError::Timeout(TimeoutKind::Total)),
            Ok(Err(e)) => return Err(transport_error(e)),
            Ok(Ok(None)) => return Ok(body.freeze()),
            Ok(Ok(Some(chunk))) => chunk,
        };
        if body.len() + chunk.len() > limit {
            return Err(too_large(limit));
        }
        body.extend_from_slice(&chunk);
    }
}

/// Counts what a streamed response delivers (text, reasoning, call arguments), which is what
/// its consumers hold, against the cap.
#[derive(Debug)]
pub struct ContentBudget {
    limit: usize,
    used: usize,
}

impl ContentBudget {
    pub fn new(limit: usize) -> Self {
        ContentBudget { limit, used: 0 }
    }

    /// Counts one event; past the cap it is an error.
    pub fn spend(&mut self, event: &crate::wire::WireEvent) -> Result<(), ProviderError> {
        use crate::wire::WireEvent;
        let n = match event {
            WireEvent::Text(t)
            | WireEvent::Reasoning(t)
            | WireEvent::ReasoningSignature(t)
            | WireEvent::RedactedReasoning(t) => t.len(),
            WireEvent::ToolCall(c) => c.function.as_ref().map_or(0, |f| {
                f.arguments.as_ref().map_or(0, String::len) + f.name.as_ref().map_or(0, String::len)
            }),
            WireEvent::Usage(_) | WireEvent::StopSequence(_) | WireEvent::Finish(_) => 0,
        };
        self.used = self.used.saturating_add(n);
        if self.used > self.limit {
            return Err(too_large(self.limit));
        }
        Ok(())
    }
}

/// A URL as operators may see it in errors and logs: without user name, password, query or
/// fragment (where keys hide).
pub fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string().trim_end_matches('/').to_owned()
        }
        Err(_) => {
            let cut = url.split(['?', '#']).next().unwrap_or_default();
            match cut.rsplit_once('@') {
                Some((head, tail)) => match head.split_once("://") {
                    Some((scheme, _)) => format!("{scheme}://{tail}"),
                    None => tail.to_owned(),
                },
                None => cut.to_owned(),
            }
        }
    }
}

/// Adds where a connection failure happened, and the likely fix, to the error: `what` names the
/// provider and model, `url` the server (shown with [`shown_url`]). Other errors pass unchanged.
pub fn with_target(error: ProviderError, what: &str, url: &str) -> ProviderError {
    match error {
        ProviderError::Connect(detail) => ProviderError::Connect(format!(
            "cannot reach {what} at {} (is the server running, and is the base URL right?): {detail}",
            shown_url(url)
        )),
        other => other,
    }
}

/// An upstream's HTTP client, with a connection pool per thread.
///
/// The gateway serves each connection on one thread (its connection threads); a pooled upstream
/// connection's task runs on the thread that opened it, so a pool shared by all threads would
/// hand a request on one thread a connection driven by another, and every chunk of the answer
/// would wake both (measured: 35 context switches per streamed Responses request instead of a
/// handful). Each thread that sends through this client gets a `reqwest::Client` of its own,
/// built on first use with the same settings; they live as long as both the thread and this
/// client do.
#[derive(Clone)]
pub struct HttpClient {
    /// The settings every thread's client is built with; its address identifies this client
    /// in the threads' lists.
    timeouts: Arc<Timeouts>,
    /// Used where a thread's own client cannot be built (it was built once already, so this
    /// does not happen in practice).
    fallback: reqwest::Client,
}

thread_local! {
    /// This thread's clients, each with the `HttpClient` it was made for (by address; the weak
    /// count keeps the address from being reused while the entry exists).
    static LOCAL_CLIENTS: RefCell<Vec<(Weak<Timeouts>, reqwest::Client)>> =
        const { RefCell::new(Vec::new()) };
}

impl HttpClient {
    /// Builds the client with the connect timeout (the other deadlines are applied per request).
    pub fn new(timeouts: &Timeouts) -> Result<Self, ProviderError> {
        Ok(HttpClient {
            fallback: build_client(timeouts)?,
            timeouts: Arc::new(*timeouts),
        })
    }

    /// This thread's client.
    pub fn get(&self) -> reqwest::Client {
        LOCAL_CLIENTS.with(|local| {
            let mut local = local.borrow_mut();
            let me = Arc::as_ptr(&self.timeouts);
            if let Some((_, client)) = local.iter().find(|(owner, _)| owner.as_ptr() == me) {
                return client.clone();
            }
            // Entries of clients dropped since (a model removed) leave with the next newcomer.
            local.retain(|(owner, _)| owner.strong_count() > 0);
            let client = build_client(&self.timeouts).unwrap_or_else(|_| self.fallback.clone());
            local.push((Arc::downgrade(&self.timeouts), client.clone()));
            client
        })
    }
}

/// Builds a client with the connect timeout (the other deadlines are applied per request).
pub fn build_client(timeouts: &Timeouts) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
        .connect_timeout(timeouts.connect)
        .pool_idle_timeout(Duration::from_secs(90))
        .build()
        .map_err(|e| ProviderError::Config(format!("cannot build the HTTP client: {e}")))
}

/// `Retry-After` in seconds (HTTP dates are rare from APIs and ignored).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    let secs: f64 = value.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// Maps a transport error (never an HTTP status) to a typed error, without the URL.
pub fn transport_error(error: reqwest::Error) -> ProviderError {
    let error = error.without_url();
    if error.is_timeout() {
        ProviderError::Timeout(TimeoutKind::Connect)
    } else if error.is_connect() {
        ProviderError::Connect(source_chain(&error))
    } else if error.is_body() || error.is_decode() {
        ProviderError::BadResponse(format!(
            "the response body broke off: {}",
            source_chain(&error)
        ))
    } else {
        ProviderError::Connect(source_chain(&error))
    }
}

fn source_chain(error: &dyn std::error::Error) -> String {
    let mut s = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        s.push_str(": ");
        s.push_str(&e.to_string());
        source = e.source();
    }
    s
}

/// Sends a request and waits for the response headers within the first-byte deadline (and the
/// total deadline). An HTTP error status becomes a typed error with the body's message.
pub async fn send(
    request: reqwest::RequestBuilder,
    timeouts: &Timeouts,
    deadline: Instant,
    key: Option<&str>,
) -> Result<reqwest::Response, ProviderError> {
    let first_byte = Instant::now() + timeouts.first_byte;
    let (limit, kind) = if first_byte < deadline {
        (first_byte, TimeoutKind::FirstByte)
    } else {
        (deadline, TimeoutKind::Total)
    };
    let response = match tokio::time::timeout_at(limit, request.send()).await {
        Err(_) => return Err(ProviderError::Timeout(kind)),
        Ok(Err(e)) => return Err(transport_error(e)),
        Ok(Ok(r)) => r,
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let after = retry_after(response.headers());
    // Read at most 64 KiB of the error body, within the same deadline.
    let body = tokio::time::timeout_at(limit, read_limited(response, 64 << 10))
        .await
        .unwrap_or_default();
    Err(ProviderError::from_status(
        status.as_u16(),
        &body,
        after,
        key,
    ))
}

async fn read_limited(response: reqwest::Response, limit: usize) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= limit {
            body.truncate(limit);
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The response body as chunks, each within the idle deadline and all within the total one.
///
/// One timer serves the whole body and is moved only when it fires early (progress happened
/// since it was set): re-arming a timer per chunk would wake the runtime's driver for every
/// chunk, which costs more CPU than the rest of the chunk's handling.
pub fn body_chunks(
    response: reqwest::Response,
    idle: Duration,
    deadline: Instant,
) -> impl Stream<Item = Result<Bytes, ProviderError>> + Send {
    async_stream::try_stream! {
        let mut stream = response.bytes_stream();
        let mut last_progress = Instant::now();
        let limit = |last: Instant| (last + idle).min(deadline);
        let timer = tokio::time::sleep_until(limit(last_progress));
        tokio::pin!(timer);
        loop {
            let next = tokio::select! {
                biased;
                item = stream.next() => Some(item),
                () = &mut timer => None,
            };
            match next {
                Some(None) => break,
                Some(Some(Err(e))) => Err(transport_error(e))?,
                Some(Some(Ok(chunk))) => {
                    last_progress = Instant::now();
                    yield chunk;
                }
                None => {
                    let now = Instant::now();
                    if now >= deadline {
                        Err(ProviderError::Timeout(TimeoutKind::Total))?;
                    }
                    let due = limit(last_progress);
                    if now >= due {
                        Err(ProviderError::Timeout(TimeoutKind::Idle))?;
                    }
                    timer.as_mut().reset(due);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delays_are_bounded() {
        let policy = RetryPolicy::default();
        let far = Instant::now() + Duration::from_secs(60);
        let e = ProviderError::Upstream {
            status: 503,
            message: String::new(),
        };
        let d0 = policy.delay(0, &e, far).unwrap();
        assert!(d0 >= Duration::from_millis(187) && d0 <= Duration::from_millis(313));
        assert!(policy.delay(2, &e, far).is_none(), "out of retries");
        let bad = ProviderError::Upstream {
            status: 400,
            message: String::new(),
        };
        assert!(policy.delay(0, &bad, far).is_none(), "not transient");
        let soon = Instant::now() + Duration::from_millis(10);
        assert!(policy.delay(0, &e, soon).is_none(), "past the deadline");
        let rl = |s| ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(s)),
            message: String::new(),
        };
        assert_eq!(policy.delay(0, &rl(3), far), Some(Duration::from_secs(3)));
        assert_eq!(
            policy.delay(0, &rl(30), far),
            None,
            "too long to wait: let another arm try"
        );
    }

    #[test]
    fn shown_urls_lose_credentials_and_queries() {
        assert_eq!(
            shown_url("http://user:pw@127.0.0.1:9/v1?key=sk-1#x"),
            "http://127.0.0.1:9/v1"
        );
        assert_eq!(shown_url("not a url?key=1"), "not a url");
        let e = with_target(
            ProviderError::Connect("tcp connect error".into()),
            "openai model `m`",
            "http://u:p@127.0.0.1:9/v1?k=v",
        );
        let text = e.to_string();
        assert!(
            text.contains("openai model `m` at http://127.0.0.1:9/v1"),
            "{text}"
        );
        assert!(
            text.contains("is the server running")
                && !text.contains("u:p")
                && !text.contains("k=v")
        );
    }

    #[test]
    fn retry_after_header() {
        let mut h = HeaderMap::new();
        h.insert(reqwest::header::RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert(
            reqwest::header::RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), None);
    }
}
