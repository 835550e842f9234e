// The Node worker of the crash scenario (README.md): `worker.mjs start DIR` or
// `worker.mjs resume DIR RUN_ID`.
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Engine, tool } from '../../bindings-node/lib/index.mjs'

const scenario = JSON.parse(readFileSync(new URL('./scenario.json', import.meta.url), 'utf8'))

function app(dir) {
  // The round's backend: a PostgreSQL URL in backend.url, else SQLite files in dir.
  const url = existsSync(join(dir, 'backend.url')) ? readFileSync(join(dir, 'backend.url'), 'utf8').trim() : null
  const engine = new Engine({
    stateStore: url ?? { sqlite: join(dir, 'state.db') },
    audit: url ?? { sqlite: join(dir, 'audit.db') },
    runLeaseMs: scenario.lease_ms,
  })
  const effects = join(dir, 'effects.txt')
  for (const t of scenario.tools) {
    const execute = async (args, ctx) => {
      // The effect made durable in one write, then a pause a kill may cut.
      const fd = openSync(effects, 'a')
      try {
        writeSync(fd, `${ctx.callId} ${ctx.idempotencyKey}\n`)
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      await sleep(args.pause_ms ?? 0)
      return { did: ctx.callId }
    }
    engine.register(t.name, tool({ description: 'An effect.', inputSchema: { type: 'object' }, execute }), { effectClass: t.effect_class })
  }
  return engine
}

const [role, dir, runId] = process.argv.slice(2)
const engine = app(dir)
process.stdout.write('ready\n')
const out = role === 'start'
  ? await engine.run(scenario.calls, { caller: { principal: scenario.principal } })
  : await engine.resume(runId)
// Written aside and renamed: a kill mid-write never leaves a half file that reads as finished.
writeFileSync(join(dir, 'final.json.tmp'), JSON.stringify(out.results.map((r) => ({ call: r.callId, envelope: r.envelope }))))
renameSync(join(dir, 'final.json.tmp'), join(dir, 'final.json'))
