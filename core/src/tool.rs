//! A tool ready to register: its spec plus the handler that runs it.

use crate::handler::{BoxFuture, Handler, HandlerError, HandlerResult, ToolContext, handler_fn};
use crate::policy::Policy;
use crate::spec::ToolSpec;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

/// A tool: spec and handler. A tool without a handler is executed by someone else (a
/// client-side tool); its calls end as pending.
#[derive(Clone)]
pub struct Tool {
    /// What the tool is, as data.
    pub spec: ToolSpec,
    /// What runs it; `None` for client-side tools.
    pub handler: Option<Arc<dyn Handler>>,
    /// Turns its data into what the model sees (`model_output.rs`); the app still gets the
    /// data.
    pub to_model_output: Option<Arc<dyn Handler>>,
    /// Runs after each call that succeeded (`on_success.rs`): a notification, an outbox
    /// record; never seen by the model.
    pub on_success: Option<Arc<dyn Handler>>,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("spec", &self.spec)
            .field("has_handler", &self.handler.is_some())
            .field("has_to_model_output", &self.to_model_output.is_some())
            .field("has_on_success", &self.on_success.is_some())
            .finish()
    }
}

impl Tool {
    /// A tool from a spec and a handler.
    pub fn new(spec: ToolSpec, handler: Arc<dyn Handler>) -> Self {
        Tool {
            spec,
            handler: Some(handler),
            to_model_output: None,
            on_success: None,
        }
    }

    /// A tool over raw JSON arguments, from an async closure.
    pub fn from_fn<F, Fut>(name: &str, description: &str, input_schema: Value, f: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult> + Send + 'static,
    {
        Tool::new(
            ToolSpec::new(name, description, input_schema),
            handler_fn(f),
        )
    }

    /// A typed tool: the input schema is derived from `A` with schemars, arguments are
    /// deserialized into `A`, and the output is serialized from `O`.
    ///
    /// ```
    /// # use tooljig::{Tool, HandlerError};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add { a: i64, b: i64 }
    /// let tool = Tool::typed("add", "Adds two numbers.", |args: Add, _ctx| async move {
    ///     Ok::<_, HandlerError>(args.a + args.b)
    /// });
    /// assert_eq!(tool.spec.input_schema["required"], serde_json::json!(["a", "b"]));
    /// ```
    pub fn typed<A, O, F, Fut>(name: &str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + Send + 'static,
        F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, HandlerError>> + Send + 'static,
    {
        let schema = serde_json::to_value(schemars::schema_for!(A))
            .unwrap_or_else(|_| serde_json::json!({}));
        let handler = Typed {
            f,
            args: PhantomData,
        };
        Tool::new(ToolSpec::new(name, description, schema), Arc::new(handler))
    }

    /// A client-side tool: registered so models can call it, executed elsewhere.
    pub fn external(spec: ToolSpec) -> Self {
        Tool {
            spec,
            handler: None,
            to_model_output: None,
            on_success: None,
        }
    }

    /// Replaces the policy.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.spec.policy = policy;
        self
    }

    /// Sets the hook that turns the tool's data into what the model sees (a summary, a
    /// reference to an image): it is called like a handler, with the data as its arguments,
    /// and what it returns is the model's `data`; the app still gets the whole result
    /// (`CallResult::model_output` holds the model's). See `docs/tools.md`.
    pub fn to_model_output(mut self, hook: Arc<dyn Handler>) -> Self {
        self.to_model_output = Some(hook);
        self
    }

    /// Sets what runs after each call of the tool that succeeded, out of the model's reach:
    /// a notification to the counterpart, an outbox record. It is called like a handler
    /// (the call's caller, the tool's timeout) with `{"arguments": ..., "result": <data>}`,
    /// once per run of the handler: not for a replayed duplicate, a cache hit, a refusal or a
    /// failure. Its answer is ignored and its failure never changes the call's result (the
    /// effect happened); the reason goes to the result's `detail` and the audit record. See
    /// `docs/tools.md`.
    pub fn on_success(mut self, hook: Arc<dyn Handler>) -> Self {
        self.on_success = Some(hook);
        self
    }

    /// Sets an output schema, checked after every successful run.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.spec.output_schema = Some(schema);
        self
    }
}

/// A typed tool's handler ([`Tool::typed`]): reads the arguments it is lent into `A`, with
/// no copy of them first.
struct Typed<A, F> {
    f: F,
    args: PhantomData<fn() -> A>,
}

impl<A, O, F, Fut> Handler for Typed<A, F>
where
    A: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, HandlerError>> + Send + 'static,
{
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        self.call_ref(&args, ctx)
    }

    fn call_ref(&self, args: &Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        // The schema already passed, so a failure here is a mismatch between the derived
        // schema and serde's view of `A`: an app bug, not the model's.
        let run = <A as serde::Deserialize>::deserialize(args).map(|args| (self.f)(args, ctx));
        Box::pin(async move {
            let out = run.map_err(HandlerError::unexpected)?.await?;
            serde_json::to_value(out).map_err(HandlerError::unexpected)
        })
    }
}
