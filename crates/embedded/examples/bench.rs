//! Benchmark of the embedded model: load time (with the Q4_1 → Q8_0 conversion), prompt and
//! generation tokens per second, peak RSS, and a constrained tool call.
//!
//! `cargo run --release -p toolbridge-embedded --example bench -- [MODEL.gguf] [THREADS]`
//! (default model: the pulled default, `toolbridge model pull`).

use std::time::Instant;

use toolbridge_embedded::engine::{Constraint, Engine, EngineOptions, Generation, Sampling};
use toolbridge_embedded::template::TemplateMessage;

/// The prompt shared with scripts/bench-embedded.sh's llama.cpp run.
const PROMPT: &str = "Write a short story about a robot who learns to paint. Describe the colours it discovers, the first painting it makes, and what the other robots think of it.";

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = match args.next() {
        Some(p) => p.into(),
        None => {
            toolbridge_embedded::pull::default_model_path(&toolbridge_embedded::pull::models_dir()?)
        }
    };
    let threads: usize = args.next().and_then(|t| t.parse().ok()).unwrap_or(2);
    let gen_tokens: usize = std::env::var("BENCH_TOKENS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(128);
    let start = Instant::now();
    let engine = Engine::load(
        &path,
        &EngineOptions {
            threads: Some(threads),
            q4_0: std::env::var_os("BENCH_Q4_0").is_some(),
        },
    )?;
    let load = start.elapsed();
    println!(
        "model: {} ({} 4/5-bit tensors converted), threads: {}",
        path.display(),
        engine.weights().requantized,
        engine.weights().threads()
    );
    println!("load: {:.2} s", load.as_secs_f64());
    let prompt = engine.render(&[TemplateMessage::new("user", PROMPT)]);
    // Warm-up (thread pool start, allocations), then a cold cache for the measured run.
    let warm = Generation {
        prompt: prompt.clone(),
        constraint: Constraint::Free,
        stop: Vec::new(),
        max_tokens: 4,
        sampling: Sampling {
            // BENCH_REPEAT_PENALTY=1 decodes as the llama.cpp side of the script does.
            repeat_penalty: std::env::var("BENCH_REPEAT_PENALTY")
                .ok()
                .and_then(|t| t.parse().ok())
                .unwrap_or(Sampling::default().repeat_penalty),
            ..Sampling::default()
        },
    };
    engine.generate(&warm, &mut |_| true)?;
    engine.reset();
    let generation = Generation {
        max_tokens: gen_tokens,
        ..warm
    };
    let mut text = String::new();
    let report = engine.generate(&generation, &mut |t| {
        text.push_str(t);
        true
    })?;
    let pp = report.fed_tokens as f64 / report.prompt_time.as_secs_f64();
    let tg = report.generated_tokens as f64 / report.generation_time.as_secs_f64();
    println!(
        "prompt: {} tokens in {:.3} s = {pp:.1} tok/s",
        report.fed_tokens,
        report.prompt_time.as_secs_f64()
    );
    println!(
        "generation: {} tokens in {:.3} s = {tg:.1} tok/s ({:.2} ms/token)",
        report.generated_tokens,
        report.generation_time.as_secs_f64(),
        1e3 * report.generation_time.as_secs_f64() / report.generated_tokens.max(1) as f64
    );
    println!("peak RSS: {:.1} MiB", peak_rss_kib() as f64 / 1024.0);
    println!("text: {}", text.replace('\n', " "));
    println!("RESULT pp={pp:.1} tg={tg:.1}");
    Ok(())
}
