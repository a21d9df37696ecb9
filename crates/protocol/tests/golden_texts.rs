//! Golden tests of every model-facing text.
//!
//! - `golden/seed/*.txt` are the reference protocol's texts, extracted from its source documents by
//!   `scripts/extract-seed-texts.py`; the texts module must match them byte for byte. The source
//!   documents are not part of this repository: the check that each golden text occurs in them
//!   verbatim is an ignored test, run by hand beside them (`cargo test -p toolbridge-protocol
//!   --test golden_texts -- --ignored`), and it fails when they are missing.
//! - `golden/rendered/*` are rendered prompts and requests for a fixed tool set. Run with
//!   `TOOLBRIDGE_BLESS=1` to rewrite them after a deliberate change, and review the diff.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use serde_json::json;
use toolbridge_protocol::mode::{encode, EncodeOptions, ToolMode};
use toolbridge_protocol::parser::{
    Dialect, DialectProblem, JsonSyntax, ParseProblem, PythonicProblem,
};
use toolbridge_protocol::texts::{self, CallFormat, CallTag, ToolResultText};
use toolbridge_protocol::types::{ChatRequest, Message, ToolCall, ToolChoice, ToolSpec};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

const SEED_TEXTS: &[(&str, &str)] = &[
    ("preamble_header", texts::PREAMBLE_HEADER),
    ("preamble_tool_template", texts::PREAMBLE_TOOL_TEMPLATE),
    ("stop_sequence", texts::STOP_SEQUENCE),
    ("tool_result_template", texts::TOOL_RESULT_TEMPLATE),
    ("tool_error_template", texts::TOOL_ERROR_TEMPLATE),
    ("retry_template", texts::RETRY_TEMPLATE),
    ("finalize_budget", texts::FINALIZE_BUDGET),
    ("finalize_no_progress", texts::FINALIZE_NO_PROGRESS),
    (
        "tool_output_budget_exhausted",
        texts::TOOL_OUTPUT_BUDGET_EXHAUSTED,
    ),
    (
        "tool_output_duplicate_skipped",
        texts::TOOL_OUTPUT_DUPLICATE_SKIPPED,
    ),
    ("error_canceled", texts::ERROR_CANCELED),
    ("error_timed_out", texts::ERROR_TIMED_OUT),
    ("error_failed", texts::ERROR_FAILED),
    ("truncation_note_template", texts::TRUNCATION_NOTE_TEMPLATE),
    ("terminal_timeout", texts::TERMINAL_TIMEOUT),
    ("docgen_index_entry", texts::DOCGEN_INDEX_ENTRY),
    ("docgen_body", texts::DOCGEN_BODY),
    (
        "builtin_web_search_description",
        texts::WEB_SEARCH_DESCRIPTION,
    ),
    ("builtin_web_search_schema", texts::WEB_SEARCH_SCHEMA),
    (
        "builtin_web_fetch_description",
        texts::WEB_FETCH_DESCRIPTION,
    ),
    ("builtin_web_fetch_schema", texts::WEB_FETCH_SCHEMA),
    (
        "builtin_fetch_image_description",
        texts::FETCH_IMAGE_DESCRIPTION,
    ),
    ("builtin_fetch_image_schema", texts::FETCH_IMAGE_SCHEMA),
    (
        "builtin_python_execute_description",
        texts::PYTHON_EXECUTE_DESCRIPTION,
    ),
    (
        "builtin_python_execute_schema",
        texts::PYTHON_EXECUTE_SCHEMA,
    ),
    (
        "builtin_image_generate_description",
        texts::IMAGE_GENERATE_DESCRIPTION,
    ),
    (
        "builtin_image_generate_schema",
        texts::IMAGE_GENERATE_SCHEMA,
    ),
    (
        "builtin_use_skill_description",
        texts::USE_SKILL_DESCRIPTION,
    ),
    ("builtin_use_skill_schema", texts::USE_SKILL_SCHEMA),
    (
        "builtin_save_memory_description",
        texts::SAVE_MEMORY_DESCRIPTION,
    ),
    ("builtin_save_memory_schema", texts::SAVE_MEMORY_SCHEMA),
];

#[test]
fn every_seed_text_matches_its_golden_file_byte_for_byte() {
    let dir = golden_dir().join("seed");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .trim_end_matches(".txt")
                .to_owned()
        })
        .collect();
    files.sort();
    let mut names: Vec<String> = SEED_TEXTS.iter().map(|(n, _)| n.to_string()).collect();
    names.sort();
    assert_eq!(
        files, names,
        "every golden seed file has a constant and vice versa"
    );
    for (name, text) in SEED_TEXTS {
        let golden = std::fs::read_to_string(dir.join(format!("{name}.txt"))).unwrap();
        assert_eq!(
            *text, golden,
            "texts constant for {name} differs from its golden file"
        );
    }
}

