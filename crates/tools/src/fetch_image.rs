//! `fetch_image`: an image through the guard into the conversation workspace's `downloads/`.
//!
//! The response must say `Content-Type: image/*` and its bytes must start like a PNG, JPEG, GIF,
//! WebP or BMP file (SVG is refused: it is a document that can carry scripts). The file name is
//! generated here: `<stem>-<random>.<ext>` where the stem comes from the model's `filename`
//! (reduced to letters, digits, `-` and `_`) or is `image`, and the extension from the magic bytes;
//! nothing the server sends (path, `Content-Disposition`) is used. The model gets the sandbox path
//! `/workspace/downloads/<name>`; on the host it is `<workspace>/downloads/<name>`.

use serde_json::Value;
use toolbridge_agent::{Tool, ToolContext, ToolError, ToolFuture};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::ToolSpec;

use crate::common::{random_hex, safe_stem, seed_spec, workspace_dir, write_new};
use crate::net::Guard;

/// The most bytes of one image.
pub const MAX_IMAGE_BYTES: usize = 20 * 1024 * 1024;

/// An image format recognised by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageKind {
    Png,
    Jpeg,
    Gif,
    Webp,
    Bmp,
}

impl ImageKind {
    /// The format of `bytes`, by magic number.
    pub fn sniff(bytes: &[u8]) -> Option<ImageKind> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(ImageKind::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(ImageKind::Jpeg)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(ImageKind::Gif)
        } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
            Some(ImageKind::Webp)
        } else if bytes.len() >= 26 && bytes.starts_with(b"BM") {
            Some(ImageKind::Bmp)
        } else {
            None
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            ImageKind::Png => "png",
            ImageKind::Jpeg => "jpg",
            ImageKind::Gif => "gif",
            ImageKind::Webp => "webp",
            ImageKind::Bmp => "bmp",
        }
    }

    pub fn mime(self) -> &'static str {
        match self {
            ImageKind::Png => "image/png",
            ImageKind::Jpeg => "image/jpeg",
            ImageKind::Gif => "image/gif",
            ImageKind::Webp => "image/webp",
            ImageKind::Bmp => "image/bmp",
        }
    }
}

pub struct FetchImage {
    spec: ToolSpec,
    guard: Guard,
}

impl FetchImage {
    pub fn new(guard: Guard) -> Self {
        FetchImage {
            spec: seed_spec(
                "fetch_image",
                texts::FETCH_IMAGE_DESCRIPTION,
                texts::FETCH_IMAGE_SCHEMA,
            ),
            guard,
        }
    }
}

impl Tool for FetchImage {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn invoke(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        let guard = self.guard.clone();
        Box::pin(async move {
            let url = args
                .get("url")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_owned();
            let hint = args
                .get("filename")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let (dir, shown) = workspace_dir(&ctx, "downloads")?;
            let (kind, body) = fetch_verified(&guard, &url)
                .await
                .map_err(|reason| ToolError::new(texts::fetch_failed(&url, &reason)))?;
            let name = generated_name(hint, kind);
            write_new(&dir, &name, &body)?;
            Ok(texts::fetch_image_saved(
                &format!("{shown}/{name}"),
                kind.mime(),
                body.len(),
            ))
        })
    }
}

/// Fetches the image at `url` through `guard` (at most [`MAX_IMAGE_BYTES`]): the server must
/// say `image/…` and the bytes must be one of the [`ImageKind`]s. The error is the reason, in
/// the words `fetch_image` shows the model (the gateway's images by URL use it too).
pub async fn fetch_verified(guard: &Guard, url: &str) -> Result<(ImageKind, Vec<u8>), String> {
    let image = guard
        .fetch(url, "image/*", MAX_IMAGE_BYTES)
        .await
        .map_err(|e| e.to_string())?;
    let content_type = image.content_type.clone().unwrap_or_default();
    if !content_type.starts_with("image/") {
        let shown_type = if content_type.is_empty() {
            "(none)"
        } else {
            &content_type
        };
        return Err(texts::net_reason(
            texts::NET_NOT_IMAGE,
            &[("<TYPE>", shown_type)],
        ));
    }
    match ImageKind::sniff(&image.body) {
        Some(kind) => Ok((kind, image.body)),
        None => Err(texts::NET_BAD_IMAGE.to_owned()),
    }
}

/// `<stem>-<12 hex>.<ext>`.
pub fn generated_name(hint: &str, kind: ImageKind) -> String {
    let stem = safe_stem(hint).unwrap_or_else(|| "image".to_owned());
    format!("{stem}-{}.{}", random_hex(12), kind.extension())
}
