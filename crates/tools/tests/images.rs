//! `image_generate` end to end against a loopback OpenAI-compatible images stub: the size, model
//! and images sent to the endpoint (issue 13 item 14), this turn's attachments counted in
//! attachment order, the other images of the turn sent as references, and the staged copy of
//! every result under `uploads/`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use base64::Engine;
use serde_json::{json, Value};
use toolbridge_agent::skills::SkillSet;
use toolbridge_agent::{Agent, AgentConfig, Tool, ToolContext, Toolbox, ToolboxConfig};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::texts;
use toolbridge_protocol::types::Message;
use toolbridge_providers::scripted::{ScriptedReply, ScriptedUpstream};
use toolbridge_providers::{Arm, Model};
use toolbridge_tools::images::{ImageGenerate, ImagesEndpoint};

/// A PNG header (signature, IHDR, IEND) of the given size: enough for the sniffing and the size
/// reading (nothing here decodes pixels).
fn png_of(w: u32, h: u32) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    b.extend_from_slice(b"\0\0\0\0IEND\xaeB`\x82");
    b
}

/// A baseline JPEG header of the given size (SOI, SOF0, EOI).
fn jpeg_of(w: u16, h: u16) -> Vec<u8> {
    let mut b = vec![0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x0B, 0x08];
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&[0x01, 0x01, 0x11, 0x00, 0xFF, 0xD9]);
    b
}

/// One part of a multipart body.
#[derive(Debug)]
struct Part {
    name: String,
    filename: Option<String>,
    content_type: Option<String>,
    data: Vec<u8>,
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn parse_multipart(headers: &HeaderMap, body: &[u8]) -> Vec<Part> {
    let ct = headers["content-type"].to_str().unwrap();
    let boundary = ct.split("boundary=").nth(1).unwrap().trim_matches('"');
    let delim = format!("--{boundary}");
    let mut parts = Vec::new();
    let mut at = find(body, delim.as_bytes(), 0).unwrap() + delim.len();
    while body[at..].starts_with(b"\r\n") {
        let head_end = find(body, b"\r\n\r\n", at).unwrap();
        let head = String::from_utf8_lossy(&body[at + 2..head_end]).into_owned();
        let next = find(body, format!("\r\n{delim}").as_bytes(), head_end).unwrap();
        let data = body[head_end + 4..next].to_vec();
        let attr = |key: &str| {
            head.split(&format!("{key}=\""))
                .nth(1)
                .map(|r| r.split('"').next().unwrap().to_owned())
        };
        let content_type = head
            .lines()
            .find_map(|l| {
                l.strip_prefix("Content-Type: ")
                    .or(l.strip_prefix("content-type: "))
            })
            .map(str::to_owned);
        parts.push(Part {
            name: attr("name").unwrap(),
            filename: attr("filename"),
            content_type,
            data,
        });
        at = next + 2 + delim.len();
    }
    parts
}

fn text_field<'a>(parts: &'a [Part], name: &str) -> Option<&'a str> {
    parts
        .iter()
        .find(|p| p.name == name)
        .map(|p| std::str::from_utf8(&p.data).unwrap())
}

