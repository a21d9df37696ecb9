//! `image_generate`: an OpenAI-compatible images endpoint (`POST {base_url}/images/generations`,
//! `POST {base_url}/images/edits` as multipart), results written to the workspace's `outputs/`
//! and staged under `uploads/` with the same name (the python_execute and document texts tell
//! the model generated images are there).
//!
//! `action=generate` sends only the prompt (never a conversation image). `action=edit` sends one
//! base image, first: `previous_generation` is the newest image this tool wrote
//! (`image-<unix ms>-…`, in `outputs/` or its staged copy); `current_attachment` is the
//! `base_image_index`-th image (1-based) among the files attached to this turn's message
//! ([`ToolContext::attachments`], in attachment order). The turn's other images go along as
//! references (`image[]` parts). The size follows [`size`]: tier and ratio from the `size` text,
//! an edit keeping its base's ratio, GPT Image 1.x mapped to its fixed sizes. Results are
//! `/workspace/outputs/image-<unix ms>-<i>-<hex>.<ext>` (on the host: `<workspace>/outputs/…`).
//! `b64_json` results are decoded; `url` results are downloaded through the guard. Every file
//! read from the workspace is opened without following links (sandboxed code writes there).

pub mod header;
pub mod size;

use std::io::Read;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolbridge_agent::{Tool, ToolContext, ToolError, ToolFuture};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::ToolSpec;
use toolbridge_sandbox::beneath::{FileType, Tree};

use crate::common::{random_hex, seed_spec, workspace_dir, write_new, SANDBOX_WORKSPACE};
use crate::fetch_image::{ImageKind, MAX_IMAGE_BYTES};
use crate::net::Guard;

/// The most bytes of one image sent to the edits endpoint (GPT Image models take up to 50 MB).
pub const MAX_EDIT_IMAGE_BYTES: usize = 50 * 1024 * 1024;
/// The most images one edit sends (the base and 15 references).
pub const MAX_EDIT_IMAGES: usize = 16;

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
    /// The only sizes the backend takes (`["1024x1024", "1536x1024"]`): each request gets the
    /// one closest in aspect ratio. Default: the model's own (GPT Image 1.x and DALL·E have fixed
    /// sizes; other models take any size within GPT Image 2's bounds).
    pub sizes: Option<Vec<String>>,
}

