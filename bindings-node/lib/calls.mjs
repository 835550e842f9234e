// Calls as the JSON text the native engine reads: `engine.run()` and a handler's `ctx.run()`.

/**
 * The calls as JSON text; a call whose arguments have no JSON form is sent with why instead.
 * @param {unknown} calls
 * @returns {string}
 */
export function callsText(calls) {
  if (!Array.isArray(calls)) throw new TypeError('calls must be an array of {id, tool, arguments} objects')
  try {
    // Arguments as the model sent them (JSON text) hold no number to check: written without
    // the replacer, which V8 calls back for every key and value.
    return calls.every(textArguments) ? JSON.stringify(calls) : JSON.stringify(calls, finiteNumbers)
  } catch {
    // One call's arguments have no JSON form (a BigInt, a cycle, a throwing toJSON): that
    // call alone is refused (`argumentsError`), the others run.
    return `[${calls.map(callText).join(',')}]`
  }
}

/** Whether a call's arguments are JSON text (or absent), so nothing in it can be non-finite. */
function textArguments(call) {
  const args = call?.arguments
  return args === undefined || args === null || typeof args === 'string'
}

/**
 * JSON.stringify would write `NaN` and `Infinity` as `null`, changing the value silently:
 * refused instead (the call alone, see `callText`).
 * @param {string} key
 * @param {unknown} value
 */
function finiteNumbers(key, value) {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new TypeError(`${value} (at ${JSON.stringify(key)}) has no JSON form: JSON numbers are finite`)
  }
  return value
}

/** One call as JSON text; arguments without a JSON form are replaced by why. */
function callText(call) {
  try {
    return JSON.stringify(call, finiteNumbers)
  } catch (e) {
    let why
    try {
      why = String(e?.message ?? e)
    } catch {
      why = 'reading them threw'
    }
    return JSON.stringify({ ...call, arguments: null, argumentsError: why })
  }
}
