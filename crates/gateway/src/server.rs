//! The accept loop. Stock `axum::serve` keeps a silent or half-sent connection open forever and
//! accepts without bound; this loop serves each connection with hyper's HTTP/1 server set up for
//! docs/src/security.md, "The gateway":
//!
//! - a connection cap: a permit is taken before `accept`, so past the cap clients wait in the
//!   kernel's backlog instead of costing memory here;
//! - the header-read timeout: the request head must arrive within it, counted from the
//!   connection's start or the previous response, so silent, half-sent and idle kept-alive
//!   connections are all closed;
//! - a head size limit answered with 431;
//! - graceful shutdown: on the signal the listener closes, every connection finishes its
//!   in-flight request and closes, and whatever is still running after the grace period is cut.
//!
//! Each accepted connection is served on one of the connection threads ([`ConnectionThreads`]),
//! where all its requests' work stays.

use std::future::Future;
use std::sync::Arc;

use axum::body::Body;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tower::Service;

use crate::config::Limits;
use crate::routes::Peer;
use crate::threads::ConnectionThreads;

/// Serves until `shutdown` completes, then drains.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: &Limits,
    shutdown: impl Future<Output = ()> + Send,
) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_header_size(limits.max_header_bytes)
        .max_buf_size(limits.max_header_bytes.max(64 << 10))
        .keep_alive(true);
    let builder = Arc::new(builder);
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let (closing_tx, closing_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let threads = match ConnectionThreads::start(limits.connection_threads) {
        Ok(t) => Some(t),
        Err(e) => {
            // Serving on the shared runtime still works, at a higher cost per request.
            tracing::warn!(error = %e, "cannot start the connection threads; serving connections on the main runtime");
            None
        }
    };

    'accept: loop {
        let permit = loop {
            tokio::select! {
                biased;
                () = &mut shutdown => break 'accept,
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                permit = Arc::clone(&permits).acquire_owned() => match permit {
                    Ok(p) => break p,
                    Err(_) => break 'accept,
                },
            }
        };
        let (stream, peer) = loop {
            tokio::select! {
                biased;
                () = &mut shutdown => break 'accept,
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                accepted = listener.accept() => match accepted {
                    Ok(pair) => break pair,
                    Err(e) => match e.kind() {
                        std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::Interrupted
                        | std::io::ErrorKind::WouldBlock => {}
                        _ => {
                            // Out of file descriptors and the like: back off a little.
                            tracing::warn!(error = %e, "accept failed");
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        }
                    },
                },
            }
        };
        let _ = stream.set_nodelay(true);
        // Handed over as a plain socket: the task registers it with the runtime it runs on.
        let stream = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(%peer, error = %e, "cannot take over an accepted connection");
                continue;
            }
        };
        let router = router.clone();
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let mut request = request.map(Body::new);
            request.extensions_mut().insert(Peer(peer));
            router.clone().call(request)
        });
        let builder = Arc::clone(&builder);
        let mut closing = closing_rx.clone();
        let task = async move {
            let stream = match TcpStream::from_std(stream) {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(%peer, error = %e, "cannot register a connection");
                    return;
                }
            };
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                }
                _ = closing.changed() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            drop(permit);
        };
        match &threads {
            Some(threads) => connections.spawn_on(task, threads.next()),
            None => connections.spawn(task),
        };
    }

    drop(listener);
    let _ = closing_tx.send(true);
    let in_flight = connections.len();
    if in_flight > 0 {
        tracing::info!(connections = in_flight, "draining connections");
    }
    let drained = tokio::time::timeout(limits.shutdown_grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            connections = connections.len(),
            "grace period over; closing the remaining connections"
        );
        connections.shutdown().await;
    }
}
