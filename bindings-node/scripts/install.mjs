// Builds the native addon when the package is installed from its folder on a machine with
// Rust and Node only (`npm install /path/to/tooljig/bindings-node`). Skips when the addon for
// this platform is already there (set TOOLJIG_FORCE_BUILD=1 to rebuild; TOOLJIG_FEATURES names
// extra cargo features, e.g. `bench` for the benchmark's helpers). Needs cargo on PATH.
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))

/** The platform suffix the generated loader (index.js) looks for. */
function platformSuffix() {
  const { platform, arch } = process
  if (platform === 'linux') {
    const glibc = process.report?.getReport?.().header?.glibcVersionRuntime
    return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`
  }
  if (platform === 'win32') return `win32-${arch}-msvc`
  if (platform === 'darwin') return `darwin-${arch}`
  return `${platform}-${arch}`
}

const addon = join(root, `tooljig.${platformSuffix()}.node`)
if (existsSync(addon) && !process.env.TOOLJIG_FORCE_BUILD) {
  console.log(`tooljig: ${addon} is present; not rebuilding (TOOLJIG_FORCE_BUILD=1 to force)`)
  process.exit(0)
}

try {
  execFileSync('cargo', ['--version'], { stdio: 'ignore' })
} catch {
  console.error('tooljig: building the native addon needs Rust (cargo on PATH): https://rustup.rs')
  process.exit(1)
}

console.log('tooljig: building the native addon (cargo build --release -p tooljig-node); this takes 10 to 15 minutes the first time')
const features = process.env.TOOLJIG_FEATURES ? ['--features', process.env.TOOLJIG_FEATURES] : []
execFileSync('cargo', ['build', '--release', '-p', 'tooljig-node', ...features], { cwd: root, stdio: 'inherit' })
const metadata = JSON.parse(execFileSync('cargo', ['metadata', '--format-version', '1', '--no-deps'], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 }))
const file = { win32: 'tooljig_node.dll', darwin: 'libtooljig_node.dylib' }[process.platform] ?? 'libtooljig_node.so'
copyFileSync(join(metadata.target_directory, 'release', file), addon)
console.log(`tooljig: built ${addon}`)
