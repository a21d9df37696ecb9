//! `testkit-upstream`: the scripted upstream as a standalone program, for benchmarks and demos.
//! It listens on 127.0.0.1 (a free port), prints its OpenAI base URL on the first line of
//! standard output, answers every request with the same reply, and exits by itself after
//! `--max-seconds`.
//!
//! ```text
//! testkit-upstream [--text TEXT] [--chunk-size BYTES] [--max-seconds N] [--threads N]
//! ```
//!
//! The default reply is a prompt-mode tool call (`<tool_call>{"name": "get_weather", …}`).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use toolbridge_testkit::{Behavior, Reply, TestUpstream};

const DEFAULT_TEXT: &str =
    r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>"#;

struct Options {
    text: String,
    chunk_size: usize,
    max_seconds: u64,
    threads: usize,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        text: DEFAULT_TEXT.to_owned(),
        chunk_size: 8,
        max_seconds: 600,
        threads: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--text" => o.text = value()?,
            "--chunk-size" => {
                o.chunk_size = value()?.parse().map_err(|e| format!("{flag}: {e}"))?
            }
            "--max-seconds" => {
                o.max_seconds = value()?.parse().map_err(|e| format!("{flag}: {e}"))?
            }
            "--threads" => o.threads = value()?.parse().map_err(|e| format!("{flag}: {e}"))?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    // Bounded whatever is asked: this is a test server.
    o.max_seconds = o.max_seconds.clamp(1, 3600);
    o.threads = o.threads.clamp(1, 8);
    Ok(o)
}

fn main() -> ExitCode {
    let options = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("testkit-upstream: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = if options.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(options.threads)
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("testkit-upstream: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let upstream = match TestUpstream::start().await {
            Ok(u) => u,
            Err(e) => {
                eprintln!("testkit-upstream: {e}");
                return ExitCode::FAILURE;
            }
        };
        upstream.set_recording(false);
        upstream.set_default(Some(Behavior::Reply(
            Reply::text(options.text).with_chunk_size(options.chunk_size),
        )));
        let mut out = std::io::stdout();
        let _ = writeln!(out, "{}", upstream.base_url());
        let _ = out.flush();
        tokio::time::sleep(Duration::from_secs(options.max_seconds)).await;
        ExitCode::SUCCESS
    })
}
