// zod (Standard Schema) and plain JSON Schema inputs.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { z } from 'zod'
import { Engine, InvalidArguments, tool } from '../lib/index.mjs'

const weather = tool({
  description: 'The weather in a city.',
  inputSchema: z.object({
    city: z.string().describe('City name'),
    unit: z.enum(['c', 'f']).default('c'),
    days: z.number().int().min(1).max(7).default(1),
  }),
  execute: async ({ city, unit, days }) => ({ city, unit, days }),
})

test('zod schemas export in input mode: defaulted fields are optional', () => {
  const [spec] = new Engine().register('weather', weather).specs()
  assert.deepEqual(spec.inputSchema.required, ['city'])
  assert.equal(spec.inputSchema.properties.city.description, 'City name')
  assert.deepEqual(spec.inputSchema.properties.unit.enum, ['c', 'f'])
})

test('execute receives arguments parsed by zod, defaults applied', async () => {
  const e = new Engine().register('weather', weather)
  const out = await e.run([{ tool: 'weather', arguments: '{"city": "Oslo"}' }])
  assert.deepEqual(out.results[0].envelope, { ok: true, data: { city: 'Oslo', unit: 'c', days: 1 } })
  // The schema zod exports carries its defaults: the core fills them before it validates,
  // and the result says which it filled.
  assert.deepEqual(out.results[0].arguments, { city: 'Oslo', unit: 'c', days: 1 })
  assert.deepEqual(out.results[0].defaults.toSorted(), ['/days', '/unit'])
})

test('the core validates first: missing fields are needs, bad ones invalid_arguments', async () => {
  const e = new Engine().register('weather', weather)
  const out = await e.run([{ tool: 'weather', arguments: {} }, { tool: 'weather', arguments: { city: 'Oslo', days: 9 } }])
  assert.deepEqual(out.results[0].envelope, { ok: false, needs: { city: true } })
  assert.equal(out.results[1].envelope.error.code, 'invalid_arguments')
  assert.equal(out.results[1].envelope.error.errors[0].pointer, '/days')
})

test('refinements JSON Schema cannot express end as invalid_arguments with pointers', async () => {
  const e = new Engine().register('range', tool({
    inputSchema: z.object({ from: z.number(), to: z.number() }).refine((r) => r.from <= r.to, { message: 'from must not exceed to', path: ['to'] }),
    execute: ({ from, to }) => to - from,
  }))
  const out = await e.run([{ tool: 'range', arguments: { from: 5, to: 1 } }, { tool: 'range', arguments: { from: 1, to: 5 } }])
  const err = out.results[0].envelope.error
  assert.equal(err.code, 'invalid_arguments')
  assert.match(err.message, /at \/to: from must not exceed to/)
  assert.deepEqual(err.errors, [{ pointer: '/to', message: 'from must not exceed to' }])
  assert.deepEqual(out.results[1].envelope, { ok: true, data: 4 })
})

test('transforms apply; parseArguments: false hands over the validated JSON as is', async () => {
  const schema = z.object({ name: z.string().transform((s) => s.toUpperCase()) })
  const e = new Engine()
    .register('up', tool({ inputSchema: schema, execute: ({ name }) => name }))
    .register('raw', tool({ inputSchema: schema, parseArguments: false, execute: ({ name }) => name }))
  const out = await e.run([{ tool: 'up', arguments: { name: 'ada' } }, { tool: 'raw', arguments: { name: 'ada' } }])
  assert.deepEqual(out.results.map((r) => r.envelope.data), ['ADA', 'ada'])
})

test('a zod output schema is checked after the run', async () => {
  const e = new Engine().register('n', tool({ outputSchema: z.object({ n: z.number() }), execute: ({ bad }) => (bad ? { n: 'x' } : { n: 1 }) }))
  const out = await e.run([{ tool: 'n', arguments: {} }, { tool: 'n', arguments: { bad: true } }])
  assert.deepEqual(out.results[0].envelope, { ok: true, data: { n: 1 } })
  assert.equal(out.results[1].envelope.error.code, 'invalid_output')
})

test('plain JSON Schema works without zod', async () => {
  const e = new Engine().register('sum', tool({
    inputSchema: { type: 'object', properties: { xs: { type: 'array', items: { type: 'number' } } }, required: ['xs'] },
    execute: ({ xs }) => xs.reduce((a, b) => a + b, 0),
  }))
  const out = await e.run([{ tool: 'sum', arguments: { xs: [1, 2, 3] } }])
  assert.deepEqual(out.results[0].envelope, { ok: true, data: 6 })
})

test('a handler throwing InvalidArguments gets the same words as a schema violation, pointers escaped', async () => {
  const e = new Engine().register('book', tool({
    inputSchema: { type: 'object' },
    execute: () => {
      throw new InvalidArguments([{ path: ['slots', 0, 'a/b~'], message: 'overlaps' }, { message: 'too early' }])
    },
  }))
  const [r] = (await e.run([{ tool: 'book', arguments: {} }])).results
  assert.equal(r.envelope.error.message, "arguments do not match the tool's schema: at /slots/0/a~1b~0: overlaps; too early")
  assert.deepEqual(r.envelope.error.errors, [{ pointer: '/slots/0/a~1b~0', message: 'overlaps' }, { pointer: '', message: 'too early' }])
})