/// Every golden text occurs verbatim in the protocol's source documents, so a golden file cannot
/// drift from its source either. The documents live outside this repository (set
/// `TOOLBRIDGE_SEEDS` to their folder; default `../shared/seeds` beside the checkout).
#[test]
#[ignore = "needs the protocol's source documents beside the repository (TOOLBRIDGE_SEEDS)"]
fn golden_seed_files_occur_in_the_seeds() {
    let seeds = std::env::var_os("TOOLBRIDGE_SEEDS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/seeds"),
        PathBuf::from,
    );
    let entries = std::fs::read_dir(&seeds)
        .unwrap_or_else(|e| panic!("no source documents at {}: {e}", seeds.display()));
    let all: String = entries
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .collect::<Vec<_>>()
        .join("\n");
    for (name, text) in SEED_TEXTS {
        let needle = if *name == "truncation_note_template" {
            // Seed 002 writes it inside a Python f-string, with `\n` escapes.
            text.replace('\n', "\\n")
        } else {
            text.to_string()
        };
        assert!(
            all.contains(&needle),
            "{name} does not occur verbatim in the seeds"
        );
    }
}

fn fixed_tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "get_weather",
            "Get the current weather for a city.",
            json!({"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}),
        ),
        ToolSpec::new(
            "web_search",
            texts::WEB_SEARCH_DESCRIPTION,
            serde_json::from_str(texts::WEB_SEARCH_SCHEMA).unwrap(),
        ),
    ]
}

fn fixed_request() -> ChatRequest {
    ChatRequest {
        model: "m".into(),
        messages: vec![
            Message::system("You are a helpful assistant."),
            Message::user("Weather in Paris, and news about it?"),
            Message::assistant_calls(
                Some("Checking both.".into()),
                vec![
                    ToolCall {
                        id: "call_1".into(),
                        name: "get_weather".into(),
                        arguments: r#"{"city":"Paris"}"#.into(),
                    },
                    ToolCall {
                        id: "call_2".into(),
                        name: "web_search".into(),
                        arguments: r#"{"query":"Paris news"}"#.into(),
                    },
                ],
            ),
            Message::tool_result("call_1", "18°C, cloudy", false),
            Message::tool_result("call_2", "search backend unavailable", true),
            Message::user("Thanks. And tomorrow?"),
        ],
        tools: fixed_tools(),
        stop: vec!["\n\nUser:".into()],
        ..ChatRequest::default()
    }
}

fn check_golden(name: &str, actual: &str) {
    let path = golden_dir().join("rendered").join(name);
    if std::env::var_os("TOOLBRIDGE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with TOOLBRIDGE_BLESS=1 to create)",
            path.display()
        )
    });
    assert_eq!(actual, expected, "{name} differs from its golden file");
}

#[test]
fn rendered_preamble() {
    check_golden(
        "preamble_tool_call.txt",
        &texts::preamble(&fixed_tools(), CallTag::ToolCall),
    );
    check_golden(
        "preamble_tool_use.txt",
        &texts::preamble(&fixed_tools(), CallTag::ToolUse),
    );
}

#[test]
fn rendered_prompt_mode_request() {
    let req = fixed_request();
    let out = encode(&req, ToolMode::Prompt, &EncodeOptions::default());
    check_golden(
        "prompt_request.json",
        &serde_json::to_string_pretty(&out).unwrap(),
    );
}

#[test]
fn rendered_verbatim_mode_request() {
    let req = fixed_request();
    let out = encode(&req, ToolMode::Verbatim, &EncodeOptions::default());
    check_golden(
        "verbatim_request.json",
        &serde_json::to_string_pretty(&out).unwrap(),
    );
}

