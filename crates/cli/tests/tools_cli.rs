//! `toolbridge net check`, `toolbridge memory list|rm` and the built-in tools in `run` and `tools`,
//! driven as a user would. Offline: literal addresses and `--resolve` answers only.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::toolbridge;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use toolbridge_protocol::texts;

fn temp_dir(name: &str) -> PathBuf {
    common::temp_dir("tools-cli", name)
}

fn check(args: &[&str], dir: &Path) -> (i32, Value) {
    let mut all = vec!["net", "check"];
    all.extend_from_slice(args);
    all.push("--json");
    let (code, out, err) = toolbridge(&all, dir);
    assert_eq!(out.lines().count(), 1, "{out}{err}");
    (code, serde_json::from_str(&out).unwrap())
}

#[test]
fn net_check_explains_the_guard() {
    let d = temp_dir("net");
    assert_eq!(
        check(&["http://127.0.0.1/"], &d),
        (
            1,
            json!({"allowed": false, "reason": "127.0.0.1 is an internal or reserved address", "addresses": ["127.0.0.1"]})
        )
    );
    assert_eq!(
        check(&["http://[::ffff:169.254.169.254]/latest"], &d),
        (
            1,
            json!({"allowed": false, "reason": "::ffff:169.254.169.254 is an internal or reserved address", "addresses": ["::ffff:169.254.169.254"]})
        )
    );
    assert_eq!(
        check(
            &[
                "http://example.test/",
                "--resolve",
                "example.test=93.184.216.34,2606:2800:220:1::1"
            ],
            &d
        ),
        (
            0,
            json!({"allowed": true, "reason": "every address is allowed", "addresses": ["93.184.216.34", "2606:2800:220:1::1"]})
        )
    );
    assert_eq!(
        check(
            &[
                "https://a.test/x",
                "--resolve",
                "b.test=1.1.1.1",
                "--resolve",
                "a.test=93.184.216.34,10.0.0.1"
            ],
            &d
        ),
        (
            1,
            json!({"allowed": false, "reason": "a.test (10.0.0.1) is an internal or reserved address", "addresses": ["93.184.216.34", "10.0.0.1"]})
        )
    );
    assert_eq!(
        check(&["file:///etc/passwd"], &d),
        (
            1,
            json!({"allowed": false, "reason": "only http and https URLs can be fetched, not file", "addresses": []})
        )
    );
    assert_eq!(
        check(&["http://localhost:80/"], &d),
        (
            1,
            json!({"allowed": false, "reason": "localhost is an internal host name", "addresses": []})
        )
    );
    assert_eq!(
        check(&["http://93.184.216.34:8080/"], &d).1["reason"],
        "port 8080 is not allowed (allowed: 80, 443)"
    );
    // The policy comes from [tools.fetch].
    std::fs::write(
        d.join("toolbridge.toml"),
        "[tools.fetch]\nallowed_ports = [443, 8080]\nallow = [\"10.20.0.0/16\"]\ndeny = [\"93.184.216.0/24\"]\n",
    )
    .unwrap();
    assert_eq!(check(&["http://10.20.1.1:8080/"], &d).0, 0);
    assert_eq!(check(&["http://10.21.1.1:8080/"], &d).0, 1);
    assert_eq!(
        check(&["https://93.184.216.34/"], &d).1["reason"],
        "93.184.216.34 is blocked by this server's policy"
    );
    // Human output.
    let (code, out, _) = toolbridge(&["net", "check", "gopher://x/"], &d);
    assert_eq!(
        (code, out.as_str()),
        (
            1,
            "refused: only http and https URLs can be fetched, not gopher\n"
        )
    );
    let (code, _, err) = toolbridge(
        &["net", "check", "http://x.test/", "--resolve", "x.test=nope"],
        &d,
    );
    assert_eq!(code, 1);
    assert!(err.contains("`nope` is not an IP address"), "{err}");
}

