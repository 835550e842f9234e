// A batch's results as `run` receives them from the native engine: rows, made into result
// objects here (the Rust half, and why: `src/convert/rows.rs`).

/**
 * The batch a `run` resolves with, from its rows: each row made into the result object the
 * native engine would otherwise have written as text, with the same keys in the same order;
 * a result that is not a row is already that object.
 * @param {[{results: unknown[]}, unknown[], string[]]} sent a finished batch of a drained
 *   queue: the batch (its `results` empty), the rows, the tools they name by index
 * @returns {any}
 */
export function fromRows([batch, rows, tools]) {
  const results = new Array(rows.length)
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]
    results[i] = Array.isArray(r)
      ? {
          callId: r[0],
          tool: tools[r[1]],
          status: 'done',
          envelope: r[2],
          attempts: r[3],
          repaired: (r[4] & 1) !== 0,
          replayed: (r[4] & 2) !== 0,
          cached: (r[4] & 4) !== 0,
          arguments: r[5],
          startedUs: r[6],
          finishedUs: r[7],
          durationUs: r[8],
        }
      : r
  }
  batch.results = results
  return batch
}
