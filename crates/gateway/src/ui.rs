//! The web chat page at `/ui`: static files compiled into the binary (hand-written ES modules
//! under `crates/gateway/ui/`, no build step, nothing fetched from elsewhere at run time).
//!
//! The page holds no key, so it is served without one; every API call it makes carries the key
//! the user typed. It is same-origin with the API it calls, and every file goes out with a strict
//! Content-Security-Policy (only this origin's scripts, styles and connections; images also from
//! `data:` and `blob:` URLs, which is how generated images and downloaded container files are
//! shown), so that model output that slipped past the page's escaping still could not run.

use axum::body::Body;
use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// The policy of every `/ui` response (docs/src/security.md, "Stored objects and tenancy").
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; \
     base-uri 'none'; form-action 'none'";

/// One embedded file: its name under `/ui/`, its media type and its bytes.
struct Asset {
    name: &'static str,
    media_type: &'static str,
    bytes: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $media_type:literal) => {
        Asset {
            name: $name,
            media_type: $media_type,
            bytes: include_bytes!(concat!("../ui/", $name)),
        }
    };
}

static ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("icon.svg", "image/svg+xml"),
    asset!("app.js", "text/javascript; charset=utf-8"),
    asset!("api.js", "text/javascript; charset=utf-8"),
    asset!("store.js", "text/javascript; charset=utf-8"),
    asset!("markdown.js", "text/javascript; charset=utf-8"),
    asset!("highlight.js", "text/javascript; charset=utf-8"),
    asset!("items.js", "text/javascript; charset=utf-8"),
];

/// `GET /`: the page, for someone who typed only the address.
pub(crate) async fn root() -> Response {
    let mut response = StatusCode::FOUND.into_response();
    response
        .headers_mut()
        .insert(header::LOCATION, HeaderValue::from_static("/ui"));
    response
}

/// `GET /ui` and `GET /ui/`.
pub(crate) async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

/// `GET /ui/{name}`.
pub(crate) async fn asset(Path(name): Path<String>, headers: HeaderMap) -> Response {
    serve(&name, &headers)
}

fn serve(name: &str, request: &HeaderMap) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        let mut response = crate::error::ApiError::not_found().into_response();
        secure(response.headers_mut(), "application/json");
        return response;
    };
    // The files change only with the binary: a digest of the bytes is the validator, so a
    // browser revalidates cheaply and never keeps the page of an older build.
    let digest = Sha256::digest(asset.bytes);
    let tag = format!(
        "\"{}\"",
        digest
            .iter()
            .take(12)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        Response::new(Body::from(asset.bytes))
    };
    let headers = response.headers_mut();
    secure(headers, asset.media_type);
    if let Ok(tag) = HeaderValue::from_str(&tag) {
        headers.insert(header::ETAG, tag);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn secure(headers: &mut HeaderMap, media_type: &'static str) {
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // For browsers that predate `frame-ancestors`.
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn every_file_the_page_names_is_embedded() {
        let index = std::str::from_utf8(ASSETS[0].bytes).unwrap();
        let mut named: Vec<&str> = index
            .split("/ui/")
            .skip(1)
            .map(|rest| rest.split(['"', '\'']).next().unwrap())
            .collect();
        for module in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            let text = std::str::from_utf8(module.bytes).unwrap();
            for line in text.lines().filter(|l| l.starts_with("import ")) {
                let from = line.rsplit("from ").next().unwrap();
                let path = from.trim_matches([' ', ';', '"', '\'']);
                named.push(path.strip_prefix("./").unwrap());
            }
        }
        assert!(named.contains(&"app.js"), "{named:?}");
        for name in named {
            assert!(
                ASSETS.iter().any(|a| a.name == name),
                "{name} is not embedded"
            );
        }
    }
}
