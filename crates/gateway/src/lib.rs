//! # toolbridge-gateway
//!
//! An OpenAI- and Anthropic-compatible HTTP server in front of the configured models: `POST
//! /v1/chat/completions` and `POST /v1/messages` (streaming and not), `POST
//! /v1/messages/count_tokens`, `GET /v1/models`, `GET /v1/models/{id}`, `GET /healthz` and `GET
//! /metrics`, and a web chat page at `GET /ui`. A client's `tools` work against any upstream,
//! whatever its tool mode; answers carry `tool_calls`, `finish_reason` and `usage` in OpenAI's
//! exact wire form.
//!
//! The gateway holds no parsing logic: request JSON → [`ChatRequest`] → the [`Model`] named by
//! `model` → [`Model::stream`] → [`ModelEvent`]s → OpenAI chunks or one completion (or, for
//! `/v1/messages`, Anthropic's events or one message: a second codec over the same core). Tool modes,
//! fallback arms, the streaming parser and upstream retries all live below it.
//!
//! ```no_run
//! # async fn demo(models: Vec<toolbridge_providers::Model>) -> Result<(), toolbridge_gateway::GatewayError> {
//! use toolbridge_gateway::{Gateway, ServerConfig};
//! use toolbridge_providers::config::ProcessEnv;
//!
//! let config = ServerConfig { listen: "127.0.0.1:0".parse().unwrap(), ..ServerConfig::default() };
//! let running = Gateway::new(config, models, &ProcessEnv)?.spawn().await?;
//! println!("OpenAI base URL: {}", running.base_url());
//! running.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! [`ChatRequest`]: toolbridge_protocol::types::ChatRequest
//! [`ModelEvent`]: toolbridge_protocol::decode::ModelEvent

mod access;
mod auth;
mod body;
mod browser;
mod chunks;
mod completion;
mod config;
mod decode;
mod depth;
mod error;
mod messages;
mod metrics;
mod model_map;
mod pagination;
mod quota;
mod rate;
mod request;
mod responses;
mod routes;
mod schema;
mod server;
mod shared_limits;
mod state;
mod stream;
mod threads;
mod ui;

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use toolbridge_providers::config::Env;
use toolbridge_providers::Model;
use toolbridge_runtime::{Runtime, ServedModels};

/// The endpoint families the gateway serves, as the start banner and `toolbridge serve --help`
/// list them (method and path, then what). The router is in
/// `routes.rs`: a route added there belongs here too.
pub const ENDPOINTS: &[(&str, &str)] = &[
    (
        "POST /v1/chat/completions",
        "Chat Completions (OpenAI), streaming and not",
    ),
    (
        "POST /v1/responses",
        "the Responses API, with /v1/conversations, /v1/files and /v1/containers",
    ),
    (
        "POST /v1/messages",
        "the Messages API (Anthropic), with /v1/messages/count_tokens",
    ),
    ("GET  /v1/models", "the models served here"),
    ("GET  /healthz", "health (no key needed)"),
    ("GET  /metrics", "Prometheus metrics"),
    ("GET  /ui", "the chat page, for a browser"),
];

pub use auth::KeyEntry;
pub use config::{parse_listen, ServerConfig};
pub use error::{ApiError, GatewayError};
pub use metrics::Metrics;
pub use responses::{AgentModel, ResponsesConfig, StateConfig, UnavailableTools};

use auth::Keys;
use config::Limits;
use rate::RateLimiter;
use state::AppState;

/// A configured gateway, ready to serve.
pub struct Gateway {
    state: Arc<AppState>,
    listen: SocketAddr,
}

impl Gateway {
    /// Checks the configuration and reads the API keys from `env` (the variable named by
    /// `server.api_keys_env`). Model names must be unique.
    pub fn new(
        config: ServerConfig,
        models: Vec<Model>,
        env: &dyn Env,
    ) -> Result<Gateway, GatewayError> {
        let limits: Limits = config.limits()?;
        let keys = Keys::from_env_value(&config.api_keys_env, env.var(&config.api_keys_env))?
            .with_named(&config.keys, &|name| env.var(name))?;
        let mut names = Vec::with_capacity(models.len());
        let mut by_name = HashMap::with_capacity(models.len());
        for model in models {
            if model.arms.is_empty() {
                return Err(GatewayError::Config(format!(
                    "model `{}` has no upstream",
                    model.name
                )));
            }
            names.push(model.name.clone());
            if let Some(dup) = by_name.insert(model.name.clone(), model) {
                return Err(GatewayError::Config(format!(
                    "two models are named `{}`",
                    dup.name
                )));
            }
        }
        // Agents served as models are listed with them.
        names.extend(config.agents.iter().map(|a| a.name.clone()));
        let state = AppState {
            models: by_name,
            unavailable: HashMap::new(),
            models_body: models_body(&names),
            anthropic_models_body: anthropic_models_body(&names),
            keys,
            limiter: RateLimiter::new(config.rate_limit_per_minute, config.rate_limit_burst),
            metrics: metrics::Metrics::default(),
            limits,
            runtime: None,
            model_map: model_map::ModelMap::new(&config.model_map)?,
            agents: config.agents.clone(),
            responses: Arc::new(responses::service::Service::new(
                config.responses.clone(),
                config.state.clone(),
                config.listen.port(),
            )),
            image_fetch: config
                .fetch_image_urls
                .then(|| toolbridge_tools::net::Guard::system(Default::default())),
            remote_mcp: remote_mcp(&config.responses, Default::default())?,
        };
        Ok(Gateway {
            state: Arc::new(state),
            listen: config.listen,
        })
    }

