//! `image_generate`: an OpenAI-compatible images endpoint (`POST {base_url}/images/generations`,
//! `POST {base_url}/images/edits` as multipart), results written to the workspace's `outputs/`.
//!
//! `action=generate` sends only the prompt (never a conversation image). `action=edit` sends one
//! base image: `previous_generation` is the newest image this tool wrote to `outputs/`
//! (`image-<unix ms>-…`); `current_attachment` is the `base_image_index`-th image (1-based, by
//! file name) in `uploads/`. Results are `/workspace/outputs/image-<unix ms>-<i>-<hex>.<ext>`
//! (on the host: `<workspace>/outputs/…`). `b64_json` results are decoded; `url` results are
//! downloaded through the guard.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolbridge_agent::{Tool, ToolContext, ToolError};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::ToolSpec;

use crate::common::{random_hex, seed_spec, workspace_dir, write_new};
use crate::fetch_image::{ImageKind, MAX_IMAGE_BYTES};
use crate::net::Guard;

/// `[tools.images]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ImagesConfig {
    /// The OpenAI-compatible API base (default `https://api.openai.com/v1`).
    pub base_url: Option<String>,
    /// The model (default `gpt-image-1`).
    pub model: Option<String>,
    /// The variable holding the key (default `OPENAI_API_KEY`; with a custom `base_url` no key is
    /// sent unless this is set).
    pub api_key_env: Option<String>,
    /// Sent as `response_format` when set (`b64_json` for DALL·E models; GPT Image models
    /// always answer `b64_json` and refuse the parameter).
    pub response_format: Option<String>,
    /// Deadline of one request (default 300).
    pub timeout_secs: Option<u64>,
}

/// A resolved images endpoint.
#[derive(Clone, Debug)]
pub struct ImagesEndpoint {
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub response_format: Option<String>,
    pub timeout: Duration,
}

