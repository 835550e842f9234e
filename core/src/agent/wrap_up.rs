//! How a turn ends: the answer, a final tool-free answer at a limit, one clarifying question
//! for `needs`, or, when no model can be asked, tooljig's own summary of what was done.

use super::context::Ctx;
use super::model_call::{CallSpec, call_model};
use super::outcome::RunOutcome;
use super::runner::Agent;
use super::state::{NeedsCall, RunStatus, StopReason};
use crate::envelope::Envelope;
use crate::providers::{FinishReason, Message, ToolChoice};
use crate::spec::ToolSpec;
use crate::stream::StreamEvent;

/// Ends the turn with `text` as the answer.
pub(crate) fn finish(
    ctx: &mut Ctx<'_>,
    reason: StopReason,
    text: String,
    finish_reason: FinishReason,
) -> RunOutcome {
    ctx.state.messages.push(Message::assistant(text.clone()));
    ctx.state.answer = text;
    ctx.state.status = RunStatus::Finished { reason };
    ctx.emit(StreamEvent::Finish { finish_reason });
    RunOutcome::of(ctx.state)
}

/// Ends the turn with tooljig's summary, when no model can give the answer.
pub(crate) fn summary_finish(ctx: &mut Ctx<'_>, reason: StopReason) -> RunOutcome {
    let text = summary(ctx, reason);
    ctx.emit(StreamEvent::TextDelta {
        delta: text.clone(),
    });
    let finish_reason = match reason {
        StopReason::ModelFailed => FinishReason::Unfinished,
        _ => FinishReason::Length,
    };
    finish(ctx, reason, text, finish_reason)
}

fn why(reason: StopReason) -> &'static str {
    match reason {
        StopReason::StepLimit => "the step limit of this request was reached",
        StopReason::ToolCallLimit => "the tool-call limit of this request was reached",
        StopReason::Deadline => "the time allowed for this request ran out",
        StopReason::TokenBudget => "the token budget of this request was spent",
        StopReason::ModelFailed => "the model could not be reached",
        StopReason::Answered | StopReason::Refused => "the request ended",
    }
}

/// "I had to stop: ...; what was done: ..." from the tool results of this turn.
pub(crate) fn summary(ctx: &Ctx<'_>, reason: StopReason) -> String {
    let last_user = ctx
        .state
        .messages
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }))
        .unwrap_or(0);
    let mut done = Vec::new();
    for m in &ctx.state.messages[last_user..] {
        if let Message::Tool { results } = m {
            for r in results {
                done.push(match &r.envelope {
                    Envelope::Ok(_) => format!("{} succeeded", r.name),
                    Envelope::Needs(f) => format!("{} needs {}", r.name, f.join(", ")),
                    Envelope::Error(e) => format!("{} failed ({})", r.name, e.code),
                });
            }
        }
    }
    let mut text = format!("I had to stop before finishing: {}.", why(reason));
    if done.is_empty() {
        text.push_str(" Nothing was done yet.");
    } else {
        text.push_str(&format!(" What was done: {}.", done.join("; ")));
    }
    text.push_str(" Ask again to continue.");
    text
}

/// At a limit: a last, tool-free model call that says what was done; tooljig's summary when
/// there is no time or budget for one, or it fails.
pub(crate) async fn final_answer(
    agent: &Agent,
    ctx: &mut Ctx<'_>,
    reason: StopReason,
    specs: &[ToolSpec],
) -> RunOutcome {
    if matches!(reason, StopReason::Deadline | StopReason::TokenBudget) {
        return summary_finish(ctx, reason);
    }
    let note = format!(
        "Stop here: {}, so no more tools can run. Answer the user now in plain text: say what \
         was done, using the tool results above, and what is left undone.",
        why(reason)
    );
    let json = matches!(
        agent.get_options().protocol,
        super::options::ToolProtocol::Json(_)
    );
    let spec = CallSpec {
        tools: if json { Vec::new() } else { specs.to_vec() },
        tool_choice: ToolChoice::None,
        system: agent.get_options().system.clone(),
        note: Some(note),
        response_schema: None,
        hold_text: false,
    };
    let model = agent.answering_model().clone();
    match call_model(ctx, &model, spec, agent.get_options()).await {
        Ok(a) if !a.turn.content.trim().is_empty() => {
            // Tool calls made despite the instruction are ignored: none can run now.
            let mut a = a;
            a.turn.tool_calls.clear();
            a.complete_events(ctx, true);
            let text = a.turn.content.clone();
            finish(ctx, reason, text, FinishReason::Length)
        }
        Ok(_) => summary_finish(ctx, reason),
        Err(e) => {
            ctx.state.counters.model_failures += 1;
            ctx.emit(StreamEvent::Error {
                message: e.to_string(),
            });
            summary_finish(ctx, reason)
        }
    }
}

