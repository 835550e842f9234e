// Streams: the idiomatic face of `src/stream.rs`. A provider's server-sent events in,
// tooljig's stream events out; tooljig's events out again as the Vercel AI SDK UI message
// stream, so a Node server can pipe a run to a `useChat` front end.
import native from '../index.js'
import { providerCall } from './providers.mjs'
/** @import { ProviderName, ResponseLike, StreamEvent } from './types.mjs' */
/** @import { ModelTurn as ModelTurnData } from './types.mjs' */
/** @import { Provider } from './providers.mjs' */

const { NativeStreamParser, NativeUiMessageStream } = native

/**
 * Parses one provider's stream incrementally: `push(bytes)` as they arrive (any split)
 * returns the events they complete; `finish()` returns the last events and the whole turn.
 */
export class StreamParser {
  #native

  /**
   * @param {ProviderName | Provider} provider
   */
  constructor(provider) {
    this.#native = new NativeStreamParser(typeof provider === 'string' ? provider : provider.name)
  }

  /**
   * @param {Uint8Array | string} bytes
   * @returns {StreamEvent[]}
   */
  push(bytes) {
    const input = typeof bytes === 'string' ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    return providerCall(() => this.#native.push(input))
  }

  /**
   * @returns {{events: StreamEvent[], turn: ModelTurnData}}
   */
  finish() {
    return providerCall(() => this.#native.finish())
  }
}

/**
 * Parses a whole recorded stream: `{events, turn}`.
 * @param {ProviderName | Provider} provider
 * @param {Uint8Array | string} bytes
 * @returns {{events: StreamEvent[], turn: ModelTurnData}}
 */
export function parseStream(provider, bytes) {
  const parser = new StreamParser(provider)
  const events = parser.push(bytes)
  const last = parser.finish()
  return { events: [...events, ...last.events], turn: last.turn }
}

/** Writes one assistant message's UI message stream (protocol v1). */
export class UiMessageStream {
  /** The response headers of a UI message stream. */
  static HEADERS = Object.freeze(native.uiMessageStreamHeaders())

  #native

  /**
   * @param {string} messageId
   */
  constructor(messageId) {
    this.#native = new NativeUiMessageStream(String(messageId))
  }

  /**
   * The server-sent-event frames of one tooljig event.
   * @param {StreamEvent} event
   * @returns {string}
   */
  encode(event) {
    return this.#native.encode(event)
  }

  /**
   * The UI chunks of one event, as objects.
   * @param {StreamEvent} event
   * @returns {Array<Record<string, unknown>>}
   */
  chunks(event) {
    return this.#native.chunks(event)
  }

  /**
   * Closes the stream (open parts ended, then `data: [DONE]`).
   * @returns {string}
   */
  done() {
    return this.#native.done()
  }
}

/**
 * A whole run's events as one UI message stream text.
 * @param {string} messageId
 * @param {Iterable<StreamEvent>} events
 * @returns {string}
 */
export function toUiMessageStream(messageId, events) {
  return native.toUiMessageStream(String(messageId), [...events])
}

/**
 * Writes a run's events (any iterable or async iterable, e.g. `agent.run(...)`) to a
 * `node:http` response as a UI message stream, headers included; resolves when done.
 * @param {AsyncIterable<StreamEvent> | Iterable<StreamEvent>} events
 * @param {ResponseLike} response
 * @param {{messageId?: string}} [options]
 * @returns {Promise<void>}
 */
export async function pipeUiMessageStream(events, response, { messageId = `msg_${Date.now().toString(36)}` } = {}) {
  const ui = new UiMessageStream(messageId)
  if (!response.headersSent) response.writeHead(200, UiMessageStream.HEADERS)
  for await (const event of events) {
    const frames = ui.encode(event)
    if (frames) response.write(frames)
  }
  response.end(ui.done())
}

/**
 * A web `Response` streaming a run's events as a UI message stream (for fetch-style servers).
 * @param {AsyncIterable<StreamEvent> | Iterable<StreamEvent>} events
 * @param {{messageId?: string, status?: number}} [options]
 * @returns {Response}
 */
export function uiMessageStreamResponse(events, { messageId = `msg_${Date.now().toString(36)}`, status = 200 } = {}) {
  const ui = new UiMessageStream(messageId)
  const encoder = new TextEncoder()
  const body = new ReadableStream({
    async start(controller) {
      try {
        for await (const event of events) {
          const frames = ui.encode(event)
          if (frames) controller.enqueue(encoder.encode(frames))
        }
        controller.enqueue(encoder.encode(ui.done()))
        controller.close()
      } catch (e) {
        controller.error(e)
      }
    },
  })
  return new Response(body, { status, headers: UiMessageStream.HEADERS })
}