impl ImagesEndpoint {
    pub fn from_config(
        config: &ImagesConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ImagesEndpoint, String> {
        let base_url = config
            .base_url
            .clone()
            .unwrap_or_else(|| "https://api.openai.com/v1".to_owned())
            .trim_end_matches('/')
            .to_owned();
        let key_env = config.api_key_env.clone().or_else(|| {
            config
                .base_url
                .is_none()
                .then(|| "OPENAI_API_KEY".to_owned())
        });
        let api_key = key_env.as_deref().and_then(env).filter(|k| !k.is_empty());
        if config.base_url.is_none() && api_key.is_none() {
            return Err("[tools.images] needs an API key in $OPENAI_API_KEY (or set base_url and api_key_env)".into());
        }
        Ok(ImagesEndpoint {
            base_url,
            model: config
                .model
                .clone()
                .unwrap_or_else(|| "gpt-image-1".to_owned()),
            api_key,
            response_format: config.response_format.clone(),
            timeout: Duration::from_secs(config.timeout_secs.unwrap_or(300)),
        })
    }
}

pub struct ImageGenerate {
    spec: ToolSpec,
    endpoint: Option<ImagesEndpoint>,
    client: reqwest::Client,
    guard: Guard,
}

impl ImageGenerate {
    /// `endpoint = None`: the tool is offered and says image generation is not configured.
    pub fn new(endpoint: Option<ImagesEndpoint>, guard: Guard) -> Self {
        ImageGenerate {
            spec: seed_spec(
                "image_generate",
                texts::IMAGE_GENERATE_DESCRIPTION,
                texts::IMAGE_GENERATE_SCHEMA,
            ),
            endpoint,
            client: reqwest::Client::new(),
            guard,
        }
    }
}

impl Tool for ImageGenerate {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn invoke(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<String, ToolError>> {
        let endpoint = self.endpoint.clone();
        let client = self.client.clone();
        let guard = self.guard.clone();
        Box::pin(async move {
            let Some(endpoint) = endpoint else {
                return Err(ToolError::new(texts::IMAGES_NOT_CONFIGURED));
            };
            let prompt = args
                .get("prompt")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let action = args
                .get("action")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let base = args
                .get("base_image")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let n = args
                .get("n")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .clamp(1, 4);
            let size = args
                .get("size")
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty());
            let (outputs, shown) = workspace_dir(&ctx, "outputs")?;
            let request = match (action, base) {
                ("generate", "none") => {
                    let mut body = json!({"model": endpoint.model, "prompt": prompt, "n": n});
                    if let Some(size) = size {
                        body["size"] = json!(size);
                    }
                    if let Some(f) = &endpoint.response_format {
                        body["response_format"] = json!(f);
                    }
                    client
                        .post(format!("{}/images/generations", endpoint.base_url))
                        .json(&body)
                }
                ("edit", "previous_generation" | "current_attachment") => {
                    let path = if base == "previous_generation" {
                        previous_generation(&outputs)?
                    } else {
                        let index = args
                            .get("base_image_index")
                            .and_then(Value::as_u64)
                            .unwrap_or(1);
                        let (uploads, _) = workspace_dir(&ctx, "uploads")?;
                        attachment(&uploads, index)?
                    };
                    let bytes = std::fs::read(&path).map_err(|e| {
                        ToolError::internal(format!("reading {}: {e}", path.display()))
                    })?;
                    let kind = ImageKind::sniff(&bytes).unwrap_or(ImageKind::Png);
                    let part = reqwest::multipart::Part::bytes(bytes)
                        .file_name(format!("image.{}", kind.extension()))
                        .mime_str(kind.mime())
                        .map_err(|e| ToolError::internal(e.to_string()))?;
                    let mut form = reqwest::multipart::Form::new()
                        .text("model", endpoint.model.clone())
                        .text("prompt", prompt.to_owned())
                        .text("n", n.to_string())
                        .part("image", part);
                    if let Some(size) = size {
                        form = form.text("size", size.to_owned());
                    }
                    if let Some(f) = &endpoint.response_format {
                        form = form.text("response_format", f.clone());
                    }
                    client
                        .post(format!("{}/images/edits", endpoint.base_url))
                        .multipart(form)
                }
                _ => return Err(ToolError::new(texts::IMAGES_BAD_BASE)),
            };
            let request = match &endpoint.api_key {
                Some(key) => request.bearer_auth(key),
                None => request,
            };
            let response = request
                .timeout(endpoint.timeout)
                .send()
                .await
                .map_err(|e| {
                    tracing::warn!(error = %e.without_url(), "images endpoint unreachable");
                    ToolError::new(texts::images_failed(texts::NET_CONNECT))
                })?;
            let status = response.status();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            if !status.is_success() {
                let detail = body
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(|m| m.chars().take(300).collect::<String>());
                let mut reason = texts::net_reason(
                    texts::NET_STATUS,
                    &[("<STATUS>", &status.as_u16().to_string())],
                );
                if let Some(d) = detail {
                    reason = format!("{reason} ({d})");
                }
                return Err(ToolError::new(texts::images_failed(&reason)));
            }
            let items = body
                .get("data")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let stamp = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0);
            let mut paths = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let bytes = if let Some(b64) = item.get("b64_json").and_then(Value::as_str) {
                    base64::engine::general_purpose::STANDARD
                        .decode(b64.trim())
                        .map_err(|_| {
                            ToolError::new(texts::images_failed(&texts::net_reason(
                                texts::NET_ENCODING,
                                &[("<ENCODING>", "b64_json")],
                            )))
                        })?
                } else if let Some(url) = item.get("url").and_then(Value::as_str) {
                    guard
                        .fetch(url, "image/*", MAX_IMAGE_BYTES)
                        .await
                        .map_err(|e| ToolError::new(texts::images_failed(&e.to_string())))?
                        .body
                } else {
                    continue;
                };
                let Some(kind) = ImageKind::sniff(&bytes) else {
                    return Err(ToolError::new(texts::images_failed(texts::NET_BAD_IMAGE)));
                };
                let name = format!(
                    "image-{stamp:013}-{}-{}.{}",
                    i + 1,
                    random_hex(6),
                    kind.extension()
                );
                write_new(&outputs.join(&name), &bytes)?;
                paths.push(format!("{shown}/{name}"));
            }
            if paths.is_empty() {
                return Err(ToolError::new(texts::images_failed(&texts::net_reason(
                    texts::NET_ENCODING,
                    &[("<ENCODING>", "no images")],
                ))));
            }
            Ok(texts::images_saved(&paths))
        })
    }
}

/// The newest image this tool wrote (`image-<ms>-…`, names sort by time).
fn previous_generation(outputs: &std::path::Path) -> Result<PathBuf, ToolError> {
    let mut names: Vec<String> = std::fs::read_dir(outputs)
        .map_err(|e| ToolError::internal(format!("listing outputs: {e}")))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("image-"))
        .collect();
    names.sort();
    names
        .pop()
        .map(|n| outputs.join(n))
        .ok_or_else(|| ToolError::new(texts::IMAGES_NO_PREVIOUS))
}

/// The `index`-th image (1-based, by name) among the uploads.
fn attachment(uploads: &std::path::Path, index: u64) -> Result<PathBuf, ToolError> {
    let mut images: Vec<PathBuf> = std::fs::read_dir(uploads)
        .map_err(|e| ToolError::internal(format!("listing uploads: {e}")))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| {
            let mut head = [0u8; 32];
            std::fs::File::open(p)
                .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
                .map(|n| ImageKind::sniff(&head[..n]).is_some())
                .unwrap_or(false)
        })
        .collect();
    images.sort();
    let count = images.len();
    usize::try_from(index)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| images.get(i).cloned())
        .ok_or_else(|| ToolError::new(texts::images_no_attachment(index, count)))
}