    /// The gateway of a composition root: the models it built for serving
    /// ([`Runtime::served_models`], whose unavailable models get 503), and the root itself, kept
    /// for what is built per request.
    pub fn from_runtime(
        config: ServerConfig,
        runtime: Arc<Runtime>,
        served: ServedModels,
        env: &dyn Env,
    ) -> Result<Gateway, GatewayError> {
        let mut gateway =
            Gateway::new(config, served.models, env)?.with_unavailable(served.unavailable)?;
        let state = Arc::get_mut(&mut gateway.state).ok_or_else(|| {
            GatewayError::Config("the runtime can only be set before serving".into())
        })?;
        if state.image_fetch.is_some() {
            // Images by URL are fetched under the operator's `[tools.fetch]` policy.
            let policy = toolbridge_tools::net::Policy::from_config(&runtime.config().tools.fetch)
                .map_err(|e| GatewayError::Config(format!("tools.fetch: {e}")))?;
            state.image_fetch = Some(toolbridge_tools::net::Guard::system(policy));
        }
        if state.remote_mcp.is_some() {
            // Remote MCP servers are reached under the operator's `[tools.fetch]` networks.
            let policy = toolbridge_tools::net::Policy::from_config(&runtime.config().tools.fetch)
                .map_err(|e| GatewayError::Config(format!("tools.fetch: {e}")))?;
            state.remote_mcp = remote_mcp(&state.responses.config, policy)?;
        }
        state.runtime = Some(runtime);
        Ok(gateway)
    }

    /// Keeps the Responses API's state in `store` instead of the one `[server.state]`
    /// configures (an embedder's own, or an in-process one in tests).
    pub fn with_store(
        self,
        store: Arc<dyn toolbridge_state::Store>,
    ) -> Result<Gateway, GatewayError> {
        if !self.state.responses.set_store(store) {
            return Err(GatewayError::Config(
                "the state store is already open".into(),
            ));
        }
        Ok(self)
    }

    /// Opens the Responses API's state store now (a bad `[server.state]` stops the server at
    /// start), marks the responses this instance left running as failed, and starts the
    /// store's upkeep (heartbeats, retention). Without it the store opens on first use.
    pub async fn open_state(&self) -> Result<(), GatewayError> {
        self.state
            .responses
            .start()
            .await
            .map_err(|e| GatewayError::Config(format!("server.state: {e}")))
    }

    /// The composition root of [`Gateway::from_runtime`].
    pub fn runtime(&self) -> Option<&Arc<Runtime>> {
        self.state.runtime.as_ref()
    }

    /// Adds configured models that could not be set up (`(name, reason)`, e.g. a missing API
    /// key): the gateway still starts, and requests for them get 503 `model_unavailable` (the
    /// reason goes to the log) until the configuration is fixed. They are not listed.
    pub fn with_unavailable(
        mut self,
        models: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Gateway, GatewayError> {
        let state = Arc::get_mut(&mut self.state).ok_or_else(|| {
            GatewayError::Config("models can only be added before serving".into())
        })?;
        for (name, reason) in models {
            if state.models.contains_key(&name) || state.unavailable.contains_key(&name) {
                return Err(GatewayError::Config(format!(
                    "two models are named `{name}`"
                )));
            }
            state.unavailable.insert(name, reason);
        }
        Ok(self)
    }

    /// The names of configured models that could not be set up, sorted.
    pub fn unavailable_model_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.state.unavailable.keys().cloned().collect();
        names.sort();
        names
    }

