// tooljig: run the tool calls that language models propose. See README.md.
export { Engine } from './engine.mjs'
export { importTools } from './imports.mjs'
export { InboxServer } from './inbox.mjs'
export { McpClient, McpServer } from './mcp.mjs'
export { tool } from './tool.mjs'
export { ToolContext } from './context.mjs'
export { exportTraces } from './otel.mjs'
export { Accepted, ErrorCodes, InvalidArguments, Needs, RegistrationError, ToolError, accepted, needs } from './errors.mjs'
export { JsonProtocol, ModelTurn, PROVIDERS, Provider, ProviderError, toStrict } from './providers.mjs'
export { StreamParser, UiMessageStream, parseStream, pipeUiMessageStream, toUiMessageStream, uiMessageStreamResponse } from './stream.mjs'
export { Agent, AgentState, FallbackChain, HttpModel, MODEL_ERROR_KINDS, Model, ModelError, ScriptedModel } from './agent.mjs'

// The data types, re-exported for `import type { Call, ... } from 'tooljig'` (lib/types.d.mts).
/** @typedef {import('./types.mjs').ErrorCode} ErrorCode */
/** @typedef {import('./types.mjs').EnvelopeError} EnvelopeError */
/**
 * @template [T=unknown]
 * @typedef {import('./types.mjs').Envelope<T>} Envelope
 */
/** @typedef {import('./types.mjs').CallStatus} CallStatus */
/** @typedef {import('./types.mjs').CallResult} CallResult */
/** @typedef {import('./types.mjs').BatchResult} BatchResult */
/** @typedef {import('./types.mjs').Call} Call */
/** @typedef {import('./types.mjs').Caller} Caller */
/** @typedef {import('./types.mjs').RunOptions} RunOptions */
/** @typedef {import('./types.mjs').RetryPolicy} RetryPolicy */
/** @typedef {import('./types.mjs').Policy} Policy */
/** @typedef {import('./types.mjs').Risk} Risk */
/** @typedef {import('./types.mjs').ApprovalStatus} ApprovalStatus */
/** @typedef {import('./types.mjs').ApprovalInfo} ApprovalInfo */
/** @typedef {import('./types.mjs').ApprovalRecord} ApprovalRecord */
/** @typedef {import('./types.mjs').Decision} Decision */
/** @typedef {import('./types.mjs').Preference} Preference */
/** @typedef {import('./types.mjs').ExternalCall} ExternalCall */
/** @typedef {import('./types.mjs').JobStatus} JobStatus */
/** @typedef {import('./types.mjs').RollbackEntry} RollbackEntry */
/** @typedef {import('./types.mjs').RollbackReport} RollbackReport */
/** @typedef {import('./types.mjs').OperatorRequest} OperatorRequest */
/** @typedef {import('./types.mjs').RunRecord} RunRecord */
/** @typedef {import('./types.mjs').ApprovalQuery} ApprovalQuery */
/** @typedef {import('./types.mjs').ToolSpec} ToolSpec */
/** @typedef {import('./types.mjs').JsonSchema} JsonSchema */
/**
 * @template [Input=unknown]
 * @template [Output=Input]
 * @typedef {import('./types.mjs').StandardSchemaV1<Input, Output>} StandardSchemaV1
 */
/**
 * @template Output
 * @typedef {import('./types.mjs').StandardResult<Output>} StandardResult
 */
/**
 * @template S
 * @typedef {import('./types.mjs').InferOutput<S>} InferOutput
 */
/**
 * @template Args
 * @template Out
 * @typedef {import('./types.mjs').Execute<Args, Out>} Execute
 */
/**
 * @template [Args=any]
 * @template [Out=unknown]
 * @typedef {import('./types.mjs').Tool<Args, Out>} Tool
 */
/**
 * @template [Out=unknown]
 * @template [Args=Record<string, unknown>]
 * @typedef {import('./types.mjs').ToolHooks<Out, Args>} ToolHooks
 */
/**
 * @template [Args=Record<string, unknown>]
 * @template [Out=unknown]
 * @typedef {import('./types.mjs').SuccessEvent<Args, Out>} SuccessEvent
 */
/** @typedef {import('./types.mjs').BatchEvent} BatchEvent */
/** @typedef {import('./types.mjs').BatchStream} BatchStream */
/** @typedef {import('./types.mjs').AccessRequest} AccessRequest */
/** @typedef {import('./types.mjs').AccessDecision} AccessDecision */
/** @typedef {import('./types.mjs').ResolveRequest} ResolveRequest */
/** @typedef {import('./types.mjs').Resolution} Resolution */
/** @typedef {import('./types.mjs').Settings} Settings */
/** @typedef {import('./types.mjs').AuditQuery} AuditQuery */
/** @typedef {import('./types.mjs').AuditRecord} AuditRecord */
/** @typedef {import('./types.mjs').EngineOptions} EngineOptions */
/** @typedef {import('./types.mjs').Violation} Violation */
/** @typedef {import('./types.mjs').RegistrationErrorCode} RegistrationErrorCode */
/** @typedef {import('./types.mjs').ProviderName} ProviderName */
/** @typedef {import('./types.mjs').ToolCall} ToolCall */
/** @typedef {import('./types.mjs').ToolResult} ToolResult */
/** @typedef {import('./types.mjs').Message} Message */
/** @typedef {import('./types.mjs').FinishReason} FinishReason */
/** @typedef {import('./types.mjs').Usage} Usage */
/** @typedef {import('./types.mjs').ToolChoice} ToolChoice */
/** @typedef {import('./types.mjs').ModelRequest} ModelRequest */
/** @typedef {import('./types.mjs').ProviderOptions} ProviderOptions */
/** @typedef {import('./types.mjs').ResultInput} ResultInput */
/** @typedef {import('./types.mjs').JsonProtocolOptions} JsonProtocolOptions */
/** @typedef {import('./types.mjs').JsonPlan} JsonPlan */
/** @typedef {import('./types.mjs').StreamEvent} StreamEvent */
/** @typedef {import('./types.mjs').ResponseLike} ResponseLike */
/** @typedef {import('./types.mjs').ModelErrorKind} ModelErrorKind */
/** @typedef {import('./types.mjs').TurnInput} TurnInput */
/** @typedef {import('./types.mjs').ModelFunction} ModelFunction */
/** @typedef {import('./types.mjs').HttpModelOptions} HttpModelOptions */
/** @typedef {import('./types.mjs').BreakerStatus} BreakerStatus */
/** @typedef {import('./types.mjs').StopReason} StopReason */
/** @typedef {import('./types.mjs').PendingCall} PendingCall */
/** @typedef {import('./types.mjs').RunStatus} RunStatus */
/** @typedef {import('./types.mjs').RunCounters} RunCounters */
/** @typedef {import('./types.mjs').RunOutcome} RunOutcome */
/** @typedef {import('./types.mjs').Mode} Mode */
/** @typedef {import('./types.mjs').AgentOptions} AgentOptions */
/** @typedef {import('./types.mjs').AgentRun} AgentRun */
/** @typedef {import('./types.mjs').AgentRunOptions} AgentRunOptions */
