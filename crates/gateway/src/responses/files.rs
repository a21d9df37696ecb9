//! The Files API (`POST /v1/files`, `GET /v1/files`, `GET`/`DELETE /v1/files/{id}`,
//! `GET /v1/files/{id}/content`) and the files code wrote in a container
//! (`GET /v1/containers/{id}/files`, `…/files/{file_id}`, `…/files/{file_id}/content`).
//!
//! docs/src/security.md, "Stored objects and tenancy": uploads are capped while they stream in
//! (`[server.state] max_file_bytes`), their type is sniffed from the bytes (the client's content
//! type is not trusted), the client's file name is kept for display only — in a workspace a file is
//! named by us — and a key sees only its own files (404 for another's).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::multipart::MultipartRejection;
use axum::extract::{Multipart, Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use bytes::Bytes;
use serde_json::{json, Value};
use toolbridge_state::{FileFilter, FileRecord, Page, StoreError};

use super::json_response;
use crate::decode::Query;
use crate::error::ApiError;
use crate::pagination::{self, ListQuery};
use crate::routes::User;
use crate::state::AppState;

const PURPOSES: &[&str] = &[
    "assistants",
    "user_data",
    "vision",
    "batch",
    "fine-tune",
    "evals",
];

/// A file as the API shows it.
pub(crate) fn object(f: &FileRecord) -> Value {
    json!({
        "id": f.id,
        "object": "file",
        "bytes": f.bytes,
        "created_at": f.created_at,
        "expires_at": f.expires_at,
        "filename": f.filename,
        "purpose": f.purpose,
        "status": "processed",
        "status_details": null,
    })
}

/// A container's file as the API shows it.
fn container_object(f: &FileRecord, container: &str) -> Value {
    json!({
        "id": f.id,
        "object": "container.file",
        "bytes": f.bytes,
        "container_id": container,
        "created_at": f.created_at,
        "path": format!("/mnt/data/{}", f.filename),
        "source": "assistant",
    })
}

fn store_failed(e: StoreError) -> Response {
    match e {
        StoreError::TooLarge(_) => {
            ApiError::bad_param("file", "The file is too large.").into_response()
        }
        StoreError::OverQuota {
            used,
            wanted,
            quota,
        } => crate::quota::files_full(used, wanted, quota).into_response(),
        other => {
            tracing::error!(error = %other, "files: state store");
            ApiError::state_unavailable().into_response()
        }
    }
}

/// The media type of `bytes`, from their first bytes; text when they are UTF-8.
pub(crate) fn sniff(bytes: &[u8]) -> &'static str {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"\xff\xd8\xff", "image/jpeg"),
        (b"GIF87a", "image/gif"),
        (b"GIF89a", "image/gif"),
        (b"%PDF-", "application/pdf"),
        (b"PK\x03\x04", "application/zip"),
        (b"\x1f\x8b", "application/gzip"),
    ];
    for (magic, kind) in MAGIC {
        if bytes.starts_with(magic) {
            return kind;
        }
    }
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return "image/webp";
    }
    match std::str::from_utf8(&bytes[..bytes.len().min(64 << 10)]) {
        Ok(_) => "text/plain",
        // A multi-byte character cut at the sniffing window is still text.
        Err(e) if e.error_len().is_none() => "text/plain",
        Err(_) => "application/octet-stream",
    }
}

/// Whether `c` is invisible or reorders the text around it: the bidirectional embeddings,
/// overrides, isolates and marks, and the other format characters (zero-width ones, the byte
/// order mark, the soft hyphen, tags, fillers). In a name shown to a user one can disguise it:
/// `invoice\u{202E}fdp.exe` displays as `invoiceexe.pdf`.
pub(crate) fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// A name as it may be shown: invisible and reordering characters dropped, control characters
/// as `_`.
pub(crate) fn visible(name: &str) -> String {
    name.chars()
        .filter(|c| !is_invisible(*c))
        .map(|c| if c.is_control() { '_' } else { c })
        .collect()
}

/// The client's name, for display: its last path component, visible ([`visible`]), at most
/// 255 bytes.
pub(crate) fn display_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let mut clean = visible(base);
    while clean.len() > 255 {
        clean.pop();
    }
    let clean = clean.trim_start_matches('.').trim().to_owned();
    if clean.is_empty() {
        "upload".into()
    } else {
        clean
    }
}

