//! Hidden parameters as a tool's policy declares them: arguments the model never fills.
//! `guard/hidden.rs` fills them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a hidden parameter's value comes from. In JSON: `{"from": "principal"}`,
/// `{"from": "attribute", "name": "department_id"}`,
/// `{"from": "resolver", "resolver": "contacts", "input": "counterpart"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case", deny_unknown_fields)]
pub enum HiddenParam {
    /// The caller's principal id.
    Principal,
    /// The caller's tenant id.
    Tenant,
    /// The caller's session or conversation id.
    Session,
    /// One of the caller's free-form attributes.
    Attribute {
        /// The attribute's key.
        name: String,
    },
    /// A resolver registered on the engine, fed with another (model-facing) argument.
    Resolver {
        /// The resolver's name (see [`crate::Engine::with_resolver`]).
        resolver: String,
        /// The model-facing argument holding the human reference; it stays in the arguments.
        input: String,
    },
}

impl HiddenParam {
    /// A short label for notes and audit records: `principal`, `attribute:dept`, `resolver:contacts`.
    pub fn source(&self) -> String {
        match self {
            HiddenParam::Principal => "principal".into(),
            HiddenParam::Tenant => "tenant".into(),
            HiddenParam::Session => "session".into(),
            HiddenParam::Attribute { name } => format!("attribute:{name}"),
            HiddenParam::Resolver { resolver, .. } => format!("resolver:{resolver}"),
        }
    }
}

/// Checks a tool's hidden parameters at registration.
pub fn check_policy(hidden: &BTreeMap<String, HiddenParam>) -> Result<(), String> {
    for (name, param) in hidden {
        if let HiddenParam::Resolver { input, .. } = param
            && hidden.contains_key(input)
        {
            return Err(format!(
                "hidden parameter {name:?} resolves from {input:?}, which is itself hidden; \
                     a resolver's input must be an argument the model fills"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_resolver_input_may_not_be_hidden() {
        let h: BTreeMap<String, HiddenParam> = serde_json::from_value(json!({
            "a": {"from": "principal"},
            "b": {"from": "resolver", "resolver": "r", "input": "a"}
        }))
        .unwrap();
        assert!(check_policy(&h).is_err());
    }
}
