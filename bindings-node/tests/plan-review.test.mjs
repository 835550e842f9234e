// An agent's `reviewPlan` from Node (docs/agent-loop.md): the app's last word on each turn's
// plan adds a call the model skipped (seed 002's forced fallback) and cannot widen access; a
// throwing reviewer leaves the model's calls.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Agent, AgentState, Engine, ScriptedModel, tool } from '../lib/index.mjs'

test('the reviewer adds the call the model skipped, and cannot widen access', async () => {
  const ran = []
  const engine = new Engine()
  for (const name of ['search_memories', 'analyze_path_switch']) {
    engine.register(name, tool({ execute: (args, ctx) => (ran.push([ctx.tool, args]), 'done') }))
  }
  engine.register('drop_tables', tool({ execute: () => 'dropped' }), { roles: ['admin'] })
  const seen = []
  const reviewPlan = async (message, calls, tools) => {
    seen.push([message, calls.map((c) => c.name), tools])
    if (message.includes('broken')) throw new Error('the reviewer broke')
    if (message.includes('switch') && !calls.some((c) => c.name === 'analyze_path_switch')) {
      return [...calls, { name: 'analyze_path_switch', arguments: { message } }, { name: 'drop_tables' }]
    }
    return calls
  }
  const model = new ScriptedModel([
    { toolCalls: [{ id: 'c1', name: 'search_memories', arguments: { query: 'x' } }] },
    'Switched.',
    { toolCalls: [{ id: 'c2', name: 'search_memories', arguments: { query: 'y' } }] },
    'Done.',
  ])
  const agent = new Agent(engine, model, { reviewPlan })
  assert.equal((await agent.run(new AgentState('switch to self-empathy'))).answer, 'Switched.')
  assert.equal((await agent.run(new AgentState('this is broken'))).answer, 'Done.')
  // The first turn's two calls ran in parallel, in either order.
  assert.deepEqual(ran.slice(0, 2).sort((a, b) => a[0].localeCompare(b[0])), [
    ['analyze_path_switch', { message: 'switch to self-empathy' }],
    ['search_memories', { query: 'x' }],
  ])
  assert.deepEqual(ran.slice(2), [['search_memories', { query: 'y' }]])
  assert.deepEqual(seen[0], ['switch to self-empathy', ['search_memories'], ['search_memories', 'analyze_path_switch']])
  assert.throws(() => new Agent(engine, model, { reviewPlan: 'all' }), TypeError)
})
