// Events as an async iterator.
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { Engine, ToolError, tool } from '../lib/index.mjs'
import { sleep } from './support.mjs'

test('stream yields the batch events in order and resolves the result', async () => {
  let n = 0
  const e = new Engine()
    .register('wait', tool({ execute: async ({ ms }) => { await sleep(ms); return ms } }))
    .register('flaky', tool({ execute: () => { if (++n < 2) throw new ToolError('external_api_error', 'transient'); return 'ok' } }), { retry: { attempts: 2, backoffMs: 1 } })
  const s = e.stream([{ id: 'a', tool: 'wait', arguments: { ms: 10 } }, { id: 'b', tool: 'wait', arguments: { ms: 1 }, dependsOn: ['a'] }, { id: 'f', tool: 'flaky' }])
  const events = []
  for await (const ev of s) events.push(ev)
  const types = events.map((e) => e.type)
  assert.equal(types[0], 'batch_started')
  assert.equal(types.at(-1), 'batch_finished')
  assert.equal(events[0].calls, 3)
  const planned = events.find((e) => e.type === 'call_planned' && e.callId === 'b')
  assert.deepEqual(planned.dependsOn, ['a'])
  const finished = events.filter((e) => e.type === 'call_finished')
  assert.equal(finished.length, 3)
  assert.equal(finished.find((e) => e.result.callId === 'b').result.envelope.data, 1)
  const retried = events.find((e) => e.type === 'call_retried')
  assert.equal(retried.error.code, 'external_api_error')
  assert.equal(typeof retried.delayMs, 'number')
  const ats = events.map((e) => e.atUs)
  assert.deepEqual(ats, [...ats].sort((x, y) => x - y))
  const result = await s.result
  assert.deepEqual(result.results.map((r) => r.callId), ['a', 'b', 'f'])
  assert.deepEqual(result.results[0], finished.find((e) => e.result.callId === 'a').result)
})

test('the result resolves even when nobody reads the events', async () => {
  const e = new Engine().register('t', tool({ execute: () => 1 }))
  const out = await e.stream([{ tool: 't' }]).result
  assert.deepEqual(out.results[0].envelope, { ok: true, data: 1 })
})

test('leaving the loop early does not stop the batch', async () => {
  const e = new Engine().register('t', tool({ execute: async () => { await sleep(5); return 1 } }))
  const s = e.stream([{ tool: 't' }, { tool: 't' }])
  for await (const ev of s) if (ev.type === 'batch_started') break
  assert.equal((await s.result).results.length, 2)
})

test('progress and partial outputs reach the events; only the result is checked', async () => {
  const list = { type: 'array', minItems: 3 }
  const e = new Engine()
    .register('count', tool({
      outputSchema: list,
      execute: ({ n }, ctx) => {
        ctx.progress(0.5, 'half way')
        ctx.progress(Number.NaN, 'still going')
        ctx.partial([1])
        return Array.from({ length: n }, (_, i) => i + 1)
      },
    }))
    .register('grow', tool({
      outputSchema: list,
      // Each value yielded is a partial output; the last one is the result.
      execute: async function* ({ n }) {
        for (let i = 1; i <= n; i++) {
          await sleep(0)
          yield Array.from({ length: i }, (_, j) => j + 1)
        }
      },
    }))
  const s = e.stream([{ id: 'a', tool: 'count', arguments: { n: 3 } }, { id: 'b', tool: 'grow', arguments: { n: 3 } }])
  const events = []
  for await (const ev of s) events.push(ev)
  const progress = events.filter((ev) => ev.type === 'call_progress')
  const a = progress.filter((p) => p.callId === 'a')
  assert.equal(a[0].fraction, 0.5)
  assert.equal(a[0].message, 'half way')
  assert.equal(a[1].fraction, undefined)
  assert.deepEqual(a[2].output, [1])
  assert.deepEqual(progress.filter((p) => p.callId === 'b').map((p) => p.output), [[1], [1, 2], [1, 2, 3]])
  const result = await s.result
  assert.deepEqual(result.results.map((r) => r.envelope), [{ ok: true, data: [1, 2, 3] }, { ok: true, data: [1, 2, 3] }])
  // Unheard, reporting costs nothing and a generator's last value is still the result.
  const quiet = await e.run([{ tool: 'grow', arguments: { n: 4 } }])
  assert.deepEqual(quiet.results[0].envelope, { ok: true, data: [1, 2, 3, 4] })
})

test('batch_started tells the run id, so the batch is cancelled from outside', async () => {
  // The id is known before any handler runs: an operator or a web request stops the run by it.
  const store = `sqlite://${join(mkdtempSync(join(tmpdir(), 'tooljig-')), 'runs.db')}`
  const e = new Engine({ stateStore: store }).register('hold', tool({
    execute: (_args, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('stopped'))),
  }))
  const s = e.stream([{ id: 'h', tool: 'hold', arguments: {} }])
  let runId
  for await (const ev of s) {
    if (ev.type === 'batch_started') {
      runId = ev.runId
      assert.equal(await e.cancelRun(runId, 'the user left'), true)
    }
  }
  const out = await s.result
  assert.equal(typeof runId, 'string')
  assert.equal(out.runId, runId)
  assert.deepEqual(out.results.map((r) => r.envelope.error?.code), ['cancelled'])
})
