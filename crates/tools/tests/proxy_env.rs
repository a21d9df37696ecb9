//! Proxies in the environment are ignored by the guard (reqwest obeys HTTP_PROXY by default, which
//! would bypass the address checks). Its own test binary: it sets process-wide variables.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::routing::get;
use axum::Router;

#[tokio::test]
async fn proxies_in_the_environment_are_ignored() {
    // A "proxy" that counts the connections it gets and answers every request.
    let hits = Arc::new(AtomicUsize::new(0));
    let proxy = {
        let hits = Arc::clone(&hits);
        common::serve(Router::new().fallback(get(move || {
            hits.fetch_add(1, Ordering::SeqCst);
            async { "from the proxy" }
        })))
        .await
    };
    let origin = common::serve(Router::new().route("/", get(|| async { "from the origin" }))).await;
    for var in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        std::env::set_var(var, format!("http://{proxy}"));
    }
    std::env::remove_var("NO_PROXY");
    std::env::remove_var("no_proxy");

    // An ordinary client goes through the proxy: the test set-up is real.
    let plain = reqwest::Client::new()
        .get(format!("http://{origin}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(plain.text().await.unwrap(), "from the proxy");
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    // The guard connects to the checked address itself.
    let guard = common::guard(origin.port(), &[]);
    let fetched = guard
        .fetch(&format!("http://{origin}/"), "*/*", 1024)
        .await
        .unwrap();
    assert_eq!(fetched.body, b"from the origin");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}
