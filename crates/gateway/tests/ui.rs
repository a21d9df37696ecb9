//! The web page at `/ui`. Two kinds of test:
//!
//! - plain HTTP: the page and its files are served without a key (with a strict
//!   Content-Security-Policy, `nosniff`, `no-referrer`) while `/v1` still needs one; a keyless
//!   gateway lets its own origin's requests through and refuses other origins;
//! - in a real browser: headless Chromium driven by Selenium runs ONE script
//!   (`tests/ui/ui_test.py`) against in-process gateways (one with a key, one without) in front of
//!   a scripted upstream, with `python_execute` in the sandbox, a loopback SearxNG and images
//!   endpoint for `web_search` and `image_generate`. The script's header lists what it does, in
//!   the order of the upstream replies scripted here. Screenshots go to `target/ui-screenshots/`.
//!
//! `scripts/test.sh` installs Chromium, chromedriver and Selenium and exports
//! `TOOLBRIDGE_PYTHON`, `TOOLBRIDGE_CHROMIUM`, `TOOLBRIDGE_CHROMEDRIVER` and
//! `TOOLBRIDGE_SANDBOX_PYTHON`; without them the browser test fails and says so.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use serde_json::{json, Value};
use toolbridge_gateway::{Gateway, RunningGateway};
use toolbridge_providers::config::ModelConfig;
use toolbridge_providers::ProviderRegistry;
use toolbridge_runtime::{Config, Overrides, Runtime};
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

use common::{http, server_config, single, start, start_with_keys, KEYS_VAR};

const KEY: &str = "sk-ui-test-key";
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

fn env_or_fail(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run the tests through scripts/test.sh, which installs Chromium, \
             chromedriver and Selenium and the sandbox's Python, and exports TOOLBRIDGE_PYTHON, \
             TOOLBRIDGE_CHROMIUM, TOOLBRIDGE_CHROMEDRIVER and TOOLBRIDGE_SANDBOX_PYTHON"
        )
    })
}

fn ui_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/ui")
}

/// `target/ui-screenshots`: the target folder is the one this test binary was built into
/// (`target/debug/deps/ui-…`), wherever `CARGO_TARGET_DIR` put it.
fn screenshot_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe
        .ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("target"));
    target.join("ui-screenshots")
}

// ---- plain HTTP ----

fn header<'a>(r: &'a reqwest::Response, name: &str) -> &'a str {
    r.headers()
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .to_str()
        .unwrap()
}

#[tokio::test]
async fn the_page_needs_no_key_and_carries_a_strict_policy_while_the_api_needs_the_key() {
    let up = TestUpstream::start().await.unwrap();
    let gw = start_with_keys(server_config(), vec![single("m", &up, "native")], Some(KEY)).await;
    let base = format!("http://{}", gw.addr());
    let client = http();

    let page = client.get(format!("{base}/ui")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(header(&page, "content-type"), "text/html; charset=utf-8");
    assert_eq!(header(&page, "content-security-policy"), CSP);
    assert_eq!(header(&page, "x-content-type-options"), "nosniff");
    assert_eq!(header(&page, "referrer-policy"), "no-referrer");
    assert_eq!(header(&page, "x-frame-options"), "DENY");
    assert!(page.headers().get("access-control-allow-origin").is_none());
    let etag = header(&page, "etag").to_owned();
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"<script type="module" src="/ui/app.js"></script>"#));
    // What the policy would refuse must not be in the page: inline scripts, handlers, styles.
    for (i, _) in html.match_indices("<script") {
        assert!(
            html[i..].split('>').next().unwrap().contains(" src="),
            "inline script at {i}"
        );
    }
    assert!(!html.contains(" style="), "inline style attribute");
    assert!(
        !html
            .split_whitespace()
            .any(|w| w.starts_with("on") && w.contains('=')),
        "inline event handler"
    );

    for (path, kind) in [
        ("/ui/", "text/html; charset=utf-8"),
        ("/ui/app.js", "text/javascript; charset=utf-8"),
        ("/ui/markdown.js", "text/javascript; charset=utf-8"),
        ("/ui/style.css", "text/css; charset=utf-8"),
        ("/ui/icon.svg", "image/svg+xml"),
    ] {
        let r = client.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(header(&r, "content-type"), kind, "{path}");
        assert_eq!(header(&r, "content-security-policy"), CSP, "{path}");
        assert_eq!(header(&r, "x-content-type-options"), "nosniff", "{path}");
    }
    let missing = client
        .get(format!("{base}/ui/secret.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(header(&missing, "content-security-policy"), CSP);

    // Revalidation: the same build answers 304 to its own tag.
    let again = client
        .get(format!("{base}/ui"))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);

    // `/` sends a person to the page.
    let root = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{base}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(root.status(), 302);
    assert_eq!(header(&root, "location"), "/ui");

    // The API is not opened by the page's exemption.
    let models = client
        .get(format!("{base}/v1/models"))
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), 401);
    let models = client
        .get(format!("{base}/v1/models"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), 200);
}

