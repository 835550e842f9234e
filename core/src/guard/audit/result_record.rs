//! The audit record of a settled result, borrowed from it: what an engine serializes in each
//! call's task. Building the owned [`AuditRecord`] there cloned the arguments and the output
//! only to drop them once serialized, which was half of what auditing cost a call.

use crate::call::{CallResult, ParentCall};
use crate::caller::Caller;
use crate::envelope::Envelope;
use crate::error_code::ErrorCode;
use crate::guard::audit::record::{AuditRecord, Outcome, now_ms};
use crate::guard::audit::redact::{
    REDACTED, Redaction, hides_anything, redact, redact_field, rule_for, write_hash_value,
};
use crate::guard::hidden::HiddenNote;
use crate::json_text;
use crate::policy::{Effect, Policy, Risk};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;

impl AuditRecord {
    /// The record of a settled result. `policy` is the tool's (none when the tool is
    /// unknown); `raw_arguments` are the arguments as the model sent them, used when the
    /// result carries no parsed ones.
    pub fn from_result(
        result: &CallResult,
        caller: &Caller,
        policy: Option<&Policy>,
        raw_arguments: Option<&Value>,
    ) -> AuditRecord {
        ResultRecord::new(result, caller, policy, raw_arguments).into_owned()
    }
}

/// The record of a settled result, borrowed from it: a value redaction leaves as it is, or
/// changes only in top-level fields, is written from the result itself. Its fields are
/// [`AuditRecord`]'s, in the same order, without the chain fields (unset here, so left out of
/// the text): [`ResultRecord::to_json`] writes the bytes serde_json writes for the record,
/// which the tests hold it to.
pub(crate) struct ResultRecord<'a> {
    pub(crate) time_ms: u64,
    pub(crate) principal: Option<&'a str>,
    pub(crate) tenant: Option<&'a str>,
    session: Option<&'a str>,
    pub(crate) tool: &'a str,
    pub(crate) call_id: &'a str,
    arguments: Option<Shown<'a>>,
    hidden: Cow<'a, [HiddenNote]>,
    pub(crate) outcome: Outcome,
    pub(crate) code: Option<ErrorCode>,
    message: Option<&'a str>,
    detail: Option<&'a str>,
    output: Option<Shown<'a>>,
    risk: Option<Risk>,
    effect: Option<Effect>,
    duration_us: u64,
    attempts: u32,
    cached: bool,
    replayed: bool,
    repaired: bool,
    approval: Option<Value>,
    parent: Option<&'a ParentCall>,
}

/// No rules: what a result of an unknown tool (no policy) is audited under.
static NO_RULES: BTreeMap<String, Redaction> = BTreeMap::new();

/// A value as the audit log may show it under a tool's redaction rules.
enum Shown<'a> {
    /// As it is: no rule hides anything.
    Whole(&'a Value),
    /// An object under rules that name top-level fields only (and `*`): each field is written
    /// as its rule says while the record is serialized, so nothing of it is copied.
    Fields(&'a Map<String, Value>, &'a BTreeMap<String, Redaction>),
    /// A redacted copy: rules that reach into nested values (JSON pointers), or a value that
    /// is no object.
    Copy(Value),
}

impl<'a> Shown<'a> {
    /// `value` under `rules`.
    fn of(value: &'a Value, rules: &'a BTreeMap<String, Redaction>) -> Self {
        if !hides_anything(rules) {
            return Shown::Whole(value);
        }
        match value {
            Value::Object(map) if !rules.keys().any(|k| k.starts_with('/')) => {
                Shown::Fields(map, rules)
            }
            _ => {
                let mut owned = value.clone();
                redact(&mut owned, rules);
                Shown::Copy(owned)
            }
        }
    }

    /// The value as shown, owned.
    fn into_owned(self) -> Value {
        match self {
            Shown::Whole(value) => value.clone(),
            Shown::Fields(map, rules) => {
                let mut owned = Value::Object(map.clone());
                redact(&mut owned, rules);
                owned
            }
            Shown::Copy(value) => value,
        }
    }
}

