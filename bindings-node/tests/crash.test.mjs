// Crashes at every phase across three OS processes and three languages: the crash scenario
// (tests/crash/) starts in a Rust, Python or Node process chosen at random, which is killed
// (SIGKILL) at a random moment after its engine is built (planning, running, recording);
// other processes, each in a random language, resume the run and are killed too, until one
// finishes it. After 50 kills: no effect lost, none doubled except pure and idempotent calls
// run again (those with the same idempotency key), every unknown outcome is outcome_unknown,
// the audit chain verifies. The same again on PostgreSQL (20 kills). core/tests/durable_crash.rs
// plays the same scenario in Rust alone.
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const scenarioDir = join(repo, 'tests', 'crash')
const scenario = JSON.parse(readFileSync(join(scenarioDir, 'scenario.json'), 'utf8'))
const python = join(repo, '.venv', 'bin', 'python')
const hasPython = existsSync(python) && spawnSync(python, ['-c', 'import tooljig']).status === 0
if (!hasPython && process.env.CI === 'true') {
  throw new Error(`the Python package is not installed in ${python}: run bindings-python/run-tests.sh first`)
}
const KILLS = 50

/// The Rust worker, built (or found fresh) by cargo.
function rustWorker() {
  const built = spawnSync('cargo', ['build', '-q', '-p', 'tooljig', '--all-features', '--example', 'crash_worker'], { cwd: repo, encoding: 'utf8' })
  assert.equal(built.status, 0, built.stderr)
  const dirs = [join(repo, 'target', 'debug'), ...(process.env.CARGO_BUILD_TARGET ? [join(repo, 'target', process.env.CARGO_BUILD_TARGET, 'debug')] : [])]
  const found = dirs.map((d) => join(d, 'examples', 'crash_worker')).filter(existsSync)
  assert.ok(found.length > 0, 'cargo built the crash worker')
  return found.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]
}

/// A seeded generator, so that a failing seed can be replayed (TOOLJIG_CRASH_SEED).
function generator(seed) {
  let s = seed >>> 0
  return (n) => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return (((t ^ (t >>> 14)) >>> 0) % n)
  }
}

/// Runs a worker; kills it `killAfter` ms after it says it is ready. Resolves to true when it
/// finished on its own.
function play(worker, args, killAfter) {
  return new Promise((resolve, reject) => {
    const child = spawn(worker[0], [...worker.slice(1), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    let killed = false
    child.stderr.on('data', (d) => { stderr += d })
    child.stdout.on('data', (d) => {
      if (killAfter !== undefined && String(d).includes('ready')) {
        setTimeout(() => { killed = child.kill('SIGKILL') && child.exitCode === null }, killAfter)
      }
    })
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL' && killed) resolve(false)
      else if (code === 0) resolve(true)
      else reject(new Error(`${worker.join(' ')} ${args.join(' ')} exited ${code ?? signal}: ${stderr}`))
    })
  })
}

function check(dir, where, rust) {
  const finals = JSON.parse(readFileSync(join(dir, 'final.json'), 'utf8'))
  assert.equal(finals.length, scenario.calls.length, where)
  const effects = existsSync(join(dir, 'effects.txt')) ? readFileSync(join(dir, 'effects.txt'), 'utf8') : ''
  const done = new Map()
  for (const line of effects.split('\n').filter(Boolean)) {
    const [call, key] = line.split(' ')
    done.set(call, [...(done.get(call) ?? []), key])
  }
  const classOf = new Map(scenario.tools.map((t) => [t.name, t.effect_class]))
  let unknown = 0
  let reruns = 0
  finals.forEach((f, i) => {
    const cls = classOf.get(scenario.calls[i].tool)
    const did = done.get(f.call) ?? []
    if (f.envelope.ok === true) {
      assert.ok(did.length > 0, `${where}: ${f.call} succeeded without its effect`)
    } else {
      const code = f.envelope.error?.code
      assert.ok((code === 'outcome_unknown' && cls === 'at_most_once') || code === 'dependency_failed', `${where}: ${f.call} ended ${JSON.stringify(f.envelope)}`)
      if (code === 'outcome_unknown') unknown += 1
    }
    if (cls === 'at_most_once') assert.ok(did.length <= 1, `${where}: ${f.call} ran ${did.length} times`)
    if (cls === 'idempotent') assert.ok(did.every((k) => k === did[0]), `${where}: ${f.call} ran again under another key: ${did}`)
    reruns += Math.max(0, did.length - 1)
  })
  const verified = spawnSync(rust, ['verify-audit', dir], { encoding: 'utf8' })
  assert.equal(verified.stdout.trim(), 'true', `${where}: the audit chain broke ${verified.stderr}`)
  return { unknown, reruns }
}

