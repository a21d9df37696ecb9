//! The texts of MCP tool results (crate `toolbridge-mcp`). All ours.

use super::fill;

/// Ours: an image an MCP tool returned, saved into the workspace; placeholder `<PATH>`.
pub const MCP_IMAGE_SAVED: &str = "[image saved: <PATH>]";
/// Ours: audio an MCP tool returned, saved into the workspace; placeholder `<PATH>`.
pub const MCP_AUDIO_SAVED: &str = "[audio saved: <PATH>]";
/// Ours: an embedded binary resource, saved; placeholders `<URI>`, `<PATH>`.
pub const MCP_RESOURCE_SAVED: &str = "[resource <URI> saved: <PATH>]";
/// Ours: an embedded text resource, shown inline after this line; placeholder `<URI>`.
pub const MCP_RESOURCE_TEXT: &str = "[resource <URI>]";
/// Ours: a link to a resource the tool did not embed; placeholder `<URI>`.
pub const MCP_RESOURCE_LINK: &str = "[resource link: <URI>]";
/// Ours: binary content that could not be saved (bad base64, no room); placeholder `<KIND>`.
pub const MCP_CONTENT_NOT_SAVED: &str = "[<KIND> returned but it could not be saved]";
/// Ours: a result without any content.
pub const MCP_NO_CONTENT: &str = "(the tool returned no content)";

/// Ours: where an MCP image went.
pub fn mcp_image_saved(path: &str) -> String {
    fill(MCP_IMAGE_SAVED, &[("<PATH>", path)])
}

/// Ours: where MCP audio went.
pub fn mcp_audio_saved(path: &str) -> String {
    fill(MCP_AUDIO_SAVED, &[("<PATH>", path)])
}

/// Ours: where an embedded binary resource went.
pub fn mcp_resource_saved(uri: &str, path: &str) -> String {
    fill(MCP_RESOURCE_SAVED, &[("<URI>", uri), ("<PATH>", path)])
}

/// Ours: an embedded text resource: the header line, then the text.
pub fn mcp_resource_text(uri: &str, text: &str) -> String {
    let mut s = fill(MCP_RESOURCE_TEXT, &[("<URI>", uri)]);
    s.push('\n');
    s.push_str(text);
    s
}

/// Ours: a resource link.
pub fn mcp_resource_link(uri: &str) -> String {
    fill(MCP_RESOURCE_LINK, &[("<URI>", uri)])
}

/// Ours: binary content (`image`, `audio`, `resource`) that could not be saved.
pub fn mcp_content_not_saved(kind: &str) -> String {
    fill(MCP_CONTENT_NOT_SAVED, &[("<KIND>", kind)])
}