/// `needs`: one concise question for every missing field, from the responder; a plain
/// question when it cannot be asked.
pub(crate) async fn ask(agent: &Agent, ctx: &mut Ctx<'_>, needs: Vec<NeedsCall>) -> RunOutcome {
    ctx.state.counters.needs_loops += 1;
    let fields: Vec<String> = needs
        .iter()
        .flat_map(|n| n.fields.iter().map(|f| humanize(f)))
        .collect();
    let list = needs
        .iter()
        .map(|n| format!("{} needs {}", n.tool, n.fields.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    let note = format!(
        "Information is missing: {list}. Ask the user ONE short question that asks for exactly \
         this, in the user's language. Do not call tools and do not guess the values."
    );
    let json = matches!(
        agent.get_options().protocol,
        super::options::ToolProtocol::Json(_)
    );
    let spec = CallSpec {
        tools: if json {
            Vec::new()
        } else {
            agent.engine_specs(&ctx.caller)
        },
        tool_choice: ToolChoice::None,
        system: agent.get_options().system.clone(),
        note: Some(note),
        response_schema: None,
        hold_text: false,
    };
    let model = agent.answering_model().clone();
    let asked = call_model(ctx, &model, spec, agent.get_options()).await;
    let question = match asked {
        Ok(a) if !a.turn.content.trim().is_empty() => {
            let mut a = a;
            a.turn.tool_calls.clear();
            a.complete_events(ctx, true);
            a.turn.content
        }
        other => {
            if let Err(e) = other {
                ctx.state.counters.model_failures += 1;
                ctx.emit(StreamEvent::Error {
                    message: e.to_string(),
                });
            }
            let q = template_question(&fields);
            ctx.emit(StreamEvent::TextDelta { delta: q.clone() });
            q
        }
    };
    ctx.state
        .messages
        .push(Message::assistant(question.clone()));
    ctx.state.answer = question;
    ctx.state.status = RunStatus::NeedsInput { needs };
    ctx.emit(StreamEvent::Finish {
        finish_reason: FinishReason::Stop,
    });
    RunOutcome::of(ctx.state)
}

/// "To go ahead I need the duration mins. Could you tell me?"
pub fn template_question(fields: &[String]) -> String {
    let list = match fields.len() {
        0 => "a bit more information".to_string(),
        1 => format!("the {}", fields[0]),
        n => format!(
            "the {} and the {}",
            fields[..n - 1].join(", the "),
            fields[n - 1]
        ),
    };
    format!("To go ahead I need {list}. Could you tell me?")
}

/// `durationMins` → `duration mins`, `address.city` → `address city`.
pub fn humanize(field: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in field.chars() {
        if c == '_' || c == '.' || c == '-' {
            out.push(' ');
            prev_lower = false;
        } else if c.is_uppercase() && prev_lower {
            out.push(' ');
            out.extend(c.to_lowercase());
            prev_lower = false;
        } else {
            prev_lower = c.is_lowercase();
            out.extend(c.to_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_read_naturally() {
        assert_eq!(humanize("durationMins"), "duration mins");
        assert_eq!(humanize("address.city"), "address city");
        assert_eq!(
            template_question(&["duration mins".into()]),
            "To go ahead I need the duration mins. Could you tell me?"
        );
        assert_eq!(
            template_question(&["a".into(), "b".into(), "c".into()]),
            "To go ahead I need the a, the b and the c. Could you tell me?"
        );
    }
}