const noPython = hasPython ? false : 'the Python package is not built here (bindings-python/run-tests.sh builds it)'

test(`${KILLS} SIGKILLs across Rust, Python and Node processes lose and double nothing`, { skip: noPython, timeout: 600_000 }, async () => {
  await rounds(KILLS, () => null)
})

const postgres = process.env.TOOLJIG_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const psql = (sql) => spawnSync('psql', [postgres, '-qAtc', sql], { encoding: 'utf8', timeout: 30_000 })
const hasPostgres = psql('SELECT 1').status === 0
if (!hasPostgres && process.env.CI === 'true') throw new Error(`PostgreSQL at ${postgres} is unreachable under CI=true`)

test('20 SIGKILLs across the three languages on PostgreSQL lose and double nothing', { skip: noPython || (hasPostgres ? false : `PostgreSQL at ${postgres} is unreachable`), timeout: 600_000 }, async () => {
  // Each round in a schema of its own (state store and audit log), dropped after it.
  await rounds(20, (round) => {
    const schema = `tj_node_crash_${process.pid}_${Date.now()}_${round}`
    return { url: `${postgres}?schema=${schema}`, drop: () => psql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`) }
  })
})

/// Plays rounds until `wanted` processes were killed; `backend(round)` gives a round a
/// PostgreSQL schema (`{url, drop}`), or null for SQLite files.
async function rounds(wanted, backend) {
  const rust = rustWorker()
  const workers = {
    rust: [rust],
    python: [python, join(scenarioDir, 'worker.py')],
    node: [process.execPath, join(scenarioDir, 'worker.mjs')],
  }
  const languages = Object.keys(workers)
  const seed = Number(process.env.TOOLJIG_CRASH_SEED ?? Date.now() % 2 ** 31)
  const below = generator(seed)
  const killedIn = Object.fromEntries(languages.map((l) => [l, 0]))
  let kills = 0
  let round = 0
  let unknown = 0
  let reruns = 0
  while (kills < wanted) {
    round += 1
    const dir = mkdtempSync(join(tmpdir(), 'tooljig-crash-'))
    const scratch = backend(round)
    if (scratch) writeFileSync(join(dir, 'backend.url'), scratch.url)
    try {
      // The first rounds start in each language in turn and kill it within 40 ms of ready,
      // before the scenario's shortest path of pauses (74 ms) can end: every language is
      // killed at least once, whatever the seed.
      const first = round <= languages.length
      const starter = first ? languages[round - 1] : languages[below(3)]
      if (!await play(workers[starter], ['start', dir], below(first ? 40 : 120))) {
        kills += 1
        killedIn[starter] += 1
      }
      const run = spawnSync(rust, ['stored-run', dir], { encoding: 'utf8' }).stdout.trim()
      if (!run) {
        assert.ok(!existsSync(join(dir, 'effects.txt')), `seed ${seed}: effects without a run`)
        continue
      }
      let finished = existsSync(join(dir, 'final.json'))
      while (!finished) {
        const lang = languages[below(3)]
        const kill = below(2) === 0 ? below(300) : undefined
        finished = await play(workers[lang], ['resume', dir, run], kill)
        if (!finished) {
          kills += 1
          killedIn[lang] += 1
        }
      }
      const seen = check(dir, `seed ${seed}, round ${round}`, rust)
      unknown += seen.unknown
      reruns += seen.reruns
    } finally {
      rmSync(dir, { recursive: true, force: true })
      scratch?.drop()
    }
  }
  console.log(`seed ${seed}: ${kills} kills in ${round} rounds (${JSON.stringify(killedIn)}); ${unknown} calls ended outcome_unknown, ${reruns} pure or idempotent calls ran again`)
  for (const lang of languages) assert.ok(killedIn[lang] > 0, `seed ${seed}: no ${lang} process was killed`)
}
