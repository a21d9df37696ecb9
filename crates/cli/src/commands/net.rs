//! `toolbridge net check URL`: whether the outbound-fetch guard would fetch a URL, and why not.

use std::net::IpAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use futures::future::BoxFuture;
use toolbridge_tools::net::resolve::Overlay;
use toolbridge_tools::net::{Guard, Policy, Resolver, StaticResolver, SystemResolver};

use crate::config;

/// The outbound-fetch guard of web_fetch and fetch_image.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: NetCommand,
}

#[derive(clap::Subcommand)]
enum NetCommand {
    Check(CheckArgs),
}

/// Say whether the guard would fetch URL, and why not, without fetching it. Uses the policy of
/// [tools.fetch] in toolbridge.toml. Exit code 0 when allowed, 1 when refused.
#[derive(clap::Args)]
struct CheckArgs {
    /// The URL.
    url: String,
    /// Answer DNS for HOST with these addresses instead of the system resolver (repeatable).
    #[arg(long, value_name = "HOST=IP[,IP…]")]
    resolve: Vec<String>,
    /// Print {"allowed": …, "reason": "…", "addresses": […]} on one line.
    #[arg(long)]
    json: bool,
    /// The configuration file.
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
}

/// Records every answer it gives (for the report's `addresses`).
struct Recording<R> {
    inner: R,
    seen: Arc<Mutex<Vec<IpAddr>>>,
}

impl<R: Resolver> Resolver for Recording<R> {
    fn resolve(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        let answer = self.inner.resolve(host);
        let seen = Arc::clone(&self.seen);
        Box::pin(async move {
            let ips = answer.await?;
            seen.lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(ips.iter().copied());
            Ok(ips)
        })
    }
}

fn parse_resolve(entries: &[String]) -> anyhow::Result<StaticResolver> {
    let mut table = Vec::new();
    for e in entries {
        let (host, ips) = e
            .split_once('=')
            .with_context(|| format!("--resolve {e}: expected HOST=IP[,IP…]"))?;
        let ips = ips
            .split(',')
            .map(|ip| {
                ip.trim()
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<IpAddr>()
                    .with_context(|| format!("--resolve {e}: `{ip}` is not an IP address"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        table.push((host.trim().to_owned(), ips));
    }
    Ok(StaticResolver::new(table))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let NetCommand::Check(args) = args.command;
    let loaded = config::load(args.config.as_deref())?;
    let policy = Policy::from_config(&loaded.config.tools.fetch)
        .map_err(|e| anyhow::anyhow!("[tools.fetch]: {e}"))?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let resolver = Recording {
        inner: Overlay {
            table: parse_resolve(&args.resolve)?,
            fallback: SystemResolver,
        },
        seen: Arc::clone(&seen),
    };
    let guard = Guard::new(policy, Arc::new(resolver));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let result = runtime.block_on(guard.check(&args.url));
    let mut addresses: Vec<IpAddr> = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let (allowed, reason) = match &result {
        Ok(checked) => {
            if addresses.is_empty() {
                addresses = checked.addrs.clone();
            }
            (true, "every address is allowed".to_owned())
        }
        Err(refusal) => {
            if let (true, toolbridge_tools::net::Refusal::Address { ip, host: None, .. }) =
                (addresses.is_empty(), refusal)
            {
                addresses.push(*ip);
            }
            (false, refusal.to_string())
        }
    };
    if args.json {
        let addresses: Vec<String> = addresses.iter().map(IpAddr::to_string).collect();
        crate::outln!(
            "{}",
            serde_json::json!({"allowed": allowed, "reason": reason, "addresses": addresses})
        )?;
    } else {
        let list = addresses
            .iter()
            .map(IpAddr::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let verdict = if allowed { "allowed" } else { "refused" };
        if list.is_empty() {
            crate::outln!("{verdict}: {reason}")?;
        } else {
            crate::outln!("{verdict}: {reason} [addresses: {list}]")?;
        }
    }
    Ok(if allowed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
