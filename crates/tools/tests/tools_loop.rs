//! Each built-in tool through the agent loop with the scripted provider, against loopback fakes
//! of the real services' wire formats (SearxNG's JSON API, the Brave Search API, OpenAI's images
//! API) and loopback web servers.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::Query;
use axum::http::{header, HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use serde_json::{json, Value};
use toolbridge_agent::skills::SkillSet;
use toolbridge_agent::{Agent, AgentConfig, RunState, Tool, ToolContext, Toolbox, ToolboxConfig};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::texts;
use toolbridge_protocol::types::{ChatRequest, Message};
use toolbridge_providers::scripted::{ScriptedReply, ScriptedUpstream};
use toolbridge_providers::{Arm, Model};
use toolbridge_tools::fetch_image::FetchImage;
use toolbridge_tools::images::{ImageGenerate, ImagesEndpoint};
use toolbridge_tools::memory::{MemoryStore, SqliteStore};
use toolbridge_tools::save_memory::SaveMemory;
use toolbridge_tools::search::{Backend, SearchBackend, WebSearch};
use toolbridge_tools::web_fetch::WebFetch;

/// Runs one call of `tool` through the loop; returns the tool message (text, is_error), the run
/// state and the requests the model got.
async fn through_loop(
    tool: impl Tool,
    args: Value,
    context: ToolContext,
    memories: Vec<String>,
) -> ((String, bool), RunState, Vec<ChatRequest>) {
    let name = tool.spec().name.clone();
    let toolbox = Toolbox::new(ToolboxConfig::default()).with(tool).unwrap();
    let upstream = ScriptedUpstream::new(vec![
        ScriptedReply::calls([(name.as_str(), args)]),
        ScriptedReply::text("Done."),
    ]);
    let model = Model::new(
        "m",
        vec![Arm::new(Arc::new(upstream.clone()), ToolMode::Native)],
    );
    let config = AgentConfig {
        memories,
        ..AgentConfig::default()
    };
    let agent = Agent::new(model, toolbox, SkillSet::default(), config).unwrap();
    let state = agent.run(vec![Message::user("go")], context).finish().await;
    let tool_msg = state
        .messages
        .iter()
        .find_map(|m| match m {
            Message::Tool {
                content, is_error, ..
            } => Some((content.text().into_owned(), *is_error)),
            _ => None,
        })
        .expect("a tool message");
    assert_eq!(state.answer, "Done.");
    (tool_msg, state, upstream.requests())
}

fn workspace() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext {
        workspace: Some(dir.path().join("ws")),
        ..ToolContext::default()
    };
    (dir, ctx)
}

const ARTICLE: &str = r#"<!doctype html><html><head><title>Otters of the Pacific</title></head><body>
<nav><a href="/">Home</a> | <a href="/shop">Shop</a> | <a href="/login">Log in</a></nav>
<article><h1>Otters of the Pacific</h1>
<p>Sea otters use stones as tools to crack open shellfish, a behaviour that has been observed for decades along the coasts of California and Alaska. They float on their backs while eating.</p>
<p>Their fur is the densest of any animal, with up to a million hairs per square inch, which keeps them warm in cold water since they lack the blubber that other marine mammals rely on.</p>
<p>Populations were hunted nearly to extinction during the fur trade, and recovery has been slow but steady in protected areas, where kelp forests have recovered with them.</p>
</article>
<footer>Copyright 2024 Example Corp. All rights reserved.</footer></body></html>"#;