/// `POST /v1/files`: multipart with `file` and `purpose`.
pub(crate) async fn upload(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Response {
    let mut multipart = match multipart {
        Ok(m) => m,
        Err(_) => {
            return ApiError::bad_param(
                "file",
                "The body must be multipart/form-data (Content-Type with a boundary) holding \
                 'file' and 'purpose'.",
            )
            .into_response()
        }
    };
    let max = state.responses.max_file_bytes();
    let mut purpose = None;
    let mut file: Option<(String, Vec<u8>)> = None;
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => {
                return ApiError::bad_param(
                    "file",
                    format!("The multipart body could not be read: {e}."),
                )
                .into_response()
            }
        };
        match field.name() {
            Some("purpose") => match field.text().await {
                Ok(t) => purpose = Some(t),
                Err(_) => {
                    return ApiError::bad_param("purpose", "Unreadable 'purpose'.").into_response()
                }
            },
            Some("file") => {
                let name = display_name(field.file_name().unwrap_or("upload"));
                let mut field = field;
                let mut bytes = Vec::new();
                loop {
                    match field.chunk().await {
                        Ok(Some(chunk)) => {
                            if (bytes.len() + chunk.len()) as u64 > max {
                                let max = usize::try_from(max).unwrap_or(usize::MAX);
                                return ApiError::too_large(max).with_param("file").into_response();
                            }
                            bytes.extend_from_slice(&chunk);
                        }
                        Ok(None) => break,
                        Err(e) => {
                            return ApiError::bad_param(
                                "file",
                                format!("The upload could not be read: {e}."),
                            )
                            .into_response()
                        }
                    }
                }
                file = Some((name, bytes));
            }
            _ => {}
        }
    }
    let Some(purpose) = purpose else {
        return ApiError::bad_param("purpose", "Missing required parameter: 'purpose'.")
            .into_response();
    };
    if !PURPOSES.contains(&purpose.as_str()) {
        return ApiError::bad_param(
            "purpose",
            format!(
                "Invalid 'purpose': expected one of {}.",
                PURPOSES.join(", ")
            ),
        )
        .into_response();
    }
    let Some((filename, bytes)) = file else {
        return ApiError::bad_param("file", "Missing required parameter: 'file'.").into_response();
    };
    let store = match state.responses.store().await {
        Ok(s) => s,
        Err(e) => return store_failed(e),
    };
    let now = toolbridge_state::now();
    let record = FileRecord {
        id: toolbridge_state::new_file_id(),
        owner,
        filename,
        purpose,
        bytes: bytes.len() as u64,
        created_at: now,
        expires_at: state.responses.expires_at(now),
        media_type: sniff(&bytes).to_owned(),
        container: None,
    };
    let stored = match crate::quota::file_quota(&state) {
        Some(quota) => store.put_file_within(record.clone(), Bytes::from(bytes), quota),
        None => store.put_file(record.clone(), Bytes::from(bytes)),
    };
    match stored.await {
        Ok(()) => json_response(StatusCode::OK, &object(&record)),
        Err(e) => store_failed(e),
    }
}

/// `GET /v1/files`: the key's uploads, a page at a time (newest first unless `order=asc`).
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Query(query): Query<ListQuery>,
) -> Response {
    list_page(
        &state,
        &owner,
        FileFilter::Uploads,
        &query,
        pagination::FILES,
        object,
    )
    .await
}

/// A page of the owner's files of `filter`, each shown by `show`, read page by page from the
/// store.
async fn list_page(
    state: &Arc<AppState>,
    owner: &str,
    filter: FileFilter,
    query: &ListQuery,
    limits: pagination::Limits,
    show: impl Fn(&FileRecord) -> Value,
) -> Response {
    let request = match query.page(limits) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let store = match state.responses.store().await {
        Ok(s) => s,
        Err(e) => return store_failed(e),
    };
    match store.list_files_page(owner, filter, request).await {
        Ok(page) => {
            let page = Page {
                data: page.data.iter().map(show).collect(),
                has_more: page.has_more,
            };
            json_response(StatusCode::OK, &pagination::list_object(page))
        }
        Err(StoreError::UnknownCursor(after)) => pagination::unknown_cursor(&after).into_response(),
        Err(e) => store_failed(e),
    }
}

async fn find(state: &Arc<AppState>, owner: &str, id: &str) -> Result<FileRecord, Response> {
    let store = state.responses.store().await.map_err(store_failed)?;
    match store.get_file(owner, id).await {
        Ok(Some(f)) => Ok(f),
        Ok(None) => Err(ApiError::no_such("file", id, None).into_response()),
        Err(e) => Err(store_failed(e)),
    }
}