/// Every dialect but hermes (whose texts are the reference protocol's, above): what prompt mode
/// sends for the fixed request — the system prompt with the dialect's preamble, the history with
/// the calls and results in the dialect — its stop sequences, the retry message and the verbatim
/// nudge. One file per dialect.
#[test]
fn rendered_dialect_texts() {
    for dialect in Dialect::ALL.into_iter().filter(|d| *d != Dialect::Hermes) {
        let options = EncodeOptions {
            dialect,
            ..EncodeOptions::default()
        };
        let out = encode(&fixed_request(), ToolMode::Prompt, &options);
        let mut s = String::new();
        for message in &out.messages {
            let (role, text) = match message {
                Message::System { content, .. } => ("system", content.text()),
                Message::User { content, .. } => ("user", content.text()),
                Message::Assistant { content, .. } => (
                    "assistant",
                    content.as_ref().map(|c| c.text()).unwrap_or_default(),
                ),
                Message::Tool { content, .. } => ("tool", content.text()),
            };
            s.push_str(&format!("=== {role}\n{text}\n"));
        }
        s.push_str(&format!("=== stop\n{:?}\n", out.stop));
        let format = CallFormat::from(dialect);
        s.push_str("=== retry\n");
        s.push_str(&format.retry_message("expected ',' or '}' after an object member"));
        s.push_str("\n=== verbatim nudge\n");
        s.push_str(&format.verbatim_nudge());
        s.push('\n');
        check_golden(&format!("dialect_{}.txt", dialect.name()), &s);
    }
}

