//! Test support for toolbridge: an OpenAI- and Anthropic-compatible upstream on
//! 127.0.0.1 with scripted replies and faults on demand.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use toolbridge_testkit::{Behavior, Reply, TestUpstream};
//!
//! let upstream = TestUpstream::start().await?;
//! upstream.push(Behavior::Reply(Reply::text("hello")));
//! upstream.push(Behavior::Status { code: 429, message: "slow down".into(), retry_after: Some(1) });
//! // Point an OpenAI client at `upstream.base_url()` ("http://127.0.0.1:PORT/v1"),
//! // or an Anthropic client at `upstream.anthropic_base_url()` ("http://127.0.0.1:PORT").
//! # Ok(()) }
//! ```
//!
//! Each POST to `/v1/chat/completions` or `/v1/messages` takes the next queued
//! [`Behavior`]; `GET /v1/models` always answers and takes none. The server stops
//! (listener closed, all connections aborted) when the [`TestUpstream`] is dropped.

mod anthropic;
pub mod blessed;
mod huge;
mod openai;
mod plan;
mod server;
mod sse;

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// A scripted upstream server listening on 127.0.0.1.
///
/// Dropping it closes the listening socket at once (new connections are refused)
/// and aborts the server task together with every open connection.
pub struct TestUpstream {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
    /// A duplicate of the listening socket, used to shut the listener down
    /// synchronously on drop.
    listener_ctl: socket2::Socket,
}

impl TestUpstream {
    /// Binds 127.0.0.1:0 and serves in a background tokio task. The server stops
    /// when the `TestUpstream` is dropped.
    ///
    /// Must be called from within a tokio runtime (an error is returned otherwise).
    pub async fn start() -> std::io::Result<TestUpstream> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|e| std::io::Error::other(format!("testkit: no tokio runtime: {e}")))?;
        let std_listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let listener_ctl = socket2::Socket::from(std_listener.try_clone()?);
        let shared = Arc::new(Shared::default());
        let router = server::router(Arc::clone(&shared));
        let task = {
            let _guard = handle.enter();
            let listener = tokio::net::TcpListener::from_std(std_listener)?;
            handle.spawn(server::serve(listener, router))
        };
        Ok(TestUpstream {
            addr,
            shared,
            task,
            listener_ctl,
        })
    }

    /// `"http://127.0.0.1:PORT/v1"`: the OpenAI base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `"http://127.0.0.1:PORT"`: the Anthropic base URL (clients add `/v1/messages`).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The socket address the server listens on (always 127.0.0.1).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues a behaviour; each incoming POST (either endpoint) takes the next one
    /// in order. When the queue is empty the server answers 500 with an
    /// OpenAI-shaped error body saying "testkit: no scripted reply left".
    pub fn push(&self, behavior: Behavior) {
        self.shared.lock().queue.push_back(behavior);
    }

    /// Queues several behaviours in order.
    pub fn push_all(&self, behaviors: impl IntoIterator<Item = Behavior>) {
        self.shared.lock().queue.extend(behaviors);
    }

    /// Sets the behaviour used when the queue is empty (instead of the 500 "no scripted reply
    /// left"); `None` restores that default. For benchmarks and long-running demos.
    pub fn set_default(&self, behavior: Option<Behavior>) {
        self.shared.lock().default = behavior;
    }

    /// Turns the recording of requests (see [`TestUpstream::requests`]) on or off; it is on by
    /// default. Off keeps memory flat under load.
    pub fn set_recording(&self, on: bool) {
        self.shared.lock().skip_recording = !on;
    }

    /// How many queued behaviours have not been taken yet.
    pub fn remaining(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// The requests received so far on the two POST endpoints, in arrival order.
    ///
    /// Bodies that are not valid JSON objects (answered with 400, taking no
    /// behaviour) are recorded too, as a JSON string holding the raw text.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }
}

impl Drop for TestUpstream {
    fn drop(&mut self) {
        // Shutting down a listening socket on Linux moves it to CLOSE at once, so
        // new connections are refused even before the aborted task is dropped.
        let _ = self.listener_ctl.shutdown(std::net::Shutdown::Both);
        self.task.abort();
    }
}

impl std::fmt::Debug for TestUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestUpstream")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// One request received by the server.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// The request path, e.g. `/v1/chat/completions` or `/v1/messages`.
    pub path: String,
    /// The JSON body (or, when it was not valid JSON, a JSON string with the raw text).
    pub body: serde_json::Value,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// All request headers, names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
}

