// Provider formats: the idiomatic face of `src/providers.rs`. Pure functions: neutral values
// (messages, turns, requests) use camelCase keys; provider-shaped values pass as they are.
import native from '../index.js'
import { ToolError } from './errors.mjs'
/** @import { BatchResult, Call, CallResult, JsonPlan, JsonProtocolOptions, Message, ModelRequest, ProviderName, ProviderOptions, ResultInput, ToolSpec } from './types.mjs' */
/** @import { ModelTurn as ModelTurnData } from './types.mjs' */
/** @typedef {ModelTurnData} ModelTurn A model's answer: text, tool calls, why it stopped, usage. */

const { NativeProvider } = native

/** A provider's response or stream that is not in its format (or an error event it sent). */
export class ProviderError extends Error {
  constructor(message, options) {
    super(message, options)
    this.name = 'ProviderError'
  }
}

/** Rethrows the addon's `ProviderError: ...` failures as `ProviderError`s. */
export function providerCall(fn) {
  try {
    return fn()
  } catch (e) {
    const m = typeof e?.message === 'string' ? e.message : ''
    if (m.startsWith('ProviderError: ')) throw new ProviderError(m.slice('ProviderError: '.length), { cause: e })
    throw e
  }
}

/**
 * Call results as the core reads them: `engine.run`'s results pass as they are; a result the
 * app made itself needs only `{callId, tool, envelope}` (`status` defaults to `done`).
 */
export function callResults(results) {
  const list = Array.isArray(results) ? results : results?.results
  if (!Array.isArray(list)) throw new TypeError('expected call results (an array, or a batch with results)')
  return list.map((r) => ({ status: 'done', attempts: 1, repaired: false, replayed: false, cached: false, finishedUs: 0, durationUs: 0, ...r }))
}

/**
 * The providers tooljig speaks, by wire name.
 * @type {readonly ProviderName[]}
 */
export const PROVIDERS = Object.freeze(['openai_chat', 'openai_responses', 'anthropic', 'gemini'])

/**
 * One provider's wire format: tool definitions, request bodies, responses, conversations and
 * tool results in OpenAI Chat, OpenAI Responses, Anthropic Messages or Gemini shape.
 */
export class Provider {
  #options
  #native
  #strict = null

  /**
   * @param {ProviderName} name
   * @param {ProviderOptions} [options]
   */
  constructor(name, options = {}) {
    this.#options = { ...options }
    this.#native = new NativeProvider(name, this.#options)
    /** The canonical name, whichever spelling built the provider. */
    this.name = this.#native.name
  }

  /**
   * @param {ProviderOptions} [options]
   * @returns {Provider}
   */
  static openaiChat(options) {
    return new Provider('openai_chat', options)
  }

  /**
   * @param {ProviderOptions} [options]
   * @returns {Provider}
   */
  static openaiResponses(options) {
    return new Provider('openai_responses', options)
  }

  /**
   * @param {ProviderOptions} [options]
   * @returns {Provider}
   */
  static anthropic(options) {
    return new Provider('anthropic', options)
  }

  /**
   * @param {ProviderOptions} [options]
   * @returns {Provider}
   */
  static gemini(options) {
    return new Provider('gemini', options)
  }