#[test]
fn rendered_wrappers_and_messages() {
    let mut s = String::new();
    s.push_str(&texts::tool_result_message(&ToolResultText {
        name: "get_weather",
        output: "18°C",
        is_error: false,
    }));
    s.push_str("\n---\n");
    s.push_str(&texts::tool_result_message(&ToolResultText {
        name: "get_weather",
        output: texts::ERROR_TIMED_OUT,
        is_error: true,
    }));
    s.push_str("\n---\n");
    s.push_str(&texts::retry_message(
        "expected ',' or '}' after an object member",
        CallTag::ToolCall,
    ));
    s.push_str("\n---\n");
    s.push_str(&texts::truncation_note(123456));
    s.push_str("\n---\n");
    s.push_str(&texts::verbatim_block(&fixed_tools()));
    s.push_str("\n---\n");
    s.push_str(&texts::verbatim_nudge(CallTag::ToolCall));
    s.push_str("\n---\n");
    s.push_str(&texts::prompt_choice_note(Some("get_weather")));
    s.push_str("\n---\n");
    s.push_str(&texts::unknown_tool(
        "get_wether",
        &["get_weather", "web_search"],
    ));
    s.push_str("\n---\n");
    s.push_str(&texts::invalid_arguments(
        "get_weather",
        "\"city\" is a required property",
    ));
    s.push_str("\n---\n");
    s.push_str(texts::APPROVAL_DENIED);
    s.push_str("\n---\n");
    s.push_str(&texts::skill_listing_header("use_skill"));
    s.push_str("\n---\n");
    s.push_str(&texts::skill_already_loaded("document-generation"));
    s.push_str("\n---\n");
    s.push_str(&texts::skill_not_found("pdf", &["document-generation"]));
    s.push_str("\n---\n");
    s.push_str(texts::SKILLS_INLINE_HEADER);
    s.push_str("\n---\n");
    s.push_str(texts::DEFAULT_SYSTEM_PROMPT);
    s.push_str("\n---\n");
    s.push_str(&texts::skill_load_failed("document-generation"));
    s.push_str("\n---\n");
    s.push_str(&texts::mcp_image_saved(
        "/work/ws/downloads/mcp-py-1a2b3c4d.png",
    ));
    s.push_str("\n---\n");
    s.push_str(&texts::mcp_audio_saved(
        "/work/ws/downloads/mcp-py-1a2b3c4d.wav",
    ));
    s.push_str("\n---\n");
    s.push_str(&texts::mcp_resource_saved(
        "file:///data.bin",
        "/work/ws/downloads/mcp-py-1a2b3c4d.bin",
    ));
    s.push_str("\n---\n");
    s.push_str(&texts::mcp_resource_text(
        "test://static/resource/1",
        "Hello",
    ));
    s.push_str("\n---\n");
    s.push_str(&texts::mcp_resource_link("test://static/resource/2"));
    s.push_str("\n---\n");
    s.push_str(&texts::mcp_content_not_saved("image"));
    s.push_str("\n---\n");
    s.push_str(texts::MCP_NO_CONTENT);
    // Built-in tools (toolbridge-tools).
    for (template, values) in [
        (
            texts::NET_BAD_URL,
            &[("<DETAIL>", "relative URL without a base")][..],
        ),
        (texts::NET_SCHEME, &[("<SCHEME>", "file")][..]),
        (texts::NET_USERINFO, &[][..]),
        (texts::NET_NO_HOST, &[][..]),
        (
            texts::NET_PORT,
            &[("<PORT>", "8080"), ("<PORTS>", "80, 443")][..],
        ),
        (texts::NET_NAME_DENIED, &[("<HOST>", "localhost")][..]),
        (
            texts::NET_ADDRESS_RESERVED,
            &[("<ADDRESS>", "intranet.test (10.0.0.5)")][..],
        ),
        (
            texts::NET_ADDRESS_POLICY,
            &[("<ADDRESS>", "93.184.216.34")][..],
        ),
        (texts::NET_ADDRESS_OWN, &[("<ADDRESS>", "127.0.0.1")][..]),
        (texts::NET_DNS_TIMEOUT, &[("<HOST>", "slow.test")][..]),
        (texts::NET_DNS_FAILED, &[("<HOST>", "unknown.test")][..]),
        (texts::NET_TOO_MANY_REDIRECTS, &[("<COUNT>", "5")][..]),
        (texts::NET_BAD_REDIRECT, &[][..]),
        (texts::NET_TOO_LARGE, &[("<LIMIT>", "5242880")][..]),
        (texts::NET_DEADLINE, &[("<SECONDS>", "30")][..]),
        (texts::NET_CONNECT, &[][..]),
        (texts::NET_STATUS, &[("<STATUS>", "404")][..]),
        (texts::NET_ENCODING, &[("<ENCODING>", "br")][..]),
        (texts::NET_NOT_TEXT, &[("<TYPE>", "application/zip")][..]),
        (texts::NET_NOT_IMAGE, &[("<TYPE>", "text/html")][..]),
        (texts::NET_BAD_IMAGE, &[][..]),
    ] {
        s.push_str("\n---\n");
        s.push_str(&texts::fetch_failed(
            "https://example.com/a",
            &texts::net_reason(template, values),
        ));
    }
    s.push_str("\n---\n");
    s.push_str(&texts::web_fetch_page(
        "Otters",
        "https://example.com/otters",
        "Sea otters use stones.",
    ));
    s.push_str(texts::WEB_FETCH_SEPARATOR);
    s.push_str(texts::WEB_FETCH_NO_URL);
    s.push_str("\n---\n");
    s.push_str(&texts::fetch_image_saved(
        "/workspace/downloads/cat-0123456789ab.png",
        "image/png",
        1234,
    ));
    s.push_str("\n---\n");
    s.push_str(texts::NO_WORKSPACE);
    s.push_str("\n---\n");
    s.push_str(texts::SEARCH_NOT_CONFIGURED);
    s.push_str("\n---\n");
    s.push_str(texts::SEARCH_NO_QUERY);
    s.push_str("\n---\n");
    s.push_str(&texts::search_header("otters"));
    s.push('\n');
    s.push_str(&texts::search_result(
        1,
        "Sea otter",
        "https://example.org/otter",
        "Sea otters use tools.",
    ));
    s.push_str("\n---\n");
    s.push_str(&texts::search_no_results("zzz"));
    s.push_str("\n---\n");
    s.push_str(&texts::search_failed(
        "otters",
        &texts::net_reason(texts::NET_STATUS, &[("<STATUS>", "401")]),
    ));
    s.push_str("\n---\n");
    s.push_str(texts::IMAGES_NOT_CONFIGURED);
    s.push_str("\n---\n");
    s.push_str(&texts::images_saved(&[
        "/workspace/outputs/image-1.png".to_owned(),
        "/workspace/outputs/image-2.png".to_owned(),
    ]));
    s.push_str("\n---\n");
    s.push_str(&texts::images_failed(texts::NET_CONNECT));
    s.push_str("\n---\n");
    s.push_str(texts::IMAGES_BAD_BASE);
    s.push_str("\n---\n");
    s.push_str(texts::IMAGES_NO_PREVIOUS);
    s.push_str("\n---\n");
    s.push_str(&texts::images_no_attachment(2, 1));
    s.push_str("\n---\n");
    s.push_str(texts::MEMORY_SAVED);
    s.push_str("\n---\n");
    s.push_str(
        &texts::memory_block(&[
            "The user is vegetarian.".to_owned(),
            "Lives in Lyon.".to_owned(),
        ])
        .unwrap_or_default(),
    );
    check_golden("wrappers.txt", &s);
}

#[test]
fn named_choice_lists_only_that_tool() {
    let mut req = fixed_request();
    req.tool_choice = Some(ToolChoice::Named("web_search".into()));
    let out = encode(&req, ToolMode::Prompt, &EncodeOptions::default());
    check_golden(
        "prompt_request_named_choice.json",
        &serde_json::to_string_pretty(&out).unwrap(),
    );
}