impl Shown<'_> {
    /// Writes the value as shown.
    fn write_json(&self, out: &mut Vec<u8>) {
        let (map, rules) = match self {
            Shown::Whole(value) => return json_text::value(out, value),
            Shown::Copy(value) => return json_text::value(out, value),
            Shown::Fields(map, rules) => (map, rules),
        };
        out.push(b'{');
        for (i, (field, value)) in map.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json_text::string(out, field);
            out.push(b':');
            match rule_for(rules, field) {
                Redaction::Keep => json_text::value(out, value),
                Redaction::Redact => json_text::string(out, REDACTED),
                Redaction::Hash => write_hash_value(value, out),
            }
        }
        out.push(b'}');
    }
}

/// Writes a hidden-argument note as serde_json writes a [`HiddenNote`].
fn write_note(out: &mut Vec<u8>, note: &HiddenNote) {
    out.extend_from_slice(b"{\"parameter\":");
    json_text::string(out, &note.parameter);
    out.extend_from_slice(b",\"source\":");
    json_text::string(out, &note.source);
    out.extend_from_slice(b",\"injected\":");
    json_text::serde(out, &note.injected);
    if let Some(supplied) = &note.supplied {
        out.extend_from_slice(b",\"supplied\":");
        json_text::value(out, supplied);
    }
    out.push(b'}');
}

/// Hidden-argument notes as the audit log may show them: what the model tried to set is
/// redacted under its parameter's rule; borrowed when that changes nothing.
fn redacted_notes<'a>(
    notes: &'a [HiddenNote],
    rules: &BTreeMap<String, Redaction>,
) -> Cow<'a, [HiddenNote]> {
    if !hides_anything(rules) || notes.iter().all(|n| n.supplied.is_none()) {
        return Cow::Borrowed(notes);
    }
    let mut owned = notes.to_vec();
    for note in &mut owned {
        if let Some(v) = note.supplied.as_mut() {
            redact_field(v, rules, &note.parameter);
        }
    }
    Cow::Owned(owned)
}

impl<'a> ResultRecord<'a> {
    /// See [`AuditRecord::from_result`].
    pub(crate) fn new(
        result: &'a CallResult,
        caller: &'a Caller,
        policy: Option<&'a Policy>,
        raw_arguments: Option<&'a Value>,
    ) -> Self {
        let rules = policy.map_or(&NO_RULES, |p| &p.redact);
        let arguments = result.arguments.as_ref().or(raw_arguments);
        let output = policy
            .is_some_and(|p| p.audit_output)
            .then(|| result.envelope.data())
            .flatten();
        let (code, message) = match &result.envelope {
            Envelope::Error(e) => (Some(e.code), Some(e.message.as_str())),
            _ => (None, None),
        };
        ResultRecord {
            time_ms: now_ms(),
            principal: caller.principal.as_deref(),
            tenant: caller.tenant.as_deref(),
            session: caller.session.as_deref(),
            tool: &result.tool,
            call_id: &result.call_id,
            arguments: arguments.map(|a| Shown::of(a, rules)),
            hidden: redacted_notes(&result.hidden, rules),
            outcome: Outcome::of(result),
            code,
            message,
            detail: result.detail.as_deref(),
            output: output.map(|o| Shown::of(o, rules)),
            risk: policy.map(|p| p.risk),
            effect: policy.map(|p| p.effect),
            duration_us: result.duration_us,
            attempts: result.attempts,
            cached: result.cached,
            replayed: result.replayed,
            repaired: result.repaired,
            approval: result
                .approval
                .as_ref()
                .and_then(|a| serde_json::to_value(a).ok()),
            parent: result.parent.as_deref(),
        }
    }