  /**
   * The request's tool definitions for these specs (`engine.specs(caller)`). `strict`
   * (OpenAI formats) overrides the provider's option: schemas converted for strict mode.
   * @param {ToolSpec[]} specs
   * @param {boolean} [strict]
   * @returns {any[]}
   */
  tools(specs, strict = undefined) {
    if (strict === undefined || Boolean(strict) === Boolean(this.#options.strict)) return this.#native.tools(specs)
    this.#strict ??= new NativeProvider(this.name, { ...this.#options, strict: Boolean(strict) })
    return this.#strict.tools(specs)
  }

  /**
   * The whole request body for `{model, messages, tools, toolChoice, maxTokens, temperature, stream, responseSchema}`.
   * @param {ModelRequest} request
   * @returns {Record<string, any>}
   */
  request(request) {
    return this.#native.request(request)
  }

  /**
   * A non-streamed response body as a model turn; throws a `ProviderError` when malformed.
   * @param {unknown} body
   * @returns {ModelTurnData}
   */
  parseResponse(body) {
    return providerCall(() => this.#native.parseResponse(body))
  }

  /**
   * Neutral messages in the provider's shape.
   * @param {Message[]} messages
   * @returns {any[]}
   */
  messages(messages) {
    return this.#native.messages(messages)
  }

  /**
   * The provider's messages (an app's own history) as neutral messages.
   * @param {unknown[]} messages
   * @returns {Message[]}
   */
  parseMessages(messages) {
    return providerCall(() => this.#native.parseMessages(messages))
  }

  /**
   * The exact messages or blocks to append after running a batch (`engine.run`'s results).
   * @param {ResultInput[] | BatchResult} results
   * @returns {any[]}
   */
  toolResults(results) {
    return this.#native.toolResults(callResults(results))
  }
}

/** Helpers over a model turn (`{content, toolCalls, finishReason, usage, ...}`). */
export const ModelTurn = Object.freeze({
  /**
   * The calls to run (`engine.run(calls)`), and the refusals (`incomplete_arguments`) of
   * calls whose arguments were cut off, which must never run.
   * @param {ModelTurnData} turn
   * @returns {{calls: Call[], refused: CallResult[]}}
   */
  intoBatch(turn) {
    return native.modelTurnIntoBatch(turn)
  },
  /**
   * The turn without the nulls OpenAI strict mode made the model send for optional fields.
   * @param {ModelTurnData} turn
   * @param {ToolSpec[]} specs
   * @returns {ModelTurnData}
   */
  dropStrictNulls(turn, specs) {
    return native.modelTurnDropStrictNulls(turn, specs)
  },
})

/**
 * A tool's input schema rewritten for OpenAI strict mode; throws a TypeError saying why it cannot be.
 * @param {Record<string, unknown>} schema
 * @returns {Record<string, unknown>}
 */
export function toStrict(schema) {
  try {
    return native.toStrict(schema)
  } catch (e) {
    throw new TypeError(e.message, { cause: e })
  }
}

/**
 * JSON-structured tool calling, for models whose native tool calling is missing
 * or poor. Options: `{shape: 'per_tool' | 'flat', dependencies, reasoning, maxCalls}`.
 */
export class JsonProtocol {
  /**
   * @param {JsonProtocolOptions} [options]
   */
  constructor(options = {}) {
    this.options = { ...options }
  }

  /**
   * The JSON Schema of the model's answer.
   * @param {ToolSpec[]} specs
   * @returns {Record<string, unknown>}
   */
  responseSchema(specs) {
    return native.jsonProtocolResponseSchema(this.options, specs)
  }

  /**
   * The system-prompt text describing the tools.
   * @param {ToolSpec[]} specs
   * @returns {string}
   */
  prompt(specs) {
    return native.jsonProtocolPrompt(this.options, specs)
  }

  /**
   * The model's answer (repaired when slightly broken) as a plan `{calls, reasoning,
   * repaired}`; throws a `ToolError` (`malformed_arguments`) when it is not one.
   * @param {string} text
   * @returns {JsonPlan}
   */
  parse(text) {
    const out = native.jsonProtocolParse(this.options, String(text))
    if (out.error) {
      const { code, message, retryable, ...details } = out.error
      throw new ToolError(code, message, { retryable, details })
    }
    return out.plan
  }

  /**
   * Every result of a batch as one message for the model.
   * @param {ResultInput[] | BatchResult} results
   * @returns {string}
   */
  formatResults(results) {
    return native.jsonProtocolFormatResults(callResults(results))
  }
}
