//! The Responses API across instances (issue 15, "Proof"): two gateways in this process, on
//! different ports, each with its own scripted upstream, share one PostgreSQL store (a fresh
//! schema on the server of TOOLBRIDGE_TEST_POSTGRES_URL). A response created on one is continued
//! on the other with `previous_response_id`; a run paused on one for a client function resumes
//! on the other; tenancy holds on both.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;

use serde_json::{json, Value};
use toolbridge_gateway::{Gateway, ResponsesConfig, RunningGateway, ServerConfig};
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

use common::responses::{create, get, post, wait_for_status, weather, Schema};
use common::{server_config, single, KEYS_VAR};

const KEYS: &str = "sk-ada,sk-bob";
const ADA: Option<&str> = Some("sk-ada");
const BOB: Option<&str> = Some("sk-bob");

/// One instance named `instance` on the store at `url`, serving model `m` from `up`.
async fn instance(up: &TestUpstream, url: &str, instance: &str) -> RunningGateway {
    instance_with(up, url, instance, ResponsesConfig::default()).await
}

async fn instance_with(
    up: &TestUpstream,
    url: &str,
    instance: &str,
    responses: ResponsesConfig,
) -> RunningGateway {
    let mut config: ServerConfig = server_config();
    config.state.url = Some(url.to_owned());
    config.responses = ResponsesConfig {
        instance: Some(instance.to_owned()),
        ..responses
    };
    let env = BTreeMap::from([(KEYS_VAR.to_owned(), KEYS.to_owned())]);
    let gw = Gateway::new(config, vec![single("m", up, "native")], &env).unwrap();
    // As `toolbridge serve` does: the store is opened (and recovered) before serving.
    gw.open_state().await.unwrap();
    gw.spawn().await.unwrap()
}

/// Two instances on one fresh schema, and their upstreams.
struct Pair {
    a: RunningGateway,
    b: RunningGateway,
    up_a: TestUpstream,
    up_b: TestUpstream,
    schema: Schema,
}

async fn pair() -> Pair {
    let schema = Schema::create().await;
    let up_a = TestUpstream::start().await.unwrap();
    let up_b = TestUpstream::start().await.unwrap();
    let a = instance(&up_a, &schema.url, "instance-a").await;
    let b = instance(&up_b, &schema.url, "instance-b").await;
    assert_ne!(a.addr(), b.addr());
    Pair {
        a,
        b,
        up_a,
        up_b,
        schema,
    }
}

#[tokio::test]
async fn a_response_created_on_one_instance_is_continued_and_retrieved_on_the_other() {
    let p = pair().await;
    p.up_a
        .push(Behavior::Reply(Reply::text("Nice to meet you, Ada.")));
    p.up_b
        .push(Behavior::Reply(Reply::text("Your name is Ada.")));

    let (status, first) = create(&p.a, ADA, json!({"model": "m", "input": "I am Ada."})).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["status"], "completed");
    let first_id = first["id"].as_str().unwrap();

    let (status, second) = create(
        &p.b,
        ADA,
        json!({"model": "m", "input": "What is my name?", "previous_response_id": first_id}),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["status"], "completed");
    assert_eq!(second["output_text"], "Your name is Ada.");
    assert_eq!(second["previous_response_id"], first_id);
    // B's upstream got A's conversation: the user's turn and A's answer, then the new question.
    assert!(p.up_a.requests().len() == 1 && p.up_b.requests().len() == 1);
    let messages = p.up_b.requests()[0].body["messages"].clone();
    let dialogue: Vec<(Value, Value)> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| (m["role"].clone(), m["content"].clone()))
        .collect();
    assert_eq!(
        dialogue,
        [
            (json!("user"), json!("I am Ada.")),
            (json!("assistant"), json!("Nice to meet you, Ada.")),
            (json!("user"), json!("What is my name?")),
        ],
        "{messages}"
    );

    // Each instance reads what the other stored, byte for byte.
    let (status, on_b) = get(&p.b, ADA, &format!("/responses/{first_id}")).await;
    assert_eq!(status, 200, "{on_b}");
    assert_eq!(on_b, first);
    let second_id = second["id"].as_str().unwrap();
    let (status, on_a) = get(&p.a, ADA, &format!("/responses/{second_id}")).await;
    assert_eq!(status, 200, "{on_a}");
    assert_eq!(on_a, second);
    let (status, items) = get(&p.b, ADA, &format!("/responses/{first_id}/input_items")).await;
    assert_eq!(status, 200, "{items}");
    assert_eq!(
        items["data"][0]["content"][0]["text"], "I am Ada.",
        "{items}"
    );

    // Another key on B finds none of it, and cannot continue it.
    for path in [
        format!("/responses/{first_id}"),
        format!("/responses/{first_id}/input_items"),
    ] {
        let (status, err) = get(&p.b, BOB, &path).await;
        assert_eq!(status, 404, "{path}: {err}");
    }
    let (status, err) = create(
        &p.b,
        BOB,
        json!({"model": "m", "input": "x", "previous_response_id": first_id}),
    )
    .await;
    assert_eq!(status, 404, "{err}");
    assert_eq!(err["error"]["param"], "previous_response_id");
    assert_eq!(p.up_b.requests().len(), 1, "nothing reached the model");
    p.schema.drop_now().await;
}

