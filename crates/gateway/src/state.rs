//! What every request handler shares.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use toolbridge_providers::Model;
use toolbridge_runtime::Runtime;

use crate::auth::Keys;
use crate::config::Limits;
use crate::metrics::Metrics;
use crate::model_map::ModelMap;
use crate::rate::RateLimiter;

pub(crate) struct AppState {
    /// The configured models by the name clients send as `model`.
    pub models: HashMap<String, Model>,
    /// Configured models that could not be set up (a missing API key), with the reason for the
    /// log: requests for them get 503 until the configuration is fixed.
    pub unavailable: HashMap<String, String>,
    /// The `GET /v1/models` body, rendered once: the list never changes while serving.
    pub models_body: Bytes,
    /// The same list in the Anthropic API's shape.
    pub anthropic_models_body: Bytes,
    pub keys: Keys,
    pub limiter: Option<RateLimiter>,
    pub metrics: Metrics,
    pub limits: Limits,
    /// The composition root the models came from, when the gateway was made from one (the
    /// way to build an agent per request).
    pub runtime: Option<Arc<Runtime>>,
    /// `server.model_map`.
    pub model_map: ModelMap,
    /// `[[server.agents]]`: agents served as Chat Completions models.
    pub agents: Vec<crate::responses::AgentModel>,
    /// The Responses API's store, options and running responses.
    pub responses: Arc<crate::responses::service::Service>,
    /// The guard images given by URL are fetched through (`server.fetch_image_urls`), with the
    /// runtime's `[tools.fetch]` policy when there is a runtime; `None` refuses them.
    pub image_fetch: Option<toolbridge_tools::net::Guard>,
    /// Remote MCP servers requests may name by `server_url` (`[server.responses]
    /// remote_mcp_urls`), reached through the guard; `None`: no request-named server.
    pub remote_mcp: Option<crate::responses::remote_mcp::RemoteMcp>,
}

impl AppState {
    /// The model a request names: a configured name, else what `server.model_map` maps it to.
    pub fn model(&self, requested: &str) -> Option<&Model> {
        self.models
            .get(requested)
            .or_else(|| self.models.get(self.model_map.target(requested)?))
    }

    /// The names a client can send as `model` (models and agents), sorted.
    pub fn served_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.models.keys().map(String::as_str).collect();
        names.extend(self.agents.iter().map(|a| a.name.as_str()));
        names.sort_unstable();
        names
    }

    /// The configured name a request's model resolves to (for the not-found and unavailable
    /// answers).
    pub fn resolved_name<'a>(&'a self, requested: &'a str) -> &'a str {
        if self.models.contains_key(requested) {
            return requested;
        }
        self.model_map.target(requested).unwrap_or(requested)
    }
}