    /// The record as JSON, as serde_json writes an [`AuditRecord`] whose chain fields are
    /// unset: the field names written as the literals they are, the values through
    /// [`json_text`].
    pub(crate) fn to_json(&self) -> String {
        // Sized for a typical record (about 600 bytes) at once.
        let mut out = Vec::with_capacity(1024);
        self.write_json(&mut out);
        crate::digest::into_string(out)
    }

    fn write_json(&self, out: &mut Vec<u8>) {
        fn shown(out: &mut Vec<u8>, value: &Option<Shown<'_>>) {
            match value {
                Some(v) => v.write_json(out),
                None => out.extend_from_slice(b"null"),
            }
        }
        out.extend_from_slice(b"{\"time_ms\":");
        json_text::serde(out, &self.time_ms);
        out.extend_from_slice(b",\"principal\":");
        json_text::opt_string(out, self.principal);
        out.extend_from_slice(b",\"tenant\":");
        json_text::opt_string(out, self.tenant);
        out.extend_from_slice(b",\"session\":");
        json_text::opt_string(out, self.session);
        out.extend_from_slice(b",\"tool\":");
        json_text::string(out, self.tool);
        out.extend_from_slice(b",\"call_id\":");
        json_text::string(out, self.call_id);
        out.extend_from_slice(b",\"arguments\":");
        shown(out, &self.arguments);
        out.extend_from_slice(b",\"hidden\":[");
        for (i, note) in self.hidden.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_note(out, note);
        }
        out.push(b']');
        out.extend_from_slice(b",\"outcome\":");
        json_text::string(out, self.outcome.as_str());
        out.extend_from_slice(b",\"code\":");
        json_text::opt_string(out, self.code.map(ErrorCode::as_str));
        out.extend_from_slice(b",\"message\":");
        json_text::opt_string(out, self.message);
        out.extend_from_slice(b",\"detail\":");
        json_text::opt_string(out, self.detail);
        out.extend_from_slice(b",\"output\":");
        shown(out, &self.output);
        out.extend_from_slice(b",\"risk\":");
        json_text::serde(out, &self.risk);
        out.extend_from_slice(b",\"effect\":");
        json_text::serde(out, &self.effect);
        out.extend_from_slice(b",\"duration_us\":");
        json_text::serde(out, &self.duration_us);
        out.extend_from_slice(b",\"attempts\":");
        json_text::serde(out, &self.attempts);
        out.extend_from_slice(b",\"cached\":");
        json_text::serde(out, &self.cached);
        out.extend_from_slice(b",\"replayed\":");
        json_text::serde(out, &self.replayed);
        out.extend_from_slice(b",\"repaired\":");
        json_text::serde(out, &self.repaired);
        out.extend_from_slice(b",\"approval\":");
        match &self.approval {
            Some(v) => json_text::value(out, v),
            None => out.extend_from_slice(b"null"),
        }
        if let Some(parent) = self.parent {
            out.extend_from_slice(b",\"parent\":");
            json_text::serde(out, parent);
        }
        out.push(b'}');
    }

    /// The record, owning all of it.
    fn into_owned(self) -> AuditRecord {
        AuditRecord {
            seq: 0,
            time_ms: self.time_ms,
            principal: self.principal.map(str::to_string),
            tenant: self.tenant.map(str::to_string),
            session: self.session.map(str::to_string),
            tool: self.tool.to_string(),
            call_id: self.call_id.to_string(),
            arguments: self.arguments.map(Shown::into_owned),
            hidden: self.hidden.into_owned(),
            outcome: self.outcome,
            code: self.code,
            message: self.message.map(str::to_string),
            detail: self.detail.map(str::to_string),
            output: self.output.map(Shown::into_owned),
            risk: self.risk,
            effect: self.effect,
            duration_us: self.duration_us,
            attempts: self.attempts,
            cached: self.cached,
            replayed: self.replayed,
            repaired: self.repaired,
            approval: self.approval,
            parent: self.parent.cloned(),
            prev_hash: String::new(),
            hash: String::new(),
        }
    }
}
