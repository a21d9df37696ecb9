//! The composition root end to end: a configuration with a scripted model turned into a
//! session whose agent answers, the overrides' precedence, and what a registry without a
//! provider says.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use futures::StreamExt;
use toolbridge_agent::approval::{ApprovalPolicy, CallRisk};
use toolbridge_agent::Outcome;
use toolbridge_protocol::types::Message;
use toolbridge_providers::config::ModelConfig;
use toolbridge_providers::ProviderRegistry;
use toolbridge_runtime::{AgentSection, Config, Origin, Overrides, Runtime, RuntimeError};

/// A folder of its own for each test (removed when dropped).
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("tb-runtime-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// A scripted replies file answering `text`.
    fn script(&self, file: &str, text: &str) -> PathBuf {
        let path = self.0.join(file);
        std::fs::write(&path, serde_json::json!({ "replies": [text] }).to_string()).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn models(toml: &str) -> Vec<ModelConfig> {
    #[derive(serde::Deserialize)]
    struct File {
        models: Vec<ModelConfig>,
    }
    toml::from_str::<File>(toml).unwrap().models
}

fn section(toml: &str) -> AgentSection {
    toml::from_str(toml).unwrap()
}

fn configured(script: &Path, agent: &str) -> Config {
    Config {
        models: models(&format!(
            "[[models]]\nname = \"mine\"\nmodel = \"scripted:{}\"\n",
            script.display()
        )),
        agent: section(agent),
        origin: Origin::File(PathBuf::from("/etc/toolbridge.toml")),
        ..Config::default()
    }
}

/// The error and its causes, `outer: inner`.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        out.push_str(": ");
        out.push_str(&s.to_string());
        next = s.source();
    }
    out
}

async fn answer(session: &toolbridge_runtime::Session, prompt: &str) -> (Option<Outcome>, String) {
    let mut run = session
        .agent
        .run(vec![Message::user(prompt)], session.context());
    while run.next().await.is_some() {}
    let state = run.state();
    (state.outcome, state.answer)
}

#[tokio::test]
async fn a_session_answers_with_the_configured_model() {
    let scratch = Scratch::new("answers");
    let script = scratch.script("replies.json", "hello from the script");
    let root = Runtime::new(
        configured(&script, "model = \"mine\"\nmax_rounds = 3"),
        ProviderRegistry::new(),
        Overrides::default(),
    );
    let session = root.session("ada", "conv-1", None).await.unwrap();
    assert_eq!(session.model_name, "mine");
    assert_eq!(session.agent.model().name(), "mine");
    assert_eq!(session.agent.config().max_rounds, 3);
    let context = session.context();
    assert_eq!(
        (context.user.as_str(), context.conversation.as_str()),
        ("ada", "conv-1")
    );
    let (outcome, text) = answer(&session, "hi").await;
    assert_eq!(outcome, Some(Outcome::Answered));
    assert_eq!(text, "hello from the script");
    // Another session of the same root, for another user: the model was built once and is
    // shared; the session is the user's own.
    let other = root.session("bob", "conv-2", None).await.unwrap();
    assert_eq!(other.context().user, "bob");
    assert_eq!(other.agent.model().name(), "mine");
}

#[tokio::test]
async fn overrides_win_over_the_section_and_only_tighten_approvals() {
    let scratch = Scratch::new("overrides");
    let from_file = scratch.script("file.json", "from the file's model");
    let from_flag = scratch.script("flag.json", "from the flag's model");
    let overrides = Overrides {
        model: Some(format!("scripted:{}", from_flag.display())),
        max_rounds: Some(7),
        system: Some("from the flag".into()),
        approve_risk: vec![
            (CallRisk::High, ApprovalPolicy::Deny),
            (CallRisk::Unknown, ApprovalPolicy::Allow),
        ],
        ..Overrides::default()
    };
    let root = Runtime::new(
        configured(
            &from_file,
            "model = \"mine\"\nmax_rounds = 3\nsystem_prompt = \"from the file\"",
        ),
        ProviderRegistry::new(),
        overrides,
    );
    let session = root.session("local", "c", None).await.unwrap();
    let config = session.agent.config();
    assert_eq!(config.max_rounds, 7);
    assert_eq!(config.system_prompt.as_deref(), Some("from the flag"));
    assert_eq!(config.approvals.risk.high, ApprovalPolicy::Deny);
    assert_eq!(
        config.approvals.risk.unknown,
        ApprovalPolicy::Ask,
        "an override never loosens"
    );
    let (_, text) = answer(&session, "hi").await;
    assert_eq!(text, "from the flag's model");
}

#[test]
fn listing_needs_no_model_and_follows_the_builtin_skill_rule() {
    let root = |agent: &str| {
        Runtime::new(
            Config {
                agent: section(agent),
                ..Config::default()
            },
            ProviderRegistry::new(),
            Overrides::default(),
        )
    };
    let listing = root("builtin_skills = \"always\"").listing().unwrap();
    assert_eq!(listing.model_name, "(none)");
    // A listing has no model: no arm to describe.
    assert_eq!(listing.agent.model().describe(), "");
    assert!(!listing.agent.skills().is_empty(), "always");
    let listing = root("builtin_skills = \"never\"").listing().unwrap();
    assert!(listing.agent.skills().is_empty(), "never");
    // auto: the built-in skill only with python_execute, which is not enabled here.
    let listing = root("").listing().unwrap();
    assert!(
        listing.agent.skills().is_empty(),
        "auto without python_execute"
    );
}

