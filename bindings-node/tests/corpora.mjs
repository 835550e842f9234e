// Locates the shared test corpora: env TOOLJIG_CORPORA, or else <repo>/../shared/corpora.
// Missing corpora skip a test with the reason, except under CI=true where they must exist.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = process.env.TOOLJIG_CORPORA ?? fileURLToPath(new URL('../../../shared/corpora', import.meta.url))

/**
 * The directory of corpus `name`, or `{skip: reason}` for `test(..., {skip})`. Throws under
 * CI=true when it is missing.
 */
export function corpus(name) {
  const dir = join(root, name)
  if (existsSync(dir)) return { dir, skip: false }
  const reason = `corpus ${name} not found under ${root} (set TOOLJIG_CORPORA)`
  if (process.env.CI === 'true') throw new Error(`CI=true: ${reason}`)
  return { dir, skip: reason }
}
