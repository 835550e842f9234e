//! What runs after a call succeeded, out of the model's reach: a notification to the
//! counterpart, an outbox record (`Tool::on_success`).
//!
//! It runs once per run of the handler that ended with data, after the call's result is
//! recorded (idempotency, the run), so a duplicate replayed from the record, a cache hit, a
//! refusal or a failure never runs it. It cannot change the result: the effect happened and
//! the model reads what the handler returned. A hook that fails leaves its reason in the
//! result's `detail`, so the audit record keeps it. A crash between the call and its hook
//! loses the hook's run: an app that must never lose one writes its outbox record in the
//! handler's own transaction and delivers it from there.

use crate::call::CallResult;
use crate::envelope::Envelope;
use crate::hook::{HookSite, note_detail};
use serde_json::{Value, json};
use std::sync::Arc;

/// Runs the tool's `on_success` hook for `result`, when it has one and the call succeeded.
pub(crate) async fn follow(site: HookSite, run_id: &Arc<str>, result: &mut CallResult) {
    let Some(hook) = site.tool.on_success.clone() else {
        return;
    };
    let Envelope::Ok(data) = &result.envelope else {
        return;
    };
    let input = json!({
        "arguments": result.arguments.clone().unwrap_or(Value::Null),
        "result": data,
    });
    if let Err(why) = site
        .run(hook.as_ref(), input, &result.call_id, run_id)
        .await
    {
        tracing::warn!(tool = %result.tool, call_id = %result.call_id, "on_success failed: {why}");
        note_detail(&mut result.detail, format!("on_success failed: {why}"));
    }
}