#[tokio::test]
async fn web_fetch_returns_main_text_and_per_url_errors() {
    let router = Router::new()
        .route(
            "/otters",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    ARTICLE,
                )
            }),
        )
        .route(
            "/notes.txt",
            get(|| async { ([(header::CONTENT_TYPE, "text/plain")], "plain notes") }),
        )
        .route("/missing", get(|| async { StatusCode::NOT_FOUND }))
        .route(
            "/zip",
            get(|| async { ([(header::CONTENT_TYPE, "application/zip")], "PK") }),
        );
    let addr = common::serve(router).await;
    let tool = WebFetch::new(common::guard(addr.port(), &[]));
    let base = format!("http://{addr}");
    let urls = json!([
        format!("{base}/otters"),
        format!("{base}/missing"),
        format!("http://10.0.0.1:{}/", addr.port()),
        format!("{base}/notes.txt")
    ]);
    let ((text, is_error), _, _) = through_loop(
        tool,
        json!({"url": format!("{base}/zip"), "urls": urls}),
        ToolContext::default(),
        vec![],
    )
    .await;
    assert!(!is_error, "{text}");
    assert!(text.contains("Title: Otters of the Pacific"), "{text}");
    assert!(text.contains(&format!("URL: {base}/otters")), "{text}");
    assert!(text.contains("Sea otters use stones as tools"), "{text}");
    assert!(!text.contains("Log in"), "navigation kept: {text}");
    assert!(
        text.contains(&texts::fetch_failed(
            &format!("{base}/zip"),
            "its content type application/zip is not a web page or text"
        )),
        "{text}"
    );
    // Only 4 URLs: the url plus the first three of urls.
    assert!(!text.contains("plain notes"), "{text}");
    assert!(
        text.contains(&texts::fetch_failed(
            &format!("{base}/missing"),
            "the server answered with HTTP status 404"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Could not fetch http://10.0.0.1:{}/: 10.0.0.1 is an internal or reserved address.",
            addr.port()
        )),
        "{text}"
    );

    // All failing: the call is an error.
    let tool = WebFetch::new(common::guard(addr.port(), &[]));
    let ((text, is_error), _, _) = through_loop(
        tool,
        json!({"url": "file:///etc/passwd"}),
        ToolContext::default(),
        vec![],
    )
    .await;
    assert!(is_error);
    assert_eq!(
        text,
        "Could not fetch file:///etc/passwd: only http and https URLs can be fetched, not file."
    );
    let tool = WebFetch::new(common::guard(addr.port(), &[]));
    let ((text, is_error), _, _) =
        through_loop(tool, json!({}), ToolContext::default(), vec![]).await;
    assert!(is_error);
    assert_eq!(text, texts::WEB_FETCH_NO_URL);
}

#[tokio::test]
async fn fetch_image_checks_type_and_bytes_and_generates_names() {
    let router = Router::new()
        .route(
            "/a/../../cat.png",
            get(|| async {
                (
                    [
                        (header::CONTENT_TYPE, "image/png"),
                        (
                            header::CONTENT_DISPOSITION,
                            "attachment; filename=\"../../evil.sh\"",
                        ),
                    ],
                    common::PNG,
                )
            }),
        )
        .route(
            "/cat.png",
            get(|| async {
                (
                    [
                        (header::CONTENT_TYPE, "image/png"),
                        (
                            header::CONTENT_DISPOSITION,
                            "attachment; filename=\"../../evil.sh\"",
                        ),
                    ],
                    common::PNG,
                )
            }),
        )
        .route(
            "/fake.png",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "image/png")],
                    "<svg onload=alert(1)>",
                )
            }),
        )
        .route(
            "/page.png",
            get(|| async { ([(header::CONTENT_TYPE, "text/html")], common::PNG) }),
        );
    let addr = common::serve(router).await;
    let base = format!("http://{addr}");
    let (dir, ctx) = workspace();

    let tool = FetchImage::new(common::guard(addr.port(), &[]));
    let ((text, is_error), _, _) = through_loop(
        tool,
        json!({"url": format!("{base}/cat.png"), "filename": "../../etc/passwd"}),
        ctx.clone(),
        vec![],
    )
    .await;
    assert!(!is_error, "{text}");
    let files: Vec<String> = std::fs::read_dir(dir.path().join("ws/downloads"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files.len(), 1);
    let name = &files[0];
    assert!(
        name.starts_with("passwd-")
            && name.ends_with(".png")
            && name.len() == "passwd-".len() + 12 + 4,
        "{name}"
    );
    assert_eq!(
        text,
        texts::fetch_image_saved(
            &format!("/workspace/downloads/{name}"),
            "image/png",
            common::PNG.len()
        )
    );
    assert_eq!(
        std::fs::read(dir.path().join("ws/downloads").join(name)).unwrap(),
        common::PNG
    );

    // No filename: a generated stem; two downloads never collide.
    for _ in 0..2 {
        let tool = FetchImage::new(common::guard(addr.port(), &[]));
        let ((text, is_error), _, _) = through_loop(
            tool,
            json!({"url": format!("{base}/cat.png")}),
            ctx.clone(),
            vec![],
        )
        .await;
        assert!(
            !is_error && text.contains("/workspace/downloads/image-"),
            "{text}"
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path().join("ws/downloads"))
            .unwrap()
            .count(),
        3
    );
    assert!(!dir.path().join("evil.sh").exists() && !dir.path().join("ws/evil.sh").exists());

    for (path, reason) in [
        ("/fake.png", texts::NET_BAD_IMAGE.to_owned()),
        (
            "/page.png",
            "it is not an image (content type text/html)".to_owned(),
        ),
    ] {
        let tool = FetchImage::new(common::guard(addr.port(), &[]));
        let ((text, is_error), _, _) = through_loop(
            tool,
            json!({"url": format!("{base}{path}")}),
            ctx.clone(),
            vec![],
        )
        .await;
        assert!(is_error);
        assert_eq!(text, texts::fetch_failed(&format!("{base}{path}"), &reason));
    }
    assert_eq!(
        std::fs::read_dir(dir.path().join("ws/downloads"))
            .unwrap()
            .count(),
        3
    );

    // Without a workspace the tool refuses.
    let tool = FetchImage::new(common::guard(addr.port(), &[]));
    let ((text, is_error), _, _) = through_loop(
        tool,
        json!({"url": format!("{base}/cat.png")}),
        ToolContext::default(),
        vec![],
    )
    .await;
    assert!(is_error);
    assert_eq!(text, texts::NO_WORKSPACE);
}

