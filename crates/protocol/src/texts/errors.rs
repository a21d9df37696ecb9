//! Why a call did not parse, as the model reads it: the `<PARSE_ERROR>` of the retry message
//! (through [`crate::parser::ParseProblem`]'s `Display`) and the `reason` of `toolbridge parse`'s
//! errors. All ours. The problems of arguments the toolbox rejects are in [`super::agent`].

use super::fill;

/// The parse error the retry message states for a call the response ended inside of.
pub const RETRY_REASON_TRUNCATED: &str = "the response ended before the call was complete";

/// Ours: a JSON syntax error inside a call block; placeholders `<PROBLEM>` (one of the
/// `JSON_*` texts), `<POSITION>` (characters from the start of the call's value), `<FOUND>` (the
/// character found there, quoted).
pub const PARSE_SYNTAX: &str = "<PROBLEM> at character <POSITION> of the call, found <FOUND>";
/// Ours: JSON syntax problem.
pub const JSON_CONTROL_CHARACTER: &str = "control character inside a string";
/// Ours: JSON syntax problem.
pub const JSON_INVALID_ESCAPE: &str = "invalid escape in a string";
/// Ours: JSON syntax problem.
pub const JSON_INVALID_UNICODE_ESCAPE: &str = "invalid \\u escape in a string";
/// Ours: JSON syntax problem.
pub const JSON_EXPECTED_KEY: &str = "expected a string key";
/// Ours: JSON syntax problem.
pub const JSON_EXPECTED_COLON: &str = "expected ':' after an object key";
/// Ours: JSON syntax problem.
pub const JSON_EXPECTED_MEMBER_END: &str = "expected ',' or '}' after an object member";
/// Ours: JSON syntax problem.
pub const JSON_EXPECTED_ELEMENT_END: &str = "expected ',' or ']' after an array element";
/// Ours: JSON syntax problem.
pub const JSON_INVALID_NUMBER: &str = "invalid number";
/// Ours: JSON syntax problem.
pub const JSON_INVALID_LITERAL: &str = "invalid literal (expected true, false or null)";
/// Ours: JSON syntax problem.
pub const JSON_TOO_DEEP: &str = "JSON nested too deeply";
/// Ours: JSON syntax problem.
pub const JSON_EXPECTED_VALUE: &str = "expected a JSON value";

/// Ours: a call block whose value is not an object (nor an array of them).
pub const PARSE_NOT_AN_OBJECT: &str = "a tool call must be a JSON object";
/// Ours: a call object without a name.
pub const PARSE_MISSING_NAME: &str = "missing \"name\"";
/// Ours: a call object whose name is not a string.
pub const PARSE_NAME_NOT_STRING: &str = "\"name\" must be a string";
/// Ours: a call to a name that is not declared; placeholders `<TOOL_NAME>`, `<TOOL_NAMES>` (the
/// declared names, comma-separated, or `(none)`).
pub const PARSE_UNKNOWN_TOOL: &str = "unknown tool \"<TOOL_NAME>\"; available tools: <TOOL_NAMES>";
/// Ours: the `<TOOL_NAMES>` of [`PARSE_UNKNOWN_TOOL`] when no tool is declared.
pub const PARSE_NO_TOOLS: &str = "(none)";
/// Ours: a fenced call without arguments (plain JSON data is not taken for a call).
pub const PARSE_MISSING_ARGUMENTS: &str = "missing \"arguments\"";
/// Ours: a call object that gives a field twice; placeholder `<FIELD>`.
pub const PARSE_DUPLICATE_FIELD: &str = "duplicate field `<FIELD>`";
/// Ours: double-encoded arguments whose string does not hold an object.
pub const PARSE_ARGUMENTS_STRING: &str =
    "\"arguments\" is a string that does not hold a JSON object";
/// Ours: arguments that are not an object.
pub const PARSE_ARGUMENTS_NOT_OBJECT: &str = "\"arguments\" must be a JSON object";
/// Ours: a block holding `[]`.
pub const PARSE_EMPTY_ARRAY: &str = "empty array of calls";
/// Ours: a call block over the parser's size bound; placeholder `<LIMIT>` (bytes).
pub const PARSE_TOO_LARGE: &str = "the call is larger than <LIMIT> bytes";
/// Ours: the text ended inside a call block.
pub const PARSE_ENDED_INSIDE: &str = "the response ended inside the call";
/// Ours: the token limit cut a native call's arguments; placeholder `<TOOL_NAME>`.
pub const PARSE_CUT_OFF: &str = "the response was cut off inside the call to <TOOL_NAME>";

