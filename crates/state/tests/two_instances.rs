//! Two stores on one database — two SQLite handles on one file, two PostgresStores on one server —
//! opened at the same moment on a fresh database, then each seeing the other's writes: what two
//! gateway instances rely on (create on one, continue on the other; pause on one, resume on the
//! other; one recovering the other's dead runs).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use bytes::Bytes;
use common::{conversation, file, response, Backend, Kind};
use serde_json::json;
use toolbridge_state::{FileFilter, Store, StoreError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_two_handles_on_one_file_see_each_others_writes() {
    let (backend, other) = Backend::open_two(Kind::Sqlite).await;
    two_instances(&backend.store, &other).await;
    backend.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_two_stores_on_one_server_see_each_others_writes() {
    let (backend, other) = Backend::open_two(Kind::Postgres).await;
    two_instances(&backend.store, &other).await;
    drop(other);
    backend.finish().await;
}

async fn two_instances(a: &Arc<dyn Store>, b: &Arc<dyn Store>) {
    // A response created on one instance, paused for a client's function output…
    let mut r = response("ada", "resp_1");
    r.instance = "a".into();
    r.status = "completed".into();
    r.run = Some(json!({"waiting_for": ["call_1"]}));
    a.put_response(&r).await.unwrap();
    // …resumed on the other, which stores the continuation.
    assert_eq!(b.get_response("ada", "resp_1").await.unwrap().unwrap(), r);
    let mut next = response("ada", "resp_2");
    next.instance = "b".into();
    next.previous_response_id = Some("resp_1".into());
    b.put_response(&next).await.unwrap();
    assert_eq!(
        a.get_response("ada", "resp_2").await.unwrap().unwrap(),
        next
    );

    // A conversation: updated alternately, each instance writing on the version it read.
    let c1 = a
        .put_conversation(conversation("ada", "conv_1"), None)
        .await
        .unwrap();
    let mut read = b.get_conversation("ada", "conv_1").await.unwrap().unwrap();
    assert_eq!(read, c1);
    read.items = json!(["from b"]);
    let c2 = b.put_conversation(read, Some(c1.version)).await.unwrap();
    // a's copy is now stale.
    let stale = a.put_conversation(c1.clone(), Some(c1.version)).await;
    assert!(matches!(stale, Err(StoreError::Conflict(_))), "{stale:?}");
    let fresh = a.get_conversation("ada", "conv_1").await.unwrap().unwrap();
    assert_eq!(fresh, c2);
    // Both write on the same version at once: one wins.
    let (mut x, mut y) = (fresh.clone(), fresh.clone());
    x.items = json!(["x"]);
    y.items = json!(["y"]);
    let (x, y) = futures::join!(
        a.put_conversation(x, Some(fresh.version)),
        b.put_conversation(y, Some(fresh.version)),
    );
    assert!(x.is_ok() != y.is_ok(), "one winner: {x:?} / {y:?}");
    let winner = x.or(y).unwrap();
    assert_eq!(
        b.get_conversation("ada", "conv_1").await.unwrap().unwrap(),
        winner
    );

    // A file uploaded through one is downloaded and deleted through the other.
    a.put_file(
        file("ada", "file-1", 1, None),
        Bytes::from_static(b"shared"),
    )
    .await
    .unwrap();
    assert_eq!(
        b.file_content("ada", "file-1").await.unwrap().unwrap(),
        Bytes::from_static(b"shared")
    );
    assert_eq!(b.list_files("ada", FileFilter::All).await.unwrap().len(), 1);
    assert!(b.delete_file("ada", "file-1").await.unwrap());
    assert!(a.get_file("ada", "file-1").await.unwrap().is_none());

    // a runs two responses and keeps one alive with its heartbeat; b finds the other stale.
    for id in ["resp_alive", "resp_dead"] {
        let mut run = response("ada", id);
        run.instance = "a".into();
        run.updated_at = 100;
        a.put_response(&run).await.unwrap();
    }
    a.heartbeat("a", &["resp_alive".to_owned()], 1_000)
        .await
        .unwrap();
    // b's periodic sweep names no instance: b's own runs are in progress, not dead.
    assert_eq!(b.recover("", 500, "instance a stopped").await.unwrap(), 1);
    let dead = a.get_response("ada", "resp_dead").await.unwrap().unwrap();
    assert_eq!(dead.status, "failed");
    assert_eq!(dead.body["error"]["message"], "instance a stopped");
    let alive = a.get_response("ada", "resp_alive").await.unwrap().unwrap();
    assert_eq!(alive.status, "in_progress");

    // Writers on both at once all land (SQLite: the second waits for the first's lock).
    let writes = (0..40).map(|i| {
        let store = if i % 2 == 0 { a } else { b };
        let mut r = response("bob", &format!("resp_w{i}"));
        r.status = "completed".into();
        async move { store.put_response(&r).await }
    });
    for result in futures::future::join_all(writes).await {
        result.unwrap();
    }
    for i in 0..40 {
        let reader = if i % 2 == 0 { b } else { a };
        assert!(reader
            .get_response("bob", &format!("resp_w{i}"))
            .await
            .unwrap()
            .is_some());
    }
}
