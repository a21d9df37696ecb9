//! `web_fetch`: pages through the guard, reduced to their main text.
//!
//! Extraction uses `dom_smoothie`, a maintained Rust port of Mozilla's Readability.js (the
//! algorithm behind Firefox's reader view) on the html5ever parser: it keeps the article and drops
//! navigation, ads and boilerplate, and renders markdown. Pages it cannot make an article of fall
//! back to the text of `<body>`. Plain text, JSON and XML are returned as they are.

use std::sync::Arc;

use serde_json::Value;
use toolbridge_agent::{Tool, ToolContext, ToolError, ToolFuture};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::ToolSpec;

use crate::common::{cap_chars, one_or_many, seed_spec};
use crate::net::{FetchError, Guard};

/// The most bytes of one page (streamed and decompressed).
pub const MAX_PAGE_BYTES: usize = 5 * 1024 * 1024;
/// The most characters of text a call returns (shared among its pages).
pub const MAX_OUTPUT_CHARS: usize = 30_000;
const MAX_URLS: usize = 4;
const ACCEPT: &str = "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5";

pub struct WebFetch {
    spec: ToolSpec,
    guard: Guard,
}

impl WebFetch {
    pub fn new(guard: Guard) -> Self {
        WebFetch {
            spec: seed_spec(
                "web_fetch",
                texts::WEB_FETCH_DESCRIPTION,
                texts::WEB_FETCH_SCHEMA,
            ),
            guard,
        }
    }
}

impl Tool for WebFetch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn invoke(&self, args: Value, _ctx: ToolContext) -> ToolFuture {
        let guard = self.guard.clone();
        Box::pin(async move {
            let mut urls = one_or_many(&args, "url", "urls");
            urls.truncate(MAX_URLS);
            if urls.is_empty() {
                return Err(ToolError::new(texts::WEB_FETCH_NO_URL));
            }
            let per_page = MAX_OUTPUT_CHARS / urls.len();
            let guard = Arc::new(guard);
            let pages = futures::future::join_all(urls.iter().map(|u| {
                let guard = Arc::clone(&guard);
                let u = u.clone();
                async move {
                    fetch_page(&guard, &u, per_page)
                        .await
                        .map_err(|e| texts::fetch_failed(&u, &e))
                }
            }))
            .await;
            let ok = pages.iter().filter(|p| p.is_ok()).count();
            let parts: Vec<String> = pages.into_iter().map(|p| p.unwrap_or_else(|e| e)).collect();
            let text = parts.join(texts::WEB_FETCH_SEPARATOR);
            if ok == 0 {
                Err(ToolError::new(text))
            } else {
                Ok(text)
            }
        })
    }

    fn max_output_chars(&self) -> Option<usize> {
        Some(MAX_OUTPUT_CHARS + 2_000)
    }
}

async fn fetch_page(guard: &Guard, url: &str, max_chars: usize) -> Result<String, String> {
    let page = guard
        .fetch(url, ACCEPT, MAX_PAGE_BYTES)
        .await
        .map_err(|e: FetchError| e.to_string())?;
    let content_type = page.content_type.clone().unwrap_or_default();
    let final_url = page.url.to_string();
    let is_html = content_type.is_empty()
        || content_type == "text/html"
        || content_type == "application/xhtml+xml";
    let is_text = content_type.starts_with("text/")
        || content_type == "application/json"
        || content_type.ends_with("+json")
        || content_type == "application/xml"
        || content_type.ends_with("+xml");
    let (title, text) = if is_html {
        let html = String::from_utf8_lossy(&page.body).into_owned();
        let url_for_doc = final_url.clone();
        tokio::task::spawn_blocking(move || extract(&html, &url_for_doc))
            .await
            .map_err(|_| texts::ERROR_FAILED.to_owned())?
    } else if is_text {
        (
            String::new(),
            String::from_utf8_lossy(&page.body).into_owned(),
        )
    } else {
        return Err(texts::net_reason(
            texts::NET_NOT_TEXT,
            &[("<TYPE>", &content_type)],
        ));
    };
    let title = if title.trim().is_empty() {
        final_url.clone()
    } else {
        title.trim().to_owned()
    };
    Ok(texts::web_fetch_page(
        &title,
        &final_url,
        &cap_chars(text.trim(), max_chars),
    ))
}

/// The title and the main text (markdown) of an HTML page.
pub fn extract(html: &str, url: &str) -> (String, String) {
    use dom_smoothie::{Config, Readability, TextMode};
    let config = Config {
        text_mode: TextMode::Markdown,
        max_elements_to_parse: 200_000,
        ..Config::default()
    };
    let Ok(mut reader) = Readability::new(html, Some(url), Some(config.clone()))
        .or_else(|_| Readability::new(html, None, Some(config)))
    else {
        return (String::new(), String::new());
    };
    let title = reader.get_article_title().to_string();
    match reader.parse() {
        Ok(article) if !article.text_content.trim().is_empty() => {
            let t = if article.title.trim().is_empty() {
                title
            } else {
                article.title.clone()
            };
            (t, tidy(&article.text_content))
        }
        _ => {
            let fallback = dom_smoothie::Readability::new(html, None, None)
                .map(|r| r.doc.select("body").text().to_string())
                .unwrap_or_default();
            (title, tidy(&fallback))
        }
    }
}

/// Collapses runs of blank lines and trailing spaces.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}
