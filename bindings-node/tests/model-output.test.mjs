// What the model sees apart from what the app gets, from Node: a tool's `toModelOutput` hook
// (sync or async) and its `modelOutputMaxChars` budget; the app keeps the data, the agent loop
// hands the model the view, and a throwing hook fails closed.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Agent, AgentState, Engine, RegistrationError, ScriptedModel, tool } from '../lib/index.mjs'
import { byId } from './support.mjs'

const rows = Array.from({ length: 50 }, (_, i) => ({ id: i, title: `row ${i}` }))

test('the model reads the view and the app keeps the data', async () => {
  const engine = new Engine()
  const seen = []
  engine.register(
    'search',
    tool({
      execute: () => ({ rows }),
      toModelOutput: async (output, ctx) => {
        seen.push(ctx.caller.principal)
        return { count: output.rows.length, first: output.rows[0].title }
      },
    }),
  )
  const out = await engine.run([{ id: 's', tool: 'search', arguments: {} }], { caller: { principal: 'ana' } })
  const s = byId(out, 's')
  assert.deepEqual(s.envelope.data.rows, rows, "the app's data")
  assert.deepEqual(s.modelOutput, { count: 50, first: 'row 0' })
  assert.deepEqual(seen, ['ana'])

  const model = new ScriptedModel([{ toolCalls: [{ id: 'c1', name: 'search', arguments: {} }] }, 'Fifty rows.'])
  await new Agent(engine, model).run(new AgentState('find'), { caller: { principal: 'ana' } })
  const last = model.requests()[1].messages.at(-1)
  assert.deepEqual(last.results[0].envelope, { ok: true, data: { count: 50, first: 'row 0' } })
  assert.ok(!JSON.stringify(model.requests()[1]).includes('row 49'))
})

test('a budget cuts what the model reads and a throwing hook fails closed', async () => {
  const engine = new Engine()
  engine.register('page', tool({ execute: () => 'x'.repeat(10_000) }), { modelOutputMaxChars: 100 })
  engine.register(
    'secret',
    tool({
      execute: () => ({ ssn: '123' }),
      toModelOutput: () => {
        throw new Error('cannot summarise')
      },
    }),
  )
  const out = await engine.run([
    { id: 'p', tool: 'page', arguments: {} },
    { id: 's', tool: 'secret', arguments: {} },
  ])
  const page = byId(out, 'p')
  assert.equal(page.envelope.data, 'x'.repeat(10_000))
  assert.ok(page.modelOutput.startsWith('x'.repeat(100)) && page.modelOutput.endsWith('100 of 10000 characters shown]'), page.modelOutput)
  const secret = byId(out, 's')
  assert.deepEqual(secret.envelope, { ok: true, data: { ssn: '123' } })
  assert.ok(!JSON.stringify(secret.modelOutput).includes('123'))
  assert.match(secret.detail, /cannot summarise/)
  assert.throws(() => engine.register('bad', tool({ execute: () => 1, toModelOutput: 3 })), RegistrationError)
})

test('a token budget cuts what the model reads', async () => {
  const engine = new Engine()
  engine.register('page', tool({ execute: () => 'the quick brown fox '.repeat(100) }), { modelOutputMaxTokens: 8 })
  const out = await engine.run([{ id: 'p', tool: 'page', arguments: {} }])
  const page = byId(out, 'p')
  assert.equal(page.envelope.data, 'the quick brown fox '.repeat(100))
  assert.ok(page.modelOutput.startsWith('the quick brown fox the quick brown fox'), page.modelOutput)
  assert.ok(page.modelOutput.endsWith('8 of 401 tokens shown]'), page.modelOutput)
})