#[cfg(unix)]
#[tokio::test]
async fn fetch_image_refuses_a_downloads_folder_that_is_a_symlink() {
    let addr = common::serve(Router::new().route(
        "/cat.png",
        get(|| async { ([(header::CONTENT_TYPE, "image/png")], common::PNG) }),
    ))
    .await;
    let (dir, ctx) = workspace();
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.path().join("ws/downloads")).unwrap();
    let tool = FetchImage::new(common::guard(addr.port(), &[]));
    let ((text, is_error), _, _) = through_loop(
        tool,
        json!({"url": format!("http://{addr}/cat.png")}),
        ctx,
        vec![],
    )
    .await;
    assert!(is_error);
    assert_eq!(text, texts::ERROR_FAILED);
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

type Seen = Arc<Mutex<Vec<(HashMap<String, String>, HeaderMap)>>>;

#[tokio::test]
async fn web_search_against_searxng_and_brave_fakes() {
    let seen: Seen = Arc::default();
    let s1 = Arc::clone(&seen);
    let s2 = Arc::clone(&seen);
    let router = Router::new()
        .route(
            "/searx/search",
            get(move |Query(q): Query<HashMap<String, String>>, headers: HeaderMap| async move {
                s1.lock().unwrap().push((q.clone(), headers));
                if q.get("format").map(String::as_str) != Some("json") {
                    return (StatusCode::FORBIDDEN, Json(json!({}))); // SearxNG without json enabled
                }
                let query = q.get("q").cloned().unwrap_or_default();
                if query == "nothing" {
                    return (StatusCode::OK, Json(json!({"query": query, "results": []})));
                }
                let results: Vec<Value> = (1..=12)
                    .map(|i| json!({"url": format!("https://example.org/{i}"), "title": format!("{query} result {i}"), "content": format!("Snippet {i} about {query}."), "engine": "duckduckgo", "score": 1.0}))
                    .collect();
                (StatusCode::OK, Json(json!({"query": query, "number_of_results": 12, "results": results, "answers": [], "suggestions": []})))
            }),
        )
        .route(
            "/brave/res/v1/web/search",
            get(move |Query(q): Query<HashMap<String, String>>, headers: HeaderMap| async move {
                s2.lock().unwrap().push((q.clone(), headers.clone()));
                if headers.get("x-subscription-token").and_then(|v| v.to_str().ok()) != Some("brave-key") {
                    return (StatusCode::UNAUTHORIZED, Json(json!({"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID"}})));
                }
                let count: usize = q.get("count").and_then(|c| c.parse().ok()).unwrap_or(20);
                let results: Vec<Value> = (1..=count)
                    .map(|i| json!({"type": "search_result", "title": format!("Brave <strong>{}</strong> {i}", q["q"]), "url": format!("https://brave.example/{i}"), "description": format!("About <strong>{}</strong> &amp; more.", q["q"])}))
                    .collect();
                (StatusCode::OK, Json(json!({"type": "search", "query": {"original": q["q"]}, "web": {"type": "search", "results": results}})))
            }),
        );
    let addr = common::serve(router).await;

    let searx = Backend {
        kind: SearchBackend::Searxng,
        base_url: format!("http://{addr}/searx"),
        api_key: None,
        timeout: std::time::Duration::from_secs(5),
    };
    let ((text, is_error), _, _) = through_loop(
        WebSearch::new(Some(searx.clone())),
        json!({"queries": ["rust async", "nothing"], "top_k": 2}),
        ToolContext::default(),
        vec![],
    )
    .await;
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "Results for \"rust async\":\n1. rust async result 1\n   https://example.org/1\n   Snippet 1 about rust async.\n2. rust async result 2\n   https://example.org/2\n   Snippet 2 about rust async.\n\nNo results for \"nothing\"."
    );
    let ((text, _), _, _) = through_loop(
        WebSearch::new(Some(searx)),
        json!({"query": "otters"}),
        ToolContext::default(),
        vec![],
    )
    .await;
    assert_eq!(
        text.matches("\n   https://example.org/").count(),
        5,
        "default top_k is 5: {text}"
    );

    let brave = Backend {
        kind: SearchBackend::Brave,
        base_url: format!("http://{addr}/brave/res/v1"),
        api_key: Some("brave-key".into()),
        timeout: std::time::Duration::from_secs(5),
    };
    let ((text, is_error), _, _) = through_loop(
        WebSearch::new(Some(brave.clone())),
        json!({"query": "otters", "top_k": 3}),
        ToolContext::default(),
        vec![],
    )
    .await;
    assert!(!is_error, "{text}");
    assert!(text.starts_with("Results for \"otters\":\n1. Brave otters 1\n   https://brave.example/1\n   About otters & more.\n2."), "{text}");
    assert_eq!(text.matches("https://brave.example/").count(), 3);
    let last = seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last.0.get("count").map(String::as_str), Some("3"));

    let bad = Backend {
        api_key: Some("wrong".into()),
        ..brave
    };
    let ((text, is_error), _, _) = through_loop(
        WebSearch::new(Some(bad)),
        json!({"query": "otters"}),
        ToolContext::default(),
        vec![],
    )
    .await;
    assert!(is_error);
    assert_eq!(
        text,
        texts::search_failed("otters", "the server answered with HTTP status 401")
    );

    let ((text, is_error), _, _) = through_loop(
        WebSearch::new(None),
        json!({"query": "otters"}),
        ToolContext::default(),
        vec![],
    )
    .await;
    assert!(is_error);
    assert_eq!(text, texts::SEARCH_NOT_CONFIGURED);
}

