//! Questions asked of the audit log: by principal, tenant, tool, call, outcome, code and time.

use crate::error_code::ErrorCode;
use crate::guard::audit::entry::Indexed;
use crate::guard::audit::record::{AuditRecord, Outcome};
use serde::{Deserialize, Serialize};

/// A value a SQL sink binds for one condition of a query.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Bound {
    /// A text column's value.
    Text(String),
    /// A time in ms, clamped into SQL's signed integers (`u64::MAX` means "no bound", not -1).
    Int(i64),
}

/// The fields of a record a query looks at.
struct Fields<'a> {
    principal: Option<&'a str>,
    tenant: Option<&'a str>,
    tool: &'a str,
    call_id: &'a str,
    outcome: Outcome,
    code: Option<ErrorCode>,
    time_ms: u64,
}

/// A filter over audit records; every field set must match. Results come in log order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditQuery {
    /// Only this principal's calls.
    pub principal: Option<String>,
    /// Only this tenant's calls.
    pub tenant: Option<String>,
    /// Only calls of this tool.
    pub tool: Option<String>,
    /// Only the call with this id.
    pub call_id: Option<String>,
    /// Only calls that ended this way.
    pub outcome: Option<Outcome>,
    /// Only calls refused or failed with this code.
    pub code: Option<ErrorCode>,
    /// Only calls settled at or after this time (ms since the Unix epoch).
    pub since_ms: Option<u64>,
    /// Only calls settled before this time (ms since the Unix epoch).
    pub until_ms: Option<u64>,
    /// At most this many records, the newest ones when set.
    pub limit: Option<usize>,
}

impl AuditQuery {
    /// Every record.
    pub fn all() -> Self {
        Self::default()
    }

    /// This principal's records.
    pub fn principal(principal: impl Into<String>) -> Self {
        AuditQuery {
            principal: Some(principal.into()),
            ..Self::default()
        }
    }

    /// Whether `r` passes the filter (the limit aside).
    pub fn matches(&self, r: &AuditRecord) -> bool {
        self.passes(Fields {
            principal: r.principal.as_deref(),
            tenant: r.tenant.as_deref(),
            tool: &r.tool,
            call_id: &r.call_id,
            outcome: r.outcome,
            code: r.code,
            time_ms: r.time_ms,
        })
    }

    /// Whether a record with these indexed fields passes the filter (the limit aside): every
    /// field a query asks about is one stores index.
    pub fn matches_indexed(&self, i: &Indexed) -> bool {
        self.passes(Fields {
            principal: i.principal(),
            tenant: i.tenant(),
            tool: i.tool(),
            call_id: i.call_id(),
            outcome: i.outcome,
            code: i.code,
            time_ms: i.time_ms,
        })
    }

    fn passes(&self, r: Fields<'_>) -> bool {
        fn same(want: &Option<String>, got: Option<&str>) -> bool {
            want.is_none() || want.as_deref() == got
        }
        same(&self.principal, r.principal)
            && same(&self.tenant, r.tenant)
            && self.tool.as_ref().is_none_or(|t| t == r.tool)
            && self.call_id.as_ref().is_none_or(|c| c == r.call_id)
            && self.outcome.is_none_or(|o| o == r.outcome)
            && self.code.is_none_or(|c| Some(c) == r.code)
            && self.since_ms.is_none_or(|s| r.time_ms >= s)
            && self.until_ms.is_none_or(|u| r.time_ms < u)
    }

    /// Filters records given in log order, keeping the newest `limit`.
    pub fn apply<'a>(
        &self,
        records: impl IntoIterator<Item = &'a AuditRecord>,
    ) -> Vec<AuditRecord> {
        let mut out: Vec<AuditRecord> = records
            .into_iter()
            .filter(|r| self.matches(r))
            .cloned()
            .collect();
        if let Some(limit) = self.limit {
            let skip = out.len().saturating_sub(limit);
            out.drain(..skip);
        }
        out
    }

    /// The filter as SQL conditions over the sinks' shared columns, in order: column,
    /// operator and the value to bind. Each SQL sink writes them with its own placeholders.
    pub(crate) fn conditions(&self) -> Vec<(&'static str, &'static str, Bound)> {
        let text = |col, v: Option<String>| v.map(|v| (col, "=", Bound::Text(v)));
        let time = |op, v: Option<u64>| {
            v.map(|v| {
                (
                    "time_ms",
                    op,
                    Bound::Int(i64::try_from(v).unwrap_or(i64::MAX)),
                )
            })
        };
        [
            text("principal", self.principal.clone()),
            text("tenant", self.tenant.clone()),
            text("tool", self.tool.clone()),
            text("call_id", self.call_id.clone()),
            text("outcome", self.outcome.map(|o| o.as_str().to_string())),
            text("code", self.code.map(|c| c.as_str().to_string())),
            time(">=", self.since_ms),
            time("<", self.until_ms),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The order and limit of a SQL query: the newest `limit` (to be reversed into log
    /// order), or everything in log order.
    pub(crate) fn order_and_limit(&self) -> String {
        match self.limit {
            Some(n) => format!(" ORDER BY seq DESC LIMIT {n}"),
            None => " ORDER BY seq ASC".into(),
        }
    }
}
