// Tools calling tools (`ctx.call`, `ctx.run`): the same caller through every guardrail,
// each nested result naming its parent, and what the policy does not name refused.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Engine, ToolError, tool } from '../lib/index.mjs'

test('a handler calls tools as its caller; the policy says which', async () => {
  const engine = new Engine()
    .register('weather', tool({ execute: async ({ city }) => ({ city, tempC: 21 }) }), { effect: 'read' })
    .register('whoami', tool({ execute: (_args, ctx) => ctx.caller.principal }))
    .register('secret', tool({ execute: () => 's3cret' }))
    .register('plan', tool({
      execute: async ({ city }, ctx) => {
        const forecast = await ctx.call('weather', { city })
        const both = await ctx.run([{ id: 'me', tool: 'whoami' }, { id: 's', tool: 'secret' }])
        return { forecast: forecast.envelope, parent: forecast.parent, me: both.results[0].envelope, secret: both.results[1].envelope.error.code }
      },
    }), { mayCall: ['weather', 'whoami'] })
    .register('lonely', tool({
      execute: async (_args, ctx) => {
        await assert.rejects(ctx.call('weather', { city: 'x' }), (e) => e instanceof ToolError && e.code === 'permission_denied')
        return 'alone'
      },
    }))
  const out = await engine.run([{ id: 'top', tool: 'plan', arguments: { city: 'Oslo' } }, { id: 'l', tool: 'lonely' }], { caller: { principal: 'alice' } })
  const data = out.results[0].envelope.data
  assert.deepEqual(data.forecast, { ok: true, data: { city: 'Oslo', tempC: 21 } })
  assert.deepEqual(data.parent, { runId: data.parent.runId, callId: 'top', tool: 'plan', depth: 1 })
  assert.deepEqual(data.me, { ok: true, data: 'alice' })
  assert.equal(data.secret, 'permission_denied')
  assert.deepEqual(out.results[1].envelope, { ok: true, data: 'alone' })
})

test('a loop between tools is refused, as data', async () => {
  const engine = new Engine()
    .register('a', tool({ execute: async (_args, ctx) => (await ctx.call('b')).envelope }), { mayCall: ['b'] })
    .register('b', tool({ execute: async (_args, ctx) => (await ctx.call('a')).envelope }), { mayCall: ['*'] })
  const out = await engine.run([{ tool: 'a' }])
  const inner = out.results[0].envelope.data
  assert.equal(inner.data.error.code, 'dependency_cycle')
  assert.match(inner.data.error.message, /a → b → a/)
})

test('an atomic nested batch releases the hold when the booking fails', async () => {
  const log = []
  const engine = new Engine()
    .register('hold', tool({ execute: ({ slot }) => (log.push(`hold ${slot}`), { hold: `h-${slot}` }) }), { compensation: 'release', internal: true })
    .register('release', tool({ execute: ({ result }) => (log.push(`release ${result.hold}`), true) }), { internal: true })
    .register('book', tool({
      execute: ({ slot }) => {
        if (slot === 2) throw new ToolError('conflict', 'the slot was taken')
        return 'booked'
      },
    }), { internal: true })
    .register('confirm', tool({
      execute: async ({ slot }, ctx) => {
        const out = await ctx.run([
          { id: 'hold', tool: 'hold', arguments: { slot } },
          { id: 'book', tool: 'book', arguments: { slot }, dependsOn: ['hold'] },
        ], { atomic: true })
        return { book: out.results[1].envelope.ok, rollback: out.rollback?.entries.map((e) => e.outcome) ?? null }
      },
    }), { mayCall: ['hold', 'book'] })
  const out = await engine.run([
    { id: 'ok', tool: 'confirm', arguments: { slot: 1 } },
    { id: 'taken', tool: 'confirm', arguments: { slot: 2 } },
  ], { concurrency: 1 })
  assert.deepEqual(out.results[0].envelope.data, { book: true, rollback: null })
  assert.deepEqual(out.results[1].envelope.data, { book: false, rollback: ['compensated'] })
  assert.deepEqual(log, ['hold 1', 'hold 2', 'release h-2'])

  // The steps are internal: a model neither sees nor calls them.
  assert.deepEqual(engine.specs({}).map((s) => s.name), ['confirm'])
  const direct = await engine.run([{ id: 'h', tool: 'hold', arguments: { slot: 3 } }])
  assert.equal(direct.results[0].envelope.error.code, 'permission_denied')
  assert.equal(direct.results[0].envelope.error.reason, 'internal')
  assert.equal(log.length, 3)
})