#[test]
fn rendered_workspace_texts() {
    let lines = [
        texts::attached_file_line("/workspace/uploads/report.pdf", 12345),
        texts::attached_file_line("/workspace/uploads/data-2.csv", 7),
    ];
    check_golden("workspace.txt", &texts::attachments_note(&lines));
}

#[test]
fn rendered_python_texts() {
    let mut s = String::new();
    for text in [
        texts::PYTHON_NO_OUTPUT.to_owned(),
        texts::PYTHON_STATE_LOST.to_owned(),
        texts::PYTHON_PROTOCOL_ERROR.to_owned(),
        texts::python_crashed(&texts::python_cause(texts::PYTHON_CAUSE_MEMORY, 1024)),
        texts::python_crashed(texts::PYTHON_CAUSE_CPU),
        texts::python_crashed(&texts::python_cause(texts::PYTHON_CAUSE_FILE_SIZE, 256)),
        texts::python_crashed(&texts::python_cause(texts::PYTHON_CAUSE_PROCESSES, 64)),
        texts::python_crashed(&texts::python_cause(texts::PYTHON_CAUSE_OPEN_FILES, 256)),
        texts::python_crashed(texts::PYTHON_CAUSE_UNKNOWN),
        texts::python_session_expired(15),
        texts::python_cell_timeout(120),
        texts::python_cpu_limit(60),
        texts::python_memory_limit(1024),
        texts::python_file_size_limit(256),
        texts::PYTHON_OUTPUT_OMITTED.replace("<BYTES>", "12345"),
        texts::python_files_written(&[
            ("outputs/report.pdf".to_owned(), 12345),
            ("outputs/chart.png".to_owned(), 1_234_567),
            ("outputs/empty.txt".to_owned(), 0),
        ]),
    ] {
        s.push_str(&text);
        s.push_str("\n---\n");
    }
    check_golden("python.txt", &s);
}

#[test]
fn rendered_terminal_texts() {
    let mut s = String::new();
    for text in [
        texts::RUN_IN_TERMINAL_DESCRIPTION.to_owned(),
        texts::RUN_IN_TERMINAL_SCHEMA.to_owned(),
        texts::TERMINAL_NO_OUTPUT.to_owned(),
        texts::terminal_exit_code(2),
        texts::terminal_signal(9),
        texts::terminal_limit_hit(texts::LIMIT_MEMORY),
        texts::terminal_output_dropped(123_456),
    ] {
        s.push_str(&text);
        s.push_str("\n---\n");
    }
    check_golden("terminal.txt", &s);
}

#[test]
fn rendered_embedded_router_texts() {
    let mut s = String::new();
    s.push_str(texts::ROUTER_USE_PREFIX);
    s.push_str("get_weather\n---\n");
    s.push_str(&texts::router_channel_system(
        "get_weather",
        "Get the current weather for a city.",
    ));
    s.push_str("\n---\n");
    s.push_str(texts::ROUTER_NEUTRAL_SYSTEM);
    s.push_str("\n---\n");
    s.push_str(&texts::router_describe(
        "get_weather",
        "Get the current weather for a city.",
    ));
    s.push_str("\n---\n");
    check_golden("embedded_router.txt", &s);
}

