// Types of the agent loop (lib/agent.mjs).
import type { CallStatus, Caller, Engine } from './index.mjs'
import type { JsonProtocolOptions, Message, ModelRequest, ModelTurn, ResultInput, Usage } from './providers.mjs'
import type { StreamEvent } from './stream.mjs'

export type ModelErrorKind = 'rate_limited' | 'server' | 'timeout' | 'network' | 'auth' | 'invalid_request' | 'bad_response' | 'circuit_open' | 'other'
export declare const MODEL_ERROR_KINDS: readonly ModelErrorKind[]

export declare class ModelError extends Error {
  constructor(kind: ModelErrorKind, message: string, options?: { status?: number; retryAfterMs?: number; cause?: unknown })
  readonly name: 'ModelError'
  readonly kind: ModelErrorKind
  readonly status?: number
  readonly retryAfterMs?: number
}

/** What a model function may return: a turn (`finishReason` inferred when missing) or a text answer. */
export type TurnInput = string | (Partial<ModelTurn> & { content?: string })

export type ModelFunction = (request: Required<Pick<ModelRequest, 'model' | 'messages' | 'tools' | 'toolChoice'>> & ModelRequest, emit: (...events: StreamEvent[]) => boolean) => TurnInput | Promise<TurnInput>

export declare class Model {
  protected constructor(token: symbol, native: unknown)
  static fromFunction(fn: ModelFunction, options?: { name?: string }): Model
  readonly name: string
  respond(request: ModelRequest): Promise<ModelTurn>
}

export interface HttpModelOptions {
  baseUrl?: string
  apiKey?: string
  apiKeyEnv?: string
  timeoutMs?: number
  connectTimeoutMs?: number
  maxRetries?: number
  initialBackoffMs?: number
  maxBackoffMs?: number
  stream?: boolean
  strict?: boolean
  /**
   * Sent with every request, names as written (a gateway's key, an organization id); one
   * named like a default (`anthropic-version`) replaces it. An invalid name or value throws.
   */
  headers?: Record<string, string>
}

export declare const HttpModel: {
  openaiCompatible(model: string, options?: HttpModelOptions): Model
  openaiResponses(model: string, options?: HttpModelOptions): Model
  anthropic(model: string, options?: HttpModelOptions): Model
  gemini(model: string, options?: HttpModelOptions): Model
}

export interface BreakerStatus {
  model: string
  state: 'closed' | 'open' | 'half_open'
  consecutiveFailures: number
  successes: number
  failures: number
}

export declare class FallbackChain extends Model {
  constructor(models: Model[], options?: { threshold?: number; cooldownMs?: number })
  status(): BreakerStatus[]
}

export declare class ScriptedModel extends Model {
  constructor(steps: Array<TurnInput | { error: { kind: ModelErrorKind; message: string } }>, options?: { name?: string; streaming?: boolean; forever?: TurnInput })
  requests(): ModelRequest[]
}

export type StopReason = 'answered' | 'step_limit' | 'tool_call_limit' | 'deadline' | 'token_budget' | 'model_failed' | 'refused'

export interface PendingCall {
  callId: string
  tool: string
  status: CallStatus
  arguments: unknown
  approvalId?: string
  argumentsHash?: string
}

export type RunStatus =
  | { status: 'idle' }
  | { status: 'finished'; reason: StopReason }
  | { status: 'needs_input'; needs: Array<{ callId: string; tool: string; fields: string[] }> }
  | { status: 'suspended'; pending: PendingCall[] }

export interface RunCounters {
  steps: number
  modelCalls: number
  modelFailures: number
  toolCalls: number
  toolSuccesses: number
  needsLoops: number
  failuresByCode: Record<string, number>
  usage: Usage
  durationMs: number
  modelMs: number
  toolsMs: number
}

export interface RunOutcome {
  status: RunStatus
  answer: string
  counters: RunCounters
}

export declare class AgentState {
  constructor(message?: string)
  static fromMessages(messages: Message[]): AgentState
  static fromJSON(stored: string | object): AgentState
  toJSON(): object
  view(): Record<string, unknown> & { runId: string; messages: Message[]; status: RunStatus; counters: RunCounters; answer: string }
  readonly runId: string
  readonly messages: Message[]
  readonly status: RunStatus
  readonly counters: RunCounters
}

export type Mode = 'act_first' | 'talk_first' | 'auto'

export interface AgentOptions {
  responder?: Model
  system?: string
  limits?: {
    maxSteps?: number
    maxToolCallsPerStep?: number
    maxToolCallsPerRun?: number
    deadlineMs?: number
    tokenBudget?: number
    batchDeadlineMs?: number
  }
  mode?: Mode
  responderTools?: boolean
  protocol?: 'native' | { json: JsonProtocolOptions }
  maxTokens?: number
  temperature?: number
  concurrency?: number
}

/** A run: its events (`for await`) and its outcome (`await run` or `run.outcome`). */
export interface AgentRun extends AsyncIterable<StreamEvent>, PromiseLike<RunOutcome> {
  readonly outcome: Promise<RunOutcome>
}

export interface AgentRunOptions {
  caller?: Caller
  mode?: Mode
}

export declare class Agent {
  constructor(engine: Engine, model: Model, options?: AgentOptions)
  constructor(engine: Engine, model: Model, responder: Model, options?: AgentOptions)
  run(state: AgentState, options?: AgentRunOptions): AgentRun
  send(state: AgentState, message: string, options?: AgentRunOptions): AgentRun
  resume(state: AgentState, options?: AgentRunOptions): AgentRun
  resumeWithResults(state: AgentState, results: ResultInput[], options?: AgentRunOptions): AgentRun
}
