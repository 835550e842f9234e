// Types of the provider formats (lib/providers.mjs). Neutral values use camelCase keys;
// provider-shaped values (request bodies, provider messages) are plain JSON.
import type { Call, CallResult, Envelope, EnvelopeError, ToolSpec, BatchResult } from './index.mjs'

export type ProviderName = 'openai_chat' | 'openai_responses' | 'anthropic' | 'gemini'
export declare const PROVIDERS: readonly ProviderName[]

/** A tool call as a model made it: `arguments` exactly as received (JSON text or a value). */
export interface ToolCall {
  id: string
  name: string
  arguments: unknown
  /** The stream ended inside the arguments: the call must never run. */
  incomplete?: boolean
  /** What must be echoed back to the provider (a Responses item id, a Gemini thought signature). */
  providerData?: unknown
}

/** One call's result in a conversation. */
export interface ToolResult {
  callId: string
  name: string
  envelope: Envelope
}

/** One message of a provider-neutral conversation. */
export type Message =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; results: ToolResult[] }

export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'refusal' | 'unfinished' | 'other'

export interface Usage {
  inputTokens: number
  outputTokens: number
}

/** What one model call produced, whatever the provider. */
export interface ModelTurn {
  content: string
  toolCalls: ToolCall[]
  finishReason: FinishReason
  rawFinishReason?: string
  usage?: Usage
  refusal?: string
  model?: string
}

export type ToolChoice = 'auto' | 'required' | 'none' | { tool: string }

/** Everything a model call needs, provider-neutral. */
export interface ModelRequest {
  model: string
  messages: Message[]
  tools?: ToolSpec[]
  toolChoice?: ToolChoice
  maxTokens?: number
  temperature?: number
  stream?: boolean
  responseSchema?: unknown
}

export interface ProviderOptions {
  /** OpenAI formats: offer tools in strict mode. */
  strict?: boolean
  /** Ask for one call at a time. */
  sequentialToolCalls?: boolean
  /** Gemini: parameters in the OpenAPI subset. */
  openapiSchema?: boolean
}

/** A call result the app made itself needs only these fields. */
export type ResultInput = Partial<CallResult> & { callId: string; tool: string; envelope: Envelope }

export declare class ProviderError extends Error {
  readonly name: 'ProviderError'
}

export declare class Provider {
  constructor(name: ProviderName, options?: ProviderOptions)
  readonly name: ProviderName
  static openaiChat(options?: ProviderOptions): Provider
  static openaiResponses(options?: ProviderOptions): Provider
  static anthropic(options?: ProviderOptions): Provider
  static gemini(options?: ProviderOptions): Provider
  tools(specs: ToolSpec[], strict?: boolean): any[]
  request(request: ModelRequest): Record<string, any>
  parseResponse(body: unknown): ModelTurn
  messages(messages: Message[]): any[]
  parseMessages(messages: unknown[]): Message[]
  toolResults(results: ResultInput[] | BatchResult): any[]
}

export declare const ModelTurn: {
  intoBatch(turn: ModelTurn): { calls: Call[]; refused: CallResult[] }
  dropStrictNulls(turn: ModelTurn, specs: ToolSpec[]): ModelTurn
}

export declare function toStrict(schema: Record<string, unknown>): Record<string, unknown>

export interface JsonProtocolOptions {
  shape?: 'per_tool' | 'flat'
  dependencies?: boolean
  reasoning?: boolean
  maxCalls?: number
}

export interface JsonPlan {
  calls: Call[]
  reasoning: string | null
  repaired: boolean
}

export declare class JsonProtocol {
  constructor(options?: JsonProtocolOptions)
  readonly options: JsonProtocolOptions
  responseSchema(specs: ToolSpec[]): Record<string, unknown>
  prompt(specs: ToolSpec[]): string
  parse(text: string): JsonPlan
  formatResults(results: ResultInput[] | BatchResult): string
}

export type { EnvelopeError }
