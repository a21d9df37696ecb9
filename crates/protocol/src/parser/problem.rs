//! Why a block did not give a call, typed. The wording a model reads (in the retry message) and a
//! `toolbridge parse` user sees (the `reason` string) comes from [`crate::texts`].

use std::fmt;

use serde::{Serialize, Serializer};

use crate::texts;

/// A JSON syntax error the incremental scanner found inside a call block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JsonSyntax {
    ControlCharacter,
    InvalidEscape,
    InvalidUnicodeEscape,
    ExpectedKey,
    ExpectedColon,
    ExpectedMemberEnd,
    ExpectedElementEnd,
    InvalidNumber,
    InvalidLiteral,
    TooDeep,
    ExpectedValue,
}

impl JsonSyntax {
    /// The problem's wording.
    pub fn text(self) -> &'static str {
        match self {
            JsonSyntax::ControlCharacter => texts::JSON_CONTROL_CHARACTER,
            JsonSyntax::InvalidEscape => texts::JSON_INVALID_ESCAPE,
            JsonSyntax::InvalidUnicodeEscape => texts::JSON_INVALID_UNICODE_ESCAPE,
            JsonSyntax::ExpectedKey => texts::JSON_EXPECTED_KEY,
            JsonSyntax::ExpectedColon => texts::JSON_EXPECTED_COLON,
            JsonSyntax::ExpectedMemberEnd => texts::JSON_EXPECTED_MEMBER_END,
            JsonSyntax::ExpectedElementEnd => texts::JSON_EXPECTED_ELEMENT_END,
            JsonSyntax::InvalidNumber => texts::JSON_INVALID_NUMBER,
            JsonSyntax::InvalidLiteral => texts::JSON_INVALID_LITERAL,
            JsonSyntax::TooDeep => texts::JSON_TOO_DEEP,
            JsonSyntax::ExpectedValue => texts::JSON_EXPECTED_VALUE,
        }
    }
}

/// Why a block did not give a call. `Display` gives the wording; it serializes as that string.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ParseProblem {
    /// Bad JSON syntax `position` characters into the call's value, where `found` stands.
    Syntax {
        problem: JsonSyntax,
        position: usize,
        found: char,
    },
    /// Well-formed text serde could not read as a call (its message, without serde's position,
    /// which counts in our buffer rather than the model's text).
    Json {
        detail: String,
    },
    NotAnObject,
    MissingName,
    NameNotString,
    /// A name that is not declared; `declared` lists the declared names (`(none)` for none).
    UnknownTool {
        name: String,
        declared: String,
    },
    /// A fenced value without arguments (plain JSON data is not a call).
    MissingArguments,
    DuplicateField {
        field: String,
    },
    /// Double-encoded arguments whose string does not hold an object.
    ArgumentsString,
    ArgumentsNotObject,
    EmptyArray,
    /// The block grew past the parser's bound (bytes).
    TooLarge {
        limit: usize,
    },
    /// The text ended inside the block.
    EndedInside,
    /// The token limit cut a native call's arguments.
    CutOff {
        name: String,
    },
    /// A dialect's own problem with its call markup.
    Dialect(DialectProblem),
    /// A pythonic call list that does not read, `position` characters into the list.
    Pythonic {
        problem: PythonicProblem,
        position: usize,
    },
}

/// What a dialect's reader found wrong with a call section (see docs/src/parser.md, "Dialects").
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DialectProblem {
    /// A marker of the dialect that should be there.
    MissingMarker(&'static str),
    /// A list of calls without the marker that opens a call.
    NoCallMarker(&'static str),
    MissingArguments,
    ArgumentsNotObject,
    /// The value of a hermes `<function=NAME>` block is not an object.
    FunctionArgumentsNotObject,
    MistralExpectedName,
    MistralExpectedArguments,
    FunctionNameNotClosed,
    FunctionNotClosed,
    NoFunction,
    ParameterNameNotClosed,
    DuplicateParameter(String),
    GlmExpectedName,
    GlmExpectedKey,
    GlmValueNotClosed,
    GlmExpectedValue,
    BadCallId(String),
}

/// What a pythonic call list's reader found wrong.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PythonicProblem {
    ExpectedChar(char),
    EmptyList,
    DuplicateArgument(String),
    ExpectedName,
    ExpectedValue,
    UnknownName(String),
    NumberCutOff,
    BadNumber,
    ExpectedString,
    UnterminatedString,
    NewlineInString,
    BadEscape,
}

impl fmt::Display for DialectProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DialectProblem::MissingMarker(m) => f.write_str(&texts::dialect_missing_marker(m)),
            DialectProblem::NoCallMarker(m) => f.write_str(&texts::dialect_no_call_marker(m)),
            DialectProblem::MissingArguments => f.write_str(texts::DIALECT_MISSING_ARGUMENTS),
            DialectProblem::ArgumentsNotObject => f.write_str(texts::DIALECT_ARGUMENTS_NOT_OBJECT),
            DialectProblem::FunctionArgumentsNotObject => {
                f.write_str(texts::DIALECT_FUNCTION_ARGUMENTS_NOT_OBJECT)
            }
            DialectProblem::MistralExpectedName => {
                f.write_str(texts::DIALECT_MISTRAL_EXPECTED_NAME)
            }
            DialectProblem::MistralExpectedArguments => {
                f.write_str(texts::DIALECT_MISTRAL_EXPECTED_ARGUMENTS)
            }
            DialectProblem::FunctionNameNotClosed => {
                f.write_str(texts::DIALECT_FUNCTION_NAME_NOT_CLOSED)
            }
            DialectProblem::FunctionNotClosed => f.write_str(texts::DIALECT_FUNCTION_NOT_CLOSED),
            DialectProblem::NoFunction => f.write_str(texts::DIALECT_NO_FUNCTION),
            DialectProblem::ParameterNameNotClosed => {
                f.write_str(texts::DIALECT_PARAMETER_NAME_NOT_CLOSED)
            }
            DialectProblem::DuplicateParameter(key) => {
                f.write_str(&texts::dialect_duplicate_parameter(key))
            }
            DialectProblem::GlmExpectedName => f.write_str(texts::DIALECT_GLM_EXPECTED_NAME),
            DialectProblem::GlmExpectedKey => f.write_str(texts::DIALECT_GLM_EXPECTED_KEY),
            DialectProblem::GlmValueNotClosed => f.write_str(texts::DIALECT_GLM_VALUE_NOT_CLOSED),
            DialectProblem::GlmExpectedValue => f.write_str(texts::DIALECT_GLM_EXPECTED_VALUE),
            DialectProblem::BadCallId(id) => f.write_str(&texts::dialect_bad_call_id(id)),
        }
    }
}

