//! The connection threads: each runs a single-threaded tokio runtime, and a connection lives on
//! one of them from its accept to its close, together with everything its requests start — the
//! upstream request and the pooled upstream connection it opens, a streamed body, a server-side
//! run and its tools' tasks.
//!
//! Why not tokio's work-stealing runtime for connections: one request there is a relay between
//! tasks (the client connection, the handler, reqwest's upstream connection task, a run's task),
//! and whenever two of them were runnable at once the scheduler woke the other worker to steal
//! one. Measured at one connection: 7–12 context switches per Chat Completions request, about
//! four on each worker, where the request needs two (wait for the client, wait for the
//! upstream). On a virtual machine every sleep and wake-up is a trip through the hypervisor, so
//! those switches were most of the gateway's CPU per request. With the whole request on one
//! thread, none of its wake-ups crosses threads. Load is spread by handing new connections out
//! in turn; the accept loop, start-up work, MCP servers and the state store's background
//! passes stay on the main runtime.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// A fixed set of connection threads. Dropping it stops them: each thread's runtime is shut
/// down in the background, which drops the tasks still on it.
pub(crate) struct ConnectionThreads {
    handles: Vec<Handle>,
    next: AtomicUsize,
    // Dropping a sender ends its thread's `block_on`.
    _stops: Vec<oneshot::Sender<()>>,
}

impl ConnectionThreads {
    /// Starts `count` threads (at least one).
    pub(crate) fn start(count: usize) -> std::io::Result<Self> {
        let count = count.max(1);
        let mut handles = Vec::with_capacity(count);
        let mut stops = Vec::with_capacity(count);
        // The threads log where the server's caller logs: the subscriber in effect here (the
        // global one in `toolbridge serve`; a test's scoped one) becomes theirs.
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        for index in 0..count {
            let dispatch = dispatch.clone();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            handles.push(runtime.handle().clone());
            let (stop, stopped) = oneshot::channel::<()>();
            stops.push(stop);
            std::thread::Builder::new()
                .name(format!("toolbridge-conn-{index}"))
                .spawn(move || {
                    let _logging = tracing::dispatcher::set_default(&dispatch);
                    // A current-thread runtime runs its tasks only inside `block_on`.
                    let _ = runtime.block_on(stopped);
                    // Not waiting for blocking work (a tool's process) that may outlive the
                    // server: the process is ending or the gateway was stopped.
                    runtime.shutdown_background();
                })?;
        }
        Ok(ConnectionThreads {
            handles,
            next: AtomicUsize::new(0),
            _stops: stops,
        })
    }

    /// The runtime of the thread whose turn it is.
    pub(crate) fn next(&self) -> &Handle {
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        &self.handles[turn % self.handles.len()]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[tokio::test]
    async fn connections_are_handed_out_in_turn_and_run_on_their_own_threads() {
        let threads = ConnectionThreads::start(2).unwrap();
        let mut names = Vec::new();
        for _ in 0..4 {
            let name = threads
                .next()
                .spawn(async { std::thread::current().name().map(str::to_owned) })
                .await
                .unwrap();
            names.push(name.unwrap());
        }
        assert_eq!(
            names,
            [
                "toolbridge-conn-0",
                "toolbridge-conn-1",
                "toolbridge-conn-0",
                "toolbridge-conn-1"
            ]
        );
    }

    #[tokio::test]
    async fn dropping_the_threads_stops_their_tasks() {
        let threads = ConnectionThreads::start(1).unwrap();
        let task = threads.next().spawn(std::future::pending::<()>());
        drop(threads);
        let ended = tokio::time::timeout(std::time::Duration::from_secs(10), task)
            .await
            .expect("the task ends when its thread stops");
        assert!(ended.unwrap_err().is_cancelled());
    }
}
