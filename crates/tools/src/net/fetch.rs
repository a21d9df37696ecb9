//! Steps 3–5 of the guard: the guarded client.
//!
//! Each hop gets its own reqwest client that can only reach the addresses the guard checked
//! (`resolve_to_addrs`; reqwest never resolves an IP-literal URL, and that literal is the address
//! that was checked), ignores `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` (`no_proxy`) and follows no
//! redirect (`Policy::none`). Redirects are followed here, at most `max_redirects`, each target
//! checked again from step 1. No credentials or cookies are ever sent (userinfo is refused, there
//! is no cookie store, no `Authorization` header), so none can cross to another origin. The body
//! is capped while it streams, and gzip/deflate bodies are decompressed here under the same cap
//! (reqwest's own decompression has no size limit, so its features stay off and we only ask for
//! `gzip, deflate`).

use std::io::Read;
use std::net::SocketAddr;

use reqwest::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, LOCATION};
use toolbridge_protocol::texts;
use url::Url;

use super::{Guard, Refusal};

/// The user agent of every guarded fetch.
pub const USER_AGENT: &str = concat!("toolbridge/", env!("CARGO_PKG_VERSION"));

/// Why a fetch failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("{}", texts::net_reason(texts::NET_TOO_MANY_REDIRECTS, &[("<COUNT>", &.0.to_string())]))]
    TooManyRedirects(usize),
    #[error("{}", texts::NET_BAD_REDIRECT)]
    BadRedirect,
    #[error("{}", texts::net_reason(texts::NET_TOO_LARGE, &[("<LIMIT>", &.0.to_string())]))]
    TooLarge(usize),
    #[error("{}", texts::net_reason(texts::NET_DEADLINE, &[("<SECONDS>", &.0.to_string())]))]
    Deadline(u64),
    #[error("{}", texts::NET_CONNECT)]
    Connect,
    #[error("{}", texts::net_reason(texts::NET_STATUS, &[("<STATUS>", &.0.to_string())]))]
    Status(u16),
    #[error("{}", texts::net_reason(texts::NET_ENCODING, &[("<ENCODING>", .0)]))]
    Encoding(String),
}

/// A fetched response (2xx), decoded.
#[derive(Clone, Debug)]
pub struct Fetched {
    /// The URL after redirects.
    pub url: Url,
    pub status: u16,
    /// The `Content-Type` header, lower-case, without parameters.
    pub content_type: Option<String>,
    /// The full `Content-Type` header.
    pub content_type_header: Option<String>,
    pub body: Vec<u8>,
    /// Redirects followed.
    pub redirects: usize,
}

