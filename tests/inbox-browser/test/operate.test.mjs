// Resume and roll back from a run's page in a real browser: the inbox (`tooljig serve`) leaves
// an operator request, the app's worker (another process, with the handlers and the
// compensation) carries it out, and the page shows what it did. Without a worker the
// request is withdrawn and the page says what to start.
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'

const here = fileURLToPath(new URL('..', import.meta.url))
const app = join(here, 'app.mjs')
const tooljig = join(here, '../../bindings-node/bin/tooljig.mjs')
const shots = process.env.INBOX_SCREENSHOTS ?? join(here, 'screenshots')

/** Starts `args` and resolves with the process once its output matches `ready`. */
function started(args, env, ready) {
  const child = spawn(process.execPath, args, { env })
  return new Promise((resolve, reject) => {
    let said = ''
    const hear = (chunk) => {
      said += chunk
      const found = said.match(ready)
      if (found) resolve([child, found])
    }
    child.stdout.on('data', hear)
    child.stderr.on('data', hear)
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${said}`)))
  })
}

test("an operator resumes and rolls back a run from its page, through the app's worker", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tooljig-inbox-operate-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const env = {
    ...process.env,
    TOOLJIG_STORE: `sqlite://${join(dir, 'store.db')}`,
    TOOLJIG_AUDIT: `sqlite://${join(dir, 'audit.db')}`,
  }
  mkdirSync(shots, { recursive: true })
  const { runId, statuses } = JSON.parse(
    execFileSync(process.execPath, [app, 'suspend', env.TOOLJIG_STORE, env.TOOLJIG_AUDIT, 'ada@example.com'], { env, encoding: 'utf8' }),
  )
  assert.deepEqual(statuses, ['pending_approval'])

  const [server, [, url]] = await started([tooljig, 'serve', '--bind', '127.0.0.1:0', '--token', 'alice-token=alice'], env, /on (http:\/\/\S+\/)/)
  t.after(() => server.kill())
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] })
  t.after(() => browser.close())
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } })
  await page.goto(url)
  await page.fill('input[name=token]', 'alice-token')
  await page.click('button:has-text("Sign in")')
  // The app asked for alice, who confirms her own call here; then she operates the run.
  await page.locator('section.request').getByRole('button', { name: 'Approve', exact: true }).click()
  await page.locator('#decided', { hasText: 'approved' }).waitFor()

  // No worker yet: the page waits, withdraws the request and says what to start. (The form's
  // wait is shortened here; the page's own default is 20 s.)
  await page.goto(new URL(`/runs/${runId}`, url).href)
  await page.locator('#operate').evaluate((form) => {
    const wait = document.createElement('input')
    Object.assign(wait, { type: 'hidden', name: 'wait_ms', value: '500' })
    form.append(wait)
  })
  await page.getByRole('button', { name: 'Resume' }).click()
  assert.match(await page.locator('#outcome').innerText(), /withdrawn: start the app with its operator-request worker/)

  // The app's worker, in its own process: resume runs the approved call there.
  const [worker] = await started([app, 'worker', env.TOOLJIG_STORE, env.TOOLJIG_AUDIT], env, /ready/)
  t.after(() => worker.kill())
  await page.goto(new URL(`/runs/${runId}`, url).href)
  await page.getByRole('button', { name: 'Resume' }).click()
  assert.match(await page.locator('#outcome').innerText(), /Run resumed by worker app-worker/)
  assert.match(await page.locator('#answer').innerText(), /c0\s+send_email\s+done/)
  await page.screenshot({ path: join(shots, '8-resumed.png'), fullPage: true })

  // Roll back: the worker runs the compensation; the run's page shows it finished.
  await page.click('text=Back to the run')
  assert.match(await page.locator('body').innerText(), /state finished/)
  await page.getByRole('button', { name: 'Roll back' }).click()
  assert.match(await page.locator('#outcome').innerText(), /Run rolled back by worker app-worker/)
  assert.match(await page.locator('#answer').innerText(), /c0\s+send_email\s+compensated/)
  await page.screenshot({ path: join(shots, '9-rolled-back.png'), fullPage: true })
  // Once more: nothing is undone twice.
  await page.click('text=Back to the run')
  await page.getByRole('button', { name: 'Roll back' }).click()
  assert.match(await page.locator('#answer').innerText(), /c0\s+send_email\s+already_rolled_back/)
})
