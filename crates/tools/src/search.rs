//! `web_search`: a SearxNG instance's JSON API or the Brave Search API, chosen in
//! `[tools.search]`.
//!
//! The backends are the operator's own URLs, so they are reached with an ordinary client, not
//! through the guard (which is for URLs a model chose).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolbridge_agent::{Tool, ToolContext, ToolError, ToolFuture};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::ToolSpec;

use crate::common::{one_or_many, seed_spec};

/// The Brave Search API's base URL.
pub const BRAVE_BASE_URL: &str = "https://api.search.brave.com/res/v1";
const DEFAULT_TOP_K: usize = 5;
const MAX_QUERIES: usize = 5;
const MAX_SNIPPET_CHARS: usize = 400;

/// Which search service answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchBackend {
    /// A SearxNG instance (`GET {base_url}/search?q=…&format=json`; the instance must have the
    /// `json` format enabled under `search.formats`).
    Searxng,
    /// The Brave Search API (`GET {base_url}/web/search`, key in `X-Subscription-Token`).
    Brave,
}

/// `[tools.search]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SearchConfig {
    pub backend: Option<SearchBackend>,
    /// SearxNG: the instance's URL (required). Brave: defaults to the public API.
    pub base_url: Option<String>,
    /// The variable holding the API key (Brave: default `BRAVE_API_KEY`; SearxNG: optional, sent
    /// as a bearer token for instances behind an authenticating proxy).
    pub api_key_env: Option<String>,
    /// Deadline of one query (default 20).
    pub timeout_secs: Option<u64>,
}

/// A resolved backend.
#[derive(Clone, Debug)]
pub struct Backend {
    pub kind: SearchBackend,
    pub base_url: String,
    pub api_key: Option<String>,
    pub timeout: Duration,
}

impl Backend {
    /// The backend of a `[tools.search]` table, with keys read through `env`; `Ok(None)` when no
    /// backend is chosen.
    pub fn from_config(
        config: &SearchConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Backend>, String> {
        let Some(kind) = config.backend else {
            return Ok(None);
        };
        let timeout = Duration::from_secs(config.timeout_secs.unwrap_or(20));
        let base_url = match (kind, &config.base_url) {
            (_, Some(url)) => url.trim_end_matches('/').to_owned(),
            (SearchBackend::Brave, None) => BRAVE_BASE_URL.to_owned(),
            (SearchBackend::Searxng, None) => {
                return Err("[tools.search] backend = \"searxng\" needs base_url".into())
            }
        };
        let key_env = config
            .api_key_env
            .clone()
            .or_else(|| (kind == SearchBackend::Brave).then(|| "BRAVE_API_KEY".to_owned()));
        let api_key = key_env.as_deref().and_then(env).filter(|k| !k.is_empty());
        if kind == SearchBackend::Brave && api_key.is_none() {
            return Err(format!(
                "[tools.search] backend = \"brave\" needs an API key in ${}",
                key_env.unwrap_or_default()
            ));
        }
        Ok(Some(Backend {
            kind,
            base_url,
            api_key,
            timeout,
        }))
    }
}

/// One result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

pub struct WebSearch {
    spec: ToolSpec,
    backend: Option<Backend>,
    client: reqwest::Client,
}

impl WebSearch {
    /// `None`: the tool is offered and tells the model search is not configured.
    pub fn new(backend: Option<Backend>) -> Self {
        WebSearch {
            spec: seed_spec(
                "web_search",
                texts::WEB_SEARCH_DESCRIPTION,
                texts::WEB_SEARCH_SCHEMA,
            ),
            backend,
            client: reqwest::Client::new(),
        }
    }
}

impl Tool for WebSearch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn invoke(&self, args: Value, _ctx: ToolContext) -> ToolFuture {
        let backend = self.backend.clone();
        let client = self.client.clone();
        Box::pin(async move {
            let Some(backend) = backend else {
                return Err(ToolError::new(texts::SEARCH_NOT_CONFIGURED));
            };
            let mut queries = one_or_many(&args, "query", "queries");
            queries.truncate(MAX_QUERIES);
            if queries.is_empty() {
                return Err(ToolError::new(texts::SEARCH_NO_QUERY));
            }
            let top_k = args
                .get("top_k")
                .and_then(Value::as_u64)
                .map(|k| k.clamp(1, 10) as usize)
                .unwrap_or(DEFAULT_TOP_K);
            let results = futures::future::join_all(
                queries.iter().map(|q| search(&client, &backend, q, top_k)),
            )
            .await;
            let ok = results.iter().filter(|r| r.is_ok()).count();
            let text = queries
                .iter()
                .zip(results)
                .map(|(q, r)| match r {
                    Ok(hits) => render(q, &hits),
                    Err(reason) => texts::search_failed(q, &reason),
                })
                .collect::<Vec<_>>()
                .join("\n\n");
            if ok == 0 {
                Err(ToolError::new(text))
            } else {
                Ok(text)
            }
        })
    }
}

fn render(query: &str, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return texts::search_no_results(query);
    }
    let mut s = texts::search_header(query);
    for (i, h) in hits.iter().enumerate() {
        s.push('\n');
        s.push_str(&texts::search_result(i + 1, &h.title, &h.url, &h.snippet));
    }
    s
}

/// Runs one query.
pub async fn search(
    client: &reqwest::Client,
    backend: &Backend,
    query: &str,
    top_k: usize,
) -> Result<Vec<Hit>, String> {
    let request = match backend.kind {
        SearchBackend::Searxng => {
            let mut r = client
                .get(format!("{}/search", backend.base_url))
                .query(&[("q", query), ("format", "json")]);
            if let Some(key) = &backend.api_key {
                r = r.bearer_auth(key);
            }
            r
        }
        SearchBackend::Brave => client
            .get(format!("{}/web/search", backend.base_url))
            .query(&[("q", query), ("count", &top_k.to_string())])
            .header("Accept", "application/json")
            .header(
                "X-Subscription-Token",
                backend.api_key.clone().unwrap_or_default(),
            ),
    };
    let response = request.timeout(backend.timeout).send().await.map_err(|e| {
        tracing::warn!(error = %e.without_url(), "search backend unreachable");
        texts::NET_CONNECT.to_owned()
    })?;
    let status = response.status();
    if !status.is_success() {
        return Err(texts::net_reason(
            texts::NET_STATUS,
            &[("<STATUS>", &status.as_u16().to_string())],
        ));
    }
    let body: Value = response
        .json()
        .await
        .map_err(|_| texts::net_reason(texts::NET_ENCODING, &[("<ENCODING>", "JSON")]))?;
    let (list, snippet_key) = match backend.kind {
        SearchBackend::Searxng => (body.get("results"), "content"),
        SearchBackend::Brave => (
            body.get("web").and_then(|w| w.get("results")),
            "description",
        ),
    };
    let hits = list
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    let url = item.get("url")?.as_str()?.to_owned();
                    let text = |k: &str| {
                        item.get(k)
                            .and_then(Value::as_str)
                            .map(strip_tags)
                            .unwrap_or_default()
                    };
                    let title = text("title");
                    let snippet: String =
                        text(snippet_key).chars().take(MAX_SNIPPET_CHARS).collect();
                    Some(Hit {
                        title: if title.is_empty() { url.clone() } else { title },
                        url,
                        snippet,
                    })
                })
                .take(top_k)
                .collect()
        })
        .unwrap_or_default();
    Ok(hits)
}

/// Removes HTML tags (Brave marks matches with `<strong>`) and decodes the common entities.
pub fn strip_tags(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}
