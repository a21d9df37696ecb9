//! The thin async driver around [`RunMachine`]: it sends the requests, streams the responses in,
//! runs the calls and reads the clock. No loop policy lives here.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::model::EventStream;
use toolbridge_protocol::response::ArmInfo;
use toolbridge_protocol::texts::CallFormat;
use toolbridge_protocol::types::ToolCall;

use crate::agent::Snapshot;
use crate::events::RunEvent;
use crate::skills::LoadedSkills;
use crate::tool::ToolContext;
use crate::toolbox::CallResult;

use super::io::{Action, ToolJobs};
use super::machine::RunMachine;
use super::state::RunState;

/// Which pending calls stop the driver: the run pauses before a round that has one (a client
/// executes its own function tools, say), and its machine is handed back to be stored.
pub type PauseWhen = Arc<dyn Fn(&ToolCall) -> bool + Send + Sync>;

/// Where a driven run leaves what it ends with.
#[derive(Clone, Default)]
pub(crate) struct Outlet {
    pub(crate) state: Arc<Mutex<RunState>>,
    /// The machine of a paused run.
    pub(crate) paused: Arc<Mutex<Option<RunMachine>>>,
    /// The arm that answered the run's last model request (for a front door's access log).
    pub(crate) arm: Arc<Mutex<Option<ArmInfo>>>,
}

/// Drives `machine` to its end, until the run is cancelled, or until it pauses (see
/// [`PauseWhen`]), reporting its events; what it ends with is left in `outlet`.
///
/// The run is one `invoke_agent` span (OpenTelemetry's GenAI conventions): its model calls
/// (`chat …`) and tool executions (`execute_tool …`) are its children, so a trace shows a run
/// as one tree however many rounds it took.
pub(crate) fn drive(
    snapshot: Snapshot,
    machine: RunMachine,
    context: ToolContext,
    pause: Option<PauseWhen>,
    outlet: Outlet,
) -> impl Stream<Item = RunEvent> + Send {
    let span = tracing::info_span!(
        "invoke_agent",
        otel.name = "invoke_agent toolbridge",
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = "toolbridge",
        gen_ai.request.model = %snapshot.model.name(),
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
    );
    InSpan {
        inner: Box::pin(drive_in_span(
            snapshot,
            machine,
            context,
            pause,
            outlet,
            span.clone(),
        )),
        span,
    }
}

/// A stream polled inside its span: whatever a poll starts (a model call's span, a tool's)
/// gets the span as its parent. (`tracing`'s `Instrument` covers futures, not streams.)
struct InSpan<S> {
    inner: std::pin::Pin<Box<S>>,
    span: tracing::Span,
}

impl<S: Stream> Stream for InSpan<S> {
    type Item = S::Item;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<S::Item>> {
        let this = &mut *self;
        let _entered = this.span.enter();
        this.inner.as_mut().poll_next(cx)
    }
}

