// Shared helpers of the Node tests.
import { setTimeout as sleep } from 'node:timers/promises'

export { sleep }

/** A JSON Schema for `{ms}` plus anything. */
export const msSchema = { type: 'object', properties: { ms: { type: 'integer' } }, required: ['ms'] }

/** The result of the call with this id. */
export function byId(batch, id) {
  const r = batch.results.find((x) => x.callId === id)
  if (!r) throw new Error(`no result for call ${id}`)
  return r
}
