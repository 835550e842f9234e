// A handler's `ctx.caller`: the JS layer keeps the callers it was sent across batches
// (`src/drained.rs`), so what one batch's handler sees must never leak into another's.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Engine, tool } from '../lib/index.mjs'

function seeing() {
  const seen = []
  const engine = new Engine().register('t', tool({ execute: (args, ctx) => { seen.push(ctx.caller); return ctx.caller.principal } }))
  return [engine, seen]
}

const caller = (principal, extra = {}) => ({ principal, roles: ['r'], attributes: { dept: { id: 1, tags: ['a'] } }, ...extra })

test('a caller is frozen to its leaves, so no handler changes what another batch sees', async () => {
  const e = new Engine().register('t', tool({
    execute: (args, ctx) => {
      assert.throws(() => ctx.caller.roles.push('admin'), TypeError)
      assert.throws(() => { ctx.caller.attributes.dept.id = 2 }, TypeError)
      assert.throws(() => ctx.caller.attributes.dept.tags.push('b'), TypeError)
      assert.throws(() => { ctx.caller.principal = 'root' }, TypeError)
      return [ctx.caller.roles, ctx.caller.attributes]
    },
  }))
  for (let i = 0; i < 2; i++) {
    const out = await e.run([{ id: 'a', tool: 't', arguments: {} }], { caller: caller('ana') })
    assert.deepEqual(out.results[0].envelope, { ok: true, data: [['r'], { dept: { id: 1, tags: ['a'] } }] })
  }
})

test('each call sees its own batch’s caller, across many callers, batches and engines', async () => {
  const [e, seen] = seeing()
  const [other, otherSeen] = seeing()
  // More distinct callers than the table keeps, in batches of several callers, twice over:
  // every call must still see the caller its batch ran for.
  for (let round = 0; round < 2; round++) {
    const batches = Array.from({ length: 40 }, (_, i) => {
      const who = `p${(i * 7) % 23}`
      const engine = i % 3 === 0 ? other : e
      return [who, engine.run([{ id: 'a', tool: 't' }, { id: 'b', tool: 't' }], { caller: caller(who, { tenant: `t-${who}` }) })]
    })
    for (const [who, pending] of batches) {
      const out = await pending
      for (const r of out.results) assert.equal(r.envelope.data, who)
    }
  }
  for (const c of [...seen, ...otherSeen]) assert.equal(c.tenant, `t-${c.principal}`)
  // A batch without a caller runs for nobody, whatever ran before it.
  const out = await e.run([{ id: 'a', tool: 't' }])
  assert.equal(out.results[0].envelope.data, null)
  assert.deepEqual(seen.at(-1), { principal: null, tenant: null, roles: [], scopes: [], attributes: {}, session: null })
})

test('batches run for equal callers share one frozen caller', async () => {
  const [e, seen] = seeing()
  await e.run([{ id: 'a', tool: 't' }], { caller: caller('ana') })
  await e.run([{ id: 'a', tool: 't' }], { caller: caller('ana') })
  await e.run([{ id: 'a', tool: 't' }], { caller: caller('ana', { session: 's2' }) })
  assert.equal(seen[0], seen[1])
  assert.notEqual(seen[1], seen[2])
  assert.equal(seen[2].session, 's2')
})
