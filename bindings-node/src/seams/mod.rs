//! The core's seams over the app's JavaScript functions: the policy hook, resolvers of
//! hidden arguments and the approval predicate. Each asks the JS layer through the
//! dispatcher, with the host it is given, and fails closed when the function misbehaves.

pub mod approval_predicate;
pub mod policy_hook;
pub mod resolver;

pub use approval_predicate::JsApprovalPredicate;
pub use policy_hook::JsPolicyHook;
pub use resolver::JsResolver;
