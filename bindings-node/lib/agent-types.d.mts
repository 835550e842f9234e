// The types of the agent loop's data (models, runs, their options and outcomes): pure
// declarations, re-exported by types.d.mts, split from it so each file stays readable.

import type { Model } from './agent.mjs'
import type { CallStatus, Caller, JsonProtocolOptions, ModelRequest, ModelTurn, StreamEvent, ToolSpec, Usage } from './types.mjs'

export type ModelErrorKind = 'rate_limited' | 'server' | 'timeout' | 'network' | 'auth' | 'invalid_request' | 'bad_response' | 'circuit_open' | 'other'

/** What a model function may return: a turn (`finishReason` inferred when missing) or a text answer. */
export type TurnInput = string | (Partial<ModelTurn> & { content?: string })

export type ModelFunction = (request: Required<Pick<ModelRequest, 'model' | 'messages' | 'tools' | 'toolChoice'>> & ModelRequest, emit: (...events: StreamEvent[]) => boolean) => TurnInput | Promise<TurnInput>

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

export interface BreakerStatus {
  model: string
  state: 'closed' | 'open' | 'half_open'
  consecutiveFailures: number
  successes: number
  failures: number
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
  /** `needs`: calls of the same batch that lack fields; the answer is then one question for them. */
  | { status: 'suspended'; pending: PendingCall[]; needs?: Array<{ callId: string; tool: string; fields: string[] }> }

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
  /** Offer at most this many tools a turn: the best matches of the user's latest message, plus `search_tools` when registered. */
  offerTools?: number
  /**
   * Each batch the model asks for is atomic: once a call fails none starts after it, and the
   * completed ones are compensated (after an approval and a resume too).
   */
  atomic?: boolean
  /**
   * Picks the tools a turn offers: the user's latest message and the specs the caller may use
   * (after `offerTools`) in, the names to offer out, in order. Names it makes up are ignored; if
   * it throws, every candidate is offered.
   */
  selectTools?: (message: string, tools: ToolSpec[]) => string[] | Promise<string[]>
  /**
   * The last word on each turn's plan, before it runs: the user's latest message, the model's
   * calls and the names of the tools the caller may use in, the calls to run out (the model's,
   * fewer, or a needed one the model skipped). An `id` of a model's call keeps it (its
   * arguments replaced when given); a tool the caller may not use is dropped; if it throws,
   * the model's calls run.
   */
  reviewPlan?: (message: string, calls: PlannedCall[], tools: string[]) => ReviewedCall[] | Promise<ReviewedCall[]>
}

/** A call the planner asked for, as `reviewPlan` sees it. */
export interface PlannedCall {
  id: string
  name: string
  arguments: unknown
}

/** A call `reviewPlan` answers: one of the model's (by `id`) or a new one. */
export interface ReviewedCall {
  id?: string
  name: string
  arguments?: unknown
}

/** A run: its events (`for await`) and its outcome (`await run` or `run.outcome`). */
export interface AgentRun extends AsyncIterable<StreamEvent>, PromiseLike<RunOutcome> {
  readonly outcome: Promise<RunOutcome>
}

export interface AgentRunOptions {
  caller?: Caller
  mode?: Mode
}
