// A tool's `onSuccess` hook from Node: it runs once after each call that succeeded, with its
// arguments and data, out of the model's reach; never for a refusal, a failure or a replayed
// duplicate; a throwing hook keeps the result and says why in `detail` and the audit log.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { z } from 'zod'
import { Engine, RegistrationError, ToolError, tool } from '../lib/index.mjs'
import { byId } from './support.mjs'

function bookingEngine(sent) {
  const engine = new Engine({ audit: 'memory' })
  engine.register(
    'book',
    tool({
      inputSchema: z.object({ room: z.number().int(), note: z.string().default('') }),
      execute: ({ room }) => {
        if (room === 13) throw new ToolError('conflict', 'room 13 is taken')
        return { booked: room }
      },
      onSuccess: async (event, ctx) => {
        if (event.arguments.note === 'boom') throw new Error('mail server down')
        sent.push({ ...event, by: ctx.caller.principal })
        return 'ignored'
      },
    }),
    { idempotency: { mode: 'arguments' } },
  )
  return engine
}

test('the hook runs once per success and never reaches the model', async () => {
  const sent = []
  const engine = bookingEngine(sent)
  const caller = { principal: 'dana' }
  const a = byId(await engine.run([{ id: 'a', tool: 'book', arguments: { room: 7 } }], { caller }), 'a')
  assert.deepEqual(a.envelope, { ok: true, data: { booked: 7 } })
  assert.equal(a.modelOutput, undefined)
  assert.equal(a.detail, undefined)
  assert.deepEqual(sent, [{ arguments: { room: 7, note: '' }, result: { booked: 7 }, by: 'dana' }])

  const b = byId(await engine.run([{ id: 'b', tool: 'book', arguments: { room: 7 } }], { caller }), 'b')
  assert.equal(b.replayed, true)
  await engine.run(
    [
      { id: 'c', tool: 'book', arguments: { room: 13 } },
      { id: 'd', tool: 'book', arguments: { room: 'seven' } },
    ],
    { caller },
  )
  assert.equal(sent.length, 1)
})

test('a throwing hook keeps the result and the audit says why', async () => {
  const sent = []
  const engine = bookingEngine(sent)
  const out = await engine.run([{ id: 'a', tool: 'book', arguments: { room: 1, note: 'boom' } }])
  const a = byId(out, 'a')
  assert.deepEqual(a.envelope, { ok: true, data: { booked: 1 } })
  assert.match(a.detail, /on_success failed: .*mail server down/)
  const [record] = await engine.audit({ tool: 'book' })
  assert.equal(record.outcome, 'ok')
  assert.match(record.detail, /mail server down/)
  assert.deepEqual(sent, [])
})

test('registerSpec takes the hooks too, and a hook must be a function', async () => {
  const engine = new Engine()
  const seen = []
  engine.registerSpec({ name: 'ping' }, () => 'pong', { onSuccess: (event) => seen.push(event) })
  await engine.run([{ id: 'p', tool: 'ping', arguments: {} }])
  assert.deepEqual(seen, [{ arguments: {}, result: 'pong' }])
  assert.throws(() => engine.register('pong', tool({ execute: () => 1, onSuccess: 'notify' })), (e) => e instanceof RegistrationError && /onSuccess must be a function/.test(e.message))
  assert.throws(() => engine.registerSpec({ name: 'pang' }, () => 1, { toModelOutput: 3 }), /toModelOutput must be a function/)
})
