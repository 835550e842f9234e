// Streams: the idiomatic face of `src/stream.rs`. A provider's server-sent events in,
// tooljig's stream events out; tooljig's events out again as the Vercel AI SDK UI message
// stream, so a Node server can pipe a run to a `useChat` front end.
import native from '../index.js'
import { providerCall } from './providers.mjs'

const { NativeStreamParser, NativeUiMessageStream } = native

/**
 * Parses one provider's stream incrementally: `push(bytes)` as they arrive (any split)
 * returns the events they complete; `finish()` returns the last events and the whole turn.
 */
export class StreamParser {
  #native

  /** @param {string} provider `openai_chat`, `openai_responses`, `anthropic` or `gemini` (or a `Provider`) */
  constructor(provider) {
    this.#native = new NativeStreamParser(typeof provider === 'string' ? provider : provider.name)
  }

  /** @param {Uint8Array | string} bytes */
  push(bytes) {
    const input = typeof bytes === 'string' ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    return providerCall(() => this.#native.push(input))
  }

  /** @returns {{events: object[], turn: object}} */
  finish() {
    return providerCall(() => this.#native.finish())
  }
}

/** Parses a whole recorded stream: `{events, turn}`. */
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

  constructor(messageId) {
    this.#native = new NativeUiMessageStream(String(messageId))
  }

  /** The server-sent-event frames of one tooljig event. */
  encode(event) {
    return this.#native.encode(event)
  }

  /** The UI chunks of one event, as objects. */
  chunks(event) {
    return this.#native.chunks(event)
  }

  /** Closes the stream (open parts ended, then `data: [DONE]`). */
  done() {
    return this.#native.done()
  }
}

/** A whole run's events as one UI message stream text. */
export function toUiMessageStream(messageId, events) {
  return native.toUiMessageStream(String(messageId), [...events])
}

/**
 * Writes a run's events (any iterable or async iterable, e.g. `agent.run(...)`) to a
 * `node:http` response as a UI message stream, headers included; resolves when done.
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

/** A web `Response` streaming a run's events as a UI message stream (for fetch-style servers). */
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
