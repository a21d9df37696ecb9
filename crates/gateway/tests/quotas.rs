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
