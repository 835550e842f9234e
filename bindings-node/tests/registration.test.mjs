// Registration mistakes throw at registration, as RegistrationErrors with a code.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { z } from 'zod'
import { Engine, RegistrationError, tool } from '../lib/index.mjs'

const ok = tool({ execute: () => 1 })

function code(fn) {
  try {
    fn()
  } catch (e) {
    assert.ok(e instanceof RegistrationError, `${e?.name}: ${e?.message}`)
    assert.ok(e instanceof Error)
    assert.ok(e.message.length > 0)
    return e.code
  }
  assert.fail('registration should have thrown')
}

test('each kind of mistake has its code', () => {
  const e = new Engine().register('t', ok)
  assert.equal(code(() => e.register('t', ok)), 'duplicate_tool')
  assert.equal(code(() => e.register('a.b', ok)), 'invalid_name')
  assert.equal(code(() => e.register('', ok)), 'invalid_name')
  assert.equal(code(() => e.register('x'.repeat(65), ok)), 'invalid_name')
  assert.equal(code(() => e.register(42, ok)), 'invalid_name')
  assert.equal(code(() => e.register('s', tool({ inputSchema: { type: 'nope' }, execute: () => 1 }))), 'invalid_schema')
  assert.equal(code(() => e.register('o', tool({ outputSchema: { type: 7 }, execute: () => 1 }))), 'invalid_schema')
  assert.equal(code(() => e.register('p', ok, { retry: { attempts: 0 } })), 'invalid_policy')
  assert.equal(code(() => e.register('q', ok, { timeout: 5 })), 'invalid_policy')
  assert.equal(code(() => e.register('r', ok, { timeoutMs: -1 })), 'invalid_policy')
  assert.equal(code(() => e.register('u', { execute: 'no' })), 'invalid_tool')
  assert.equal(code(() => e.register('v', { execute: () => 1, timeoutMs: 5 })), 'invalid_tool')
  assert.equal(code(() => e.register('w', null)), 'invalid_tool')
  assert.equal(code(() => e.register('z', tool({ inputSchema: z.object({ when: z.date() }), execute: () => 1 }))), 'invalid_schema')
  assert.equal(code(() => e.registerSpec({ name: 'y', descripton: 'a typo' })), 'invalid_spec')
  assert.equal(code(() => e.registerSpec({ name: 'y2', input_schema: 'object' })), 'invalid_schema')
  assert.equal(code(() => tool({ execute: 1 })), 'invalid_tool')
})

test('messages name the tool and the problem', () => {
  const e = new Engine().register('t', ok)
  assert.throws(() => e.register('t', ok), /"t" is already registered/)
  assert.throws(() => e.register('p', ok, { retry: { attempts: 0 } }), /attempts must be at least 1/)
  assert.throws(() => e.register('q', ok, { timeout: 5 }), /tool "q": invalid policy: unknown field `timeout`/)
})

test('a refused registration leaves the engine as it was', async () => {
  const e = new Engine().register('t', ok)
  assert.throws(() => e.register('bad', tool({ inputSchema: { type: 'nope' }, execute: () => 2 })))
  assert.deepEqual(e.specs().map((s) => s.name), ['t'])
  const out = await e.run([{ tool: 't' }, { tool: 'bad' }])
  assert.deepEqual(out.results[0].envelope, { ok: true, data: 1 })
  assert.equal(out.results[1].envelope.error.code, 'unknown_tool')
})

test('searchTools finds what a caller may use; search_tools lets the model do it', async () => {
  const weather = tool({ description: 'Current weather of a city.', execute: () => 21 })
  const engine = new Engine()
    .register('get_weather', weather)
    .register('send_email', tool({ description: 'Sends an email.', execute: () => 'sent' }))
    .register('reset_weather_station', tool({ description: 'Resets the weather station.', execute: () => 'reset' }), { scopes: ['admin'] })
    .enableToolSearch()
  const found = engine.searchTools('weather in Paris', { caller: { principal: 'alice' } }).map((s) => s.name)
  assert.equal(found[0], 'get_weather')
  assert.ok(!found.includes('reset_weather_station'))
  const out = await engine.run([{ tool: 'search_tools', arguments: { query: 'email someone' } }], { caller: { principal: 'alice' } })
  assert.equal(out.results[0].envelope.data[0].name, 'send_email')
  assert.ok('input_schema' in out.results[0].envelope.data[0])
})
