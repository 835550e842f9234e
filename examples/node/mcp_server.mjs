// An engine's tools over MCP, both ways.
//
//   node examples/node/mcp_server.mjs            # demo: serve over HTTP, call through a second engine
//   node examples/node/mcp_server.mjs --stdio    # serve the client that started this process
//   node examples/node/mcp_server.mjs --http 127.0.0.1:8931   # serve HTTP (Bearer dev-token) until Ctrl-C
import { Engine, tool } from 'tooljig'
import { z } from 'zod'

const engine = new Engine()
engine.register('add', tool({ description: 'Adds two integers.', inputSchema: z.object({ a: z.number().int(), b: z.number().int() }), execute: ({ a, b }) => ({ sum: a + b }) }), { effect: 'read' })
engine.register(
  'find_customer',
  tool({ description: 'Finds a customer by name (needs the `crm` scope).', inputSchema: z.object({ name: z.string() }), execute: ({ name }, ctx) => ({ name, foundBy: ctx.caller.principal ?? 'nobody' }) }),
  { scopes: ['crm'] },
)

async function demo() {
  const server = engine.serveMcp({ tokens: { 'ada-token': { principal: 'ada', scopes: ['crm'] }, 'bob-token': { principal: 'bob' } } })
  try {
    for (const token of ['ada-token', 'bob-token']) {
      const other = new Engine()
      const client = await other.connectMcp(server.url, { headers: { authorization: `Bearer ${token}` }, prefix: 'remote_' })
      const calls = [{ id: '1', tool: 'remote_add', arguments: { a: 2, b: 3 } }]
      if (client.tools.includes('remote_find_customer')) calls.push({ id: '2', tool: 'remote_find_customer', arguments: { name: 'Acme' } })
      const { results } = await other.run(calls)
      console.log(token, JSON.stringify([...client.tools].sort()), JSON.stringify(results.map((r) => r.envelope)))
      await client.close()
    }
  } finally {
    await server.stop()
  }
}

const args = process.argv.slice(2)
if (args.includes('--stdio')) {
  await engine.serveMcpStdio({ caller: { principal: 'local-user', scopes: ['crm'] } })
} else if (args.includes('--http')) {
  const server = engine.serveMcp({ bind: args[args.indexOf('--http') + 1], tokens: { 'dev-token': { principal: 'dev', scopes: ['crm'] } } })
  console.error(`MCP on ${server.url} (Authorization: Bearer dev-token)`)
  process.on('SIGINT', () => server.stop())
  await server.wait()
} else {
  await demo()
}
