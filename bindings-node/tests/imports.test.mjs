// Importers (`importTools`) and `engine.registerSpec`: OpenAI specs and BFCL docs become
// tools; a call by the original name still reaches the tool.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { Engine, importTools } from '../lib/index.mjs'
import { corpus } from './corpora.mjs'

test('OpenAI specs import and run by either name', async () => {
  const specs = importTools([
    { type: 'function', function: { name: 'get.weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
    { type: 'function', name: 'book_table', description: 'Books.', parameters: { type: 'object' } },
  ])
  assert.deepEqual(specs.map((s) => s.name), ['get_weather', 'book_table'])
  assert.equal(specs[0].originalName, 'get.weather')
  const engine = new Engine().registerSpec(specs[0], ({ city }) => ({ city, tempC: 21 })).registerSpec(specs[1])
  const out = await engine.run([{ id: 'a', tool: 'get.weather', arguments: { city: 'Oslo' } }, { id: 'b', tool: 'book_table' }])
  assert.deepEqual(out.results[0].envelope, { ok: true, data: { city: 'Oslo', tempC: 21 } })
  assert.equal(out.results[1].status, 'pending_external')
})

test('BFCL docs import with their types mapped, Java parameters as source strings', () => {
  const [spec] = importTools({ name: 'math.factorial', parameters: { type: 'dict', properties: { number: { type: 'integer' }, opts: { type: 'HashMap' } }, required: ['number'] } }, { format: 'bfcl' })
  assert.equal(spec.inputSchema.properties.opts.type, 'object')
  const [java] = importTools({ name: 'f', parameters: { type: 'dict', properties: { xs: { type: 'ArrayList' } } } }, { format: 'bfcl', category: 'simple_java' })
  assert.equal(java.inputSchema.properties.xs.type, 'string')
})

test('what cannot be imported says where', () => {
  assert.throws(() => importTools([{ name: 'ok' }, { type: 'function', function: { name: 5 } }]), /\/1\/(function\/)?name/)
  assert.throws(() => importTools({}, { format: 'yaml' }), /unknown format/)
  assert.throws(() => importTools({}, { formt: 'bfcl' }), /unknown field/)
})

const bfcl = corpus('bfcl')
test('every doc of a BFCL file imports and registers', { skip: bfcl.skip }, () => {
  const lines = readFileSync(join(bfcl.dir, 'BFCL_v4_multiple.json'), 'utf8').split('\n').filter((l) => l.trim())
  for (const line of lines.slice(0, 200)) {
    const engine = new Engine()
    for (const spec of importTools(JSON.parse(line), { format: 'bfcl', category: 'multiple' })) engine.registerSpec(spec)
    assert.ok(engine.specs().length > 0)
  }
})
