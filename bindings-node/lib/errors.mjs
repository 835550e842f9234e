// Errors a handler throws to choose its envelope, and the error registration throws.
import { errorCodes } from './native.mjs'
/** @import { ErrorCode } from './types.mjs' */

/** Every error code of the core, with its default retryability, in declaration order. */
export const ErrorCodes = /** @type {ReadonlyArray<{readonly code: ErrorCode, readonly retryable: boolean}>} */ (
  Object.freeze(errorCodes().map((c) => Object.freeze({ code: c.code, retryable: c.retryable })))
)

/** @type {Set<string>} */
const known = new Set(ErrorCodes.map((c) => c.code))

/**
 * A deliberate failure with a code the handler chooses; the model sees `code`, `message`,
 * `retryable` and the `details` (flattened into the error object) as they are.
 */
export class ToolError extends Error {
  /**
   * @param {ErrorCode} code one of `ErrorCodes`
   * @param {string} message written for the model: what went wrong and what to do about it
   * @param {{retryable?: boolean, details?: Record<string, unknown>, cause?: unknown}} [options]
   */
  constructor(code, message, options = {}) {
    if (!known.has(code)) {
      throw new TypeError(`unknown tooljig error code ${JSON.stringify(code)}; expected one of ${[...known].join(', ')}`)
    }
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ToolError'
    this.code = code
    this.retryable = options.retryable
    this.details = options.details
  }
}

/**
 * Thrown by a handler's own validation (zod refinements, checks JSON Schema cannot express)
 * when arguments that passed the tool's schema are still wrong. Each violation is
 * `{path, message}`, `path` the keys and indexes leading to the offending value (empty for
 * the whole); the model sees the same `invalid_arguments` error a schema violation gives,
 * worded by the core.
 */
export class InvalidArguments extends Error {
  /** @param {{path?: Array<string | number>, message: string}[]} violations */
  constructor(violations) {
    const list = violations.map((v) => ({ path: [...(v.path ?? [])], message: String(v.message) }))
    super(list.map((v) => (v.path.length ? `at /${v.path.join('/')}: ${v.message}` : v.message)).join('; '))
    this.name = 'InvalidArguments'
    this.violations = Object.freeze(list)
  }
}

/**
 * The work goes on as a background job: the call ends `pending_job` until the app reports how
 * the job ended (`engine.completeJob(job, ...)`, from any process sharing the engine's state
 * store), and the run is resumed. Return it with `accepted(job)`.
 */
export class Accepted {
  /** @param {string} job the app's own reference for the job (a queue's task id) */
  constructor(job) {
    if (typeof job !== 'string' || job === '') throw new TypeError('accepted() takes the job\'s reference, a non-empty string')
    this.job = job
    Object.freeze(this)
  }
}

/**
 * Returns (or throws) the accepted outcome: the handler started the work as the background
 * job `job` (the app's own reference, unique among pending jobs): `return accepted(task.id)`.
 * @param {string} job
 */
export function accepted(job) {
  return new Accepted(job)
}

/** The "needs" outcome: required fields the model should ask the user for. */
export class Needs {
  /** @param {string[]} fields */
  constructor(fields) {
    this.fields = Object.freeze([...fields])
  }
}

/**
 * Returns (or throws) the needs outcome for these fields: `return needs('date', 'time')`.
 * @param {...(string | string[])} fields
 */
export function needs(...fields) {
  const flat = fields.flat()
  for (const f of flat) {
    if (typeof f !== 'string') throw new TypeError(`needs() takes field names, got ${typeof f}`)
  }
  return new Needs(flat)
}

/**
 * A registration mistake, thrown by `Engine.register`. `code` is one of `invalid_name`,
 * `duplicate_tool`, `invalid_schema`, `invalid_policy`, `invalid_spec`, `invalid_tool`.
 */
export class RegistrationError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {{cause?: unknown}} [options]
   */
  constructor(code, message, options) {
    super(message, options)
    this.name = 'RegistrationError'
    this.code = code
  }
}
