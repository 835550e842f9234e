//! Step 8: human approval. A call that needs it does not run; it ends `pending_approval`
//! with an approval request persisted in the state store, bound to a hash of its exact final
//! arguments. A decision (approve, reject, edit) names that hash, comes from a caller
//! allowed to decide, and counts once; the run then resumes (see `run.rs`).

use super::decision::{changed_hidden, seal};
use super::preference::{Preference, Remember};
use super::store::{Expect, Namespace, StateStore, StoreError, get_as, now_ms, put_as};
use crate::caller::Caller;
use crate::digest::hash_value;
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use crate::handler::{BoxFuture, HostData};
use crate::policy::{Policy, Risk};
use crate::registry::Snapshot;
use crate::schema::{CompiledSchema, SchemaResources, arguments_envelope};
use crate::seal::SealKey;
use crate::spec::ToolSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::any::Any;
use std::future::Future;
use std::sync::Arc;

pub use super::approval_record::{ApprovalRecord, DecisionRecord, spec_hash};
pub use crate::call::{ApprovalInfo, ApprovalStatus};
pub use crate::policy::approval::{
    ApprovalPolicy, ApprovalRequirement, ApprovalRules, DEFAULT_APPROVAL_EXPIRY_MS,
};

/// What an approval predicate sees.
#[derive(Debug, Clone)]
pub struct ApprovalQuery {
    /// The tool's registered name.
    pub tool: String,
    /// The final arguments, as they would run.
    pub arguments: Value,
    /// Who asked.
    pub caller: Arc<Caller>,
    /// The tool's risk level.
    pub risk: Risk,
}

/// The app's own rule for whether a call needs approval, in its own language (bindings
/// implement it over a callable). An error counts as "needs approval": the rule fails closed.
/// `Any`, so that a binding finds its own among an engine's parts
/// ([`Engine::visit_sole_parts`](crate::Engine::visit_sole_parts)).
pub trait ApprovalPredicate: Any + Send + Sync {
    /// Whether this call needs a human decision. `host` is the binding's host, as for
    /// [`PolicyHook::check`](crate::PolicyHook::check).
    fn requires_approval(
        &self,
        query: ApprovalQuery,
        host: Option<HostData>,
    ) -> BoxFuture<Result<bool, String>>;
}

struct FnPredicate<F>(F);

