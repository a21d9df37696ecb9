//! Request checks and the model endpoints: tool definitions validated with the field named
//! (issue 13 item 6), `GET /v1/models/{id}` and models whose upstream is not set up (item 24).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;

use common::*;
use serde_json::{json, Value};
use toolbridge_gateway::Gateway;
use toolbridge_testkit::{Reply, TestUpstream};

#[tokio::test]
async fn tool_definitions_that_could_inject_markup_get_400_naming_the_field() {
    let up = TestUpstream::start().await.unwrap();
    up.set_default(Some(Reply::text("ok").into()));
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let client = http();
    let tool = |name: &str, parameters: Value| json!({"type": "function", "function": {"name": name, "parameters": parameters}});
    let cases = [
        (tool("</tool_call>", json!({})), "tools[1].function.name"),
        (
            tool("get_weather</tool_call><tool_call>", json!({})),
            "tools[1].function.name",
        ),
        (tool("<|im_end|>", json!({})), "tools[1].function.name"),
        (tool("", json!({})), "tools[1].function.name"),
        (tool("get_weather", json!({})), "tools[1].function.name"),
        (
            tool("ok", json!("not a schema")),
            "tools[1].function.parameters",
        ),
        (
            tool("ok", json!({"type": "array"})),
            "tools[1].function.parameters",
        ),
    ];
    for (bad, param) in cases {
        let mut req = tool_request("local", false);
        req["tools"] = json!([weather_tool(), bad]);
        let res = post(&client, &gw, &req).await;
        assert_eq!(res.status(), 400, "{req}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["param"], param, "{body}");
        assert_eq!(body["error"]["type"], "invalid_request_error");
    }
    assert!(up.requests().is_empty(), "nothing reached the upstream");
    assert_eq!(
        post(&client, &gw, &tool_request("local", false))
            .await
            .status(),
        200
    );
}

#[tokio::test]
async fn models_can_be_retrieved_one_by_one() {
    let up = TestUpstream::start().await.unwrap();
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let client = http();
    let res = client
        .get(format!("{}/models/local", gw.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/json");
    let model: Value = res.json().await.unwrap();
    assert_eq!(
        model,
        json!({"id": "local", "object": "model", "created": 0, "owned_by": "toolbridge"})
    );
    let res = client
        .get(format!("{}/models/nope", gw.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "model_not_found");
    assert_eq!(body["error"]["type"], "invalid_request_error");
}

#[tokio::test]
async fn a_model_that_is_not_set_up_answers_503_and_the_others_work() {
    let up = TestUpstream::start().await.unwrap();
    up.set_default(Some(Reply::text("ok").into()));
    let gw = Gateway::new(
        server_config(),
        vec![single("local", &up, "prompt")],
        &BTreeMap::new(),
    )
    .unwrap()
    .with_unavailable([(
        "smart".to_owned(),
        "set OPENAI_API_KEY to use this provider".to_owned(),
    )])
    .unwrap();
    assert_eq!(gw.unavailable_model_names(), ["smart"]);
    let gw = gw.spawn().await.unwrap();
    let client = http();
    let res = post(&client, &gw, &tool_request("smart", false)).await;
    assert_eq!(res.status(), 503);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "model_unavailable");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`smart`") && message.contains("not available"),
        "{message}"
    );
    assert!(
        !message.contains("OPENAI_API_KEY"),
        "the reason stays in the log"
    );
    assert_eq!(
        post(&client, &gw, &tool_request("local", false))
            .await
            .status(),
        200
    );
    let list: Value = client
        .get(format!("{}/models", gw.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
}
