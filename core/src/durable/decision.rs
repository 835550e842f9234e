//! What a decided approval lets run, and whether it can be trusted: the seal that binds a
//! decision under the app's key, the arguments it approves as the input of the resumed
//! call's path, and whether it still covers the call once that path has run again.
//!
//! Requests and decisions are made in `approval.rs`; the run's passes consult this file
//! (`durable/mod.rs`) before a decided call runs.

use super::approval_record::{ApprovalRecord, spec_hash};
use crate::digest::hash_value;
use crate::envelope::ToolError;
use crate::error_code::ErrorCode;
use crate::seal::SealKey;
use crate::spec::ToolSpec;
use serde_json::Value;

/// The first hidden parameter whose value `edited` changes from `asked`, if any: hidden
/// values come from the asking caller (or a resolver), never from whoever decides.
pub(super) fn changed_hidden(spec: &ToolSpec, asked: &Value, edited: &Value) -> Option<String> {
    spec.policy
        .hidden
        .keys()
        .find(|name| asked.get(name.as_str()) != edited.get(name.as_str()))
        .cloned()
}

/// The MAC that binds a decision under the app's key: the request (id, run, call, tool, who
/// asked, the spec it was made under), the decision (status, approved arguments' hash) and
/// who made it. Without the key nobody can make a decision the engine will honour, or move
/// one to another call, caller or set of arguments.
pub fn seal(key: &SealKey, rec: &ApprovalRecord) -> String {
    key.mac(&seal_parts(rec).each_ref().map(Vec::as_slice))
}

fn seal_parts(rec: &ApprovalRecord) -> [Vec<u8>; 11] {
    let d = rec.decision.as_ref();
    let status = serde_json::to_string(&rec.status).unwrap_or_default();
    let opt = |s: Option<&str>| s.unwrap_or("").as_bytes().to_vec();
    [
        b"tooljig-approval-decision".to_vec(),
        rec.id.as_bytes().to_vec(),
        rec.run_id.as_bytes().to_vec(),
        rec.call_id.as_bytes().to_vec(),
        rec.tool.as_bytes().to_vec(),
        opt(rec.requested_by.principal.as_deref()),
        opt(rec.requested_by.tenant.as_deref()),
        opt(rec.spec_hash.as_deref()),
        status.into_bytes(),
        opt(d.and_then(|d| d.approved_hash.as_deref())),
        opt(d.map(|d| d.by.as_str())),
    ]
}

/// The arguments a decided request lets run, as the input of the call's path in the
/// resumed pass: hidden parameters removed, for step 3 to fill again from the caller who
/// asked. Refused (`internal_error`, reason `approval_tampered`) when the request belongs to
/// another run or call than `place`, when the arguments no longer match the hash the
/// decision recorded, or, with a seal `key`, when the decision's seal does not check out:
/// the store was edited.
pub fn approved_input(
    rec: &ApprovalRecord,
    spec: &ToolSpec,
    place: (&str, &str),
    key: Option<&SealKey>,
) -> Result<Value, ToolError> {
    let tampered = |why: &str| {
        ToolError::new(
            ErrorCode::InternalError,
            format!("the stored approval cannot be trusted ({why}); the call was not run"),
        )
        .with("reason", "approval_tampered")
        .with("approval_id", rec.id.clone())
    };
    if (rec.run_id.as_str(), rec.call_id.as_str()) != place {
        return Err(tampered("it was made for another call"));
    }
    let decision = rec.decision.as_ref();
    if let Some(key) = key {
        let sealed = decision.and_then(|d| d.seal.as_deref());
        let parts = seal_parts(rec);
        if !sealed.is_some_and(|tag| key.verify(&parts.each_ref().map(Vec::as_slice), tag)) {
            return Err(tampered("its seal does not match the decision"));
        }
    }
    let args = decision.and_then(|d| d.approved_arguments.as_ref());
    let hash = decision.and_then(|d| d.approved_hash.as_deref());
    match (args, hash) {
        (Some(args), Some(hash)) if hash_value(args) == hash => {
            let mut args = args.clone();
            if let Value::Object(map) = &mut args {
                map.retain(|k, _| !spec.policy.hidden.contains_key(k));
            }
            Ok(args)
        }
        _ => Err(tampered(
            "the approved arguments do not match their recorded hash",
        )),
    }
}

/// Whether a decision still covers a call about to run with `arguments` (its final ones,
/// after every guard of its path): the tool's spec is the one the request was made under,
/// and the arguments are exactly the approved ones. `Err` says what changed; the call then
/// asks for approval again.
pub fn still_covers(
    rec: &ApprovalRecord,
    spec: &ToolSpec,
    arguments: &Value,
) -> Result<(), String> {
    if rec
        .spec_hash
        .as_ref()
        .is_some_and(|h| *h != spec_hash(spec))
    {
        return Err(format!(
            "the tool {:?} changed (schema or policy) after approval {} was granted; it is asked again",
            spec.name, rec.id
        ));
    }
    let approved = rec
        .decision
        .as_ref()
        .and_then(|d| d.approved_hash.as_deref());
    if approved != Some(hash_value(arguments).as_str()) {
        return Err(format!(
            "the arguments came out differently when the call was checked again (a hidden argument or a resolver gave another value) than under approval {}; it is asked again",
            rec.id
        ));
    }
    Ok(())
}
