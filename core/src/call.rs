//! A call the model proposed, and what became of it.

use crate::envelope::Envelope;
use crate::policy::Risk;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool call in a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// Unique within the batch; generated (`call_0`, `call_1`, ...) when empty.
    #[serde(default)]
    pub id: String,
    /// The tool's name (or the name it was imported under).
    pub tool: String,
    /// A JSON string (parsed, repaired if need be) or a JSON value. Values of the form
    /// `{"$from": "<call id>", "pointer": "/json/pointer"}` take data from an earlier result.
    #[serde(default)]
    pub arguments: Value,
    /// Calls that must finish before this one starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// Run even when a dependency failed (references to a failed call still refuse it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub run_if_dependency_failed: bool,
    /// The app's idempotency key for this call (a request id, the provider's call id), used
    /// by tools whose policy keys idempotency on it. Never set by the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Why a binding could not convert the arguments the app gave into JSON (a `BigInt`, a
    /// lone surrogate, `NaN`, a value nested too deep): the call is refused alone with
    /// `invalid_arguments` saying so, and the rest of the batch runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_error: Option<String>,
}

impl Call {
    /// A call of `tool` with `arguments` (a JSON string or value).
    pub fn new(
        id: impl Into<String>,
        tool: impl Into<String>,
        arguments: impl Into<Value>,
    ) -> Self {
        Call {
            id: id.into(),
            tool: tool.into(),
            arguments: arguments.into(),
            depends_on: Vec::new(),
            run_if_dependency_failed: false,
            idempotency_key: None,
            arguments_error: None,
        }
    }

    /// Sets the app's idempotency key.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Adds a dependency.
    pub fn depends_on(mut self, id: impl Into<String>) -> Self {
        self.depends_on.push(id.into());
        self
    }
}

/// Where a call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// Finished: it ran or was refused; the envelope says which.
    Done,
    /// Waiting for a human decision.
    PendingApproval,
    /// Waiting for someone else (a client) to run it and submit the result.
    PendingExternal,
    /// Accepted by its handler as a background job; waiting for the app to report that the
    /// job completed or failed (`Engine::complete_job`).
    PendingJob,
    /// Not started: a call it depends on is pending; it runs when the run is resumed.
    Waiting,
}

/// The result of one call: the envelope for the model, and what the app needs beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallResult {
    /// The call's id.
    pub call_id: String,
    /// The tool's registered name (as the model wrote it when unknown).
    pub tool: String,
    /// Where the call stands.
    pub status: CallStatus,
    /// What the model sees.
    pub envelope: Envelope,
    /// Handler attempts made (0 when the call never ran).
    pub attempts: u32,
    /// Whether the arguments had to be repaired.
    pub repaired: bool,
    /// Whether the envelope was replayed from an earlier identical call.
    pub replayed: bool,
    /// Whether the envelope came from the cache.
    pub cached: bool,
    /// The final arguments, after repair, references and hidden arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// When the first attempt started, in µs since the batch started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_us: Option<u64>,
    /// When the call finished, in µs since the batch started.
    pub finished_us: u64,
    /// Time spent running the handler, retries and backoff included, in µs.
    pub duration_us: u64,
    /// What the model must not see: an unexpected failure's message, traceback or stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The approval this call needed: pending (id, arguments hash, risk, who asked) or
    /// decided (by whom, when, or which rule or preference allowed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Box<ApprovalInfo>>,
    /// An earlier call with the same idempotency key stopped without finishing (its process
    /// died); its lease expired, so this call ran again. Its effect may have happened twice.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recovered: bool,
    /// Hidden parameters: what was injected, and what the model tried to set (dropped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<HiddenNote>,
    /// What the input schema's `default`s filled in, as JSON Pointers (`/unit`).
    #[serde(default, skip_serializing_if = "<[String]>::is_empty")]
    pub defaults: Box<[String]>,
    /// The call whose handler made this one (`ctx.tools`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Box<ParentCall>>,
    /// What the model sees in place of the data, when the tool's `to_model_output` hook or
    /// its `model_output_max_chars` budget changed it; `envelope` keeps the whole data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_output: Option<Box<Value>>,
}

impl CallResult {
    /// A result for a call that never ran.
    pub fn refused(
        call_id: impl Into<String>,
        tool: impl Into<String>,
        envelope: Envelope,
    ) -> Self {
        CallResult {
            call_id: call_id.into(),
            tool: tool.into(),
            status: CallStatus::Done,
            envelope,
            attempts: 0,
            repaired: false,
            replayed: false,
            cached: false,
            arguments: None,
            started_us: None,
            finished_us: 0,
            duration_us: 0,
            detail: None,
            approval: None,
            recovered: false,
            hidden: Vec::new(),
            defaults: Box::default(),
            parent: None,
            model_output: None,
        }
    }

    /// The envelope as the model sees it: `model_output` in place of the data when set.
    pub fn model_envelope(&self) -> Envelope {
        model_view(&self.envelope, self.model_output.as_deref())
            .unwrap_or_else(|| self.envelope.clone())
    }

    /// The result as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Where an approval request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for a decision.
    Pending,
    /// Approved as asked, by a human or by a learned preference.
    Approved,
    /// Approved with edited arguments: those, and only those, run.
    Edited,
    /// Rejected; the model sees the message.
    Rejected,
    /// Nobody decided in time.
    Expired,
}

/// The approval side of a call's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalInfo {
    /// The approval request's id; `None` when a preference allowed the call without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Where it stands.
    pub status: ApprovalStatus,
    /// SHA-256 of the canonical arguments the request (and any decision) is bound to.
    pub arguments_hash: String,
    /// The tool's risk level.
    pub risk: Risk,
    /// Principal who asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
    /// When the request expires, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// Principal who decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// When, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at_ms: Option<u64>,
    /// Why it ran without a human: the learned preference that allowed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preference_id: Option<String>,
    /// A human-readable why, for the audit record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What happened to one hidden parameter of one call; goes on the result and the audit record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HiddenNote {
    /// The hidden parameter.
    pub parameter: String,
    /// Where its value came from (see [`crate::HiddenParam::source`]).
    pub source: String,
    /// Whether a value was filled in (false when the context had none and the parameter is optional).
    pub injected: bool,
    /// What the model tried to set it to; dropped, never used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supplied: Option<Value>,
}

/// The call a nested call was made from: on its result and its audit record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentCall {
    /// The parent's run.
    pub run_id: String,
    /// The parent call's id in its batch.
    pub call_id: String,
    /// The parent's tool.
    pub tool: String,
    /// How deep the nested call is: 1 for a call a top-level call's handler made.
    pub depth: u32,
}

/// What the model reads in place of `envelope` when a tool shaped its data into `view`: the
/// view as the data of an `ok` envelope; `None` when the model reads the envelope as it is
/// (no view, or not a success: errors, `needs` and pending results are never shaped).
pub(crate) fn model_view(envelope: &Envelope, view: Option<&Value>) -> Option<Envelope> {
    match (view, envelope) {
        (Some(view), Envelope::Ok(_)) => Some(Envelope::Ok(view.clone())),
        _ => None,
    }
}