#[test]
fn search_backends_from_config() {
    use toolbridge_tools::search::SearchConfig;
    let env = |k: &str| (k == "BRAVE_API_KEY").then(|| "k".to_owned());
    let none = |_: &str| None;
    assert!(Backend::from_config(&SearchConfig::default(), &env)
        .unwrap()
        .is_none());
    let brave = SearchConfig {
        backend: Some(SearchBackend::Brave),
        ..SearchConfig::default()
    };
    let b = Backend::from_config(&brave, &env).unwrap().unwrap();
    assert_eq!(b.base_url, "https://api.search.brave.com/res/v1");
    assert_eq!(b.api_key.as_deref(), Some("k"));
    assert!(Backend::from_config(&brave, &none)
        .unwrap_err()
        .contains("BRAVE_API_KEY"));
    let searx = SearchConfig {
        backend: Some(SearchBackend::Searxng),
        ..SearchConfig::default()
    };
    assert!(Backend::from_config(&searx, &none)
        .unwrap_err()
        .contains("base_url"));
}

#[tokio::test]
async fn image_generate_and_edit_against_an_openai_images_fake() {
    let bodies: Arc<Mutex<Vec<(String, HeaderMap, Bytes)>>> = Arc::default();
    let b1 = Arc::clone(&bodies);
    let b2 = Arc::clone(&bodies);
    let b64 = base64::engine::general_purpose::STANDARD.encode(common::PNG);
    let b64b = b64.clone();
    let router = Router::new()
        .route(
            "/v1/images/generations",
            post(move |headers: HeaderMap, body: Bytes| async move {
                b1.lock().unwrap().push(("generations".into(), headers, body.clone()));
                let req: Value = serde_json::from_slice(&body).unwrap();
                if req["prompt"] == "forbidden" {
                    return (StatusCode::BAD_REQUEST, Json(json!({"error": {"message": "Your request was rejected by the safety system.", "type": "image_generation_user_error"}})));
                }
                let n = req["n"].as_u64().unwrap_or(1);
                let data: Vec<Value> = (0..n).map(|_| json!({"b64_json": b64})).collect();
                (StatusCode::OK, Json(json!({"created": 1, "data": data, "usage": {"total_tokens": 10}})))
            }),
        )
        .route(
            "/v1/images/edits",
            post(move |headers: HeaderMap, body: Bytes| async move {
                b2.lock().unwrap().push(("edits".into(), headers, body));
                (StatusCode::OK, Json(json!({"created": 1, "data": [{"b64_json": b64b}]})))
            }),
        );
    let addr = common::serve(router).await;
    let endpoint = ImagesEndpoint {
        base_url: format!("http://{addr}/v1"),
        model: "gpt-image-1".into(),
        api_key: Some("img-key".into()),
        response_format: None,
        timeout: std::time::Duration::from_secs(5),
        sizes: vec![],
    };
    let tool = || ImageGenerate::new(Some(endpoint.clone()), common::guard(addr.port(), &[]));
    let (dir, ctx) = workspace();

    // Edit before anything was generated.
    let ((text, is_error), _, _) = through_loop(
        tool(),
        json!({"prompt": "make it blue", "action": "edit", "base_image": "previous_generation"}),
        ctx.clone(),
        vec![],
    )
    .await;
    assert!(is_error);
    assert_eq!(text, texts::IMAGES_NO_PREVIOUS);

    let ((text, is_error), _, _) = through_loop(tool(), json!({"prompt": "an otter", "action": "generate", "base_image": "none", "n": 2, "size": "1024x1024"}), ctx.clone(), vec![]).await;
    assert!(!is_error, "{text}");
    let paths: Vec<&str> = text
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("/workspace/"))
        .collect();
    assert_eq!(paths.len(), 2, "{text}");
    for p in &paths {
        let name = p.strip_prefix("/workspace/outputs/").unwrap();
        assert!(
            name.starts_with("image-") && name.ends_with(".png"),
            "{name}"
        );
        assert_eq!(
            std::fs::read(dir.path().join("ws/outputs").join(name)).unwrap(),
            common::PNG
        );
    }
    {
        let seen = bodies.lock().unwrap();
        let (_, headers, body) = &seen[0];
        assert_eq!(headers["authorization"], "Bearer img-key");
        let req: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(
            req,
            json!({"model": "gpt-image-1", "prompt": "an otter", "n": 2, "size": "1024x1024"})
        );
    }

    let ((text, is_error), _, _) = through_loop(
        tool(),
        json!({"prompt": "make it blue", "action": "edit", "base_image": "previous_generation"}),
        ctx.clone(),
        vec![],
    )
    .await;
    assert!(!is_error, "{text}");
    {
        let seen = bodies.lock().unwrap();
        let (kind, headers, body) = seen.last().unwrap();
        assert_eq!(kind, "edits");
        assert!(headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("multipart/form-data; boundary="));
        let body_text = String::from_utf8_lossy(body);
        assert!(
            body_text.contains("name=\"prompt\"\r\n\r\nmake it blue\r\n"),
            "{body_text}"
        );
        assert!(body_text.contains("name=\"model\"\r\n\r\ngpt-image-1\r\n"));
        assert!(
            body_text.contains("name=\"image\"; filename=\"image.png\"\r\nContent-Type: image/png")
        );
        assert!(body.windows(common::PNG.len()).any(|w| w == common::PNG));
    }
    assert_eq!(
        std::fs::read_dir(dir.path().join("ws/outputs"))
            .unwrap()
            .count(),
        3
    );

    // An attachment that does not exist; then one that does (this turn's attachments, in order;
    // crates/tools/tests/images.rs covers the order and the references).
    std::fs::create_dir_all(dir.path().join("ws/uploads")).unwrap();
    std::fs::write(dir.path().join("ws/uploads/a-notes.txt"), "not an image").unwrap();
    std::fs::write(dir.path().join("ws/uploads/b-photo.png"), common::PNG).unwrap();
    let turn = ToolContext {
        attachments: vec!["a-notes.txt".into(), "b-photo.png".into()],
        ..ctx.clone()
    };
    let ((text, is_error), _, _) = through_loop(tool(), json!({"prompt": "x", "action": "edit", "base_image": "current_attachment", "base_image_index": 2}), turn.clone(), vec![]).await;
    assert!(is_error);
    assert_eq!(text, texts::images_no_turn_attachment(2, 1));
    let ((_, is_error), _, _) = through_loop(tool(), json!({"prompt": "x", "action": "edit", "base_image": "current_attachment", "base_image_index": 1}), turn, vec![]).await;
    assert!(!is_error);

    let ((text, is_error), _, _) = through_loop(
        tool(),
        json!({"prompt": "x", "action": "generate", "base_image": "previous_generation"}),
        ctx.clone(),
        vec![],
    )
    .await;
    assert!(is_error);
    assert_eq!(text, texts::IMAGES_BAD_BASE);
    let ((text, is_error), _, _) = through_loop(
        tool(),
        json!({"prompt": "forbidden", "action": "generate", "base_image": "none"}),
        ctx.clone(),
        vec![],
    )
    .await;
    assert!(is_error);
    assert_eq!(text, texts::images_failed("the server answered with HTTP status 400 (Your request was rejected by the safety system.)"));
    let ((text, is_error), _, _) = through_loop(
        ImageGenerate::new(None, common::guard(1, &[])),
        json!({"prompt": "x", "action": "generate", "base_image": "none"}),
        ctx,
        vec![],
    )
    .await;
    assert!(is_error);
    assert_eq!(text, texts::IMAGES_NOT_CONFIGURED);
}

