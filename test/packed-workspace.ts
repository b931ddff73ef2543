/**
 * The publishable packages as npm publishes them: copied (sources, configs, README, LICENSE) into
 * a temporary tree and packed there by `npm pack`, whose `prepack` builds them (so this
 * checkout's own `dist/` is never written while other tests run), then installed from the
 * tarballs into a scratch project without a registry: their third-party dependencies are linked
 * from this checkout's `node_modules`.
 */
import { execFile } from 'node:child_process'
import { cp, mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const run = promisify(execFile)

/** The packages that are published, by name, with their directory in the repository. */
export const PUBLISHED = [
  { name: '@causeway/core', dir: 'packages/core' },
  { name: '@causeway/client', dir: 'packages/client' },
  { name: '@causeway/gateway', dir: 'gateway' },
] as const

/** A packed package. */
export interface Tarball {
  name: string
  /** Path of the `.tgz`. */
  path: string
  /** The files in it, relative to the package. */
  files: string[]
}

/** The tarballs, and a scratch project that installed them. */
export interface PackedWorkspace {
  tarballs: Tarball[]
  /** The scratch project's directory (its `node_modules` has the packages). */
  app: string
  /** Deletes everything. */
  close(): Promise<void>
}

/** Packs every published package and installs the tarballs into a scratch project. */
export async function packWorkspace(): Promise<PackedWorkspace> {
  const dir = await mkdtemp(join(tmpdir(), 'causeway-pack-'))
  try {
    const repo = join(dir, 'repo')
    await copyPackages(repo)
    await linkNodeModules(repo)
    const tarballs: Tarball[] = []
    await mkdir(join(dir, 'tarballs'))
    for (const { name, dir: pkg } of PUBLISHED) {
      const { stdout } = await run(
        'npm',
        ['pack', '--json', '--pack-destination', join(dir, 'tarballs')],
        { cwd: join(repo, pkg), maxBuffer: 64 * 1024 * 1024 },
      )
      // The prepack's tsc output, if any, comes before npm's JSON.
      const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as {
        filename: string
        files: { path: string }[]
      }[]
      tarballs.push({
        name,
        path: join(dir, 'tarballs', basename(packed!.filename)),
        files: packed!.files.map((f) => f.path).sort(),
      })
    }
    const app = join(dir, 'app')
    await install(app, tarballs)
    return { tarballs, app, close: () => rm(dir, { recursive: true, force: true }) }
  } catch (error) {
    await rm(dir, { recursive: true, force: true })
    throw error
  }
}

// What a clean clone has of each package: no builds, no tests, no dependencies installed.
async function copyPackages(repo: string): Promise<void> {
  await mkdir(repo, { recursive: true })
  await cp(join(ROOT, 'tsconfig.json'), join(repo, 'tsconfig.json'))
  for (const { dir } of PUBLISHED) {
    const from = join(ROOT, dir)
    await cp(from, join(repo, dir), {
      recursive: true,
      filter: (path) => {
        const rel = path.slice(from.length + 1)
        const top = rel.split('/')[0]
        if (['node_modules', 'dist', 'test', 'scripts'].includes(top!)) return false
        if (top === 'cjs' && rel !== 'cjs' && rel !== 'cjs/package.json') return false
        return !rel.endsWith('.tsbuildinfo')
      },
    })
  }
}

// The checkout's node_modules, entry by entry, but @causeway/* are the copies.
async function linkNodeModules(repo: string): Promise<void> {
  const modules = join(repo, 'node_modules')
  await mkdir(join(modules, '@causeway'), { recursive: true })
  for (const entry of await readdir(join(ROOT, 'node_modules'))) {
    if (entry === '@causeway' || (entry.startsWith('.') && entry !== '.bin')) continue
    await symlink(join(ROOT, 'node_modules', entry), join(modules, entry))
  }
  for (const { name, dir } of PUBLISHED) await symlink(join(repo, dir), join(modules, name))
}

// A project that depends on the tarballs; every other dependency is linked from the checkout,
// so `npm install --offline` needs no registry.
async function install(app: string, tarballs: Tarball[]): Promise<void> {
  await mkdir(app, { recursive: true })
  const dependencies: Record<string, string> = {}
  for (const { dir } of PUBLISHED) {
    const manifest = JSON.parse(await readFile(join(ROOT, dir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>
    }
    for (const dep of Object.keys(manifest.dependencies ?? {})) {
      if (!dep.startsWith('@causeway/'))
        dependencies[dep] = `file:${join(ROOT, 'node_modules', dep)}`
    }
  }
  dependencies['@types/node'] = `file:${join(ROOT, 'node_modules', '@types', 'node')}`
  for (const { name, path } of tarballs) dependencies[name] = `file:${path}`
  await writeFile(
    join(app, 'package.json'),
    JSON.stringify({ name: 'scratch', version: '1.0.0', private: true, dependencies }, null, 2),
  )
  // --ignore-scripts: the linked checkout packages are installed already (their own `prepare`
  // scripts would need their dev dependencies).
  await run('npm', ['install', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: app,
    maxBuffer: 64 * 1024 * 1024,
  })
}
