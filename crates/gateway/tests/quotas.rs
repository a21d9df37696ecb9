//! Issue 34 at the gateway, on SQLite: `GET /v1/files` paged with cursors (item 7), the
//! per-user quota on stored files and its answer (item 11).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;

use serde_json::Value;
use toolbridge_gateway::{Gateway, RunningGateway, ServerConfig};
use toolbridge_testkit::TestUpstream;

use common::responses::get;
use common::{http, server_config, single, KEYS_VAR};

const ADA: Option<&str> = Some("sk-ada");
const BOB: Option<&str> = Some("sk-bob");

/// A gateway with keys for ada and bob on a SQLite file in `dir`.
async fn gateway(dir: &std::path::Path, change: impl FnOnce(&mut ServerConfig)) -> RunningGateway {
    let up = TestUpstream::start().await.unwrap();
    let mut config = server_config();
    config.state.path = Some(dir.join("state.sqlite3"));
    change(&mut config);
    let env = BTreeMap::from([(KEYS_VAR.to_owned(), "sk-ada,sk-bob".to_owned())]);
    Gateway::new(config, vec![single("m", &up, "native")], &env)
        .unwrap()
        .spawn()
        .await
        .unwrap()
}

/// `POST /v1/files` of `bytes` named `name`: status and body.
async fn upload(
    gw: &RunningGateway,
    key: Option<&str>,
    name: &str,
    bytes: Vec<u8>,
) -> (u16, Value) {
    let form = reqwest::multipart::Form::new()
        .text("purpose", "user_data")
        .part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name(name.to_owned()),
        );
    let mut req = http()
        .post(format!("{}/files", gw.base_url()))
        .multipart(form);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.unwrap();
    (
        resp.status().as_u16(),
        resp.json().await.unwrap_or(Value::Null),
    )
}

async fn delete(gw: &RunningGateway, key: Option<&str>, path: &str) -> u16 {
    let mut req = http().delete(format!("{}{path}", gw.base_url()));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    req.send().await.unwrap().status().as_u16()
}

fn ids(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn files_are_listed_a_page_at_a_time_with_cursors() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), |_| {}).await;
    let mut uploaded = Vec::new();
    for i in 0..30 {
        let (status, file) = upload(&gw, ADA, &format!("f{i}.txt"), vec![b'x'; 10]).await;
        assert_eq!(status, 200, "{file}");
        uploaded.push(file["id"].as_str().unwrap().to_owned());
    }
    upload(&gw, BOB, "bob.txt", b"bob".to_vec()).await;

    // The default page holds them all (OpenAI's default limit for files is 10,000).
    let (status, all) = get(&gw, ADA, "/files").await;
    assert_eq!(status, 200, "{all}");
    let newest_first: Vec<String> = uploaded.iter().rev().cloned().collect();
    assert_eq!(ids(&all), newest_first);
    assert_eq!(all["has_more"], false);

    for (order, expected) in [("desc", &newest_first), ("asc", &uploaded)] {
        let mut walked = Vec::new();
        let mut path = format!("/files?limit=5&order={order}");
        let mut pages = 0;
        loop {
            let (status, page) = get(&gw, ADA, &path).await;
            assert_eq!(status, 200, "{page}");
            pages += 1;
            let page_ids = ids(&page);
            assert_eq!(page_ids.len(), 5, "{order}: {page}");
            assert_eq!(page["object"], "list");
            assert_eq!(page["first_id"], page_ids[0].as_str());
            assert_eq!(page["last_id"], page_ids[4].as_str());
            walked.extend(page_ids);
            if page["has_more"] == false {
                break;
            }
            assert!(pages < 7, "{order}: the walk does not end");
            path = format!(
                "/files?limit=5&order={order}&after={}",
                page["last_id"].as_str().unwrap()
            );
        }
        assert_eq!(pages, 6, "{order}");
        assert_eq!(
            &walked, expected,
            "{order}: every file exactly once, in order"
        );
    }

    // A cursor this list does not hold: gone, another key's, or never there.
    let (_, bobs) = get(&gw, BOB, "/files").await;
    let bobs_file = ids(&bobs)[0].clone();
    for after in ["file-00000000000000000000000000000000", bobs_file.as_str()] {
        let (status, err) = get(&gw, ADA, &format!("/files?after={after}")).await;
        assert_eq!(status, 400, "{err}");
        assert_eq!(err["error"]["param"], "after", "{err}");
        assert_eq!(err["error"]["type"], "invalid_request_error", "{err}");
    }
    let (status, err) = get(&gw, ADA, "/files?order=sideways").await;
    assert_eq!(
        (status, err["error"]["param"].clone()),
        (400, "order".into())
    );
    gw.shutdown().await.unwrap();
}