#[tokio::test]
async fn save_memory_records_provenance_and_later_runs_see_active_memories() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::new(dir.path().join("data/memory.sqlite3")));
    assert!(
        !dir.path().join("data").exists(),
        "created on first use only"
    );
    let ctx = ToolContext {
        user: "ada".into(),
        conversation: "conv-1".into(),
        ..ToolContext::default()
    };
    let tool = SaveMemory::new(store.clone());
    let ((text, is_error), state, _) = through_loop(tool, json!({"memory_text": "The user's favourite colour is green.", "slot": "favourite_colour", "value": "green"}), ctx.clone(), vec![]).await;
    assert!(!is_error, "{text}");
    assert_eq!(text, texts::MEMORY_SAVED);
    let call_id = state
        .messages
        .iter()
        .find_map(|m| match m {
            Message::Tool { tool_call_id, .. } => Some(tool_call_id.clone()),
            _ => None,
        })
        .unwrap();
    let list = store.list(Some("ada".into()), None).await.unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].status, "ACTIVE");
    assert_eq!(list[0].conversation.as_deref(), Some("conv-1"));
    assert_eq!(list[0].tool_call.as_deref(), Some(call_id.as_str()));
    assert!(list[0].created_at > 1_600_000_000);

    // A new value for the same slot supersedes the old one.
    let tool = SaveMemory::new(store.clone());
    through_loop(tool, json!({"memory_text": "The user's favourite colour is blue.", "slot": "favourite_colour", "value": "blue"}), ctx.clone(), vec![]).await;
    let lines = toolbridge_tools::memory::active_lines(store.as_ref(), "ada")
        .await
        .unwrap();
    assert_eq!(
        lines,
        vec!["The user's favourite colour is blue.".to_owned()]
    );
    assert!(
        toolbridge_tools::memory::active_lines(store.as_ref(), "bob")
            .await
            .unwrap()
            .is_empty()
    );

    // The next run gives them to the model.
    let tool = SaveMemory::new(store.clone());
    let (_, _, requests) = through_loop(tool, json!({"memory_text": "x"}), ctx, lines).await;
    let system: Vec<String> = requests[0]
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::System { content, .. } => Some(content.text().into_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(
        system.last().unwrap(),
        &format!(
            "{}\n- The user's favourite colour is blue.",
            texts::MEMORY_HEADER
        )
    );
    // Identical on every round (cache stability).
    assert_eq!(
        requests[0].messages[..system.len()],
        requests[1].messages[..system.len()]
    );
}
