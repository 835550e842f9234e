// OpenAPI documents into tools from Node: every 3.0 and 3.1 document published in
// `@readme/oas-examples` (the Petstore, Star Trek, USPTO, Train Travel, ...) imports, each
// operation registered or skipped with a reason; the Petstore's tools call a local server
// with the caller's credentials, never the model's.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Engine } from '../lib/index.mjs'
import { byId } from './support.mjs'

const examples = fileURLToPath(new URL('../node_modules/@readme/oas-examples/', import.meta.url))
const read = (path) => JSON.parse(readFileSync(join(examples, path), 'utf8'))

test('every published 3.x example imports: each operation registered or skipped with a reason', () => {
  let registered = 0
  const skipped = []
  let documents = 0
  for (const version of ['3.0', '3.1']) {
    for (const file of readdirSync(join(examples, version, 'json'), { recursive: true })) {
      if (!String(file).endsWith('.json')) continue
      const doc = read(join(version, 'json', String(file)))
      const engine = new Engine()
      const report = engine.registerOpenApi(doc, { baseUrl: 'http://127.0.0.1:9/api' })
      documents += 1
      registered += report.registered.length
      assert.equal(engine.specs().length, report.registered.length)
      for (const s of report.skipped) {
        assert.match(s.operation, /^(GET|PUT|POST|DELETE|PATCH|HEAD|OPTIONS) \//)
        assert.ok(s.reason.length > 10, s.reason)
        skipped.push(`${version}/${file} ${s.operation}: ${s.reason}`)
      }
    }
  }
  assert.ok(documents >= 60, `${documents} documents`)
  assert.ok(registered >= 600, `${registered} operations registered`)
  // Each skip is one the importer cannot carry: a required multipart body, or a pattern the
  // Rust regex engine refuses (JavaScript's allows an unescaped `{`).
  assert.ok(skipped.length <= 5, skipped.join('\n'))
  assert.throws(() => new Engine().registerOpenApi(read('2.0/json/petstore.json')), /OpenAPI 3.0 or 3.1/)
})

test("the Petstore's tools call the API with the caller's credentials", async (t) => {
  const seen = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, key: req.headers.api_key ?? null, body: body ? JSON.parse(body) : null })
      const status = req.url.startsWith('/v2/pet/404') ? 404 : 200
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(status === 200 ? { id: 1, name: 'doggie', status: 'available' } : { message: 'Pet not found' }))
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => server.close())
  const base = `http://127.0.0.1:${server.address().port}/v2`

  const engine = new Engine()
  const doc = read('3.1/json/petstore.json')
  const report = engine.registerOpenApi(doc, { baseUrl: base, prefix: 'pets_', credentials: { attribute: 'petsKey', header: 'api_key', scheme: '' } })
  assert.ok(report.registered.includes('pets_getPetById') && report.registered.includes('pets_addPet'))
  const spec = engine.specs().find((s) => s.name === 'pets_getPetById')
  assert.deepEqual(spec.inputSchema.required, ['petId'])
  assert.equal(spec.policy.effect, 'read')
  const del = engine.specs().find((s) => s.name === 'pets_deletePet')
  assert.ok(!('api_key' in del.inputSchema.properties), 'the credential header is never an argument')

  const ana = { principal: 'ana', attributes: { petsKey: 'k-123' } }
  const out = await engine.run(
    [
      { id: 'get', tool: 'pets_getPetById', arguments: { petId: 7 } },
      { id: 'find', tool: 'pets_findPetsByStatus', arguments: { status: ['available', 'sold'] } },
      { id: 'add', tool: 'pets_addPet', arguments: { body: { name: 'rex', photoUrls: [] } } },
      { id: 'bad', tool: 'pets_addPet', arguments: { body: { photoUrls: [] } } },
      { id: 'gone', tool: 'pets_getPetById', arguments: { petId: 404 } },
    ],
    { caller: ana },
  )
  assert.deepEqual(byId(out, 'get').envelope, { ok: true, data: { id: 1, name: 'doggie', status: 'available' } })
  assert.deepEqual(byId(out, 'bad').envelope, { ok: false, needs: { 'body.name': true } }, 'the Pet schema requires a name: ask for it')
  const gone = byId(out, 'gone').envelope.error
  assert.deepEqual([gone.code, gone.status, gone.retryable], ['external_api_error', 404, false])
  const urls = seen.map((s) => `${s.method} ${s.url} ${s.key}`).sort()
  assert.deepEqual(urls, [
    'GET /v2/pet/404 k-123',
    'GET /v2/pet/7 k-123',
    'GET /v2/pet/findByStatus?status=available&status=sold k-123',
    'POST /v2/pet k-123',
  ])
  assert.deepEqual(seen.find((s) => s.method === 'POST').body, { name: 'rex', photoUrls: [] })
  const anonymous = await engine.run([{ tool: 'pets_getPetById', arguments: { petId: 1 } }])
  assert.equal(anonymous.results[0].envelope.error.reason, 'missing_credentials')
  assert.equal(seen.length, 4, 'nothing without credentials reached the API')
})
