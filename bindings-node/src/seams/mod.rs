//! The core's seams over the app's JavaScript functions: the policy hook, resolvers of
//! hidden arguments, the approval predicate and the MCP server's auth hook. Each asks the JS layer through the
//! dispatcher, with the host it is given, and fails closed when the function misbehaves.

pub mod approval_predicate;
pub mod http_auth;
pub mod policy_hook;
pub mod resolver;

pub use approval_predicate::JsApprovalPredicate;
pub use http_auth::JsHttpAuth;
pub use policy_hook::JsPolicyHook;
pub use resolver::JsResolver;