/// `GET /v1/files/{id}`.
pub(crate) async fn retrieve(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Path(id): Path<String>,
) -> Response {
    match find(&state, &owner, &id).await {
        Ok(f) if f.container.is_none() => json_response(StatusCode::OK, &object(&f)),
        Ok(_) => ApiError::no_such("file", &id, None).into_response(),
        Err(r) => r,
    }
}

/// `GET /v1/files/{id}/content`.
pub(crate) async fn content(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Path(id): Path<String>,
) -> Response {
    let record = match find(&state, &owner, &id).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    download(&state, &owner, &record).await
}

async fn download(state: &Arc<AppState>, owner: &str, record: &FileRecord) -> Response {
    let store = match state.responses.store().await {
        Ok(s) => s,
        Err(e) => return store_failed(e),
    };
    match store.file_content(owner, &record.id).await {
        Ok(Some(bytes)) => {
            let mut response = Response::new(Body::from(bytes));
            let headers = response.headers_mut();
            // Served as what it was sniffed to be, never as HTML a browser would run.
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_str(&record.media_type)
                    .unwrap_or(HeaderValue::from_static("application/octet-stream")),
            );
            headers.insert(
                "x-content-type-options",
                HeaderValue::from_static("nosniff"),
            );
            headers.insert(
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("attachment"),
            );
            response
        }
        Ok(None) => ApiError::no_such("file", &record.id, None).into_response(),
        Err(e) => store_failed(e),
    }
}

/// `DELETE /v1/files/{id}`.
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Path(id): Path<String>,
) -> Response {
    let store = match state.responses.store().await {
        Ok(s) => s,
        Err(e) => return store_failed(e),
    };
    match store.delete_file(&owner, &id).await {
        Ok(true) => json_response(
            StatusCode::OK,
            &json!({"id": id, "object": "file", "deleted": true}),
        ),
        Ok(false) => ApiError::no_such("file", &id, None).into_response(),
        Err(e) => store_failed(e),
    }
}

/// `GET /v1/containers/{id}/files`: what code wrote under `/workspace/outputs` in the
/// conversation's container.
pub(crate) async fn container_files(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Path(container): Path<String>,
    Query(query): Query<ListQuery>,
) -> Response {
    let filter = FileFilter::Container(container.clone());
    let show = |f: &FileRecord| container_object(f, &container);
    list_page(&state, &owner, filter, &query, pagination::ITEMS, show).await
}

async fn container_file_record(
    state: &Arc<AppState>,
    owner: &str,
    container: &str,
    id: &str,
) -> Result<FileRecord, Response> {
    match find(state, owner, id).await {
        Ok(f) if f.container.as_deref() == Some(container) => Ok(f),
        Ok(_) => Err(ApiError::no_such("container file", id, None).into_response()),
        Err(r) => Err(r),
    }
}

/// `GET /v1/containers/{id}/files/{file_id}`.
pub(crate) async fn container_file(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Path((container, id)): Path<(String, String)>,
) -> Response {
    match container_file_record(&state, &owner, &container, &id).await {
        Ok(f) => json_response(StatusCode::OK, &container_object(&f, &container)),
        Err(r) => r,
    }
}

/// `GET /v1/containers/{id}/files/{file_id}/content`.
pub(crate) async fn container_file_content(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Path((container, id)): Path<(String, String)>,
) -> Response {
    match container_file_record(&state, &owner, &container, &id).await {
        Ok(f) => download(&state, &owner, &f).await,
        Err(r) => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_sniffed_from_the_bytes_and_names_lose_their_paths() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\nrest"), "image/png");
        assert_eq!(sniff(b"%PDF-1.7"), "application/pdf");
        assert_eq!(sniff(b"a,b\n1,2\n"), "text/plain");
        assert_eq!(sniff(&[0xff, 0x00, 0xfe, 0x01]), "application/octet-stream");
        assert_eq!(display_name("../../etc/passwd"), "passwd");
        assert_eq!(display_name("C:\\Users\\x\\data.csv"), "data.csv");
        assert_eq!(display_name(".."), "upload");
        assert_eq!(display_name("a\nb.txt"), "a_b.txt");
        assert_eq!(display_name("invoice\u{202E}fdp.exe"), "invoicefdp.exe");
        for c in [
            '\u{202A}', '\u{2066}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}', '\u{200B}',
            '\u{FEFF}',
        ] {
            assert_eq!(display_name(&format!("a{c}b.txt")), "ab.txt", "{c:?}");
        }
        assert_eq!(display_name("\u{202E}"), "upload");
        assert_eq!(visible("out/r\u{2067}eport.csv"), "out/report.csv");
        assert_eq!(display_name("données façade ☃.csv"), "données façade ☃.csv");
    }
}
