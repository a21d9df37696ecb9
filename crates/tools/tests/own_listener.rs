//! `register_own_listener`: the process's own listening addresses are denied whatever the policy
//! allows. Its own test binary: the registry is process-wide.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use axum::routing::get;
use axum::Router;
use toolbridge_tools::net::{register_own_listener, Denial, Refusal};

#[tokio::test]
async fn registered_listeners_are_refused() {
    let gateway = common::serve(Router::new().route("/", get(|| async { "gateway" }))).await;
    let other = common::serve(Router::new().route("/", get(|| async { "other" }))).await;
    let guard = common::guard(gateway.port(), &[]);
    assert!(guard.check(&format!("http://{gateway}/")).await.is_ok());
    register_own_listener(gateway);
    assert!(matches!(
        guard
            .check(&format!("http://{gateway}/"))
            .await
            .unwrap_err(),
        Refusal::Address {
            denial: Denial::OwnListener,
            ..
        }
    ));
    // An unspecified bind address denies its port everywhere.
    register_own_listener(format!("0.0.0.0:{}", other.port()).parse().unwrap());
    let guard = common::guard(other.port(), &[]);
    assert!(matches!(
        guard.check(&format!("http://{other}/")).await.unwrap_err(),
        Refusal::Address {
            denial: Denial::OwnListener,
            ..
        }
    ));
}
