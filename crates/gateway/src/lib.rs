//! # toolbridge-gateway
//!
//! An OpenAI-compatible HTTP server in front of the configured models: `POST
//! /v1/chat/completions` (streaming and not), `GET /v1/models`, `GET /healthz` and `GET
//! /metrics`. A client's `tools` work against any upstream, whatever its tool mode; answers carry
//! `tool_calls`, `finish_reason` and `usage` in OpenAI's exact wire form.
//!
//! The gateway holds no parsing logic: request JSON → [`ChatRequest`] → the [`Model`] named by
//! `model` → [`Model::stream`] → [`ModelEvent`]s → OpenAI chunks or one completion. Tool modes,
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

mod auth;
mod chunks;
mod completion;
mod config;
mod depth;
mod error;
mod metrics;
mod rate;
mod request;
mod routes;
mod server;
mod state;
mod stream;

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

pub use config::ServerConfig;
pub use error::{ApiError, GatewayError};
pub use metrics::Metrics;

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
        let keys = Keys::from_env_value(&config.api_keys_env, env.var(&config.api_keys_env))?;
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
        let state = AppState {
            models: by_name,
            models_body: models_body(&names),
            keys,
            limiter: RateLimiter::new(config.rate_limit_per_minute, config.rate_limit_burst),
            metrics: metrics::Metrics::default(),
            limits,
        };
        Ok(Gateway {
            state: Arc::new(state),
            listen: config.listen,
        })
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

    /// Without keys the gateway may only be reachable from this machine.
    fn check_exposure(&self, addr: SocketAddr) -> Result<(), GatewayError> {
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

/// The `GET /v1/models` body.
fn models_body(names: &[String]) -> Bytes {
    let data: Vec<serde_json::Value> = names
        .iter()
        .map(|name| {
            serde_json::json!({"id": name, "object": "model", "created": 0, "owned_by": "toolbridge"})
        })
        .collect();
    let body = serde_json::json!({"object": "list", "data": data});
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