/// Every parse problem's wording (the `<PARSE_ERROR>` of a retry message, the `reason` of
/// `toolbridge parse`), and the toolbox's wording of arguments it rejects.
#[test]
fn rendered_parse_error_texts() {
    let mut s = String::new();
    for problem in [
        JsonSyntax::ControlCharacter,
        JsonSyntax::InvalidEscape,
        JsonSyntax::InvalidUnicodeEscape,
        JsonSyntax::ExpectedKey,
        JsonSyntax::ExpectedColon,
        JsonSyntax::ExpectedMemberEnd,
        JsonSyntax::ExpectedElementEnd,
        JsonSyntax::InvalidNumber,
        JsonSyntax::InvalidLiteral,
        JsonSyntax::TooDeep,
        JsonSyntax::ExpectedValue,
    ] {
        let syntax = ParseProblem::Syntax {
            problem,
            position: 12,
            found: '\n',
        };
        s.push_str(&syntax.to_string());
        s.push_str("\n---\n");
    }
    for problem in [
        ParseProblem::Json {
            detail: "EOF while parsing a string".into(),
        },
        ParseProblem::NotAnObject,
        ParseProblem::MissingName,
        ParseProblem::NameNotString,
        ParseProblem::UnknownTool {
            name: "rm".into(),
            declared: "get_weather, web_search".into(),
        },
        ParseProblem::MissingArguments,
        ParseProblem::DuplicateField {
            field: "name".into(),
        },
        ParseProblem::ArgumentsString,
        ParseProblem::ArgumentsNotObject,
        ParseProblem::EmptyArray,
        ParseProblem::Dialect(DialectProblem::MissingMarker("<｜tool▁sep｜>")),
        ParseProblem::Dialect(DialectProblem::NoCallMarker("<|tool_call_begin|>")),
        ParseProblem::Dialect(DialectProblem::MissingArguments),
        ParseProblem::Dialect(DialectProblem::ArgumentsNotObject),
        ParseProblem::Dialect(DialectProblem::FunctionArgumentsNotObject),
        ParseProblem::Dialect(DialectProblem::MistralExpectedName),
        ParseProblem::Dialect(DialectProblem::MistralExpectedArguments),
        ParseProblem::Dialect(DialectProblem::FunctionNameNotClosed),
        ParseProblem::Dialect(DialectProblem::FunctionNotClosed),
        ParseProblem::Dialect(DialectProblem::NoFunction),
        ParseProblem::Dialect(DialectProblem::ParameterNameNotClosed),
        ParseProblem::Dialect(DialectProblem::DuplicateParameter("city".into())),
        ParseProblem::Dialect(DialectProblem::GlmExpectedName),
        ParseProblem::Dialect(DialectProblem::GlmExpectedKey),
        ParseProblem::Dialect(DialectProblem::GlmValueNotClosed),
        ParseProblem::Dialect(DialectProblem::GlmExpectedValue),
        ParseProblem::Dialect(DialectProblem::BadCallId("get_weather".into())),
        ParseProblem::Pythonic {
            problem: PythonicProblem::ExpectedChar(')'),
            position: 7,
        },
        ParseProblem::Pythonic {
            problem: PythonicProblem::EmptyList,
            position: 1,
        },
        ParseProblem::Pythonic {
            problem: PythonicProblem::DuplicateArgument("a".into()),
            position: 9,
        },
        ParseProblem::Pythonic {
            problem: PythonicProblem::ExpectedName,
            position: 1,
        },
        ParseProblem::Pythonic {
            problem: PythonicProblem::ExpectedValue,
            position: 4,
        },
        ParseProblem::Pythonic {
            problem: PythonicProblem::UnknownName("nan".into()),
            position: 4,
        },
        ParseProblem::Pythonic {
            problem: PythonicProblem::NumberCutOff,
            position: 5,
        },
        ParseProblem::Pythonic {
            problem: PythonicProblem::BadNumber,
            position: 5,
        },
        ParseProblem::Pythonic {
            problem: PythonicProblem::ExpectedString,
            position: 5,
        },
        ParseProblem::Pythonic {
            problem: PythonicProblem::UnterminatedString,
            position: 5,
        },
        ParseProblem::Pythonic {
            problem: PythonicProblem::NewlineInString,
            position: 5,
        },
        ParseProblem::Pythonic {
            problem: PythonicProblem::BadEscape,
            position: 5,
        },
        ParseProblem::TooLarge { limit: 4 << 20 },
        ParseProblem::EndedInside,
        ParseProblem::CutOff {
            name: "get_weather".into(),
        },
    ] {
        s.push_str(&problem.to_string());
        s.push_str("\n---\n");
    }
    s.push_str(&texts::parse_unknown_tool("rm", texts::PARSE_NO_TOOLS));
    s.push_str("\n---\n");
    s.push_str(texts::RETRY_REASON_TRUNCATED);
    s.push_str("\n---\n");
    s.push_str(&texts::invalid_arguments(
        "get_weather",
        &texts::arguments_not_json("expected value at line 1 column 1"),
    ));
    s.push_str("\n---\n");
    s.push_str(&texts::invalid_arguments(
        "get_weather",
        texts::ARGUMENTS_NOT_OBJECT,
    ));
    s.push_str("\n---\n");
    s.push_str(&texts::invalid_arguments(
        "get_weather",
        &texts::schema_problems(&[
            texts::schema_problem("\"city\" is a required property", ""),
            texts::schema_problem("\"k\" is not one of [\"c\",\"f\"]", "/unit"),
        ]),
    ));
    s.push_str("\n---\n");
    check_golden("parse_errors.txt", &s);
}