#[tokio::test]
async fn a_keyless_gateway_takes_its_own_origins_requests_and_refuses_other_origins() {
    let up = TestUpstream::start().await.unwrap();
    let mut config = server_config();
    let dir = Dir::new("origin");
    config.state.path = Some(dir.0.join("state.sqlite3"));
    let gw = start(config, vec![single("m", &up, "native")]).await;
    let port = gw.addr().port();
    let base = format!("http://127.0.0.1:{port}");
    // As Chromium sends a same-origin fetch POST: the Origin of the page it was served from.
    let post = |origin: String, host: String| {
        http()
            .post(format!("{base}/v1/conversations"))
            .header("origin", origin)
            .header("host", host)
            .header("content-type", "application/json")
            .body("{}")
            .send()
    };
    let own = post(base.clone(), format!("127.0.0.1:{port}"))
        .await
        .unwrap();
    assert_eq!(own.status(), 200);
    let own = post(
        format!("http://localhost:{port}"),
        format!("localhost:{port}"),
    )
    .await
    .unwrap();
    assert_eq!(own.status(), 200);
    for (origin, host) in [
        // Another local server's page (another port is another origin).
        ("http://127.0.0.1:1".to_owned(), format!("127.0.0.1:{port}")),
        // The same port under another loopback name is another origin too.
        (
            format!("http://localhost:{port}"),
            format!("127.0.0.1:{port}"),
        ),
        ("null".to_owned(), format!("127.0.0.1:{port}")),
    ] {
        let r = post(origin.clone(), host).await.unwrap();
        assert_eq!(r.status(), 403, "{origin}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "origin_not_allowed", "{origin}");
    }
    // DNS rebinding: a page of attacker.example whose name now points here.
    let r = post(
        "http://attacker.example".to_owned(),
        "attacker.example".to_owned(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 403);
    let r = http()
        .get(format!("{base}/ui"))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
}

// ---- in a real browser ----

/// A temporary folder removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path = std::env::temp_dir().join(format!("tb-ui-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Dir(path)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A SearxNG instance and an OpenAI images endpoint on 127.0.0.1, for `web_search` and
/// `image_generate`: one result for any query, the same PNG for any prompt. Stops with the test.
async fn tool_backends() -> std::net::SocketAddr {
    let png = std::fs::read(ui_dir().join("generated.png")).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(png);
    let router = Router::new()
        .route(
            "/search",
            get(|| async {
                Json(json!({"results": [{
                    "url": "https://example.org/csv-sums",
                    "title": "Summing a CSV column",
                    "content": "Read it with csv.DictReader and add the column up.",
                }]}))
            }),
        )
        .route(
            "/v1/images/generations",
            post(move || {
                let b64 = b64.clone();
                async move { Json(json!({"created": 0, "data": [{"b64_json": b64}]})) }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

/// A gateway from a composition root whose `[tools]` enable `python_execute` (the sandbox's
/// Python), `web_search` and `image_generate` (the loopback backends); state and workspaces in
/// `dir`; keys from `keys`.
async fn gateway(
    up: &TestUpstream,
    dir: &Dir,
    backends: std::net::SocketAddr,
    keys: Option<&str>,
) -> RunningGateway {
    let python = env_or_fail("TOOLBRIDGE_SANDBOX_PYTHON");
    let workspaces = dir.0.join("ws");
    std::fs::create_dir_all(&workspaces).unwrap();
    let tools: toolbridge_tools::ToolsConfig = toml::from_str(&format!(
        "enabled = [\"python_execute\", \"web_search\", \"image_generate\"]\n\
         [sandbox]\npython = {python:?}\n\
         [workspaces]\nroot = {:?}\n\
         [search]\nbackend = \"searxng\"\nbase_url = \"http://{backends}\"\n\
         [images]\nbase_url = \"http://{backends}/v1\"\n",
        workspaces.display().to_string(),
    ))
    .unwrap();
    // Generous upstream deadlines: a stalled answer here waits for the browser, not a clock.
    let model: ModelConfig = serde_json::from_value(json!({
        "name": "m",
        "base_url": up.base_url(),
        "upstream_model": "mock-model",
        "tool_mode": "native",
        "max_retries": 0,
        "first_byte_timeout_secs": 300.0,
        "idle_timeout_secs": 300.0,
    }))
    .unwrap();
    let config = Config {
        models: vec![model],
        tools,
        ..Config::default()
    };
    let runtime = Arc::new(Runtime::new(
        config,
        ProviderRegistry::new(),
        Overrides::default(),
    ));
    let served = runtime.served_models().unwrap();
    let mut server = server_config();
    server.state.path = Some(dir.0.join("state.sqlite3"));
    let env: BTreeMap<String, String> = keys
        .map(|k| (KEYS_VAR.to_owned(), k.to_owned()))
        .into_iter()
        .collect();
    Gateway::from_runtime(server, runtime, served, &env)
        .unwrap()
        .spawn()
        .await
        .unwrap()
}

/// What the code of the first question runs: it reads the uploaded CSV, prints the total and
/// draws the column as a PNG into `outputs/` (a file of the container).
const CODE: &str = "import csv\nfrom PIL import Image, ImageDraw\n\
rows = list(csv.DictReader(open('/workspace/uploads/data.csv')))\n\
total = sum(int(r['n']) for r in rows)\n\
img = Image.new('RGB', (240, 160), 'white')\n\
draw = ImageDraw.Draw(img)\n\
for i, r in enumerate(rows):\n    h = int(r['n']) * 3\n    draw.rectangle([20 + i * 75, 150 - h, 80 + i * 75, 150], fill=(36, 87, 197))\n\
img.save('/workspace/outputs/chart.png')\n\
print('total', total)";

/// The final answer of the first question: Markdown, and HTML that must stay text.
const ANSWER: &str = "The **total** is `42`, from three rows.\n\n\
## How\n\n\
- read `data.csv` with *csv*\n- add up column `n`\n\n\
```python\nimport csv  # the reader\ntotal = sum(int(r['n']) for r in rows)\n```\n\n\
| row | n |\n|---|---:|\n| a | 1 |\n| c | 39 |\n\n\
Markup stays text: <img src=x onerror=alert(1)> and <script>alert(2)</script>.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_in_a_real_browser() {
    let python = env_or_fail("TOOLBRIDGE_PYTHON");
    let chromium = env_or_fail("TOOLBRIDGE_CHROMIUM");
    let chromedriver = env_or_fail("TOOLBRIDGE_CHROMEDRIVER");
    let backends = tool_backends().await;

    let up = TestUpstream::start().await.unwrap();
    up.push_all([
        // 1. The question with the uploaded file: code, a search, an image, then the answer,
        // which stalls after a few chunks so the page is seen while it streams.
        Behavior::Reply(
            Reply::text("Let me read the file first.")
                .with_tool_call("python_execute", json!({ "code": CODE }).to_string()),
        ),
        Behavior::Reply(Reply::tool_call(
            "web_search",
            json!({"query": "sum a csv column"}).to_string(),
        )),
        Behavior::Reply(Reply::tool_call(
            "image_generate",
            json!({"prompt": "a sun over a gradient", "action": "generate", "base_image": "none"})
                .to_string(),
        )),
        Behavior::StallMidStream {
            after_chunks: 4,
            stall: Duration::from_secs(4),
            reply: Reply::text(ANSWER).with_chunk_size(6),
        },
        // 2. A question whose answer stalls after its first words: the page stops it. (Its
        // first words show that the upstream has the request, so the stop is not a race with
        // the request being sent.)
        Behavior::StallMidStream {
            after_chunks: 2,
            stall: Duration::from_secs(600),
            reply: Reply::text("Thinking about it for a very long time. NEVER-SHOWN")
                .with_chunk_size(9),
        },
        // 3. On a phone-sized window.
        Behavior::Reply(Reply::text(
            "Hello! This answer is **phone-sized**:\n\n1. short\n2. readable",
        )),
        // 4. Another stalled answer, stopped with Escape.
        Behavior::StallMidStream {
            after_chunks: 2,
            stall: Duration::from_secs(600),
            reply: Reply::text("Still thinking, for ever. NEVER-SHOWN").with_chunk_size(9),
        },
    ]);
    let dir = Dir::new("keyed");
    let gw = gateway(&up, &dir, backends, Some(KEY)).await;

    let up_open = TestUpstream::start().await.unwrap();
    up_open.push(Behavior::Reply(Reply::text(
        "A gateway without keys answers its own page.",
    )));
    let dir_open = Dir::new("keyless");
    let gw_open = gateway(&up_open, &dir_open, backends, None).await;

    let shots = screenshot_dir();
    std::fs::create_dir_all(&shots).unwrap();
    let mut command = tokio::process::Command::new(&python);
    command
        .arg(ui_dir().join("ui_test.py"))
        .arg("--url")
        .arg(format!("http://{}/ui", gw.addr()))
        .arg("--keyless-url")
        .arg(format!("http://{}/ui", gw_open.addr()))
        .arg("--key")
        .arg(KEY)
        .arg("--file")
        .arg(ui_dir().join("data.csv"))
        .arg("--screenshots")
        .arg(&shots)
        .env("TOOLBRIDGE_CHROMIUM", chromium)
        .env("TOOLBRIDGE_CHROMEDRIVER", chromedriver)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .kill_on_drop(true);
    // A guard against a hung browser, not a measure of speed.
    let output = tokio::time::timeout(Duration::from_secs(900), command.output())
        .await
        .expect("the browser script did not finish")
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the browser script failed ({}); screenshots in {}:\n{stdout}\n{stderr}",
        output.status,
        shots.display()
    );
    eprintln!("{stdout}");

    // Every scripted reply was asked for, in order, and the page sent what it showed.
    let sent = up.requests();
    assert_eq!(sent.len(), 7, "one upstream request per scripted reply");
    assert_eq!(up.remaining(), 0);
    let first = sent[0].body.to_string();
    assert!(first.contains("Sum the n column"), "{first}");
    assert!(first.contains("/workspace/uploads/data.csv"), "{first}");
    let tools: Vec<&str> = sent[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for tool in ["python_execute", "web_search", "image_generate"] {
        assert!(tools.contains(&tool), "the page's tool toggles: {tools:?}");
    }
    // The tool results reached the model: the code's output and the search result.
    let last = sent[3].body.to_string();
    assert!(last.contains("total 42"), "{last}");
    assert!(last.contains("example.org/csv-sums"), "{last}");
    // The stopped question and the phone's are in the same conversation, which holds the first
    // answer.
    let stopped = sent[4].body.to_string();
    assert!(stopped.contains("This one will be stopped."), "{stopped}");
    assert!(stopped.contains("The **total** is"), "{stopped}");
    let phone = sent[5].body.to_string();
    assert!(phone.contains("Hello from a phone"), "{phone}");
    assert!(phone.contains("The **total** is"), "{phone}");
    assert_eq!(up_open.requests().len(), 1);
}