    /// The configured listen address.
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen
    }

    /// Whether requests need a key.
    pub fn requires_keys(&self) -> bool {
        !self.state.keys.is_empty()
    }

    /// The names clients can send as `model`, sorted.
    pub fn model_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.state.models.keys().cloned().collect();
        names.sort();
        names
    }

    /// The metrics, as `/metrics` shows them.
    pub fn metrics(&self) -> &Metrics {
        &self.state.metrics
    }

    /// Without keys the gateway may only be reachable from this machine; every
    /// `server.model_map` target must be a configured model.
    fn check_exposure(&self, addr: SocketAddr) -> Result<(), GatewayError> {
        for agent in &self.state.agents {
            if self.state.models.contains_key(&agent.name) {
                return Err(GatewayError::Config(format!(
                    "server.agents: `{}` is also the name of a configured model",
                    agent.name
                )));
            }
            if !self.state.models.contains_key(&agent.model)
                && !self.state.unavailable.contains_key(&agent.model)
            {
                return Err(GatewayError::Config(format!(
                    "server.agents: `{}` uses `{}`, which is not a configured model",
                    agent.name, agent.model
                )));
            }
        }
        for (pattern, target) in self.state.model_map.targets() {
            if !self.state.models.contains_key(target)
                && !self.state.unavailable.contains_key(target)
            {
                return Err(GatewayError::Config(format!(
                    "server.model_map: `{pattern}` maps to `{target}`, which is not a configured model"
                )));
            }
        }
        if self.state.keys.is_empty() && !addr.ip().to_canonical().is_loopback() {
            return Err(GatewayError::NoKeysOnPublicAddress(addr));
        }
        Ok(())
    }

    /// Binds the configured address.
    pub async fn bind(&self) -> Result<TcpListener, GatewayError> {
        self.check_exposure(self.listen)?;
        TcpListener::bind(self.listen)
            .await
            .map_err(|source| GatewayError::Bind {
                addr: self.listen,
                source,
            })
    }

    /// Serves on `listener` until `shutdown` completes, then stops accepting, lets in-flight
    /// requests finish (up to `shutdown_grace_secs`) and returns.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), GatewayError> {
        let addr = listener.local_addr()?;
        self.check_exposure(addr)?;
        tracing::info!(%addr, models = self.state.models.len(), auth = self.requires_keys(), "gateway listening");
        let router = routes::router(Arc::clone(&self.state));
        server::serve(listener, router, &self.state.limits, shutdown).await;
        tracing::info!("gateway stopped");
        Ok(())
    }

    /// Binds the configured address and serves in a background task (`listen =
    /// "127.0.0.1:0"` picks a free port; [`RunningGateway::addr`] tells which).
    pub async fn spawn(self) -> Result<RunningGateway, GatewayError> {
        let listener = self.bind().await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(self.serve(listener, async move {
            let _ = stopped.await;
        }));
        Ok(RunningGateway {
            addr,
            stop: Some(stop),
            task,
        })
    }
}

/// One model as `GET /v1/models` lists it and `GET /v1/models/{id}` returns it.
/// The remote MCP allow-list of `[server.responses]`, reached under `policy`.
fn remote_mcp(
    config: &responses::ResponsesConfig,
    policy: toolbridge_tools::net::Policy,
) -> Result<Option<responses::remote_mcp::RemoteMcp>, GatewayError> {
    responses::remote_mcp::RemoteMcp::new(
        &config.remote_mcp_urls,
        policy,
        std::time::Duration::from_secs(config.remote_mcp_timeout_secs.max(1)),
    )
    .map_err(|e| GatewayError::Config(format!("server.responses.{e}")))
}

fn model_object(name: &str) -> serde_json::Value {
    serde_json::json!({"id": name, "object": "model", "created": 0, "owned_by": "toolbridge"})
}

/// The `GET /v1/models` body.
fn models_body(names: &[String]) -> Bytes {
    let data: Vec<serde_json::Value> = names.iter().map(|name| model_object(name)).collect();
    let body = serde_json::json!({"object": "list", "data": data});
    Bytes::from(body.to_string())
}

/// One model as the Anthropic API lists it (`created_at` is not known: the epoch).
fn anthropic_model_object(name: &str) -> serde_json::Value {
    serde_json::json!({"type": "model", "id": name, "display_name": name, "created_at": "1970-01-01T00:00:00Z"})
}

/// The `GET /v1/models` body for Anthropic clients: one page holding every model.
fn anthropic_models_body(names: &[String]) -> Bytes {
    let data: Vec<serde_json::Value> = names
        .iter()
        .map(|name| anthropic_model_object(name))
        .collect();
    let body = serde_json::json!({
        "data": data,
        "has_more": false,
        "first_id": names.first(),
        "last_id": names.last(),
    });
    Bytes::from(body.to_string())
}

/// A gateway serving in the background. Dropping it stops the server at once (in-flight
/// requests are cut); [`RunningGateway::shutdown`] drains them first.
pub struct RunningGateway {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), GatewayError>>,
}

impl RunningGateway {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/v1`, the base URL for OpenAI clients.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Stops accepting, drains in-flight requests and waits for the server to end.
    pub async fn shutdown(mut self) -> Result<(), GatewayError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match (&mut self.task).await {
            Ok(result) => result,
            Err(e) => Err(GatewayError::Io(std::io::Error::other(e))),
        }
    }
}

impl Drop for RunningGateway {
    fn drop(&mut self) {
        self.task.abort();
    }
}