impl PythonicProblem {
    /// The problem's wording.
    pub fn text(&self) -> std::borrow::Cow<'static, str> {
        use std::borrow::Cow;
        match self {
            PythonicProblem::ExpectedChar(c) => Cow::Owned(texts::pythonic_expected_char(*c)),
            PythonicProblem::EmptyList => Cow::Borrowed(texts::PYTHONIC_EMPTY_LIST),
            PythonicProblem::DuplicateArgument(key) => {
                Cow::Owned(texts::pythonic_duplicate_argument(key))
            }
            PythonicProblem::ExpectedName => Cow::Borrowed(texts::PYTHONIC_EXPECTED_NAME),
            PythonicProblem::ExpectedValue => Cow::Borrowed(texts::PYTHONIC_EXPECTED_VALUE),
            PythonicProblem::UnknownName(word) => Cow::Owned(texts::pythonic_unknown_name(word)),
            PythonicProblem::NumberCutOff => Cow::Borrowed(texts::PYTHONIC_NUMBER_CUT_OFF),
            PythonicProblem::BadNumber => Cow::Borrowed(texts::PYTHONIC_BAD_NUMBER),
            PythonicProblem::ExpectedString => Cow::Borrowed(texts::PYTHONIC_EXPECTED_STRING),
            PythonicProblem::UnterminatedString => {
                Cow::Borrowed(texts::PYTHONIC_UNTERMINATED_STRING)
            }
            PythonicProblem::NewlineInString => Cow::Borrowed(texts::PYTHONIC_NEWLINE_IN_STRING),
            PythonicProblem::BadEscape => Cow::Borrowed(texts::PYTHONIC_BAD_ESCAPE),
        }
    }
}

impl From<DialectProblem> for ParseProblem {
    fn from(problem: DialectProblem) -> Self {
        ParseProblem::Dialect(problem)
    }
}

impl fmt::Display for ParseProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseProblem::Syntax {
                problem,
                position,
                found,
            } => f.write_str(&texts::parse_syntax(problem.text(), *position, *found)),
            ParseProblem::Json { detail } => f.write_str(detail),
            ParseProblem::NotAnObject => f.write_str(texts::PARSE_NOT_AN_OBJECT),
            ParseProblem::MissingName => f.write_str(texts::PARSE_MISSING_NAME),
            ParseProblem::NameNotString => f.write_str(texts::PARSE_NAME_NOT_STRING),
            ParseProblem::UnknownTool { name, declared } => {
                f.write_str(&texts::parse_unknown_tool(name, declared))
            }
            ParseProblem::MissingArguments => f.write_str(texts::PARSE_MISSING_ARGUMENTS),
            ParseProblem::DuplicateField { field } => {
                f.write_str(&texts::parse_duplicate_field(field))
            }
            ParseProblem::ArgumentsString => f.write_str(texts::PARSE_ARGUMENTS_STRING),
            ParseProblem::ArgumentsNotObject => f.write_str(texts::PARSE_ARGUMENTS_NOT_OBJECT),
            ParseProblem::EmptyArray => f.write_str(texts::PARSE_EMPTY_ARRAY),
            ParseProblem::TooLarge { limit } => f.write_str(&texts::parse_too_large(*limit)),
            ParseProblem::EndedInside => f.write_str(texts::PARSE_ENDED_INSIDE),
            ParseProblem::CutOff { name } => f.write_str(&texts::parse_cut_off(name)),
            ParseProblem::Dialect(problem) => problem.fmt(f),
            ParseProblem::Pythonic { problem, position } => {
                f.write_str(&texts::pythonic_at(&problem.text(), *position))
            }
        }
    }
}

/// Serialized as its wording: the `reason` of `toolbridge parse`'s errors is a string.
impl Serialize for ParseProblem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl ParseProblem {
    /// serde's message for a value it could not read, without its " at line L column C" (which
    /// refers to our buffer, not the model's text).
    pub(crate) fn json(e: &serde_json::Error) -> Self {
        let s = e.to_string();
        let detail = match s.rfind(" at line ") {
            Some(i) => s[..i].to_owned(),
            None => s,
        };
        ParseProblem::Json { detail }
    }
}
