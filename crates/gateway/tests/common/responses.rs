//! Helpers of the Responses API tests: requests and their JSON answers, SSE events, waiting for
//! a stored status, and a fresh PostgreSQL schema on the test server.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use serde_json::{json, Value};
use toolbridge_gateway::RunningGateway;

use super::http;

/// `POST /v1/responses`: status and JSON body.
pub async fn create(gw: &RunningGateway, key: Option<&str>, body: Value) -> (u16, Value) {
    post(gw, key, "/responses", body).await
}

/// `POST /v1{path}`: status and JSON body (null when it is not JSON).
pub async fn post(gw: &RunningGateway, key: Option<&str>, path: &str, body: Value) -> (u16, Value) {
    let mut req = http().post(format!("{}{path}", gw.base_url())).json(&body);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// `GET /v1{path}`: status and JSON body (null when it is not JSON).
pub async fn get(gw: &RunningGateway, key: Option<&str>, path: &str) -> (u16, Value) {
    let mut req = http().get(format!("{}{path}", gw.base_url()));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// The stored response `id` once its status is `status` (checked every 20 ms, up to `limit`);
/// panics with the last body seen otherwise.
pub async fn wait_for_status(
    gw: &RunningGateway,
    key: Option<&str>,
    id: &str,
    status: &str,
    limit: Duration,
) -> Value {
    let start = std::time::Instant::now();
    loop {
        let (code, body) = get(gw, key, &format!("/responses/{id}")).await;
        if code == 200 && body["status"] == status {
            return body;
        }
        if start.elapsed() > limit {
            panic!("response {id} did not reach `{status}`: {code} {body}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The client function every test offers.
pub fn weather() -> Value {
    json!({"type": "function", "name": "get_weather", "description": "Weather of a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})
}

/// `event:` / `data:` frames of an SSE body, each checked to name its own type.
pub fn events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|f| !f.trim().is_empty())
        .map(|f| {
            let mut kind = String::new();
            let mut data = Value::Null;
            for line in f.lines() {
                if let Some(k) = line.strip_prefix("event: ") {
                    kind = k.to_owned();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(d).unwrap();
                }
            }
            assert_eq!(data["type"], kind.as_str(), "{f}");
            (kind, data)
        })
        .collect()
}

/// The test PostgreSQL server (scripts/test.sh starts one on 127.0.0.1 and sets the variable).
pub fn postgres_url() -> String {
    std::env::var("TOOLBRIDGE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!(
            "TOOLBRIDGE_TEST_POSTGRES_URL is not set: run the tests with scripts/test.sh, which installs PostgreSQL and starts a throwaway server on 127.0.0.1"
        )
    })
}

/// A schema of its own on the test server, dropped with this value.
pub struct Schema {
    pub name: String,
    /// The store URL whose connections use the schema.
    pub url: String,
}

impl Schema {
    pub async fn create() -> Schema {
        let name = format!(
            "{}_{}",
            toolbridge_state::new_id("tbgw"),
            std::process::id()
        );
        admin()
            .await
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .await
            .unwrap();
        let base = postgres_url();
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}options=-csearch_path%3D{name}");
        Schema { name, url }
    }

    /// Drops the schema and what it holds.
    pub async fn drop_now(self) {
        let _ = admin()
            .await
            .batch_execute(&format!("DROP SCHEMA {} CASCADE", self.name))
            .await;
    }
}

async fn admin() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&postgres_url(), tokio_postgres::NoTls)
        .await
        .expect("connecting to the test PostgreSQL server");
    tokio::spawn(connection);
    client
}
