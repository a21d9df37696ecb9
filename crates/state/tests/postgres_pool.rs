//! The PostgreSQL store's connections: a pool of `POOL_SIZE`, and reconnection after the server
//! drops them (as a restart does: here `pg_terminate_backend`, on the test server of
//! TOOLBRIDGE_TEST_POSTGRES_URL).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{admin, postgres_url, response, unique, with_param, MAX_FILE};
use toolbridge_state::postgres::POOL_SIZE;
use toolbridge_state::{PostgresStore, Store};

/// How many server connections carry this application name.
async fn connections(admin: &tokio_postgres::Client, app: &str) -> i64 {
    admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn postgres_store_pools_its_connections_and_reconnects_after_they_drop() {
    let admin = admin().await;
    let schema = unique("tbstate");
    let app = unique("tbstate_app");
    admin
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .unwrap();
    let url = with_param(
        &with_param(
            &postgres_url(),
            &format!("options=-csearch_path%3D{schema}"),
        ),
        &format!("application_name={app}"),
    );
    let store = PostgresStore::connect(&url, MAX_FILE).await.unwrap();
    let r = response("ada", "resp_1");
    store.put_response(&r).await.unwrap();

    // Calls at once each get a connection of their own, up to the pool's size and no more.
    let calls = (0..POOL_SIZE * 2).map(|_| store.get_response("ada", "resp_1"));
    for got in futures::future::join_all(calls).await {
        assert_eq!(got.unwrap().unwrap(), r);
    }
    assert_eq!(connections(&admin, &app).await, POOL_SIZE as i64);

    // The server drops every connection of the store.
    admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .await
        .unwrap();
    for _ in 0..500 {
        if connections(&admin, &app).await == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(connections(&admin, &app).await, 0, "backends still there");

    // A call that finds its connection dead before noticing may fail, once per connection at
    // most; then every call works again, on new connections.
    let mut failures = 0;
    loop {
        match store.get_response("ada", "resp_1").await {
            Ok(got) => {
                assert_eq!(got.unwrap(), r);
                break;
            }
            Err(e) => {
                failures += 1;
                assert!(failures <= POOL_SIZE, "still failing: {e}");
            }
        }
    }
    let mut later = r.clone();
    later.status = "completed".into();
    store.put_response(&later).await.unwrap();
    for _ in 0..POOL_SIZE * 2 {
        assert_eq!(
            store.get_response("ada", "resp_1").await.unwrap().unwrap(),
            later
        );
    }
    assert!(connections(&admin, &app).await >= 1);

    drop(store);
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