/// A resolved images endpoint.
#[derive(Clone, Debug)]
pub struct ImagesEndpoint {
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub response_format: Option<String>,
    pub timeout: Duration,
    /// `[tools.images] sizes` (empty: the model's own).
    pub sizes: Vec<(u32, u32)>,
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
        let sizes = config
            .sizes
            .iter()
            .flatten()
            .map(|s| {
                size::parse_wxh(s).ok_or_else(|| {
                    format!("[tools.images] sizes: {s:?} is not WIDTHxHEIGHT (like \"1024x1024\")")
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ImagesEndpoint {
            base_url,
            model: config
                .model
                .clone()
                .unwrap_or_else(|| "gpt-image-1".to_owned()),
            api_key,
            response_format: config.response_format.clone(),
            timeout: Duration::from_secs(config.timeout_secs.unwrap_or(300)),
            sizes,
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

/// An image read from the workspace to send.
struct Loaded {
    /// The sandbox path, for messages.
    shown: String,
    bytes: Vec<u8>,
    kind: ImageKind,
}

impl Tool for ImageGenerate {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn invoke(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        let endpoint = self.endpoint.clone();
        let client = self.client.clone();
        let guard = self.guard.clone();
        Box::pin(async move {
            let Some(endpoint) = endpoint else {
                return Err(ToolError::new(texts::IMAGES_NOT_CONFIGURED));
            };
            let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default();
            let (action, base) = (text("action"), text("base_image"));
            let job = Job::new(&endpoint, &client, &args);
            let (outputs, shown) = workspace_dir(&ctx, "outputs")?;
            let (uploads, _) = workspace_dir(&ctx, "uploads")?;
            let (request, chosen) = match (action, base) {
                ("generate", "none") => job.generation(),
                ("edit", "previous_generation" | "current_attachment") => {
                    let mut turn = turn_images(&uploads, &ctx.attachments);
                    let base_image = if base == "previous_generation" {
                        previous_generation(&outputs, &uploads)?
                    } else {
                        nth_attachment(&mut turn, &args)?
                    };
                    job.edit(base_image, turn)?
                }
                _ => return Err(ToolError::new(texts::IMAGES_BAD_BASE)),
            };
            let body = send(request, &endpoint, &chosen).await?;
            let (paths, staged) = save(&body, &guard, &outputs, &uploads, &shown).await?;
            let mut result = format!(
                "{}\n{}",
                texts::images_saved(&paths),
                texts::images_size(&chosen)
            );
            if staged {
                result = format!("{result}\n{}", texts::IMAGES_STAGED);
            }
            Ok(result)
        })
    }
}

/// One call to the endpoint: what the model asked for, and how its size is chosen.
struct Job<'a> {
    endpoint: &'a ImagesEndpoint,
    client: &'a reqwest::Client,
    prompt: &'a str,
    /// How many images (1 to 4).
    n: u64,
    requested: size::SizeRequest,
    backend: size::Backend,
}

impl<'a> Job<'a> {
    fn new(endpoint: &'a ImagesEndpoint, client: &'a reqwest::Client, args: &'a Value) -> Self {
        Job {
            endpoint,
            client,
            prompt: args
                .get("prompt")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            n: args
                .get("n")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .clamp(1, 4),
            requested: size::parse(args.get("size").and_then(Value::as_str)),
            backend: size::Backend::for_model(&endpoint.model, Some(&endpoint.sizes)),
        }
    }

    /// `POST /images/generations` with the prompt alone; the request and the size chosen.
    fn generation(&self) -> (reqwest::RequestBuilder, String) {
        let (endpoint, prompt, n) = (self.endpoint, self.prompt, self.n);
        let chosen = size::format(size::choose(&self.backend, &self.requested, None));
        let mut body = json!({"model": endpoint.model, "prompt": prompt, "n": n, "size": chosen});
        if let Some(f) = &endpoint.response_format {
            body["response_format"] = json!(f);
        }
        tracing::info!(model = %endpoint.model, size = %chosen, n, "image_generate: generating");
        let request = self
            .client
            .post(format!("{}/images/generations", endpoint.base_url))
            .json(&body);
        (request, chosen)
    }

    /// `POST /images/edits` of the base image, in its ratio, with the turn's other images as
    /// references when the model takes them; the request and the size chosen.
    fn edit(
        &self,
        base_image: Loaded,
        turn: Vec<Result<Loaded, ToolError>>,
    ) -> Result<(reqwest::RequestBuilder, String), ToolError> {
        let (endpoint, n) = (self.endpoint, self.n);
        let dims = header::dimensions(&base_image.bytes);
        if dims.is_none() {
            tracing::warn!(path = %base_image.shown, "image_generate: the base image's size is not readable; its ratio is not kept");
        }
        let chosen = size::format(size::choose(&self.backend, &self.requested, dims));
        let images = with_references(base_image, turn, &endpoint.model);
        tracing::info!(
            model = %endpoint.model,
            size = %chosen,
            n,
            base = %images[0].shown,
            references = images.len() - 1,
            "image_generate: editing"
        );
        let form = self.edit_form(images, &chosen)?;
        let request = self
            .client
            .post(format!("{}/images/edits", endpoint.base_url))
            .multipart(form);
        Ok((request, chosen))
    }

    /// The multipart form of an edit: the settings, then the images (`image`, or `image[]` parts
    /// when there are several).
    fn edit_form(
        &self,
        images: Vec<Loaded>,
        chosen: &str,
    ) -> Result<reqwest::multipart::Form, ToolError> {
        let endpoint = self.endpoint;
        let field = if images.len() == 1 {
            "image"
        } else {
            "image[]"
        };
        let mut form = reqwest::multipart::Form::new()
            .text("model", endpoint.model.clone())
            .text("prompt", self.prompt.to_owned())
            .text("n", self.n.to_string())
            .text("size", chosen.to_owned());
        if let Some(f) = &endpoint.response_format {
            form = form.text("response_format", f.clone());
        }
        let many = images.len() > 1;
        for (i, image) in images.into_iter().enumerate() {
            let name = if many {
                format!("image-{}.{}", i + 1, image.kind.extension())
            } else {
                format!("image.{}", image.kind.extension())
            };
            let part = reqwest::multipart::Part::bytes(image.bytes)
                .file_name(name)
                .mime_str(image.kind.mime())
                .map_err(|e| ToolError::internal(e.to_string()))?;
            form = form.part(field, part);
        }
        Ok(form)
    }
}

/// The `base_image_index`-th image (1-based, default 1) among this turn's, taken out of `turn`.
fn nth_attachment(
    turn: &mut Vec<Result<Loaded, ToolError>>,
    args: &Value,
) -> Result<Loaded, ToolError> {
    let index = args
        .get("base_image_index")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    if turn.is_empty() {
        return Err(ToolError::new(texts::IMAGES_NO_TURN_IMAGES));
    }
    let count = turn.len();
    let at = usize::try_from(index)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .filter(|&i| i < count)
        .ok_or_else(|| ToolError::new(texts::images_no_turn_attachment(index, count)))?;
    turn.remove(at)
}

/// The base image first, then, when the model takes references, the turn's other images up to
/// [`MAX_EDIT_IMAGES`] (the rest, and those that fail to load, are left out with a warning).
fn with_references(
    base_image: Loaded,
    turn: Vec<Result<Loaded, ToolError>>,
    model: &str,
) -> Vec<Loaded> {
    let mut images = vec![base_image];
    if takes_references(model) {
        for reference in turn {
            match reference {
                Ok(r) if images.len() < MAX_EDIT_IMAGES => images.push(r),
                Ok(r) => {
                    tracing::warn!(path = %r.shown, "image_generate: reference left out (at most {MAX_EDIT_IMAGES} images per edit)")
                }
                Err(e) => {
                    tracing::warn!(error = %e, "image_generate: reference left out")
                }
            }
        }
    }
    images
}

/// Sends the request: the response's JSON body, or the endpoint's refusal (with its message) as a
/// tool error.
async fn send(
    request: reqwest::RequestBuilder,
    endpoint: &ImagesEndpoint,
    chosen: &str,
) -> Result<Value, ToolError> {
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
        tracing::warn!(status = status.as_u16(), detail = ?detail, size = %chosen, "images endpoint refused");
        let mut reason = texts::net_reason(
            texts::NET_STATUS,
            &[("<STATUS>", &status.as_u16().to_string())],
        );
        if let Some(d) = detail {
            reason = format!("{reason} ({d})");
        }
        return Err(ToolError::new(texts::images_failed(&reason)));
    }
    Ok(body)
}

/// Writes the response's images to `outputs/` (shown as `shown`) and their staged copies to
/// `uploads/`: the images' sandbox paths, and whether every copy was staged.
async fn save(
    body: &Value,
    guard: &Guard,
    outputs: &Tree,
    uploads: &Tree,
    shown: &str,
) -> Result<(Vec<String>, bool), ToolError> {
    let items = body
        .get("data")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let stamp = next_stamp(outputs, uploads);
    let mut paths = Vec::new();
    let mut staged = true;
    for (i, item) in items.iter().enumerate() {
        let Some(bytes) = result_bytes(item, guard).await? else {
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
        write_new(outputs, &name, &bytes)?;
        // The staged copy: what python_execute and the document tools read from.
        if let Err(e) = write_new(uploads, &name, &bytes) {
            tracing::warn!(error = %e, %name, "image_generate: not staged in uploads/");
            staged = false;
        }
        paths.push(format!("{shown}/{name}"));
    }
    if paths.is_empty() {
        return Err(ToolError::new(texts::images_failed(&texts::net_reason(
            texts::NET_ENCODING,
            &[("<ENCODING>", "no images")],
        ))));
    }
    Ok((paths, staged))
}

/// The time stamp of this call's names: now in unix milliseconds, or just after the newest name
/// already there.
fn next_stamp(outputs: &Tree, uploads: &Tree) -> u128 {
    // Names sort by time, so the newest is the next edit's previous_generation: a second
    // result within the same millisecond still sorts after the first.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    generated_names(outputs)
        .iter()
        .chain(&generated_names(uploads))
        .filter_map(|n| n.get(6..19)?.parse::<u128>().ok())
        .max()
        .map_or(now, |newest| now.max(newest + 1))
}

/// One result's bytes: its `b64_json` decoded or its `url` downloaded through the guard; `None`
/// when it has neither.
async fn result_bytes(item: &Value, guard: &Guard) -> Result<Option<Vec<u8>>, ToolError> {
    if let Some(b64) = item.get("b64_json").and_then(Value::as_str) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .map_err(|_| {
                ToolError::new(texts::images_failed(&texts::net_reason(
                    texts::NET_ENCODING,
                    &[("<ENCODING>", "b64_json")],
                )))
            })?;
        Ok(Some(bytes))
    } else if let Some(url) = item.get("url").and_then(Value::as_str) {
        let fetched = guard
            .fetch(url, "image/*", MAX_IMAGE_BYTES)
            .await
            .map_err(|e| ToolError::new(texts::images_failed(&e.to_string())))?;
        Ok(Some(fetched.body))
    } else {
        Ok(None)
    }
}

/// Whether the model's edits take more than one image (DALL·E 2 edits one image, with no
/// references).
fn takes_references(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    !name.starts_with("dall-e")
}

/// Reads `dir/name` when it is an image (no link followed; at most [`MAX_EDIT_IMAGE_BYTES`]):
/// `Ok(None)` for a file that is not an image, a tool error for one too large.
fn load(dir: &Tree, folder: &str, name: &str) -> Result<Option<Loaded>, ToolError> {
    let shown = format!("{SANDBOX_WORKSPACE}/{folder}/{name}");
    let file = dir
        .open_regular(name)
        .map_err(|e| ToolError::internal(format!("opening {shown}: {e}")))?;
    let mut head = Vec::with_capacity(32);
    let mut file = file.take(u64::try_from(MAX_EDIT_IMAGE_BYTES).unwrap_or(u64::MAX) + 1);
    (&mut file)
        .take(32)
        .read_to_end(&mut head)
        .map_err(|e| ToolError::internal(format!("reading {shown}: {e}")))?;
    let Some(kind) = ImageKind::sniff(&head) else {
        return Ok(None);
    };
    let mut bytes = head;
    file.read_to_end(&mut bytes)
        .map_err(|e| ToolError::internal(format!("reading {shown}: {e}")))?;
    if bytes.len() > MAX_EDIT_IMAGE_BYTES {
        return Err(ToolError::new(texts::images_too_large(
            &shown,
            MAX_EDIT_IMAGE_BYTES / (1024 * 1024),
        )));
    }
    Ok(Some(Loaded { shown, bytes, kind }))
}

/// The images among this turn's attachments, in attachment order (files that are gone or not
/// images are not counted; one too large is counted and fails when it is used).
fn turn_images(uploads: &Tree, attachments: &[String]) -> Vec<Result<Loaded, ToolError>> {
    let mut images = Vec::new();
    for name in attachments {
        match load(uploads, "uploads", name) {
            Ok(Some(image)) => images.push(Ok(image)),
            Ok(None) => {}
            Err(e @ (ToolError::Tool(_) | ToolError::Transient(_) | ToolError::Overloaded(_))) => {
                images.push(Err(e));
            }
            Err(ToolError::Internal(detail)) => {
                tracing::warn!(%detail, "image_generate: an attachment of this turn is not readable");
            }
        }
    }
    images
}

/// The names of files this tool wrote in `dir` (`image-<13-digit unix ms>-…`).
fn generated_names(dir: &Tree) -> Vec<String> {
    dir.entries()
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, kind)| *kind == FileType::RegularFile)
        .map(|(name, _)| name)
        .filter(|n| {
            n.strip_prefix("image-")
                .and_then(|r| r.get(..13))
                .is_some_and(|ms| ms.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect()
}

/// The newest image this tool wrote (`image-<ms>-…`, names sort by time), from `outputs/` or,
/// when the model moved it away from there, its staged copy in `uploads/`.
fn previous_generation(outputs: &Tree, uploads: &Tree) -> Result<Loaded, ToolError> {
    let mut found: Vec<(String, bool)> = generated_names(outputs)
        .into_iter()
        .map(|n| (n, true))
        .chain(generated_names(uploads).into_iter().map(|n| (n, false)))
        .collect();
    // Newest first; for one name, the copy in outputs/ first.
    found.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    let Some((name, in_outputs)) = found.into_iter().next() else {
        return Err(ToolError::new(texts::IMAGES_NO_PREVIOUS));
    };
    let (dir, folder) = if in_outputs {
        (outputs, "outputs")
    } else {
        (uploads, "uploads")
    };
    let shown = format!("{SANDBOX_WORKSPACE}/{folder}/{name}");
    load(dir, folder, &name)?.ok_or_else(|| ToolError::new(texts::images_not_an_image(&shown)))
}