impl Recorded {
    /// The first value of the header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server does with one incoming request.
///
/// For the stream faults a "chunk" is one SSE event: on `/v1/chat/completions`
/// each `data: {…}` chunk (the first one carries the role together with the first
/// piece of output), on `/v1/messages` each event including `message_start` and
/// `ping`. The terminal `data: [DONE]` / `message_stop` is not counted;
/// `after_chunks` larger than the number of chunks means "after the last one".
#[derive(Clone, Debug)]
pub enum Behavior {
    /// A normal answer, streamed when the request has `"stream": true`, else one JSON body.
    Reply(Reply),
    /// An HTTP error status with an OpenAI-shaped error body
    /// (`{"error":{"message":…,"type":…}}`; on `/v1/messages` also a top-level
    /// `"type":"error"`, as Anthropic sends), and a `Retry-After` header (seconds)
    /// when given.
    Status {
        code: u16,
        message: String,
        retry_after: Option<u64>,
    },
    /// Waits before sending the response headers / first byte, then replies.
    SlowFirstByte { delay: Duration, reply: Reply },
    /// Streams `after_chunks` chunks of the reply, then goes silent for `stall`
    /// (connection open), then continues normally. For a non-streaming request the
    /// JSON body is sent in two halves with the stall in between.
    StallMidStream {
        after_chunks: usize,
        stall: Duration,
        reply: Reply,
    },
    /// Streams `after_chunks` chunks, then aborts the connection (no `[DONE]` /
    /// `message_stop`, no final chunk; the chunked HTTP body never terminates, so
    /// the client sees an incomplete body). For a non-streaming request half of the
    /// JSON body is sent before the abort.
    CutMidStream { after_chunks: usize, reply: Reply },
    /// Streams `after_chunks` chunks, then a `data: {not json` line, then continues.
    /// For a non-streaming request the body starts with `{not json` (invalid JSON).
    MalformedSse { after_chunks: usize, reply: Reply },
    /// A reply whose text is `bytes` bytes long, generated while it is sent (the server never
    /// holds it): streamed as 64 KiB text deltas when the request streams, else one JSON body
    /// without `Content-Length`. `json` sends the JSON body even to a streaming request (as a
    /// compatible server that ignores `stream` does).
    Huge { bytes: u64, json: bool },
}

impl From<Reply> for Behavior {
    fn from(reply: Reply) -> Self {
        Behavior::Reply(reply)
    }
}

impl Behavior {
    /// Shorthand for [`Behavior::Status`] without `Retry-After`.
    pub fn status(code: u16, message: impl Into<String>) -> Self {
        Behavior::Status {
            code,
            message: message.into(),
            retry_after: None,
        }
    }
}

/// The content of a scripted answer.
#[derive(Clone, Debug, Default)]
pub struct Reply {
    /// Visible text content.
    pub text: String,
    /// Reasoning text, sent as `reasoning_content` deltas before the text (OpenAI
    /// endpoint) / a thinking block (Anthropic).
    pub reasoning: String,
    /// Native tool calls: (name, arguments JSON text).
    pub tool_calls: Vec<(String, String)>,
    /// Bytes of text (and of each tool call's arguments) per streamed chunk; 0 means 8.
    pub chunk_size: usize,
    /// Finish reason to report ("stop", "length", "tool_calls"); default:
    /// "tool_calls" when `tool_calls` is non-empty, else "stop".
    pub finish_reason: Option<String>,
    /// Cut the output after this many bytes of the concatenated text+arguments
    /// stream and report finish_reason "length" (tool calls that start at or after
    /// the cut are dropped; the one the cut falls in keeps its partial arguments).
    pub cut_at: Option<usize>,
    /// When true the server ignores the request's `tools` and `stop`. When false
    /// (default) the server honours `stop` (`stop_sequences` on `/v1/messages`):
    /// the text is truncated at the first occurrence of any stop string (the stop
    /// string itself is not sent), tool calls are dropped and finish_reason is "stop".
    pub ignore_stop: bool,
    /// Usage to report: (prompt_tokens, completion_tokens); default (10, 5).
    pub usage: Option<(u64, u64)>,
}

impl Reply {
    /// A reply with only visible text.
    pub fn text(s: impl Into<String>) -> Self {
        Reply {
            text: s.into(),
            ..Reply::default()
        }
    }

    /// A reply with one native tool call and no text.
    pub fn tool_call(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Reply {
            tool_calls: vec![(name.into(), arguments.into())],
            ..Reply::default()
        }
    }

    /// Adds reasoning text.
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning = reasoning.into();
        self
    }

    /// Adds one more native tool call.
    pub fn with_tool_call(mut self, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        self.tool_calls.push((name.into(), arguments.into()));
        self
    }

    /// Sets the streamed chunk size in bytes.
    pub fn with_chunk_size(mut self, chunk_size: usize) -> Self {
        self.chunk_size = chunk_size;
        self
    }

    /// Sets the reported finish reason.
    pub fn with_finish_reason(mut self, finish_reason: impl Into<String>) -> Self {
        self.finish_reason = Some(finish_reason.into());
        self
    }

    /// Cuts the output after `bytes` bytes of text+arguments (finish "length").
    pub fn with_cut_at(mut self, bytes: usize) -> Self {
        self.cut_at = Some(bytes);
        self
    }

    /// Makes the server ignore the request's `tools` and `stop`.
    pub fn ignoring_stop(mut self) -> Self {
        self.ignore_stop = true;
        self
    }

    /// Sets the reported usage (prompt_tokens, completion_tokens).
    pub fn with_usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.usage = Some((prompt_tokens, completion_tokens));
        self
    }
}

#[derive(Default)]
pub(crate) struct Shared {
    inner: Mutex<Inner>,
}

#[derive(Default)]
pub(crate) struct Inner {
    pub(crate) queue: VecDeque<Behavior>,
    pub(crate) requests: Vec<Recorded>,
    /// Used when the queue is empty.
    pub(crate) default: Option<Behavior>,
    pub(crate) skip_recording: bool,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
