//! Files between the store and a conversation's workspace: the files a request's messages
//! refer to are written, unconverted, into `/workspace/uploads` (images also go to the model
//! inline), and what code wrote under `/workspace/outputs` during a run is kept in the store
//! as the container's files.

use base64::Engine as _;
use bytes::Bytes;
use toolbridge_protocol::types::{Content, ContentPart, ImageUrl, Message};
use toolbridge_state::{FileRecord, Store};
use toolbridge_tools::workspace::{OutputsSnapshot, Workspace};

use super::files::{display_name, sniff};
use super::request::{FileSource, ResponsesRequest};
use crate::error::ApiError;

/// Stages every file the request's messages refer to; returns the names written into
/// `uploads/` (the run's attachments). A file id this key does not own is a 404.
pub(crate) async fn stage(
    store: &dyn Store,
    owner: &str,
    request: &mut ResponsesRequest,
    workspace: Option<&Workspace>,
    workspace_quota: Option<u64>,
) -> Result<Vec<String>, ApiError> {
    let mut attached = Vec::new();
    for file in std::mem::take(&mut request.files) {
        let (name, bytes) = match &file.source {
            FileSource::Id(id) => {
                let meta = store
                    .get_file(owner, id)
                    .await
                    .map_err(|e| {
                        tracing::error!(error = %e, "responses: state store");
                        ApiError::state_unavailable()
                    })?
                    .ok_or_else(|| ApiError::no_such("file", id, Some("input")))?;
                let bytes = store
                    .file_content(owner, id)
                    .await
                    .ok()
                    .flatten()
                    .ok_or_else(|| ApiError::no_such("file", id, Some("input")))?;
                // Stored names are display names already; older records are made so too.
                (display_name(&meta.filename), bytes)
            }
            FileSource::Inline { filename, data } => {
                let b64 = data
                    .split_once(";base64,")
                    .map_or(data.as_str(), |(_, b)| b);
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b64.trim())
                    .map_err(|_| {
                        ApiError::bad_param("input", "Invalid 'file_data': not base64.")
                    })?;
                (display_name(filename), Bytes::from(bytes))
            }
        };
        let media = sniff(&bytes);
        let mut parts = Vec::new();
        if file.image {
            if !media.starts_with("image/") {
                return Err(ApiError::bad_param(
                    "input",
                    format!("The file '{name}' given as an input_image is not an image."),
                ));
            }
            let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
            parts.push(ContentPart::ImageUrl {
                image_url: ImageUrl {
                    url: format!("data:{media};base64,{b64}"),
                    detail: None,
                },
            });
        }
        if let (Some(ws), Some(quota)) = (workspace, workspace_quota) {
            let used = toolbridge_tools::quota::workspace_bytes(ws.path().to_path_buf()).await;
            let wanted = bytes.len() as u64;
            if used.saturating_add(wanted) > quota {
                return Err(crate::quota::workspace_full(used, wanted, quota));
            }
        }
        match workspace {
            Some(ws) => match ws.attach_bytes(&name, &bytes) {
                Ok(path) => {
                    if let Some(stem) = path.rsplit('/').next() {
                        attached.push(stem.to_owned());
                    }
                    parts.push(ContentPart::Text {
                        text: format!(
                            "[Attached file: {path} ({} bytes, {media})]",
                            bytes.len()
                        ),
                    });
                }
                Err(e) => {
                    tracing::error!(error = %e, "responses: staging an attached file failed");
                    return Err(ApiError::internal());
                }
            },
            None if file.image => {}
            None => {
                return Err(ApiError::bad_param(
                    "input",
                    "Files can only be attached when the server has a workspace for the conversation (code_interpreter configured).",
                ))
            }
        }
        if let Some(message) = request.messages.get_mut(file.message) {
            append_parts(message, parts);
        }
    }
    Ok(attached)
}

fn append_parts(message: &mut Message, mut parts: Vec<ContentPart>) {
    let content = match message {
        Message::User { content, .. } | Message::System { content, .. } => content,
        Message::Assistant {
            content: Some(content),
            ..
        } => content,
        _ => return,
    };
    let mut all = match std::mem::replace(content, Content::Parts(Vec::new())) {
        Content::Text(t) if t.is_empty() => Vec::new(),
        Content::Text(t) => vec![ContentPart::Text { text: t }],
        Content::Parts(p) => p,
    };
    all.append(&mut parts);
    *content = Content::Parts(all);
}

/// Keeps what code wrote under `outputs/` since `before` as the container's files (a file
/// already kept under the same name is replaced).
pub(crate) async fn keep_outputs(
    store: &dyn Store,
    owner: &str,
    container: &str,
    workspace: &Workspace,
    before: &OutputsSnapshot,
    max_bytes: u64,
    quota: Option<u64>,
) {
    let fresh = workspace.new_outputs(before);
    if fresh.is_empty() {
        return;
    }
    let existing = store
        .list_files(
            owner,
            toolbridge_state::FileFilter::Container(container.to_owned()),
        )
        .await
        .unwrap_or_default();
    for file in fresh {
        let bytes = match workspace.read_output(&file.relative, max_bytes) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, file = %file.relative, "responses: an output file was not kept");
                continue;
            }
        };
        // Shown as a container file's name and path: nothing invisible in it.
        let filename = super::files::visible(&file.relative);
        let id = existing
            .iter()
            .find(|f| f.filename == filename)
            .map_or_else(toolbridge_state::new_file_id, |f| f.id.clone());
        let now = toolbridge_state::now();
        let record = FileRecord {
            id,
            owner: owner.to_owned(),
            filename,
            purpose: "assistants_output".into(),
            bytes: bytes.len() as u64,
            created_at: now,
            expires_at: None,
            media_type: sniff(&bytes).to_owned(),
            container: Some(container.to_owned()),
        };
        // Over the user's file quota the output stays in the workspace only.
        let stored = match quota {
            Some(quota) => store.put_file_within(record, Bytes::from(bytes), quota),
            None => store.put_file(record, Bytes::from(bytes)),
        };
        if let Err(e) = stored.await {
            tracing::warn!(error = %e, file = %file.relative, "responses: an output file was not stored");
        }
    }
}