#[tokio::test]
async fn a_run_paused_on_one_instance_for_a_function_call_resumes_on_the_other() {
    let p = pair().await;
    p.up_a.push(Behavior::Reply(Reply::tool_call(
        "get_weather",
        r#"{"city":"Paris"}"#,
    )));
    p.up_b
        .push(Behavior::Reply(Reply::text("It is sunny in Paris.")));

    let (status, first) = create(
        &p.a,
        ADA,
        json!({"model": "m", "input": "Weather in Paris?", "tools": [weather()]}),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let call = first["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call")
        .unwrap_or_else(|| panic!("no function call: {first}"))
        .clone();
    assert_eq!(call["name"], "get_weather");
    let call_id = call["call_id"].as_str().unwrap();

    // Another key cannot resume it on B.
    let resume = json!({
        "model": "m", "previous_response_id": first["id"], "tools": [weather()],
        "input": [{"type": "function_call_output", "call_id": call_id, "output": "sunny, 24 C"}],
    });
    let (status, _) = create(&p.b, BOB, resume.clone()).await;
    assert_eq!(status, 404);

    let (status, second) = create(&p.b, ADA, resume).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["status"], "completed", "{second}");
    assert_eq!(second["output_text"], "It is sunny in Paris.");
    // The run went on where A left it: one model request on each instance, and B's holds the
    // question, A's call (same id) and the client's output for it.
    assert_eq!(p.up_a.requests().len(), 1);
    assert_eq!(p.up_b.requests().len(), 1);
    let messages = p.up_b.requests()[0].body["messages"].clone();
    let list = messages.as_array().unwrap();
    assert!(
        list.iter()
            .any(|m| m["role"] == "user" && m["content"] == "Weather in Paris?"),
        "{messages}"
    );
    let assistant = list
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap_or_else(|| panic!("{messages}"));
    assert_eq!(
        assistant["tool_calls"][0]["function"]["name"], "get_weather",
        "{messages}"
    );
    let sent_id = assistant["tool_calls"][0]["id"].as_str().unwrap();
    let result = list
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("{messages}"));
    assert_eq!(result["tool_call_id"], sent_id, "{messages}");
    assert_eq!(result["content"], "sunny, 24 C", "{messages}");

    // A sees the resumed response B stored.
    let (status, on_a) = get(
        &p.a,
        ADA,
        &format!("/responses/{}", second["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(on_a, second);
    p.schema.drop_now().await;
}

/// `/cancel` on the instance that does not run the response: the store says cancelled at once,
/// and the running instance stops the run at its next heartbeat (its admission ends: a user
/// limited to one running response may start another there).
#[tokio::test]
async fn a_background_response_is_cancelled_from_the_other_instance() {
    let schema = Schema::create().await;
    let up_a = TestUpstream::start().await.unwrap();
    let up_b = TestUpstream::start().await.unwrap();
    let one_at_a_time = ResponsesConfig {
        max_concurrent_per_user: 1,
        ..ResponsesConfig::default()
    };
    let a = instance_with(&up_a, &schema.url, "instance-a", one_at_a_time).await;
    let b = instance(&up_b, &schema.url, "instance-b").await;
    // A's answer stops after its first piece and would go on only after two minutes.
    up_a.push(Behavior::StallMidStream {
        after_chunks: 1,
        stall: std::time::Duration::from_secs(120),
        reply: Reply::text("First part. The rest.").with_chunk_size(12),
    });
    up_a.set_default(Some(Behavior::Reply(Reply::text("Next."))));
    let (status, started) = create(
        &a,
        ADA,
        json!({"model": "m", "input": "Talk.", "background": true}),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    let patience = std::time::Duration::from_secs(30);
    wait_for_status(&a, ADA, &id, "in_progress", patience).await;
    // A runs it: one more response of this user is refused there.
    let (status, _) = create(&a, ADA, json!({"model": "m", "input": "x"})).await;
    assert_eq!(status, 429);

    // Another key cannot cancel it from B either.
    let (status, _) = post(&b, BOB, &format!("/responses/{id}/cancel"), json!({})).await;
    assert_eq!(status, 404);
    let (status, cancelled) = post(&b, ADA, &format!("/responses/{id}/cancel"), json!({})).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");

    // A stops the run: its user may start another there.
    let start = std::time::Instant::now();
    loop {
        let (status, body) = create(&a, ADA, json!({"model": "m", "input": "x"})).await;
        if status == 200 {
            assert_eq!(body["output_text"], "Next.", "{body}");
            break;
        }
        assert_eq!(status, 429, "{body}");
        assert!(start.elapsed() < patience, "the run on A never stopped");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let stored = wait_for_status(&b, ADA, &id, "cancelled", patience).await;
    assert_eq!(stored["error"], Value::Null, "{stored}");
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    schema.drop_now().await;
}

/// Issue 34, item 13: two instances on one database with `change` applied to each's config.
async fn pair_with(
    schema: &Schema,
    change: impl Fn(&mut ServerConfig),
) -> (RunningGateway, RunningGateway, TestUpstream, TestUpstream) {
    let (up_a, up_b) = (
        TestUpstream::start().await.unwrap(),
        TestUpstream::start().await.unwrap(),
    );
    let mut gateways = Vec::new();
    for (up, name) in [(&up_a, "instance-a"), (&up_b, "instance-b")] {
        let mut config: ServerConfig = server_config();
        config.state.url = Some(schema.url.clone());
        config.responses.instance = Some(name.to_owned());
        change(&mut config);
        let env = BTreeMap::from([(KEYS_VAR.to_owned(), KEYS.to_owned())]);
        let gw = Gateway::new(config, vec![single("m", up, "native")], &env).unwrap();
        gw.open_state().await.unwrap();
        gateways.push(gw.spawn().await.unwrap());
    }
    let b = gateways.pop().unwrap();
    let a = gateways.pop().unwrap();
    (a, b, up_a, up_b)
}

#[tokio::test]
async fn a_keys_rate_limit_holds_across_two_instances() {
    let schema = Schema::create().await;
    // Three requests at once, then one a minute: the burst is the window the test spends.
    let (a, b, _up_a, _up_b) = pair_with(&schema, |c| {
        c.rate_limit_per_minute = 1;
        c.rate_limit_burst = 3;
    })
    .await;
    let mut statuses = Vec::new();
    let mut retry_after = Vec::new();
    for i in 0..8 {
        let gw = if i % 2 == 0 { &a } else { &b };
        let resp = common::http()
            .get(format!("{}/models", gw.base_url()))
            .bearer_auth("sk-ada")
            .send()
            .await
            .unwrap();
        statuses.push(resp.status().as_u16());
        if let Some(v) = resp.headers().get("retry-after") {
            retry_after.push(v.to_str().unwrap().parse::<u64>().unwrap());
        }
    }
    // Before the shared limit each instance let three through: six in all.
    assert_eq!(
        statuses,
        [200, 200, 200, 429, 429, 429, 429, 429],
        "{statuses:?}"
    );
    assert_eq!(retry_after.len(), 5);
    assert!(
        retry_after.iter().all(|s| (1..=60).contains(s)),
        "{retry_after:?}"
    );
    // Another key has its own limit.
    let resp = common::http()
        .get(format!("{}/models", b.base_url()))
        .bearer_auth("sk-bob")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    schema.drop_now().await;
}

#[tokio::test]
async fn a_users_concurrency_cap_holds_across_two_instances() {
    let schema = Schema::create().await;
    let (a, b, up_a, up_b) = pair_with(&schema, |c| c.responses.max_concurrent_per_user = 1).await;
    up_a.push(Behavior::StallMidStream {
        after_chunks: 1,
        stall: std::time::Duration::from_secs(120),
        reply: Reply::text("First part. The rest.").with_chunk_size(12),
    });
    up_b.set_default(Some(Behavior::Reply(Reply::text("Next."))));
    let (status, started) = create(
        &a,
        ADA,
        json!({"model": "m", "input": "Talk.", "background": true}),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    let patience = std::time::Duration::from_secs(30);
    wait_for_status(&a, ADA, &id, "in_progress", patience).await;
    // ada runs one response on A: B refuses her a second one (before: B counted only its own).
    let (status, err) = create(&b, ADA, json!({"model": "m", "input": "x"})).await;
    assert_eq!(status, 429, "{err}");
    assert_eq!(
        err["error"]["code"], "too_many_concurrent_responses",
        "{err}"
    );
    // Another user is not held back by ada's run.
    let (status, other) = create(&b, BOB, json!({"model": "m", "input": "x"})).await;
    assert_eq!(status, 200, "{other}");
    // Once A's run ends (cancelled), B lets her start one.
    let (status, _) = post(&a, ADA, &format!("/responses/{id}/cancel"), json!({})).await;
    assert_eq!(status, 200);
    let start = std::time::Instant::now();
    loop {
        let (status, body) = create(&b, ADA, json!({"model": "m", "input": "x"})).await;
        if status == 200 {
            assert_eq!(body["output_text"], "Next.", "{body}");
            break;
        }
        assert_eq!(status, 429, "{body}");
        assert!(start.elapsed() < patience, "A's slot was never freed");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    schema.drop_now().await;
}

#[tokio::test]
async fn a_users_file_quota_holds_across_two_instances() {
    let schema = Schema::create().await;
    let (a, b, _up_a, _up_b) =
        pair_with(&schema, |c| c.state.max_file_bytes_per_user = 100_000).await;
    let upload = |gw: &RunningGateway, size: usize| {
        let form = reqwest::multipart::Form::new()
            .text("purpose", "user_data")
            .part(
                "file",
                reqwest::multipart::Part::bytes(vec![7u8; size]).file_name("f.bin"),
            );
        common::http()
            .post(format!("{}/files", gw.base_url()))
            .bearer_auth("sk-ada")
            .multipart(form)
            .send()
    };
    let first: Value = upload(&a, 60_000).await.unwrap().json().await.unwrap();
    let refused = upload(&b, 50_000).await.unwrap();
    assert_eq!(refused.status().as_u16(), 400);
    let err: Value = refused.json().await.unwrap();
    assert_eq!(err["error"]["code"], "storage_quota_exceeded", "{err}");
    let deleted = common::http()
        .delete(format!(
            "{}/files/{}",
            a.base_url(),
            first["id"].as_str().unwrap()
        ))
        .bearer_auth("sk-ada")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 200);
    assert_eq!(upload(&b, 50_000).await.unwrap().status().as_u16(), 200);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    schema.drop_now().await;
}