impl<F, Fut> ApprovalPredicate for FnPredicate<F>
where
    F: Fn(ApprovalQuery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<bool, String>> + Send + 'static,
{
    fn requires_approval(
        &self,
        query: ApprovalQuery,
        _host: Option<HostData>,
    ) -> BoxFuture<Result<bool, String>> {
        Box::pin((self.0)(query))
    }
}

/// An approval predicate from an async closure.
pub fn approval_predicate_fn<F, Fut>(f: F) -> Arc<dyn ApprovalPredicate>
where
    F: Fn(ApprovalQuery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<bool, String>> + Send + 'static,
{
    Arc::new(FnPredicate(f))
}

/// A human decision on one approval request. Each names the arguments hash it was made
/// for; a decision for other arguments is refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case", deny_unknown_fields)]
pub enum Decision {
    /// Run the call as asked.
    Approve {
        /// The hash shown with the request.
        arguments_hash: String,
        /// Also allow later calls of this tool for the asking principal without asking.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remember: Option<Remember>,
    },
    /// Do not run it; the model sees `message`.
    Reject {
        /// The hash shown with the request.
        arguments_hash: String,
        /// Why, for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Run it with these arguments instead (validated again; exactly these run).
    Edit {
        /// The hash shown with the request.
        arguments_hash: String,
        /// The arguments that will run.
        arguments: Value,
    },
}

impl Decision {
    fn hash(&self) -> &str {
        match self {
            Decision::Approve { arguments_hash, .. }
            | Decision::Reject { arguments_hash, .. }
            | Decision::Edit { arguments_hash, .. } => arguments_hash,
        }
    }
}

/// Whether [`needs_approval`] may say yes for a call under `policy`, whatever its arguments.
pub fn may_require(policy: &Policy, rules: &ApprovalRules, has_predicate: bool) -> bool {
    match policy.approval.required {
        ApprovalRequirement::Never => false,
        ApprovalRequirement::Always => true,
        ApprovalRequirement::Auto => {
            has_predicate || rules.min_risk.is_some_and(|min| policy.risk >= min)
        }
    }
}

/// Whether [`needs_approval`] runs the app's predicate for a call under `policy`.
pub fn asks_the_app(policy: &Policy, has_predicate: bool) -> bool {
    has_predicate && policy.approval.required == ApprovalRequirement::Auto
}

/// Whether a call needs approval under the tool's policy and the engine's rules; `host` goes
/// to the app's predicate. The second value says why, when the predicate failed (closed).
pub async fn needs_approval(
    policy: &Policy,
    rules: &ApprovalRules,
    predicate: Option<&Arc<dyn ApprovalPredicate>>,
    query: impl FnOnce() -> ApprovalQuery,
    host: Option<HostData>,
) -> (bool, Option<String>) {
    match predicate.filter(|_| asks_the_app(policy, true)) {
        Some(p) => match p.requires_approval(query(), host).await {
            Ok(needed) => (needed, None),
            Err(e) => (true, Some(format!("the approval predicate failed: {e}"))),
        },
        // Without the app's predicate, the policy and the rules decide alone.
        None => (may_require(policy, rules, false), None),
    }
}

/// The id of the request for a call of a run with these arguments under this spec: the same
/// every time the call asks, so a pass that takes over a run whose process died finds the
/// request (and any decision on it) its predecessor made, instead of asking again. Run ids
/// are random, so request ids are as unguessable as they are; deciding needs the approver's
/// identity and the arguments hash all the same.
fn request_id(run_id: &str, call_id: &str, arguments_hash: &str, spec_hash: &str) -> String {
    let seed = format!("tooljig-approval\0{run_id}\0{call_id}\0{arguments_hash}\0{spec_hash}");
    let digest = crate::digest::hex(&<sha2::Sha256 as sha2::Digest>::digest(seed.as_bytes()));
    format!("apr_{}", &digest[..32])
}

/// Persists the approval request for a call of the tool `spec` describes, or returns the one
/// already made for the same call, arguments and spec (by a pass that took over the run,
/// decided or not).
pub async fn request(
    store: &dyn StateStore,
    spec: &ToolSpec,
    run_id: &str,
    call_id: &str,
    arguments: &Value,
    caller: &Caller,
) -> Result<ApprovalRecord, StoreError> {
    let policy = &spec.policy;
    let now = now_ms();
    let (arguments_hash, spec_hash) = (hash_value(arguments), spec_hash(spec));
    let record = ApprovalRecord {
        id: request_id(run_id, call_id, &arguments_hash, &spec_hash),
        run_id: run_id.to_string(),
        call_id: call_id.to_string(),
        tool: spec.name.clone(),
        arguments: arguments.clone(),
        arguments_hash,
        risk: policy.risk,
        spec_hash: Some(spec_hash),
        spec: Some(spec.clone()),
        requested_by: caller.clone(),
        requested_at_ms: now,
        expires_at_ms: now.saturating_add(policy.approval.expires_ms),
        approver_roles: policy.approval.approver_roles.clone(),
        status: ApprovalStatus::Pending,
        decision: None,
    };
    let written = put_as(
        store,
        Namespace::Approval,
        &record.id,
        Expect::Absent,
        &record,
        Some(policy.approval.expires_ms.saturating_add(RETAIN_DECIDED_MS)),
    )
    .await?;
    if written.is_some() {
        return Ok(record);
    }
    load(store, &record.id)
        .await?
        .map(|(existing, _)| existing)
        .ok_or_else(|| StoreError("the approval request vanished while it was read".into()))
}

/// How long a request is kept after it expires, so a late decision or resume is told why.
pub const RETAIN_DECIDED_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// The pending envelope the model sees: the request's id and its run's, which is what a
/// client that sees only this envelope (an MCP client) resumes once the request is decided.
pub fn pending_envelope(record: &ApprovalRecord) -> Envelope {
    Envelope::Error(
        ToolError::new(
            ErrorCode::PendingApproval,
            "this call waits for a human to approve it; it has not run yet",
        )
        .with("approval_id", record.id.clone())
        .with("run_id", record.run_id.clone()),
    )
}

/// Loads a request, marking it expired when its time has passed without a decision.
pub async fn load(
    store: &dyn StateStore,
    id: &str,
) -> Result<Option<(ApprovalRecord, u64)>, StoreError> {
    let Some((mut rec, mut version)) =
        get_as::<ApprovalRecord>(store, Namespace::Approval, id).await?
    else {
        return Ok(None);
    };
    if rec.status == ApprovalStatus::Pending && now_ms() >= rec.expires_at_ms {
        rec.status = ApprovalStatus::Expired;
        match put_as(
            store,
            Namespace::Approval,
            id,
            Expect::Version(version),
            &rec,
            Some(RETAIN_DECIDED_MS),
        )
        .await?
        {
            Some(v) => version = v,
            // Someone decided or expired it at the same moment: read what won.
            None => return Box::pin(load(store, id)).await,
        }
    }
    Ok(Some((rec, version)))
}

fn refuse(code: ErrorCode, reason: &str, message: impl Into<String>) -> ToolError {
    ToolError::new(code, message).with("reason", reason)
}

fn store_refusal(e: StoreError) -> ToolError {
    e.refusal()
}

/// The spec pinned in a request, with its input schema compiled, for checking an edit in a
/// process that does not register the tool (an operator's command line or inbox); refused
/// when the request keeps none, or one that no longer hashes to the request's spec hash.
fn pinned_schema(rec: &ApprovalRecord) -> Result<(ToolSpec, CompiledSchema), ToolError> {
    let unknown = || {
        refuse(
            ErrorCode::UnknownTool,
            "unknown_tool",
            format!(
                "tool {:?} is not registered here and the request keeps no spec; cannot check the edit",
                rec.tool
            ),
        )
    };
    let spec = rec.spec.clone().ok_or_else(unknown)?;
    if rec.spec_hash.as_deref() != Some(spec_hash(&spec).as_str()) {
        return Err(unknown());
    }
    let input = CompiledSchema::compile(&spec.input_schema, &SchemaResources::default())
        .map_err(|message| refuse(ErrorCode::InternalError, "invalid_spec", message))?;
    Ok((spec, input))
}

/// Whether `approver` may decide on `record`.
fn may_decide(record: &ApprovalRecord, approver: &Caller) -> Result<(), ToolError> {
    let denied = |why: String| refuse(ErrorCode::PermissionDenied, "not_an_approver", why);
    let Some(who) = &approver.principal else {
        return Err(denied(
            "a decision needs an approver identity (a principal)".into(),
        ));
    };
    if record.requested_by.tenant.is_some() && approver.tenant != record.requested_by.tenant {
        return Err(denied(format!(
            "{who} is not in the tenant this request belongs to"
        )));
    }
    if record.approver_roles.is_empty() {
        if record.requested_by.principal.as_deref() != Some(who.as_str()) {
            return Err(denied(format!(
                "only the principal who asked may confirm this call, and {who} did not ask"
            )));
        }
    } else if !approver
        .roles
        .iter()
        .any(|r| record.approver_roles.contains(r))
    {
        return Err(denied(format!(
            "{who} holds none of the roles allowed to decide: {}",
            record.approver_roles.join(", ")
        )));
    }
    Ok(())
}

/// Records a human decision on a pending approval request; `tools` are the tools an edit
/// is checked against. Refused (with a [`ToolError`] whose `reason` detail names why) when
/// the request is unknown, already decided (a replayed decision), expired, bound to other
/// arguments than the decision names, decided by a caller not allowed to, or edited into
/// invalid arguments.
pub async fn decide(
    store: &dyn StateStore,
    tools: &Snapshot,
    key: Option<&SealKey>,
    approval_id: &str,
    decision: Decision,
    approver: &Caller,
) -> Result<ApprovalRecord, ToolError> {
    let Some((mut rec, version)) = load(store, approval_id).await.map_err(store_refusal)? else {
        return Err(refuse(
            ErrorCode::NotFound,
            "unknown_approval",
            format!("there is no approval request {approval_id:?}"),
        ));
    };
    match rec.status {
        ApprovalStatus::Pending => {}
        ApprovalStatus::Expired => {
            return Err(refuse(
                ErrorCode::ApprovalExpired,
                "expired",
                format!("approval request {approval_id} expired before this decision"),
            ));
        }
        decided => {
            return Err(refuse(
                ErrorCode::Conflict,
                "already_decided",
                format!(
                    "approval request {approval_id} was already decided ({decided:?}); a decision counts once"
                ),
            ));
        }
    }
    may_decide(&rec, approver)?;
    if decision.hash() != rec.arguments_hash {
        return Err(refuse(
            ErrorCode::Conflict,
            "arguments_mismatch",
            "the decision names other arguments than the request holds; show the request again and decide on what it holds",
        ));
    }
    let by = approver.principal.clone().unwrap_or_default();
    let at_ms = now_ms();
    let mut remember = None;
    let (status, record) = match decision {
        Decision::Approve { remember: wish, .. } => {
            if wish.is_some() && rec.requested_by.principal.as_deref() != Some(by.as_str()) {
                return Err(refuse(
                    ErrorCode::PermissionDenied,
                    "not_the_requester",
                    "only the principal who asked can choose to always allow a tool for themself",
                ));
            }
            remember = wish;
            (
                ApprovalStatus::Approved,
                DecisionRecord {
                    by,
                    at_ms,
                    message: None,
                    approved_arguments: Some(rec.arguments.clone()),
                    approved_hash: Some(rec.arguments_hash.clone()),
                    seal: None,
                },
            )
        }
        Decision::Reject { message, .. } => (
            ApprovalStatus::Rejected,
            DecisionRecord {
                by,
                at_ms,
                message,
                approved_arguments: None,
                approved_hash: None,
                seal: None,
            },
        ),
        Decision::Edit { arguments, .. } => {
            let pinned;
            let (spec, input) = match tools.get(&rec.tool) {
                Some(tool) => (&tool.spec, &tool.input),
                None => {
                    pinned = pinned_schema(&rec)?;
                    (&pinned.0, &pinned.1)
                }
            };
            if let Some(name) = changed_hidden(spec, &rec.arguments, &arguments) {
                return Err(refuse(
                    ErrorCode::InvalidArguments,
                    "hidden_argument",
                    format!(
                        "{name:?} is filled by the server for the caller who asked; an edit cannot change it"
                    ),
                )
                .with("argument", name));
            }
            if let Some(refusal) = arguments_envelope(input.check(&arguments)) {
                let e = match refusal {
                    Envelope::Error(e) => e,
                    Envelope::Needs(fields) => ToolError::new(
                        ErrorCode::InvalidArguments,
                        format!(
                            "the edited arguments lack required fields: {}",
                            fields.join(", ")
                        ),
                    ),
                    Envelope::Ok(_) => ToolError::new(
                        ErrorCode::InvalidArguments,
                        "the edited arguments do not match the tool's schema",
                    ),
                };
                return Err(e.with("reason", "invalid_edit"));
            }
            let hash = hash_value(&arguments);
            (
                ApprovalStatus::Edited,
                DecisionRecord {
                    by,
                    at_ms,
                    message: None,
                    approved_arguments: Some(arguments),
                    approved_hash: Some(hash),
                    seal: None,
                },
            )
        }
    };
    rec.status = status;
    rec.decision = Some(record);
    if let Some(key) = key {
        let tag = seal(key, &rec);
        if let Some(d) = rec.decision.as_mut() {
            d.seal = Some(tag);
        }
    }
    let won = put_as(
        store,
        Namespace::Approval,
        approval_id,
        Expect::Version(version),
        &rec,
        Some(RETAIN_DECIDED_MS),
    )
    .await
    .map_err(store_refusal)?;
    if won.is_none() {
        return Err(refuse(
            ErrorCode::Conflict,
            "already_decided",
            format!("approval request {approval_id} was decided by someone else just now"),
        ));
    }
    if let Some(wish) = remember {
        Preference::create(store, &rec.requested_by, &rec.tool, &rec.arguments, wish)
            .await
            .map_err(store_refusal)?;
    }
    Ok(rec)
}

/// One approval request, as stored (expired ones marked so).
pub async fn get(
    store: &dyn StateStore,
    approval_id: &str,
) -> Result<Option<ApprovalRecord>, ToolError> {
    load(store, approval_id)
        .await
        .map(|r| r.map(|(rec, _)| rec))
        .map_err(store_refusal)
}

/// Pending approval requests, oldest first: the approval inbox. `tenant` filters by the
/// asking caller's tenant.
pub async fn pending(
    store: &dyn StateStore,
    tenant: Option<&str>,
) -> Result<Vec<ApprovalRecord>, ToolError> {
    let rows = store
        .list(Namespace::Approval, "", usize::MAX)
        .await
        .map_err(store_refusal)?;
    let now = now_ms();
    let mut out: Vec<ApprovalRecord> = rows
        .into_iter()
        .filter_map(|(_, v)| serde_json::from_value::<ApprovalRecord>(v.value).ok())
        .filter(|r| r.status == ApprovalStatus::Pending && r.expires_at_ms > now)
        .filter(|r| tenant.is_none() || r.requested_by.tenant.as_deref() == tenant)
        .collect();
    out.sort_by_key(|r| r.requested_at_ms);
    Ok(out)
}

/// Decided requests, newest decision first, at most `limit` (of `tenant` when given): what
/// an operator looks back on (who decided what, and what an edit changed).
pub async fn decided(
    store: &dyn StateStore,
    tenant: Option<&str>,
    limit: usize,
) -> Result<Vec<ApprovalRecord>, ToolError> {
    let rows = store
        .list(Namespace::Approval, "", usize::MAX)
        .await
        .map_err(store_refusal)?;
    let mut out: Vec<ApprovalRecord> = rows
        .into_iter()
        .filter_map(|(_, v)| serde_json::from_value::<ApprovalRecord>(v.value).ok())
        .filter(|r| r.decision.is_some())
        .filter(|r| tenant.is_none() || r.requested_by.tenant.as_deref() == tenant)
        .collect();
    out.sort_by_key(|r| std::cmp::Reverse(r.decision.as_ref().map_or(0, |d| d.at_ms)));
    out.truncate(limit);
    Ok(out)
}
