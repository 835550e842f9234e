// Every `ts` and `js` block of the docs users read, type-checked with `tsc --strict` and run with node.
// The blocks are found, not listed: a block added to README.md, docs/*.md or either binding's README
// is a test at once. The conventions (a hidden prelude in an HTML comment before the fence,
// `check-only`, `xfail`) are docs/CONTRIBUTING.md's. Each block is a module of its own, compiled
// into .snippets/ (inside this package, so `import ... from 'tooljig'` resolves to it), and run
// in a fresh directory with DATABASE_URL naming a PostgreSQL schema of its own.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const pkg = fileURLToPath(new URL('..', import.meta.url))
const root = join(pkg, '..')
const docs = [
  join(root, 'README.md'),
  ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => join(root, 'docs', f)),
  join(root, 'bindings-python', 'README.md'),
  join(root, 'bindings-node', 'README.md'),
]
const languages = { ts: 'mts', typescript: 'mts', js: 'mjs', javascript: 'mjs' }
const postgres = process.env.TOOLJIG_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/** What every block may take for granted, as a user's module imports it; less what the block imports itself. */
const imports = {
  tooljig: ['Agent', 'AgentState', 'Engine', 'Model', 'ModelTurn', 'Provider', 'StreamParser', 'ToolError', 'accepted', 'importTools', 'needs', 'tool'],
  zod: ['z'],
}
function preludeOf(code) {
  const own = new Set([...code.matchAll(/^import\s+(?:type\s+)?\{([^}]*)\}/gm)].flatMap((m) => m[1].split(',').map((n) => n.trim().split(/\s+as\s+/).pop())))
  return Object.entries(imports)
    .map(([from, names]) => names.filter((n) => !own.has(n)))
    .map((names, i) => (names.length ? `import { ${names.join(', ')} } from '${Object.keys(imports)[i]}'\n` : ''))
    .join('')
}

/** The fenced blocks of `doc` with their hidden prelude, epilogue and markers. */
function snippets(doc) {
  const lines = readFileSync(doc, 'utf8').split('\n')
  const out = []
  let comments = []
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]
    const stripped = line.trim()
    const indent = line.length - line.trimStart().length
    if (indent >= 4) {
      comments = [] // an indented code block: shown, never run
    } else if (stripped.startsWith('<!--')) {
      const start = i
      while (!lines[i].includes('-->')) i++
      comments.push(lines.slice(start, i + 1).join('\n').trim().slice(4, -3).trim())
    } else if (stripped.startsWith('```')) {
      const language = stripped.slice(3).split(',')[0].trim()
      const start = i
      i++
      while (lines[i].trim() !== '```') i++
      const code = lines.slice(start + 1, i).map((l) => l.slice(indent)).join('\n')
      const hidden = (kind) => comments.filter((c) => c.startsWith(kind + '\n')).map((c) => c.slice(kind.length + 1)).join('\n')
      const mark = (kind) => comments.find((c) => c.startsWith(kind + ':'))?.slice(kind.length + 1).trim()
      out.push({ doc, line: start + 1, language, code, prelude: hidden('prelude'), after: hidden('after'), checkOnly: mark('check-only'), xfail: mark('xfail') })
      comments = []
    } else if (stripped !== '') {
      comments = []
    }
  }
  return out
}

const all = docs.flatMap(snippets).filter((s) => s.language in languages)
const outDir = join(pkg, '.snippets')
const id = (s) => `${relative(root, s.doc)}:${s.line}`
const module = (s) => 'snippet_' + id(s).replace(/\W/g, '_')

/** One `tsc --strict` over every block (a module each): compiles them to .snippets/out and reports errors by module. */
function compile() {
  rmSync(outDir, { recursive: true, force: true })
  mkdirSync(outDir, { recursive: true })
  const files = all.map((s) => {
    const file = `${module(s)}.${languages[s.language]}`
    writeFileSync(join(outDir, file), `${preludeOf(s.code)}${s.prelude}\n${s.code}\n${s.after}\nexport {}\n`)
    return file
  })
  writeFileSync(join(outDir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true, allowJs: true, checkJs: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext',
      types: ['node'], skipLibCheck: true, rootDir: '.', outDir: 'out', noEmitOnError: false, noUnusedLocals: false,
    },
    files,
  }))
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  const r = spawnSync(process.execPath, [tsc, '-p', join(outDir, 'tsconfig.json'), '--pretty', 'false'], { encoding: 'utf8' })
  const errors = new Map()
  const other = []
  for (const line of r.stdout.split('\n').filter(Boolean)) {
    const m = line.match(/(snippet_\w+)\.m[tj]s\((\d+),\d+\): (.*)/)
    if (m) errors.set(m[1], [...(errors.get(m[1]) ?? []), { line: Number(m[2]), message: m[3] }])
    else if (!line.startsWith(' ')) other.push(line)
  }
  return { errors, other: [...other, ...(r.error ? [String(r.error)] : [])] }
}

const { errors, other } = compile()

test('tsc checked the snippets (no error outside them)', () => {
  assert.deepEqual(other, [])
})

test('the docs have TypeScript and JavaScript snippets', () => {
  assert.ok(all.length >= 15, all.map(id).join(', '))
})

for (const s of all) {
  const offset = preludeOf(s.code).split('\n').length - 1 + s.prelude.split('\n').length
  const where = (line) => (line > offset ? `${s.doc.split('/').pop()}:${s.line + line - offset}` : `prelude line ${line}`)
  const options = s.xfail ? { todo: s.xfail } : {}

  test(`${id(s)} type-checks (tsc --strict)`, options, () => {
    const found = (errors.get(module(s)) ?? []).map((e) => `${where(e.line)}: ${e.message}`)
    assert.deepEqual(found, [])
  })

  test(`${id(s)} runs`, { ...options, skip: s.checkOnly && `check-only: ${s.checkOnly}`, timeout: 180_000 }, (t) => {
    const cwd = mkdtempSync(join(tmpdir(), 'tooljig-snippet-'))
    const schema = `tj_doc_${randomUUID().replaceAll('-', '')}`
    t.after(() => {
      rmSync(cwd, { recursive: true, force: true })
      spawnSync('psql', [postgres, '-qc', `DROP SCHEMA IF EXISTS "${schema}" CASCADE`], { timeout: 30_000 })
    })
    const file = join(outDir, 'out', `${module(s)}.mjs`)
    const r = spawnSync(process.execPath, [file], {
      cwd, encoding: 'utf8', timeout: 170_000, env: { ...process.env, DATABASE_URL: `${postgres}?schema=${schema}` },
    })
    assert.equal(r.status, 0, `${id(s)} failed:\n${r.stdout}\n${r.stderr}`)
  })
}
