//! `toolbridge.toml`: found with `--config FILE`, else `./toolbridge.toml`, else
//! `$XDG_CONFIG_HOME/toolbridge/toolbridge.toml` (`~/.config/toolbridge/toolbridge.toml`).
//! Secrets never live in the file: keys come from environment variables it names.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Deserializer};
use toolbridge_providers::config::ModelConfig;
use toolbridge_runtime::{AgentSection, Origin};

/// The whole file. Unknown sections and keys are errors, so a typo does not silently do nothing.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// `[server]`, read by `toolbridge serve` (every key has a default; see docs/src/gateway.md).
    #[serde(default)]
    pub server: toolbridge_gateway::ServerConfig,
    /// Each entry's keys are checked with the providers of this build while parsing (see
    /// [`checked_models`]).
    #[serde(default, deserialize_with = "checked_models")]
    pub models: Vec<ModelConfig>,
    #[serde(default)]
    pub agent: AgentSection,
    /// `[tools]`: the built-in tools (toolbridge-tools) and their back-ends.
    #[serde(default)]
    pub tools: toolbridge_tools::ToolsConfig,
    /// `[[mcp_servers]]`: MCP servers whose tools join the agent's (see docs/src/mcp.md).
    #[serde(default)]
    pub mcp_servers: Vec<toolbridge_mcp::McpServerConfig>,
    /// `[telemetry]`: OpenTelemetry export for `serve`, `run` and `chat` (see crate::telemetry).
    #[serde(default)]
    pub telemetry: crate::telemetry::TelemetryConfig,
}

/// A `[[models]]` entry whose keys the providers of this build read: the keys of an arm beyond
/// the shared ones belong to its provider, so they are checked here, where the parser can say
/// where the entry is — a typo in any entry is an error whichever model a command uses.
struct CheckedModel(ModelConfig);

impl<'de> Deserialize<'de> for CheckedModel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let table = d.deserialize_map(KeyByKey)?;
        let model = ModelConfig::deserialize(serde_json::Value::Object(table))
            .map_err(serde::de::Error::custom)?;
        crate::providers::registry()
            .check_model(&model)
            .map_err(serde::de::Error::custom)?;
        Ok(CheckedModel(model))
    }
}

/// Reads a `[[models]]` entry (or one of its `arms`) key by key, checking each shared arm key's
/// value as it is read: a bad value (`tool_mode = "prompts"`) is then reported at its own line,
/// where the parser is, not at the table's header once the whole entry has been read.
struct KeyByKey;

impl<'de> serde::de::Visitor<'de> for KeyByKey {
    type Value = serde_json::Map<String, serde_json::Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a table")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut table = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = if key == "arms" {
                serde_json::Value::Array(
                    map.next_value::<Vec<ArmTable>>()?
                        .into_iter()
                        .map(|arm| serde_json::Value::Object(arm.0))
                        .collect(),
                )
            } else {
                map.next_value_seed(CheckedValue(&key))?
            };
            table.insert(key, value);
        }
        Ok(table)
    }
}

/// One table of `arms`, read as [`KeyByKey`] reads an entry.
struct ArmTable(serde_json::Map<String, serde_json::Value>);

impl<'de> Deserialize<'de> for ArmTable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(KeyByKey).map(ArmTable)
    }
}

/// The value of key `.0`, refused where it stands when an arm with this key alone would be
/// refused for it (every shared arm key is optional, so only the value itself can fail).
struct CheckedValue<'k>(&'k str);

impl<'de> serde::de::DeserializeSeed<'de> for CheckedValue<'_> {
    type Value = serde_json::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        if self.0 != "name" {
            let alone = serde_json::Map::from_iter([(self.0.to_owned(), value.clone())]);
            toolbridge_providers::config::ArmConfig::from_table(alone)
                .map_err(serde::de::Error::custom)?;
        }
        Ok(value)
    }
}

fn checked_models<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ModelConfig>, D::Error> {
    let models = Vec::<CheckedModel>::deserialize(d)?;
    Ok(models.into_iter().map(|m| m.0).collect())
}

/// Where the configuration came from (for messages).
pub struct Loaded {
    pub config: FileConfig,
    pub path: Option<PathBuf>,
    /// The files looked for, in order (absolute where the working folder is known).
    pub searched: Vec<PathBuf>,
}

impl Loaded {
    pub fn origin(&self) -> Origin {
        match &self.path {
            Some(path) => Origin::File(absolute(path)),
            None => Origin::NotFound(self.searched.clone()),
        }
    }

    /// The sections the composition root reads (`[server]` stays here, for `serve`).
    pub fn runtime_config(&self) -> toolbridge_runtime::Config {
        toolbridge_runtime::Config {
            models: self.config.models.clone(),
            agent: self.config.agent.clone(),
            tools: self.config.tools.clone(),
            mcp_servers: self.config.mcp_servers.clone(),
            origin: self.origin(),
        }
    }
}

/// The user configuration folder's file.
fn user_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("toolbridge").join("toolbridge.toml"))
}

/// `path`, joined to the working folder when relative (for messages).
fn absolute(path: &Path) -> PathBuf {
    match std::env::current_dir() {
        Ok(dir) if path.is_relative() => dir.join(path),
        _ => path.to_path_buf(),
    }
}

/// Loads the configuration; no file at all is an empty configuration.
pub fn load(explicit: Option<&Path>) -> anyhow::Result<Loaded> {
    let candidates: Vec<PathBuf> = match explicit {
        Some(p) => vec![p.to_path_buf()],
        None => [Some(PathBuf::from("toolbridge.toml")), user_file()]
            .into_iter()
            .flatten()
            .collect(),
    };
    let searched = candidates.iter().map(|p| absolute(p)).collect();
    let path = match explicit {
        Some(p) => Some(p.to_path_buf()),
        None => candidates.into_iter().find(|p| p.is_file()),
    };
    let Some(path) = path else {
        return Ok(Loaded {
            config: FileConfig::default(),
            path: None,
            searched,
        });
    };
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let config: FileConfig =
        toml::from_str(&text).with_context(|| format!("in {}", path.display()))?;
    Ok(Loaded {
        config,
        path: Some(path),
        searched,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn parses_models_and_agent_and_rejects_typos() {
        let c: FileConfig = toml::from_str(
            r#"
            [agent]
            model = "local"
            max_rounds = 5
            skill_dirs = ["skills"]

            [[models]]
            name = "local"
            base_url = "http://127.0.0.1:18000/v1"
            upstream_model = "mock-model"
            tool_mode = "prompt"
            "#,
        )
        .unwrap();
        assert_eq!(c.agent.max_rounds, Some(5));
        assert_eq!(c.models[0].name, "local");
        let e = toml::from_str::<FileConfig>("[agent]\nmax_round = 5\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `max_round`"), "{e}");
        // A [[models]] key no provider of this build reads is a parse error, listing the keys
        // that are read.
        let e = toml::from_str::<FileConfig>(
            "[[models]]\nname = \"ok\"\nmodel = \"scripted:x.json\"\n\n[[models]]\nname = \"x\"\nupstream_modle = \"m\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("TOML parse error") && e.contains("model `x`: unknown field `upstream_modle`, expected one of `model`, `provider`"),
            "{e}"
        );
        assert_eq!(
            e.contains("`threads`"),
            cfg!(feature = "embedded"),
            "the embedded provider's keys are read only when it is built in: {e}"
        );
        let e = toml::from_str::<FileConfig>("[agnet]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `agnet`"), "{e}");
    }
}