/// What the stub saw: the path, and the JSON body or the multipart parts.
enum Seen {
    Generate(Value),
    Edit(Vec<Part>),
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// The images API on 127.0.0.1: answers a `b64_json` PNG of the size it was asked for (so the
/// staged file's header shows the size that was sent).
async fn images_stub() -> (String, Log) {
    let log: Log = Arc::default();
    let (l1, l2) = (Arc::clone(&log), Arc::clone(&log));
    let answer = |size: &str| {
        let (w, h) = size.split_once('x').unwrap();
        let png = png_of(w.parse().unwrap(), h.parse().unwrap());
        Json(
            json!({"created": 1, "data": [{"b64_json": base64::engine::general_purpose::STANDARD.encode(png)}]}),
        )
    };
    let router = Router::new()
        .route(
            "/v1/images/generations",
            post(move |body: Bytes| async move {
                let req: Value = serde_json::from_slice(&body).unwrap();
                let size = req["size"].as_str().unwrap_or("1x1").to_owned();
                l1.lock().unwrap().push(Seen::Generate(req));
                answer(&size)
            }),
        )
        .route(
            "/v1/images/edits",
            post(move |headers: HeaderMap, body: Bytes| async move {
                let parts = parse_multipart(&headers, &body);
                let size = text_field(&parts, "size").unwrap_or("1x1").to_owned();
                l2.lock().unwrap().push(Seen::Edit(parts));
                answer(&size)
            }),
        );
    let addr = common::serve(router).await;
    (format!("http://{addr}/v1"), log)
}

fn tool(base_url: &str, model: &str) -> ImageGenerate {
    let port: u16 = base_url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/v1")
        .parse()
        .unwrap();
    ImageGenerate::new(
        Some(ImagesEndpoint {
            base_url: base_url.to_owned(),
            model: model.to_owned(),
            api_key: None,
            response_format: None,
            timeout: std::time::Duration::from_secs(10),
            sizes: vec![],
        }),
        common::guard(port, &[]),
    )
}

fn context(ws: &Path, attachments: &[&str]) -> ToolContext {
    ToolContext {
        workspace: Some(ws.to_path_buf()),
        attachments: attachments.iter().map(|s| (*s).to_owned()).collect(),
        ..ToolContext::default()
    }
}

/// The `/workspace/outputs/…` paths of a result.
fn result_paths(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("/workspace/outputs/"))
        .map(str::to_owned)
        .collect()
}

/// Each result exists in outputs/ and, byte for byte, under the same name in uploads/.
fn assert_staged(ws: &Path, text: &str) -> Vec<Vec<u8>> {
    let paths = result_paths(text);
    assert!(!paths.is_empty(), "{text}");
    assert!(text.contains(texts::IMAGES_STAGED), "{text}");
    paths
        .iter()
        .map(|p| {
            let name = p.strip_prefix("/workspace/outputs/").unwrap();
            let out = std::fs::read(ws.join("outputs").join(name)).unwrap();
            let staged = std::fs::read(ws.join("uploads").join(name)).unwrap();
            assert_eq!(out, staged, "{name}");
            out
        })
        .collect()
}

fn last(log: &Log) -> Seen {
    log.lock().unwrap().pop().unwrap()
}

#[tokio::test]
async fn generate_sends_the_tier_and_ratio_size_and_stages_the_result() {
    let (url, log) = images_stub().await;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let cases = [
        ("gpt-image-2", None, "2048x2048"),
        ("gpt-image-2", Some("4K 16:9"), "3840x2160"),
        ("gpt-image-2", Some("1920x1080"), "1920x1088"),
        ("gpt-image-1.5", Some("16:9"), "1536x1024"),
        ("gpt-image-1-mini", Some("2K 9:16"), "1024x1536"),
        ("gpt-image-1", Some("4096x4096"), "1024x1024"),
    ];
    for (model, size, want) in cases {
        let mut args = json!({"prompt": "an otter", "action": "generate", "base_image": "none"});
        if let Some(s) = size {
            args["size"] = json!(s);
        }
        let text = tool(&url, model)
            .invoke(args, context(&ws, &[]))
            .await
            .unwrap();
        let Seen::Generate(req) = last(&log) else {
            panic!("not a generation")
        };
        assert_eq!(
            req,
            json!({"model": model, "prompt": "an otter", "n": 1, "size": want}),
            "{model} {size:?}"
        );
        assert!(text.contains(&texts::images_size(want)), "{text}");
        let files = assert_staged(&ws, &text);
        let (w, h) = want.split_once('x').unwrap();
        assert_eq!(files, [png_of(w.parse().unwrap(), h.parse().unwrap())]);
    }
}

