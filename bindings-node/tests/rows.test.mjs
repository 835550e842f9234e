// `run` receives its results as rows and makes them into objects (`lib/rows.mjs`); `stream`
// receives the same batch's results as objects written by the native engine. Whatever the
// results (ok, cached, refused, failing, with hidden arguments, waiting for approval, with
// odd ids), both must give the same text, key for key and in the same order.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Dispatcher } from '../lib/dispatch.mjs'
import { Engine, ToolError, tool } from '../lib/index.mjs'

const ana = { principal: 'ana', scopes: ['mail'] }
const object = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] }

function engine() {
  return new Engine()
    .register('lookup', tool({ inputSchema: object, execute: ({ q }) => ({ q, user_id: 'snake_data', n: [1, { deep_key: 2 }] }) }), { effect: 'read', cache: { ttl_ms: 60_000 } })
    .register('fail', tool({ execute: () => { throw new ToolError('conflict', 'taken', { details: { at_key: 1 } }) } }))
    .register('whoami', tool({ execute: (a) => a }), { hidden: { user: { from: 'principal' } } })
    .register('send', tool({ execute: () => 'sent' }), { approval: { required: 'always' } })
    .register('nothing', tool({ execute: () => undefined }))
}

const calls = [
  { id: 'c1', tool: 'lookup', arguments: { q: 'a "quoted" é' } },
  { id: 'c2', tool: 'lookup', arguments: { q: 'a "quoted" é' } },
  { id: 'c3', tool: 'fail' },
  { id: 'c4', tool: 'nope', arguments: '{"broken' },
  { id: 'c5', tool: 'lookup', arguments: { q: 7 } },
  { id: 'c5r', tool: 'fail', arguments: "{'q': 'single quotes',}" },
  { id: 'c6', tool: 'whoami', arguments: { user: 'spoof' } },
  { id: 'c7', tool: 'send' },
  { id: 'ünïcode "id"', tool: 'nothing' },
  { tool: 'nothing', dependsOn: ['c3'] },
]

/** The text of a batch without what differs from one run to the next (times, ids drawn at random). */
const varies = new Set(['startedUs', 'finishedUs', 'durationUs', 'runId', 'expiresAtMs', 'id', 'approval_id', 'run_id'])
const text = (out) => JSON.stringify(out, (k, v) => (varies.has(k) ? 0 : v))

/** An engine whose cache already holds the first lookup's result. */
async function warmed() {
  const e = engine()
  await e.run([calls[0]], { caller: ana })
  return e
}

test('run makes the same results of its rows as the native engine writes for stream', async () => {
  const viaRun = await (await warmed()).run(calls, { caller: ana })
  const viaStream = await (await warmed()).stream(calls, { caller: ana }).result
  assert.equal(viaRun.results.length, calls.length)
  assert.equal(viaRun.results[1].cached, true, 'a cache hit')
  assert.equal(viaRun.results[5].repaired, true, 'arguments repaired')
  assert.equal(viaRun.results[7].status, 'pending_approval')
  assert.deepEqual(Object.keys(viaRun.results[0]), Object.keys(viaStream.results[0]))
  assert.equal(text(viaRun), text(viaStream))
})

test('a result that cannot be made into objects rejects its batch alone', { timeout: 5_000 }, async () => {
  const d = new Dispatcher()
  d.native = { settle: () => null }
  const [bad, good] = [d.runBatch(() => null), d.runBatch(() => null)]
  const rows = [{ results: [], durationUs: 1 }, [['c1', 0, { ok: true, data: 1 }, 1, 4, {}, 2, 3, 1]], ['t']]
  d.dispatch(JSON.stringify([[[1, true, null], [2, true, rows]]]))
  await assert.rejects(bad, /could not be read/)
  const out = await good
  assert.equal(out.results[0].cached, true)
  assert.equal(out.results[0].tool, 't')
})
