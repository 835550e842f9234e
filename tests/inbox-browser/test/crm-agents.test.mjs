// Seed 004 in a real browser: the CRM's lead-qualifier agent (apps/crm_agents, Python) asks
// for two approvals kept in Redis and waits; the manager signs in to its inbox in Chromium,
// selects both requests and approves them with one click; the agent, woken by the decisions,
// qualifies the lead and sends the email. Needs the Python package (.venv), Redis and
// PostgreSQL; the app's key prefix and schema are removed afterwards.
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'

const repo = fileURLToPath(new URL('../../..', import.meta.url))
const python = join(repo, '.venv/bin/python')
const redis = process.env.TOOLJIG_REDIS_URL ?? 'redis://127.0.0.1:6379'
const postgres = process.env.TOOLJIG_POSTGRES_URL ?? 'postgres://127.0.0.1:5432/test'

function serversUp() {
  const r = spawnSync('redis-cli', ['-u', redis, 'PING'], { encoding: 'utf8' })
  const p = spawnSync('psql', [postgres, '-qAtc', 'SELECT 1'], { encoding: 'utf8' })
  return r.stdout?.trim() === 'PONG' && p.status === 0
}

test('a manager approves two requests at once in the browser and the waiting agent goes on', async (t) => {
  if (!existsSync(python) || !serversUp()) {
    if (process.env.CI === 'true') throw new Error('the Python package (.venv), Redis and PostgreSQL are needed under CI=true')
    t.skip('needs .venv (bash bindings-python/setup.sh), Redis and PostgreSQL')
    return
  }
  const app = spawn(python, [join(repo, 'apps/crm_agents/app.py'), '--await-manager'], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.after(() => app.kill())
  const lines = createInterface({ input: app.stdout })[Symbol.asyncIterator]()
  const next = async () => JSON.parse((await lines.next()).value)
  const asked = await next()
  t.after(() => {
    const keys = spawnSync('redis-cli', ['-u', redis, '--scan', '--pattern', `${asked.tag}:*`], { encoding: 'utf8' }).stdout.split(/\s+/).filter(Boolean)
    if (keys.length) spawnSync('redis-cli', ['-u', redis, 'DEL', ...keys])
    spawnSync('psql', [postgres, '-qAtc', `DROP SCHEMA IF EXISTS "${asked.tag}" CASCADE`])
  })
  assert.deepEqual(asked.pending.sort(), ['send_email', 'update_lead_status'])

  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] })
  t.after(() => browser.close())
  const page = await browser.newPage()
  await page.goto(asked.inbox)
  await page.fill('input[name=token]', asked.token)
  await page.click('button:has-text("Sign in")')
  assert.match(await page.locator('body').innerText(), /Signed in as maria/)
  const requests = page.locator('section.request')
  assert.equal(await requests.count(), 2)
  for (const box of await page.locator('input[name=pick]').all()) await box.check()
  await page.getByRole('button', { name: 'Approve selected' }).click()
  await page.waitForFunction(() => document.querySelectorAll('section.request').length === 0)
  assert.match(await page.locator('#decided').innerText(), /update_lead_status\s+approved\s+maria/)

  const done = await next()
  assert.equal(done.status, 'finished')
  assert.equal(done.lead_status, 'qualified')
  assert.deepEqual(done.emails, ['Welcome, Dana'])
  assert.match(done.answer, /update_lead_status: done\. send_email: done\. create_follow_up_task: done\./)
})
