// Types of the streams (lib/stream.mjs).
import type { EnvelopeError } from './index.mjs'
import type { FinishReason, ModelTurn, Provider, ProviderName, Usage } from './providers.mjs'

/** One thing that happened while a model answered or a run went on. */
export type StreamEvent =
  | { type: 'start'; runId: string }
  | { type: 'step_start'; step: number }
  | { type: 'text_delta'; delta: string }
  | { type: 'reasoning_delta'; delta: string }
  | { type: 'tool_input_start'; callId: string; tool: string }
  | { type: 'tool_input_delta'; callId: string; delta: string; partial?: unknown }
  | { type: 'tool_input_available'; callId: string; tool: string; input: unknown }
  | { type: 'tool_input_incomplete'; callId: string; tool: string; text: string; partial?: unknown; reason: string }
  | { type: 'tool_output_available'; callId: string; tool: string; output: unknown }
  | { type: 'tool_output_error'; callId: string; tool: string; error: EnvelopeError }
  | { type: 'tool_approval_request'; callId: string; tool: string; approvalId: string }
  | { type: 'tool_output_pending'; callId: string; tool: string; input: unknown }
  | { type: 'step_finish'; step: number; finishReason: FinishReason; usage: Usage }
  | { type: 'finish'; finishReason: FinishReason }
  | { type: 'error'; message: string }

export declare class StreamParser {
  constructor(provider: ProviderName | Provider)
  push(bytes: Uint8Array | string): StreamEvent[]
  finish(): { events: StreamEvent[]; turn: ModelTurn }
}

export declare function parseStream(provider: ProviderName | Provider, bytes: Uint8Array | string): { events: StreamEvent[]; turn: ModelTurn }

export declare class UiMessageStream {
  static readonly HEADERS: Readonly<Record<string, string>>
  constructor(messageId: string)
  encode(event: StreamEvent): string
  chunks(event: StreamEvent): Array<Record<string, unknown>>
  done(): string
}

export declare function toUiMessageStream(messageId: string, events: Iterable<StreamEvent>): string

/** What `pipeUiMessageStream` writes to: a `node:http` ServerResponse, or alike. */
export interface ResponseLike {
  readonly headersSent?: boolean
  writeHead(status: number, headers: Record<string, string>): unknown
  write(chunk: string): unknown
  end(chunk?: string): unknown
}

export declare function pipeUiMessageStream(events: AsyncIterable<StreamEvent> | Iterable<StreamEvent>, response: ResponseLike, options?: { messageId?: string }): Promise<void>

export declare function uiMessageStreamResponse(events: AsyncIterable<StreamEvent> | Iterable<StreamEvent>, options?: { messageId?: string; status?: number }): Response
