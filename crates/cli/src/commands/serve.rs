//! `toolbridge serve`: the OpenAI-compatible gateway.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use toolbridge_gateway::Gateway;
use toolbridge_providers::config::ProcessEnv;

use crate::config;

/// Serve an OpenAI-compatible API (`/v1/chat/completions`, `/v1/models`, `/healthz`, `/metrics`)
/// in front of the models of `toolbridge.toml`, giving tool calling to every one of them.
///
/// Configuration: `--config FILE`, else ./toolbridge.toml, else
/// $XDG_CONFIG_HOME/toolbridge/toolbridge.toml (~/.config/toolbridge/toolbridge.toml). API keys
/// come from the variable named by `[server] api_keys_env` (default TOOLBRIDGE_API_KEYS,
/// comma-separated); without keys only a loopback address is allowed. Logs go to standard error,
/// filtered by RUST_LOG (default `info`). Ctrl-C or SIGTERM stops accepting, lets in-flight
/// requests finish (up to `shutdown_grace_secs`), then exits.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The configuration file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The address to listen on (overrides `[server] listen`), e.g. 127.0.0.1:8080.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    init_logging();
    let loaded = config::load(args.config.as_deref())?;
    let mut server = loaded.config.server;
    if let Some(listen) = args.listen {
        server.listen = listen;
    }
    // SECURITY.md §1.6: no built-in tool of this process fetches from the gateway itself.
    toolbridge_tools::net::register_own_listener(server.listen);
    let mut models = loaded
        .config
        .models
        .iter()
        .map(crate::commands::model::build_configured)
        .collect::<Result<Vec<_>, _>>()
        .context("cannot set up the configured models")?;
    if models.is_empty() {
        // No model configured: serve the embedded default (pulled on first use) as `embedded`.
        match crate::commands::model::embedded_model("embedded", None) {
            Ok(model) => {
                eprintln!("toolbridge: no [[models]] configured; serving the embedded default model as `embedded`");
                models.push(model);
            }
            Err(err) => eprintln!("toolbridge: no embedded default model: {err:#}"),
        }
    }
    match &loaded.path {
        Some(path) => eprintln!("toolbridge: configuration {}", path.display()),
        None => eprintln!(
            "toolbridge: no toolbridge.toml found (--config FILE, ./toolbridge.toml or the user config folder); using defaults"
        ),
    }
    if models.is_empty() {
        eprintln!(
            "toolbridge: note: no [[models]] configured, so /v1/models is empty and every chat request gets 404"
        );
    }
    let workers = server.worker_threads;
    let gateway = Gateway::new(server, models, &ProcessEnv)?;
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if workers > 0 {
        runtime.worker_threads(workers);
    }
    let runtime = runtime
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let listener = gateway.bind().await?;
        let addr = listener.local_addr()?;
        eprintln!(
            "toolbridge: serving {} on http://{addr}/v1 ({}); Ctrl-C to stop",
            plural(gateway.model_names().len(), "model"),
            if gateway.requires_keys() {
                "API keys required"
            } else {
                "no API keys: loopback only"
            }
        );
        gateway.serve(listener, shutdown_signal()).await?;
        eprintln!("toolbridge: stopped");
        anyhow::Ok(ExitCode::SUCCESS)
    })
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Logs to standard error, filtered by RUST_LOG (default `info`).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Another command may have set a subscriber up already; that one stays.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
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
