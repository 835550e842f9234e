// How the engine talks to its native half: an AbortSignal linked to a native cancel switch,
// waits clamped to what the native layer takes, and its answers read (refusals thrown as the
// core's ToolError).
import { ToolError } from './errors.mjs'
import { NativeCancel } from './native.mjs'

/**
 * Links an AbortSignal to a native cancel switch; returns the switch and an unlink function.
 * @param {AbortSignal | undefined | null} signal
 * @returns {[InstanceType<typeof NativeCancel> | null, () => void]}
 */
export function linkSignal(signal) {
  if (signal === undefined || signal === null) return [null, () => {}]
  if (typeof signal.addEventListener !== 'function') throw new TypeError('options.signal must be an AbortSignal')
  const cancel = new NativeCancel()
  if (signal.aborted) {
    cancel.cancel()
    return [cancel, () => {}]
  }
  const onAbort = () => cancel.cancel()
  signal.addEventListener('abort', onAbort, { once: true })
  return [cancel, () => signal.removeEventListener('abort', onAbort)]
}

/** A wait in ms as the native layer takes it (a u32). @param {number} ms */
export function clampMs(ms) {
  return Math.max(0, Math.min(Number(ms) || 0, 0xffffffff))
}

/**
 * The value of a native durable-run answer (`src/durable.rs`), or its refusal thrown as a ToolError.
 * @param {string} text
 */
export function settled(text) {
  const answer = JSON.parse(text)
  if (answer.error) {
    const { code, message, retryable, details } = answer.error
    throw new ToolError(code, message, { retryable, details })
  }
  return answer.value
}

/** A client's or a job's outcome as the core reads it: the data, or a `ToolError` it failed with. */
export function outcomeText(outcome) {
  if (outcome instanceof ToolError) {
    return JSON.stringify({ error: { code: outcome.code, message: String(outcome.message), retryable: outcome.retryable, details: outcome.details } })
  }
  return JSON.stringify({ result: outcome === undefined ? null : outcome })
}
