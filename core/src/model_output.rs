//! What the model sees of a result, apart from what the app gets.
//!
//! A tool may turn its data into something smaller or safer for the model (a summary, a
//! reference to an image) with a `to_model_output` hook, and cap what the model reads with
//! `model_output_max_chars`. The app still gets the whole data in the envelope; the model's
//! view goes to `CallResult::model_output`, and providers read `CallResult::model_envelope`.
//! Only data is shaped: errors, `needs` and pending results reach the model as they are.
//!
//! A hook that fails (throws, panics, times out, returns data nested too deep) fails closed:
//! the model reads that the tool succeeded and its output could not be shown, never the data
//! the hook was there to shape; the reason goes to the result's `detail`.

use crate::call::CallResult;
use crate::envelope::Envelope;
use crate::hook::{HookSite, note_detail};
use crate::job::Job;
use crate::output::TRUNCATION_MARKER;
use serde_json::Value;
use std::sync::Arc;

/// What the model reads when the hook failed.
pub const UNSHOWN: &str = "the tool succeeded; its output could not be prepared for the model";

/// Shapes the model's view of one call's result, once the call has one.
pub(crate) struct Presenter(HookSite);

impl Presenter {
    /// A presenter for `job`'s result, when its tool shapes what the model sees.
    pub(crate) fn of(job: &Job) -> Option<Self> {
        let tool = &job.tool;
        let policy = &tool.spec.policy;
        let shapes = tool.to_model_output.is_some()
            || policy.model_output_max_chars.is_some()
            || policy.model_output_max_tokens.is_some();
        shapes.then(|| Presenter(HookSite::of(job)))
    }

    /// Sets `result.model_output` from its data, when it has data.
    pub(crate) async fn present(self, run_id: &Arc<str>, result: &mut CallResult) {
        let Envelope::Ok(data) = &result.envelope else {
            return;
        };
        let site = &self.0;
        let view = match &site.tool.to_model_output {
            Some(hook) => match site
                .run(hook.as_ref(), data.clone(), &result.call_id, run_id)
                .await
            {
                Ok(view) => Some(view),
                Err(why) => {
                    note_detail(&mut result.detail, format!("to_model_output failed: {why}"));
                    result.model_output = Some(Box::new(Value::String(UNSHOWN.into())));
                    return;
                }
            },
            None => None,
        };
        let policy = &site.tool.spec.policy;
        let shown = view.as_ref().unwrap_or(data);
        let by_chars = policy
            .model_output_max_chars
            .and_then(|max| cut(shown, max));
        let shown = by_chars.as_ref().unwrap_or(shown);
        let by_tokens = policy
            .model_output_max_tokens
            .and_then(|max| cut_tokens(shown, max));
        result.model_output = by_tokens.or(by_chars).or(view).map(Box::new);
    }
}

/// The text a budget measures: a string as is, anything else as JSON.
fn text_of(view: &Value) -> std::borrow::Cow<'_, str> {
    match view {
        Value::String(s) => std::borrow::Cow::Borrowed(s.as_str()),
        other => std::borrow::Cow::Owned(serde_json::to_string(other).unwrap_or_default()),
    }
}

/// `view` cut to `max` tokens of `o200k_base`, when its text is longer: the text of the first
/// `max` tokens (a character split between two tokens dropped) and a marker.
fn cut_tokens(view: &Value, max: usize) -> Option<Value> {
    let text = text_of(view);
    let bpe = tiktoken_rs::o200k_base_singleton();
    let tokens = bpe.encode_ordinary(&text);
    if tokens.len() <= max {
        return None;
    }
    let bytes = bpe.decode_bytes(&tokens[..max]).unwrap_or_default();
    let shown = String::from_utf8_lossy(&bytes);
    let shown = shown.trim_end_matches('\u{FFFD}');
    Some(Value::String(format!(
        "{shown}{TRUNCATION_MARKER} {max} of {} tokens shown]",
        tokens.len()
    )))
}

/// `view` cut to `max` characters, when its text is longer: the text's prefix and a marker
/// saying how much was shown (a string is measured as is, anything else as JSON).
fn cut(view: &Value, max: usize) -> Option<Value> {
    let text = text_of(view);
    let total = text.chars().count();
    if total <= max {
        return None;
    }
    let end = text.char_indices().nth(max).map_or(text.len(), |(i, _)| i);
    Some(Value::String(format!(
        "{}{TRUNCATION_MARKER} {max} of {total} characters shown]",
        &text[..end]
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_view_over_a_token_budget_is_cut_at_a_token() {
        let long = "the quick brown fox jumps over the lazy dog ".repeat(50);
        let cut = cut_tokens(&json!(long), 5).unwrap();
        let cut = cut.as_str().unwrap();
        assert!(cut.starts_with("the quick brown fox jumps"), "{cut}");
        assert!(cut.ends_with(" 5 of 451 tokens shown]"), "{cut}");
        assert_eq!(cut_tokens(&json!("short"), 5), None);
        // A multi-byte character split between tokens is dropped, never mangled.
        let emoji = cut_tokens(&json!("🦀".repeat(40)), 3).unwrap();
        assert!(!emoji.as_str().unwrap().contains('\u{FFFD}'), "{emoji}");
    }

    #[test]
    fn a_view_over_budget_is_cut_at_a_character() {
        assert_eq!(cut(&json!("héllo"), 5), None);
        assert_eq!(
            cut(&json!("héllo wörld"), 4),
            Some(json!(format!(
                "héll{TRUNCATION_MARKER} 4 of 11 characters shown]"
            )))
        );
        assert_eq!(
            cut(&json!({"a": [1, 2, 3]}), 6),
            Some(json!(format!(
                "{{\"a\":[{TRUNCATION_MARKER} 6 of 13 characters shown]"
            )))
        );
    }
}