#[tokio::test]
async fn current_attachment_counts_this_turns_images_in_attachment_order() {
    let (url, log) = images_stub().await;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let uploads = ws.join("uploads");
    std::fs::create_dir_all(&uploads).unwrap();
    // An upload of an earlier turn (first by name, not attached now), then this turn's files:
    // a landscape PNG, a document, a portrait JPEG — attached in that order, which is not the
    // order of their names.
    std::fs::write(uploads.join("0-earlier.png"), png_of(1000, 1000)).unwrap();
    let landscape = png_of(1600, 900);
    let portrait = jpeg_of(600, 800);
    std::fs::write(uploads.join("z-landscape.png"), &landscape).unwrap();
    std::fs::write(uploads.join("notes.pdf"), b"%PDF-1.7 not an image").unwrap();
    std::fs::write(uploads.join("a-portrait.jpg"), &portrait).unwrap();
    let turn = ["z-landscape.png", "notes.pdf", "a-portrait.jpg"];

    // Image 2 of this turn is the portrait JPEG: it is the base (sent first) and its 3:4 ratio is
    // kept at the 2K default; the landscape goes along as a reference; the earlier upload and the
    // document do not.
    let text = tool(&url, "gpt-image-2")
        .invoke(
            json!({"prompt": "make the sky pink", "action": "edit", "base_image": "current_attachment", "base_image_index": 2}),
            context(&ws, &turn),
        )
        .await
        .unwrap();
    let Seen::Edit(parts) = last(&log) else {
        panic!("not an edit")
    };
    assert_eq!(text_field(&parts, "model"), Some("gpt-image-2"));
    assert_eq!(text_field(&parts, "prompt"), Some("make the sky pink"));
    assert_eq!(text_field(&parts, "size"), Some("1536x2048"));
    let images: Vec<&Part> = parts
        .iter()
        .filter(|p| p.name.starts_with("image"))
        .collect();
    assert_eq!(images.len(), 2, "{parts:?}");
    assert!(images.iter().all(|p| p.name == "image[]"));
    assert_eq!(images[0].data, portrait);
    assert_eq!(images[0].content_type.as_deref(), Some("image/jpeg"));
    assert_eq!(images[0].filename.as_deref(), Some("image-1.jpg"));
    assert_eq!(images[1].data, landscape);
    assert_eq!(images[1].content_type.as_deref(), Some("image/png"));
    assert_staged(&ws, &text);

    // Image 1 is the landscape; GPT Image 1 gets its closest fixed size; another ratio asked for
    // wins over the base's.
    tool(&url, "gpt-image-1")
        .invoke(
            json!({"prompt": "x", "action": "edit", "base_image": "current_attachment", "base_image_index": 1}),
            context(&ws, &turn),
        )
        .await
        .unwrap();
    let Seen::Edit(parts) = last(&log) else {
        panic!("not an edit")
    };
    assert_eq!(text_field(&parts, "size"), Some("1536x1024"));
    let images: Vec<&Part> = parts
        .iter()
        .filter(|p| p.name.starts_with("image"))
        .collect();
    assert_eq!(images[0].data, landscape);
    assert_eq!(images[1].data, portrait);
    tool(&url, "gpt-image-2")
        .invoke(
            json!({"prompt": "x", "action": "edit", "base_image": "current_attachment", "base_image_index": 1, "size": "1:1 1K"}),
            context(&ws, &turn),
        )
        .await
        .unwrap();
    let Seen::Edit(parts) = last(&log) else {
        panic!("not an edit")
    };
    assert_eq!(text_field(&parts, "size"), Some("1024x1024"));

    // Only two images this turn; none at all in a later turn (the earlier uploads and the staged
    // results in uploads/ are not this turn's attachments).
    let err = tool(&url, "gpt-image-2")
        .invoke(
            json!({"prompt": "x", "action": "edit", "base_image": "current_attachment", "base_image_index": 3}),
            context(&ws, &turn),
        )
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), texts::images_no_turn_attachment(3, 2));
    let err = tool(&url, "gpt-image-2")
        .invoke(
            json!({"prompt": "x", "action": "edit", "base_image": "current_attachment", "base_image_index": 1}),
            context(&ws, &[]),
        )
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), texts::IMAGES_NO_TURN_IMAGES);
}