#[tokio::test]
async fn uploads_beyond_the_file_quota_are_refused_and_accepted_after_a_delete() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), |c| {
        c.state.max_file_bytes = 60_000;
        c.state.max_file_bytes_per_user = 100_000;
    })
    .await;
    let (status, first) = upload(&gw, ADA, "a.bin", vec![1; 60_000]).await;
    assert_eq!(status, 200, "{first}");
    let (status, err) = upload(&gw, ADA, "b.bin", vec![2; 50_000]).await;
    assert_eq!(status, 400, "{err}");
    assert_eq!(err["error"]["type"], "invalid_request_error", "{err}");
    assert_eq!(err["error"]["code"], "storage_quota_exceeded", "{err}");
    assert_eq!(err["error"]["param"], "file", "{err}");
    let message = err["error"]["message"].as_str().unwrap();
    for figure in [
        "60000 bytes",
        "100000 bytes",
        "50000 more",
        "max_file_bytes_per_user",
    ] {
        assert!(message.contains(figure), "{figure}: {message}");
    }
    // Nothing was stored, and another user's quota is their own.
    let (_, list) = get(&gw, ADA, "/files").await;
    assert_eq!(ids(&list).len(), 1, "{list}");
    let (status, _) = upload(&gw, BOB, "b.bin", vec![2; 50_000]).await;
    assert_eq!(status, 200);
    // After a delete the same upload fits.
    let first_id = first["id"].as_str().unwrap();
    assert_eq!(delete(&gw, ADA, &format!("/files/{first_id}")).await, 200);
    let (status, second) = upload(&gw, ADA, "b.bin", vec![2; 50_000]).await;
    assert_eq!(status, 200, "{second}");
    gw.shutdown().await.unwrap();
}

/// Item 11's figures at the gateway: ten uploads of 4 MiB, then their deletes.
#[tokio::test]
async fn the_database_file_shrinks_after_large_uploads_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), |c| c.state.max_file_bytes = 4 << 20).await;
    let db = dir.path().join("state.sqlite3");
    let size = || {
        let wal = dir.path().join("state.sqlite3-wal");
        (
            std::fs::metadata(&db).map_or(0, |m| m.len()),
            std::fs::metadata(wal).map_or(0, |m| m.len()),
        )
    };
    let mut uploaded = Vec::new();
    for i in 0..10 {
        let (status, file) = upload(&gw, ADA, &format!("big{i}.bin"), vec![i; 4 << 20]).await;
        assert_eq!(status, 200, "{file}");
        uploaded.push(file["id"].as_str().unwrap().to_owned());
    }
    let full = size();
    for id in &uploaded {
        assert_eq!(delete(&gw, ADA, &format!("/files/{id}")).await, 200);
    }
    let after = size();
    eprintln!("state.sqlite3 (main, wal) bytes: 40 MiB uploaded {full:?}, all deleted {after:?}");
    assert!(full.0 > 30 << 20, "{full:?}");
    assert!(
        after.0 < 1 << 20,
        "the database file kept the deleted uploads' space: {after:?}"
    );
    gw.shutdown().await.unwrap();
}