/// [`PARSE_SYNTAX`] filled; `found` is quoted the way Rust writes a `char` literal.
pub fn parse_syntax(problem: &str, position: usize, found: char) -> String {
    fill(
        PARSE_SYNTAX,
        &[
            ("<PROBLEM>", problem),
            ("<POSITION>", &position.to_string()),
            ("<FOUND>", &format!("{found:?}")),
        ],
    )
}

/// [`PARSE_UNKNOWN_TOOL`] filled.
pub fn parse_unknown_tool(name: &str, declared: &str) -> String {
    fill(
        PARSE_UNKNOWN_TOOL,
        &[("<TOOL_NAME>", name), ("<TOOL_NAMES>", declared)],
    )
}

/// [`PARSE_DUPLICATE_FIELD`] filled.
pub fn parse_duplicate_field(field: &str) -> String {
    fill(PARSE_DUPLICATE_FIELD, &[("<FIELD>", field)])
}

/// [`PARSE_TOO_LARGE`] filled.
pub fn parse_too_large(limit: usize) -> String {
    fill(PARSE_TOO_LARGE, &[("<LIMIT>", &limit.to_string())])
}

/// [`PARSE_CUT_OFF`] filled.
pub fn parse_cut_off(name: &str) -> String {
    fill(PARSE_CUT_OFF, &[("<TOOL_NAME>", name)])
}

// The dialects' own problems (the native call formats of other model families).

/// Ours: a dialect's problem with its call markup; placeholder `<MARKER>` (a marker of that
/// dialect, such as `<｜tool▁sep｜>`).
pub const DIALECT_MISSING_MARKER: &str = "missing <MARKER>";
/// Ours: a dialect's list of calls without the marker that opens a call; placeholder `<MARKER>`.
pub const DIALECT_NO_CALL_MARKER: &str = "no <MARKER> in the list of calls";
/// Ours: a dialect's call without its arguments.
pub const DIALECT_MISSING_ARGUMENTS: &str = "missing arguments";
/// Ours: a dialect's call whose arguments are not an object.
pub const DIALECT_ARGUMENTS_NOT_OBJECT: &str = "the arguments must be a JSON object";
/// Ours: a hermes `<function=NAME>` block whose value is not an object.
pub const DIALECT_FUNCTION_ARGUMENTS_NOT_OBJECT: &str =
    "the arguments of <function=NAME> must be a JSON object";