impl Guard {
    /// Fetches `text` with GET through the guard: at most `max_bytes` of body (compressed and
    /// decompressed), within the policy's total deadline.
    pub async fn fetch(
        &self,
        text: &str,
        accept: &str,
        max_bytes: usize,
    ) -> Result<Fetched, FetchError> {
        let deadline = self.policy.total_timeout;
        match tokio::time::timeout(deadline, self.fetch_inner(text, accept, max_bytes)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Deadline(deadline.as_secs().max(1))),
        }
    }

    async fn fetch_inner(
        &self,
        text: &str,
        accept: &str,
        max_bytes: usize,
    ) -> Result<Fetched, FetchError> {
        let mut target = super::url::check_text(text)?;
        let mut redirects = 0usize;
        loop {
            let checked = self.check_target(target).await?;
            let client = self.client_for(&checked)?;
            let response = client
                .get(checked.url.clone())
                .header(ACCEPT, accept)
                .header(ACCEPT_ENCODING, "gzip, deflate")
                .send()
                .await
                .map_err(|e| {
                    tracing::debug!(error = %e, "guarded fetch failed");
                    FetchError::Connect
                })?;
            let status = response.status();
            if status.is_redirection() {
                if let Some(location) = response.headers().get(LOCATION) {
                    if redirects >= self.policy.max_redirects {
                        return Err(FetchError::TooManyRedirects(self.policy.max_redirects));
                    }
                    redirects += 1;
                    let location = location.to_str().map_err(|_| FetchError::BadRedirect)?;
                    let next = checked
                        .url
                        .join(location)
                        .map_err(|_| FetchError::BadRedirect)?;
                    // Checked again from step 1: scheme, userinfo, host, port, addresses.
                    target = super::url::check_url(next)?;
                    continue;
                }
            }
            if !status.is_success() {
                return Err(FetchError::Status(status.as_u16()));
            }
            if response
                .content_length()
                .is_some_and(|n| n > max_bytes as u64)
            {
                return Err(FetchError::TooLarge(max_bytes));
            }
            let header = |name| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let content_type_header = header(CONTENT_TYPE);
            let content_type = content_type_header.as_deref().map(|v| {
                v.split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase()
            });
            let encoding = header(CONTENT_ENCODING)
                .map(|e| e.trim().to_ascii_lowercase())
                .unwrap_or_default();
            let url = checked.url.clone();
            let raw = read_capped(response, max_bytes).await?;
            let body = decode(raw, &encoding, max_bytes)?;
            return Ok(Fetched {
                url,
                status: status.as_u16(),
                content_type,
                content_type_header,
                body,
                redirects,
            });
        }
    }

    fn client_for(&self, checked: &super::Checked) -> Result<reqwest::Client, FetchError> {
        self.pinned_client(checked)
            .timeout(self.policy.total_timeout)
            .user_agent(USER_AGENT)
            .build()
            .map_err(|e| {
                tracing::error!(error = %e, "cannot build the fetch client");
                FetchError::Connect
            })
    }

    /// A client builder that can reach only `checked`'s addresses: no proxy, no redirect, the
    /// policy's connect deadline. Other users of the guard (a remote MCP server a request
    /// names) build their client from it.
    pub fn pinned_client(&self, checked: &super::Checked) -> reqwest::ClientBuilder {
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(self.policy.connect_timeout);
        if let Some(name) = &checked.name {
            let addrs: Vec<SocketAddr> = checked
                .addrs
                .iter()
                .map(|ip| SocketAddr::new(ip.to_canonical(), checked.port))
                .collect();
            builder = builder.resolve_to_addrs(name, &addrs);
        }
        builder
    }
}

async fn read_capped(
    mut response: reqwest::Response,
    max_bytes: usize,
) -> Result<Vec<u8>, FetchError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|_| FetchError::Connect)? {
        if body.len() + chunk.len() > max_bytes {
            return Err(FetchError::TooLarge(max_bytes));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Decodes a body under the size cap (a gzip bomb stops at `max_bytes + 1`).
pub fn decode(raw: Vec<u8>, encoding: &str, max_bytes: usize) -> Result<Vec<u8>, FetchError> {
    fn capped(reader: impl Read, max_bytes: usize, name: &str) -> Result<Vec<u8>, FetchError> {
        let mut out = Vec::new();
        reader
            .take(max_bytes as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|_| FetchError::Encoding(name.to_owned()))?;
        if out.len() > max_bytes {
            return Err(FetchError::TooLarge(max_bytes));
        }
        Ok(out)
    }
    match encoding {
        "" | "identity" => Ok(raw),
        "gzip" | "x-gzip" => capped(
            flate2::read::MultiGzDecoder::new(raw.as_slice()),
            max_bytes,
            encoding,
        ),
        "deflate" => {
            // Servers send either zlib-wrapped (the standard) or raw deflate.
            match capped(
                flate2::read::ZlibDecoder::new(raw.as_slice()),
                max_bytes,
                encoding,
            ) {
                Err(FetchError::Encoding(_)) => capped(
                    flate2::read::DeflateDecoder::new(raw.as_slice()),
                    max_bytes,
                    encoding,
                ),
                other => other,
            }
        }
        other => Err(FetchError::Encoding(other.to_owned())),
    }
}
