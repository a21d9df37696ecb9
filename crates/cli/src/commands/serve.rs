//! `toolbridge serve`: the OpenAI-compatible gateway.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use toolbridge_gateway::Gateway;
use toolbridge_providers::config::ProcessEnv;
use toolbridge_runtime::{Overrides, Runtime};

use crate::config;

/// Serve OpenAI's and Anthropic's APIs in front of the models of toolbridge.toml,
/// giving tool calling to every one of them.
///
/// Endpoints:
///   POST /v1/chat/completions  Chat Completions (OpenAI), streaming and not
///   POST /v1/responses         the Responses API (the agent's loop runs here),
///                              with /v1/conversations, /v1/files, /v1/containers
///   POST /v1/messages          the Messages API (Anthropic),
///                              with /v1/messages/count_tokens
///   GET  /v1/models            the models served here
///   GET  /healthz              health (no key needed)
///   GET  /metrics              Prometheus metrics
///   GET  /ui                   the chat page, for a browser
///
/// Configuration: --config FILE, else ./toolbridge.toml, else
/// $XDG_CONFIG_HOME/toolbridge/toolbridge.toml (~/.config/toolbridge/...).
/// API keys come from the variable named by `[server] api_keys_env` (default
/// TOOLBRIDGE_API_KEYS, comma-separated); without keys only a loopback address
/// is allowed. A model whose API key variable is unset does not stop the
/// server: it is reported in the log and answered with 503 until the key is
/// set (and the server restarted). Logs go to standard error, filtered by
/// RUST_LOG (default `info`). Ctrl-C or SIGTERM stops accepting, lets
/// in-flight requests finish (up to `shutdown_grace_secs`), then exits.
// The lines above fit 80 columns: the text is shown as written, and a wider line would wrap
// out of its indent.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The configuration file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The address to listen on (overrides `[server] listen`), e.g. 127.0.0.1:8080 or
    /// localhost:8080; port 0 (127.0.0.1:0) picks a free port, which the start line prints.
    #[arg(long, value_name = "ADDR", value_parser = listen_addr)]
    listen: Option<SocketAddr>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loaded = config::load(args.config.as_deref())?;
    init_logging(&loaded.config.telemetry);
    let runtime_config = loaded.runtime_config();
    let mut server = loaded.config.server;
    if let Some(listen) = args.listen {
        server.listen = listen;
    }
    // docs/src/security.md, "Outbound fetches: the guard": the own listening address: no built-in
    // tool of this process fetches from the gateway itself.
    toolbridge_tools::net::register_own_listener(server.listen);
    let workers = server.worker_threads;
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if workers > 0 {
        runtime.worker_threads(workers);
    }
    let runtime = runtime
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        // The models and tools, through the composition root (which reports what it leaves
        // out); MCP servers start on the serving runtime, so their tools live as long as it.
        let mut root = Runtime::new(
            runtime_config,
            crate::providers::registry(),
            Overrides::default(),
        );
        root.start_mcp().await?;
        let root = std::sync::Arc::new(root);
        let served = root.served_models()?;
        match &loaded.path {
            Some(path) => eprintln!("toolbridge: configuration {}", path.display()),
            None => eprintln!(
                "toolbridge: no toolbridge.toml found (--config FILE, ./toolbridge.toml or the user config folder); using defaults"
            ),
        }
        if served.models.is_empty() {
            eprintln!("toolbridge: warning: {}", nothing_served(&served));
        }
        let gateway =
            Gateway::from_runtime(server, std::sync::Arc::clone(&root), served, &ProcessEnv)?;
        let listener = gateway.bind().await.map_err(with_the_fix)?;
        // A bad [server.state] stops the server here, not at the first Responses request.
        gateway.open_state().await?;
        let addr = listener.local_addr()?;
        eprint!("{}", banner(addr, &gateway));
        gateway.serve(listener, shutdown_signal()).await?;
        root.shutdown().await;
        eprintln!("toolbridge: stopped");
        anyhow::Ok(ExitCode::SUCCESS)
    })
}

/// Why no model can answer and what to do, when none can: every chat request would fail.
fn nothing_served(served: &toolbridge_runtime::ServedModels) -> String {
    let mut fixes: Vec<String> = served
        .unavailable
        .iter()
        .map(|(name, reason)| format!("`{name}`: {reason}"))
        .collect();
    if let Some(Err(reason)) = &served.default_model {
        fixes.push(format!("the default model: {reason}"));
    }
    format!(
        "no model can answer, so every chat request gets 404 or 503 ({}); fix that and restart — `toolbridge models` shows what each model resolves to",
        fixes.join("; ")
    )
}

/// What `serve` says once it listens: the address (with the port a `:0` picked), the models,
/// and every endpoint family with where the chat page is.
fn banner(addr: SocketAddr, gateway: &Gateway) -> String {
    let names = gateway.model_names();
    let models = match names.len() {
        0 => "no model".to_owned(),
        n => format!("{} ({})", plural(n, "model"), names.join(", ")),
    };
    let keys = if gateway.requires_keys() {
        "API keys required"
    } else {
        "no API keys: loopback only"
    };
    let mut text =
        format!("toolbridge: serving {models} on http://{addr}/v1 ({keys}); Ctrl-C to stop\n");
    for (endpoint, what) in toolbridge_gateway::ENDPOINTS {
        text.push_str(&format!("  {endpoint:<28}{what}\n"));
    }
    text.push_str(&format!("  the chat page: http://{addr}/ui\n"));
    text
}

/// A port in use gets what to do about it: the cause alone does not say.
fn with_the_fix(err: toolbridge_gateway::GatewayError) -> anyhow::Error {
    let in_use = matches!(
        &err,
        toolbridge_gateway::GatewayError::Bind { source, .. }
            if source.kind() == std::io::ErrorKind::AddrInUse
    );
    if in_use {
        anyhow::anyhow!(
            "{err}: another program (perhaps another `toolbridge serve`) listens there; stop it, or choose another port with --listen 127.0.0.1:PORT (--listen 127.0.0.1:0 picks a free one and prints it)"
        )
    } else {
        anyhow::Error::new(err)
    }
}

/// `--listen`: an address, or a host name with a port (`localhost:8080`).
fn listen_addr(text: &str) -> Result<SocketAddr, String> {
    toolbridge_gateway::parse_listen(text).map_err(|e| e.to_string())
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Logs to standard error, filtered by RUST_LOG (default `info`), and the `[telemetry]` export.
fn init_logging(telemetry: &crate::telemetry::TelemetryConfig) {
    let directives = std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "info".to_owned());
    crate::logging::install(Some(directives), Some(telemetry));
}

/// Completes on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    eprintln!("toolbridge: shutting down; finishing in-flight requests");
}
