//! Turning an MCP tool result into the text the model sees.
//!
//! Text parts are joined with newlines. Binary parts (images, audio, blob resources) are decoded
//! and written under a generated name `mcp-<server>-<random>.<ext>` into `<workspace>/downloads/`
//! (never a path the server chose); the model gets a line naming the file. Without a workspace
//! the files go to `toolbridge-mcp/` in the system temp folder. Text resources are inline under
//! their URI; resource links are their URI.

use std::path::{Path, PathBuf};

use base64::Engine;
use rand::Rng;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use toolbridge_protocol::texts;
use toolbridge_sandbox::beneath::Tree;

/// Where binary content is saved.
pub fn output_dir(workspace: Option<&Path>) -> PathBuf {
    match workspace {
        Some(ws) => ws.join("downloads"),
        None => std::env::temp_dir().join("toolbridge-mcp"),
    }
}

/// The text of a result's content (for `isError` results too: the server's message).
pub async fn render(result: &CallToolResult, server: &str, dir: &Path) -> String {
    let mut parts = Vec::with_capacity(result.content.len());
    for block in &result.content {
        parts.push(render_block(block, server, dir).await);
    }
    if parts.is_empty() {
        if let Some(structured) = &result.structured_content {
            return structured.to_string();
        }
        return texts::MCP_NO_CONTENT.to_owned();
    }
    parts.join("\n")
}

async fn render_block(block: &ContentBlock, server: &str, dir: &Path) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(image) => {
            match save(&image.data, &image.mime_type, server, dir).await {
                Some(path) => texts::mcp_image_saved(&path),
                None => texts::mcp_content_not_saved("image"),
            }
        }
        ContentBlock::Audio(audio) => {
            match save(&audio.data, &audio.mime_type, server, dir).await {
                Some(path) => texts::mcp_audio_saved(&path),
                None => texts::mcp_content_not_saved("audio"),
            }
        }
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                texts::mcp_resource_text(uri, text)
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => {
                let mime = mime_type.as_deref().unwrap_or("application/octet-stream");
                match save(blob, mime, server, dir).await {
                    Some(path) => texts::mcp_resource_saved(uri, &path),
                    None => texts::mcp_content_not_saved("resource"),
                }
            }
            // A kind newer than this client: its JSON is the best rendering available.
            other => serde_json::to_string(other).unwrap_or_default(),
        },
        ContentBlock::ResourceLink(link) => texts::mcp_resource_link(&link.uri),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// Decodes and writes one binary part; `None` (logged) when it cannot be decoded or written.
async fn save(data: &str, mime: &str, server: &str, dir: &Path) -> Option<String> {
    let bytes = match base64::engine::general_purpose::STANDARD.decode(data.trim()) {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(server, error = %e, "MCP content is not valid base64");
            return None;
        }
    };
    let random: u64 = rand::rng().random();
    let name = format!("mcp-{server}-{random:016x}.{}", extension(mime));
    let path = dir.join(&name);
    let target = dir.to_path_buf();
    let written = tokio::task::spawn_blocking(move || write_new(&target, &name, &bytes)).await;
    match written {
        Ok(Ok(())) => Some(path.display().to_string()),
        Ok(Err(e)) => {
            tracing::warn!(server, path = %path.display(), error = %e, "cannot save MCP content");
            None
        }
        Err(e) => {
            tracing::warn!(server, error = %e, "saving MCP content did not finish");
            None
        }
    }
}

/// Writes `bytes` as the new file `name` in `dir` (created when missing). `dir` is usually a
/// workspace's `downloads/`, which sandboxed code can replace with a link at any moment: the
/// folder is opened below its parent and the file created below it without following any link
/// (`toolbridge_sandbox::beneath`).
fn write_new(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let (Some(parent), Some(folder)) = (dir.parent(), dir.file_name().and_then(|n| n.to_str()))
    else {
        return Err(std::io::Error::other("no folder to save into"));
    };
    std::fs::create_dir_all(parent)?;
    let mut file = Tree::open(parent)?
        .dir_or_create(folder, 0o755)?
        .create_new(name, 0o644)?;
    file.write_all(bytes)
}

/// A file extension for a MIME type (the server's file name is never used).
fn extension(mime: &str) -> &'static str {
    let essence = mime.split(';').next().unwrap_or_default().trim();
    match essence.to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/bmp" => "bmp",
        "image/svg+xml" => "svg",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/ogg" => "ogg",
        "application/pdf" => "pdf",
        "application/json" => "json",
        "text/plain" => "txt",
        "application/gzip" | "application/x-gzip" => "gz",
        "application/zip" => "zip",
        _ => "bin",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use rmcp::model::Resource;

    use super::*;

    #[tokio::test]
    async fn parts_are_joined_and_binaries_saved_under_generated_names() {
        let dir = std::env::temp_dir().join(format!("tb-mcp-content-{}", std::process::id()));
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG fake");
        let result = CallToolResult::success(vec![
            ContentBlock::text("one"),
            ContentBlock::image(png, "image/png"),
            ContentBlock::embedded_text("test://r/1", "inline text"),
            ContentBlock::resource_link(Resource::new("test://r/2", "r2")),
            ContentBlock::image("!!not base64!!", "image/png"),
        ]);
        let text = render(&result, "py", &dir).await;
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "one");
        let path = lines[1]
            .strip_prefix("[image saved: ")
            .and_then(|l| l.strip_suffix(']'))
            .unwrap();
        assert!(path.starts_with(dir.to_str().unwrap()), "{path}");
        assert!(
            path.contains("/mcp-py-") && path.ends_with(".png"),
            "{path}"
        );
        assert_eq!(std::fs::read(path).unwrap(), b"\x89PNG fake");
        assert_eq!(
            &lines[2..],
            [
                "[resource test://r/1]",
                "inline text",
                "[resource link: test://r/2]",
                "[image returned but it could not be saved]",
            ]
        );
        let empty = CallToolResult::success(vec![]);
        assert_eq!(render(&empty, "py", &dir).await, texts::MCP_NO_CONTENT);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Sandboxed code can replace a workspace's `downloads/` with a link to a host folder: the
    /// server's binary content is then not saved, and nothing is written through the link.
    #[tokio::test]
    async fn a_downloads_folder_replaced_by_a_link_is_not_written_through() {
        let ws = tempfile::tempdir().unwrap();
        let host = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(host.path(), ws.path().join("downloads")).unwrap();
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG fake");
        let result = CallToolResult::success(vec![ContentBlock::image(png, "image/png")]);
        let dir = output_dir(Some(ws.path()));
        let text = render(&result, "py", &dir).await;
        assert_eq!(text, "[image returned but it could not be saved]");
        assert_eq!(std::fs::read_dir(host.path()).unwrap().count(), 0);
    }
}
