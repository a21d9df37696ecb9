//! Non-streaming answers: the model's events collected into one `chat.completion`.
//!
//! A reply whose only tool call was malformed (bad JSON, unknown tool) may be re-asked with the
//! seed's retry message in the arm's tag (for another dialect, in its call format), at most
//! `malformed_retries` times, invisibly to the client (the protocol's [`RetryPolicy`], shared
//! with the agent); if it is still malformed, the visible prefix — the text before the broken
//! call — is the answer (`finish_reason: stop`). A call cut off by the token limit is never
//! retried and never handed out: `finish_reason: length`.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use tokio::time::Instant;
use toolbridge_protocol::openai::{ChatCompletion, Choice, ResponseMessage};
use toolbridge_protocol::parser::ErrorKind;
use toolbridge_protocol::retry::{Attempt, RetryPolicy, Verdict};
use toolbridge_protocol::types::{ChatRequest, FinishReason, ToolChoice, Usage};
use toolbridge_providers::{Model, ModelResponse, ProviderError};

use crate::error::ApiError;
use crate::request::{completion_id, unix_now, ClientRequest};
use crate::state::AppState;

/// Answers a non-streaming Chat Completions request within the request timeout.
pub(crate) async fn respond(
    state: &AppState,
    model: &Model,
    client: ClientRequest,
    started: Instant,
) -> Response {
    let parallel = client.request.parallel_tool_calls;
    let name = client.request.model.clone();
    respond_with(state, model, client.request, started, |answer, usage| {
        render(state, &name, answer, usage, parallel)
    })
    .await
}

/// Collects the answer within the request timeout and hands it to `render` (the wire's own
/// form); a failure is an [`ApiError`] response.
pub(crate) async fn respond_with(
    state: &AppState,
    model: &Model,
    request: ChatRequest,
    started: Instant,
    render: impl FnOnce(ModelResponse, Option<Usage>) -> Response,
) -> Response {
    let deadline = started + state.limits.request_timeout;
    let name = request.model.clone();
    let result = tokio::time::timeout_at(deadline, collect(state, model, request)).await;
    let response = match result {
        Err(_) => {
            tracing::warn!(model = %name, "no answer within the request timeout");
            ApiError::timeout().into_response()
        }
        Ok(Err(error)) => {
            state.metrics.upstream_error(error.kind());
            tracing::warn!(model = %name, kind = error.kind(), %error, "upstream failed");
            ApiError::upstream(&error).into_response()
        }
        Ok(Ok((answer, usage))) => render(answer, usage),
    };
    state.metrics.duration(false, started.elapsed());
    response
}

/// Whether a malformed call could be re-asked: the request offers tools and some arm parses
/// text (native arms hand back the provider's calls, which do not go through our parser).
fn can_retry(model: &Model, request: &ChatRequest) -> bool {
    !request.tools.is_empty()
        && request.tool_choice != Some(ToolChoice::None)
        && model.arms.iter().any(|a| a.resolved_mode().parses_text())
}

/// Collects the answer, re-asking after malformed calls. Usage is summed over the attempts.
async fn collect(
    state: &AppState,
    model: &Model,
    mut request: ChatRequest,
) -> Result<(ModelResponse, Option<Usage>), ProviderError> {
    let retries = if can_retry(model, &request) {
        usize::try_from(state.limits.malformed_retries).unwrap_or(usize::MAX)
    } else {
        0
    };
    let mut policy = RetryPolicy::new(retries);
    let mut usage: Option<Usage> = None;
    loop {
        // The request is kept only while another attempt may need it.
        let this = if policy.used() < retries {
            request.clone()
        } else {
            std::mem::take(&mut request)
        };
        let answer = model.stream(this).collect_response().await?;
        if answer.arm.as_ref().is_some_and(|a| a.index > 0) {
            state.metrics.fallback();
        }
        if let Some(arm) = &answer.arm {
            crate::access::arm(arm);
        }
        for error in &answer.errors {
            state.metrics.malformed(error.kind == ErrorKind::Truncated);
        }
        if let Some(u) = answer.usage {
            crate::access::usage(u);
            *usage.get_or_insert_with(Usage::default) += u;
        }
        let format = answer.arm.as_ref().map(|a| a.format()).unwrap_or_default();
        let attempt = Attempt {
            text: &answer.text,
            has_calls: !answer.calls.is_empty(),
            errors: &answer.errors,
            finish: answer.finish_reason,
        };
        match policy.judge(&attempt, format) {
            Verdict::Retry(step) => {
                tracing::debug!(attempt = step.attempt, reason = %step.reason, raw = %answer.text, "malformed tool call; asking again");
                request.messages.extend(step.messages);
                state.metrics.malformed_retry();
            }
            Verdict::GiveUp { reason } => {
                tracing::info!(%reason, raw = %answer.text, "malformed tool call; the visible text is the answer");
                return Ok((answer, usage));
            }
            Verdict::Accept => return Ok((answer, usage)),
        }
    }
}

fn render(
    state: &AppState,
    model: &str,
    answer: ModelResponse,
    usage: Option<Usage>,
    parallel: Option<bool>,
) -> Response {
    // The visible prefix: malformed call markup stays in the log, never in `content`. It is a
    // prefix of the text, which is cut in place rather than copied.
    let visible = answer.visible_text().len();
    let mut text = answer.text;
    text.truncate(visible);
    let mut calls = answer.calls;
    // Text modes cannot stop a model from writing several calls: keep the first.
    if parallel == Some(false) {
        calls.truncate(1);
    }
    state.metrics.tool_calls(calls.len());
    let content = if text.is_empty() && !calls.is_empty() {
        None
    } else {
        Some(text)
    };
    let completion = ChatCompletion {
        id: completion_id(),
        created: unix_now(),
        model: model.to_owned(),
        choices: vec![Choice {
            index: 0,
            message: ResponseMessage {
                role: "assistant".to_owned(),
                content,
                tool_calls: calls,
                reasoning_content: (!answer.reasoning.is_empty()).then_some(answer.reasoning),
            },
            finish_reason: Some(answer.finish_reason.unwrap_or(FinishReason::Stop)),
        }],
        usage,
        ..ChatCompletion::default()
    };
    match serde_json::to_vec(&completion) {
        Ok(body) => {
            let mut response = body.into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(error) => {
            tracing::error!(%error, "cannot encode a completion");
            ApiError::upstream(&ProviderError::BadResponse(String::new())).into_response()
        }
    }
}