#[tokio::test]
async fn names_are_resolved_with_clear_errors() {
    let scratch = Scratch::new("names");
    let script = scratch.script("replies.json", "hi");
    let with = |name: &str| {
        Runtime::new(
            configured(&script, ""),
            ProviderRegistry::new(),
            Overrides {
                model: Some(name.to_owned()),
                ..Overrides::default()
            },
        )
    };
    let err = with("bare").model().err().unwrap();
    assert!(matches!(err, RuntimeError::UnknownModel(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "no model named `bare` in /etc/toolbridge.toml (it defines `mine`); a bare model name must be defined under [[models]] in toolbridge.toml, or written provider:model (for example openai:gpt-4o-mini, ollama:qwen2.5, scripted:replies.json)"
    );
    let err = chain(&with("nosuch:m").model().err().unwrap());
    assert!(
        err.starts_with("configuration error: unknown provider `nosuch`"),
        "{err}"
    );
    // A configured name whose arm fails names the model and the arm.
    let root = Runtime::new(
        Config {
            models: models(
                "[[models]]\nname = \"gone\"\nmodel = \"scripted:/nonexistent/replies.json\"\n",
            ),
            agent: section("model = \"gone\""),
            ..Config::default()
        },
        ProviderRegistry::new(),
        Overrides::default(),
    );
    let err = chain(&root.session("local", "c", None).await.err().unwrap());
    assert!(
        err.starts_with("model `gone`: model `gone`, arm 1: "),
        "{err}"
    );
}

#[tokio::test]
async fn without_the_embedded_provider_no_model_says_it_is_not_in_this_build() {
    let mut registry = ProviderRegistry::new();
    registry.absent("embedded", "built without the `embedded` feature");
    let root = Runtime::new(Config::default(), registry, Overrides::default());
    let err = root.session("local", "c", None).await.err().unwrap();
    assert!(matches!(err, RuntimeError::NoModel(_)), "{err:?}");
    assert_eq!(
        chain(&err),
        "no model configured: pass --model (for example --model openai:gpt-4o-mini, --model ollama:qwen2.5 or --model scripted:FILE.json) or set `model` under [agent] in toolbridge.toml: configuration error: the embedded provider is not in this build (built without the `embedded` feature)"
    );
    // The same for a gateway: nothing configured, no default to serve, and why.
    let served = root.served_models().unwrap();
    assert!(served.models.is_empty() && served.unavailable.is_empty());
    let why = served.default_model.unwrap().unwrap_err();
    assert!(
        why.contains("the embedded provider is not in this build"),
        "{why}"
    );
}

#[test]
fn a_server_serves_what_it_can_and_names_what_it_cannot() {
    let scratch = Scratch::new("served");
    let script = scratch.script("replies.json", "hi");
    let config = Config {
        models: models(&format!(
            "[[models]]\nname = \"ok\"\nmodel = \"scripted:{}\"\n\n[[models]]\nname = \"keyless\"\nbase_url = \"http://127.0.0.1:9/v1\"\nupstream_model = \"m\"\napi_key_env = \"TB_RUNTIME_TEST_UNSET_KEY\"\n",
            script.display()
        )),
        ..Config::default()
    };
    let root = Runtime::new(config, ProviderRegistry::new(), Overrides::default())
        .with_env(Box::new(std::collections::BTreeMap::<String, String>::new()));
    let served = root.served_models().unwrap();
    let names: Vec<&str> = served.models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["ok"]);
    assert_eq!(served.unavailable.len(), 1);
    assert_eq!(served.unavailable[0].0, "keyless");
    assert!(
        served.unavailable[0]
            .1
            .contains("TB_RUNTIME_TEST_UNSET_KEY (api_key_env) is not set"),
        "{:?}",
        served.unavailable
    );
    assert!(
        served.default_model.is_none(),
        "a configured model answers, so the run's default is not served"
    );
    // Any other error stops the server.
    let broken = Runtime::new(
        Config {
            models: models("[[models]]\nname = \"bad\"\nmodel = \"nosuch:x\"\n"),
            ..Config::default()
        },
        ProviderRegistry::new(),
        Overrides::default(),
    );
    let err = chain(&broken.served_models().err().unwrap());
    assert!(
        err.starts_with("cannot set up the configured models: model `bad`, arm 1: configuration error: unknown provider `nosuch`"),
        "{err}"
    );
}

/// Issue 39, item 4: when no `[[models]]` entry can answer (here: its key is unset), a server
/// serves the model `run` uses without `--model` — the `[agent] model` here — under its name.
#[test]
fn a_server_with_no_entry_that_answers_serves_the_runs_default() {
    let scratch = Scratch::new("served-default");
    let script = scratch.script("replies.json", "hi");
    let spec = format!("scripted:{}", script.display());
    let mut config = Config {
        models: models(
            "[[models]]\nname = \"keyless\"\nbase_url = \"http://127.0.0.1:9/v1\"\nupstream_model = \"m\"\napi_key_env = \"TB_RUNTIME_TEST_UNSET_KEY\"\n",
        ),
        ..Config::default()
    };
    config.agent.model = Some(spec.clone());
    let root = Runtime::new(config, ProviderRegistry::new(), Overrides::default())
        .with_env(Box::new(std::collections::BTreeMap::<String, String>::new()));
    let served = root.served_models().unwrap();
    let names: Vec<&str> = served.models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, [spec.as_str()]);
    assert_eq!(served.unavailable[0].0, "keyless");
    assert_eq!(served.default_model, Some(Ok(())));
}