#[test]
fn save_memory_in_runs_and_memory_list_rm() {
    let d = temp_dir("memory");
    let db = d.join("mem.sqlite3");
    std::fs::write(
        d.join("toolbridge.toml"),
        format!(
            "[tools]\nenabled = [\"save_memory\"]\n[tools.memory]\nurl = \"{}\"\n",
            db.display()
        ),
    )
    .unwrap();
    let script = d.join("script.json");
    std::fs::write(
        &script,
        json!({"replies": [
            {"tool_calls": [{"name": "save_memory", "arguments": {"memory_text": "The user is vegetarian.", "slot": "diet", "value": "vegetarian"}}]},
            "Noted."
        ]})
        .to_string(),
    )
    .unwrap();
    let model = format!("scripted:{}", script.display());
    let (code, out, err) = toolbridge(
        &[
            "run",
            "Remember that I am vegetarian.",
            "--model",
            &model,
            "--conversation",
            "diet-1",
        ],
        &d,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim(), "Noted.");

    let (code, out, _) = toolbridge(&["memory", "list", "--json"], &d);
    assert_eq!(code, 0);
    let list: Value = serde_json::from_str(&out).unwrap();
    let entry = list[0].clone();
    assert_eq!(entry["user"], "local");
    assert_eq!(entry["memory_text"], "The user is vegetarian.");
    assert_eq!(entry["slot"], "diet");
    assert_eq!(entry["status"], "ACTIVE");
    assert_eq!(entry["conversation"], "diet-1");
    assert!(
        entry["tool_call"].as_str().is_some_and(|s| !s.is_empty()),
        "{entry}"
    );
    let (_, out, _) = toolbridge(&["memory", "list"], &d);
    assert!(
        out.contains("The user is vegetarian. [diet = vegetarian]"),
        "{out}"
    );

    // A later run gives the model the memory.
    let record = d.join("requests.jsonl");
    std::fs::write(
        &script,
        json!({"replies": ["Here is a recipe."], "record": record}).to_string(),
    )
    .unwrap();
    let (code, _, err) = toolbridge(&["run", "Suggest dinner.", "--model", &model], &d);
    assert_eq!(code, 0, "{err}");
    let recorded = std::fs::read_to_string(&record).unwrap();
    let want = format!("{}\n- The user is vegetarian.", texts::MEMORY_HEADER);
    assert!(
        recorded.contains(&serde_json::to_string(&want).unwrap()),
        "{recorded}"
    );

    let id = entry["id"].as_i64().unwrap().to_string();
    assert_eq!(
        toolbridge(&["memory", "rm", &id], &d).1,
        format!("removed {id}\n")
    );
    assert_eq!(toolbridge(&["memory", "rm", &id], &d).0, 1);
    assert_eq!(toolbridge(&["memory", "list"], &d).1, "(no memories)\n");
}

#[test]
fn tools_lists_the_enabled_builtins_with_the_seed_specs() {
    let d = temp_dir("list");
    std::fs::write(
        d.join("toolbridge.toml"),
        "[tools]\nenabled = [\"save_memory\", \"web_fetch\", \"web_search\", \"fetch_image\", \"image_generate\"]\n[tools.search]\nbackend = \"searxng\"\nbase_url = \"http://127.0.0.1:9/\"\n[tools.images]\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    )
    .unwrap();
    let (code, out, err) = toolbridge(&["tools", "--json"], &d);
    assert_eq!(code, 0, "{err}");
    let specs: Vec<Value> = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = specs
        .iter()
        .map(|s| s["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "web_search",
            "web_fetch",
            "fetch_image",
            "image_generate",
            "save_memory"
        ]
    );
    for (spec, schema) in specs.iter().zip([
        texts::WEB_SEARCH_SCHEMA,
        texts::WEB_FETCH_SCHEMA,
        texts::FETCH_IMAGE_SCHEMA,
        texts::IMAGE_GENERATE_SCHEMA,
        texts::SAVE_MEMORY_SCHEMA,
    ]) {
        assert_eq!(
            serde_json::to_string(&spec["function"]["parameters"]).unwrap(),
            schema
        );
    }
    // A typo in [tools] is an error; so is a search backend without what it needs.
    std::fs::write(
        d.join("toolbridge.toml"),
        "[tools]\nenabled = [\"web_fetsh\"]\n",
    )
    .unwrap();
    let (code, _, err) = toolbridge(&["tools"], &d);
    assert_eq!(code, 1);
    assert!(err.contains("web_fetsh"), "{err}");
    std::fs::write(
        d.join("toolbridge.toml"),
        "[tools]\nenabled = [\"web_search\"]\n[tools.search]\nbackend = \"searxng\"\n",
    )
    .unwrap();
    let (code, _, err) = toolbridge(&["tools"], &d);
    assert_eq!(code, 1);
    assert!(err.contains("needs base_url"), "{err}");
}