#[tokio::test]
async fn previous_generation_keeps_its_ratio_and_takes_this_turns_images_as_references() {
    let (url, log) = images_stub().await;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let first = tool(&url, "gpt-image-2")
        .invoke(
            json!({"prompt": "a poster", "action": "generate", "base_image": "none", "size": "2K 3:2"}),
            context(&ws, &[]),
        )
        .await
        .unwrap();
    let generated = assert_staged(&ws, &first).remove(0);
    let logo = png_of(500, 500);
    std::fs::write(ws.join("uploads/logo.png"), &logo).unwrap();

    let text = tool(&url, "gpt-image-2")
        .invoke(
            json!({"prompt": "add the logo", "action": "edit", "base_image": "previous_generation"}),
            context(&ws, &["logo.png"]),
        )
        .await
        .unwrap();
    let Seen::Edit(parts) = last(&log) else {
        panic!("not an edit")
    };
    assert_eq!(text_field(&parts, "size"), Some("2048x1360"));
    let images: Vec<&Part> = parts
        .iter()
        .filter(|p| p.name.starts_with("image"))
        .collect();
    assert_eq!(images.len(), 2);
    assert_eq!(images[0].data, generated);
    assert_eq!(images[1].data, logo);
    assert_staged(&ws, &text);

    // The newest generation is the base of the next edit; without references it is one `image`.
    let newest = assert_staged(&ws, &text).remove(0);
    tool(&url, "gpt-image-2")
        .invoke(
            json!({"prompt": "again", "action": "edit", "base_image": "previous_generation"}),
            context(&ws, &[]),
        )
        .await
        .unwrap();
    let Seen::Edit(parts) = last(&log) else {
        panic!("not an edit")
    };
    let images: Vec<&Part> = parts
        .iter()
        .filter(|p| p.name.starts_with("image"))
        .collect();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].name, "image");
    assert_eq!(images[0].filename.as_deref(), Some("image.png"));
    assert_eq!(images[0].data, newest);
}

#[tokio::test]
async fn an_attachment_replaced_by_a_link_is_not_sent() {
    let (url, log) = images_stub().await;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("uploads")).unwrap();
    // Sandboxed code swapped the attachment for a link to a host file (here one that looks like
    // an image, so only the link check can keep it back).
    let host = dir.path().join("host-secret.png");
    std::fs::write(&host, png_of(640, 480)).unwrap();
    std::os::unix::fs::symlink(&host, ws.join("uploads/photo.png")).unwrap();
    std::fs::write(ws.join("uploads/other.png"), png_of(800, 800)).unwrap();
    let err = tool(&url, "gpt-image-2")
        .invoke(
            json!({"prompt": "x", "action": "edit", "base_image": "current_attachment", "base_image_index": 2}),
            context(&ws, &["photo.png", "other.png"]),
        )
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), texts::images_no_turn_attachment(2, 1));
    tool(&url, "gpt-image-2")
        .invoke(
            json!({"prompt": "x", "action": "edit", "base_image": "current_attachment", "base_image_index": 1}),
            context(&ws, &["photo.png", "other.png"]),
        )
        .await
        .unwrap();
    let Seen::Edit(parts) = last(&log) else {
        panic!("not an edit")
    };
    let images: Vec<&Part> = parts
        .iter()
        .filter(|p| p.name.starts_with("image"))
        .collect();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].data, png_of(800, 800));
}

#[tokio::test]
async fn the_turns_attachments_reach_the_tool_through_the_agent_loop() {
    let (url, log) = images_stub().await;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("uploads")).unwrap();
    std::fs::write(ws.join("uploads/b.png"), png_of(900, 1600)).unwrap();
    std::fs::write(ws.join("uploads/a.png"), png_of(1600, 900)).unwrap();
    let toolbox = Toolbox::new(ToolboxConfig::default())
        .with(tool(&url, "gpt-image-1"))
        .unwrap();
    let upstream = ScriptedUpstream::new(vec![
        ScriptedReply::calls([(
            "image_generate",
            json!({"prompt": "x", "action": "edit", "base_image": "current_attachment", "base_image_index": 1}),
        )]),
        ScriptedReply::text("Done."),
    ]);
    let model = Model::new(
        "m",
        vec![Arm::new(Arc::new(upstream.clone()), ToolMode::Native)],
    );
    let agent = Agent::new(model, toolbox, SkillSet::default(), AgentConfig::default()).unwrap();
    let state = agent
        .run(
            vec![Message::user("edit")],
            context(&ws, &["b.png", "a.png"]),
        )
        .finish()
        .await;
    assert_eq!(state.answer, "Done.");
    let Seen::Edit(parts) = last(&log) else {
        panic!("not an edit")
    };
    // b.png, attached first, is image 1 (portrait), though a.png sorts first.
    assert_eq!(text_field(&parts, "size"), Some("1024x1536"));
    let images: Vec<&Part> = parts
        .iter()
        .filter(|p| p.name.starts_with("image"))
        .collect();
    assert_eq!(images[0].data, png_of(900, 1600));
    assert_eq!(images[1].data, png_of(1600, 900));
}