fn drive_in_span(
    snapshot: Snapshot,
    mut machine: RunMachine,
    context: ToolContext,
    pause: Option<PauseWhen>,
    outlet: Outlet,
    span: tracing::Span,
) -> impl Stream<Item = RunEvent> + Send {
    async_stream::stream! {
        let cancel = context.cancel.clone();
        // Loaded skills belong to the conversation: what its messages already hold, shared by
        // every skill tool this run builds (a resumed run recovers them the same way).
        let loaded = LoadedSkills::from_conversation(
            machine.messages(),
            snapshot.config.skill_tool.as_deref().unwrap_or_default(),
            &snapshot.skills,
        );
        let (mut tools_version, mut tools) = snapshot.current_tools(&loaded);
        machine.set_tools(tools.specs.clone());
        loop {
            while let Some(event) = machine.poll_event() {
                yield event;
            }
            if cancel.is_cancelled() && !machine.is_done() {
                machine.handle_cancel();
                continue;
            }
            if let Some(pause) = &pause {
                let pending = machine.pending_calls();
                if pending.iter().any(|c| pause(c)) {
                    // The round's own calls run first (hosted tools beside a client's
                    // functions); the run pauses with only the client's calls waiting.
                    let own: Vec<ToolCall> = pending.into_iter().filter(|c| !pause(c)).collect();
                    if let (false, Some(jobs)) = (own.is_empty(), machine.waiting_jobs()) {
                        let ids: Vec<String> = own.iter().map(|c| c.id.clone()).collect();
                        let jobs = ToolJobs { calls: own, ..jobs };
                        let results = run_tools(&snapshot, &tools, &context, jobs).await;
                        machine.supply_results(ids.into_iter().zip(results).collect(), Instant::now());
                        continue;
                    }
                    if let Ok(mut s) = outlet.state.lock() {
                        *s = machine.state();
                    }
                    if let Ok(mut p) = outlet.paused.lock() {
                        *p = Some(machine);
                    }
                    return;
                }
            }
            let Some(action) = machine.poll_action() else {
                // Waiting for an input nobody will give: a bug, not a state to hang in.
                tracing::error!("the run machine waits for an input the driver does not have");
                machine.handle_cancel();
                continue;
            };
            match action {
                Action::Done => break,
                Action::CallModel(mut request) => {
                    // Dynamic tools (MCP list_changed) are picked up between rounds, and only when
                    // their version moved, so the tool array stays byte-identical otherwise.
                    if !request.tools.is_empty()
                        && snapshot.toolbox.has_dynamic()
                        && snapshot.toolbox.dynamic_version() != tools_version
                    {
                        (tools_version, tools) = snapshot.current_tools(&loaded);
                        machine.set_tools(tools.specs.clone());
                        request.tools = tools.specs.clone();
                    }
                    let mut stream = snapshot.model.events(request);
                    loop {
                        let next = tokio::select! {
                            next = stream.next() => next,
                            () = cancel.cancelled() => {
                                machine.handle_cancel();
                                break;
                            }
                        };
                        match next {
                            None => {
                                if let (Some(arm), Ok(mut slot)) = (stream.arm(), outlet.arm.lock()) {
                                    *slot = Some(arm.clone());
                                }
                                let (mode, format) = arm_of(&*stream);
                                machine.handle_model_end(mode, format, Instant::now());
                                break;
                            }
                            Some(Err(e)) => {
                                tracing::error!(error = %e, "model request failed");
                                machine.handle_model_error(e.to_string(), Instant::now());
                                break;
                            }
                            Some(Ok(event)) => {
                                machine.handle_model_event(event);
                                while let Some(event) = machine.poll_event() {
                                    yield event;
                                }
                            }
                        }
                    }
                }
                Action::RunTools(jobs) => {
                    let results = run_tools(&snapshot, &tools, &context, jobs).await;
                    machine.handle_tool_results(results, Instant::now());
                }
            }
        }
        let usage = machine.usage();
        span.record("gen_ai.usage.input_tokens", usage.prompt_tokens);
        span.record("gen_ai.usage.output_tokens", usage.completion_tokens);
        if let Ok(mut s) = outlet.state.lock() {
            *s = machine.state();
        }
    }
}

/// The mode and call format of the arm that answered.
fn arm_of(stream: &dyn EventStream) -> (ToolMode, CallFormat) {
    stream
        .arm()
        .map_or((ToolMode::Native, CallFormat::default()), |a| {
            (a.mode, a.format())
        })
}

/// Runs the fresh calls of a round, concurrently up to `jobs.parallel`, results in call order.
async fn run_tools(
    snapshot: &Snapshot,
    tools: &Arc<crate::agent::RunTools>,
    context: &ToolContext,
    jobs: ToolJobs,
) -> Vec<CallResult> {
    let remaining = jobs.remaining.max(Duration::from_millis(1));
    let futures: Vec<BoxFuture<'static, CallResult>> = jobs
        .calls
        .into_iter()
        .map(|call| {
            let tools = Arc::clone(tools);
            let context = context.clone();
            let approvals = snapshot.config.approvals.clone();
            let approver = Arc::clone(&snapshot.approver);
            let after = jobs.after_tool_output;
            let job: BoxFuture<'static, CallResult> = Box::pin(async move {
                let toolbox = tools.toolbox_for(&call.name);
                let timeout = toolbox.config().timeout.min(remaining);
                toolbox
                    .execute_after(&call, &context, &approvals, &*approver, timeout, after)
                    .await
            });
            job
        })
        .collect();
    futures::stream::iter(futures)
        .buffered(jobs.parallel.max(1))
        .collect()
        .await
}