/// Ours: Mistral's `[TOOL_CALLS]` not followed by a name.
pub const DIALECT_MISTRAL_EXPECTED_NAME: &str = "expected NAME[ARGS]{…} after [TOOL_CALLS]";
/// Ours: Mistral's name not followed by an arguments object.
pub const DIALECT_MISTRAL_EXPECTED_ARGUMENTS: &str = "expected the arguments object after the name";
/// Ours: qwen3-coder's `<function=NAME` without its `>`.
pub const DIALECT_FUNCTION_NAME_NOT_CLOSED: &str = "the function name is not closed with '>'";
/// Ours: qwen3-coder's function without `</function>`.
pub const DIALECT_FUNCTION_NOT_CLOSED: &str = "the function is not closed";
/// Ours: a qwen3-coder tool call without a function.
pub const DIALECT_NO_FUNCTION: &str = "no <function=NAME> in the tool call";
/// Ours: qwen3-coder's `<parameter=KEY` without its `>`.
pub const DIALECT_PARAMETER_NAME_NOT_CLOSED: &str = "a parameter name is not closed with '>'";
/// Ours: a parameter given twice; placeholder `<KEY>`.
pub const DIALECT_DUPLICATE_PARAMETER: &str = "parameter \"<KEY>\" is given twice";
/// Ours: glm45's `<tool_call>` not followed by a tool name.
pub const DIALECT_GLM_EXPECTED_NAME: &str = "expected the tool name after <tool_call>";
/// Ours: glm45's arguments without `<arg_key>`.
pub const DIALECT_GLM_EXPECTED_KEY: &str = "expected <arg_key>KEY</arg_key>";
/// Ours: glm45's `<arg_value>` without its closing tag.
pub const DIALECT_GLM_VALUE_NOT_CLOSED: &str = "the argument value is not closed";
/// Ours: glm45's key without `<arg_value>`.
pub const DIALECT_GLM_EXPECTED_VALUE: &str = "expected <arg_value>VALUE</arg_value>";
/// Ours: Kimi's call id that is not `NAME:INDEX`; placeholder `<ID>` (quoted).
pub const DIALECT_BAD_CALL_ID: &str = "the call id <ID> is not NAME:INDEX";
/// Ours: a pythonic call list's problem; placeholders `<PROBLEM>` (one of the `PYTHONIC_*`
/// texts) and `<POSITION>` (characters from the start of the list).
pub const PYTHONIC_AT: &str = "<PROBLEM> at character <POSITION> of the call list";
/// Ours: pythonic problem; placeholder `<CHAR>` (quoted).
pub const PYTHONIC_EXPECTED_CHAR: &str = "expected <CHAR>";
/// Ours: pythonic problem.
pub const PYTHONIC_EMPTY_LIST: &str = "empty list of calls";
/// Ours: pythonic problem; placeholder `<KEY>`.
pub const PYTHONIC_DUPLICATE_ARGUMENT: &str = "argument \"<KEY>\" is given twice";
/// Ours: pythonic problem.
pub const PYTHONIC_EXPECTED_NAME: &str = "expected a name";
/// Ours: pythonic problem.
pub const PYTHONIC_EXPECTED_VALUE: &str = "expected a value";
/// Ours: pythonic problem; placeholder `<WORD>` (quoted).
pub const PYTHONIC_UNKNOWN_NAME: &str = "unknown name <WORD> in a value";
/// Ours: pythonic problem.
pub const PYTHONIC_NUMBER_CUT_OFF: &str = "a number is cut off";
/// Ours: pythonic problem.
pub const PYTHONIC_BAD_NUMBER: &str = "bad number";
/// Ours: pythonic problem.
pub const PYTHONIC_EXPECTED_STRING: &str = "expected a string";
/// Ours: pythonic problem.
pub const PYTHONIC_UNTERMINATED_STRING: &str = "unterminated string";
/// Ours: pythonic problem.
pub const PYTHONIC_NEWLINE_IN_STRING: &str = "newline in a string";
/// Ours: pythonic problem.
pub const PYTHONIC_BAD_ESCAPE: &str = "bad escape";

/// [`DIALECT_MISSING_MARKER`] filled.
pub fn dialect_missing_marker(marker: &str) -> String {
    fill(DIALECT_MISSING_MARKER, &[("<MARKER>", marker)])
}

/// [`DIALECT_NO_CALL_MARKER`] filled.
pub fn dialect_no_call_marker(marker: &str) -> String {
    fill(DIALECT_NO_CALL_MARKER, &[("<MARKER>", marker)])
}

/// [`DIALECT_DUPLICATE_PARAMETER`] filled.
pub fn dialect_duplicate_parameter(key: &str) -> String {
    fill(DIALECT_DUPLICATE_PARAMETER, &[("<KEY>", key)])
}

/// [`DIALECT_BAD_CALL_ID`] filled (the id quoted).
pub fn dialect_bad_call_id(id: &str) -> String {
    fill(DIALECT_BAD_CALL_ID, &[("<ID>", &format!("{id:?}"))])
}

/// [`PYTHONIC_AT`] filled.
pub fn pythonic_at(problem: &str, position: usize) -> String {
    fill(
        PYTHONIC_AT,
        &[
            ("<PROBLEM>", problem),
            ("<POSITION>", &position.to_string()),
        ],
    )
}

/// [`PYTHONIC_EXPECTED_CHAR`] filled (the character quoted).
pub fn pythonic_expected_char(c: char) -> String {
    fill(PYTHONIC_EXPECTED_CHAR, &[("<CHAR>", &format!("{c:?}"))])
}

/// [`PYTHONIC_DUPLICATE_ARGUMENT`] filled.
pub fn pythonic_duplicate_argument(key: &str) -> String {
    fill(PYTHONIC_DUPLICATE_ARGUMENT, &[("<KEY>", key)])
}

/// [`PYTHONIC_UNKNOWN_NAME`] filled (the word quoted).
pub fn pythonic_unknown_name(word: &str) -> String {
    fill(PYTHONIC_UNKNOWN_NAME, &[("<WORD>", &format!("{word:?}"))])
}
