/**
 * The packages as published: each tarball has its README, the LICENSE, its builds and nothing of
 * the build's or the tests' own; everything its package.json points at is in it; and consumers
 * of the installed tarballs (ES module TypeScript with `bundler` and `node16` resolution,
 * CommonJS TypeScript with `module: commonjs` and `nodenext`) typecheck and run against a
 * cluster started by the published `causeway` bin.
 */
import { execFile, spawn } from 'node:child_process'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PackedWorkspace, packWorkspace } from './packed-workspace.js'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
const run = promisify(execFile)

let packed: PackedWorkspace
beforeAll(async () => {
  packed = await packWorkspace()
}, 240_000)
afterAll(() => packed?.close())

/** Every file a package.json points at: exports (all conditions), main, types, bin, typesVersions. */
function targetsOf(manifest: Record<string, unknown>): string[] {
  const out: string[] = []
  const walk = (value: unknown): void => {
    if (typeof value === 'string') out.push(value)
    else if (Array.isArray(value)) value.forEach(walk)
    else if (value !== null && typeof value === 'object') Object.values(value).forEach(walk)
  }
  for (const field of ['exports', 'main', 'types', 'bin', 'typesVersions']) walk(manifest[field])
  return out.map((path) => path.replace(/^\.\//, ''))
}

describe('npm pack', () => {
  it('each tarball has README, LICENSE and its builds; no build info, no tests', async () => {
    const license = await readFile(join(ROOT, 'LICENSE'), 'utf8')
    expect(license).toContain('Apache License')
    expect(license).toContain('Version 2.0, January 2004')
    for (const { name, files } of packed.tarballs) {
      expect(files, name).toEqual(expect.arrayContaining(['README.md', 'LICENSE', 'package.json']))
      expect(
        files.filter((f) => /tsbuildinfo|(^|\/)test\/|\.test\./.test(f)),
        name,
      ).toEqual([])
      const installed = join(packed.app, 'node_modules', name)
      expect(await readFile(join(installed, 'LICENSE'), 'utf8'), name).toBe(license)
      const manifest = JSON.parse(
        await readFile(join(installed, 'package.json'), 'utf8'),
      ) as Record<string, unknown>
      expect(manifest.license, name).toBe('Apache-2.0')
      const missing = targetsOf(manifest).filter((target) => !files.includes(target))
      expect(missing, `${name}: package.json points at files the tarball lacks`).toEqual([])
    }
    const sdk = packed.tarballs.filter((t) => t.name !== '@causeway/gateway')
    for (const { name, files } of sdk) {
      expect(files, name).toEqual(
        expect.arrayContaining([
          'dist/index.js',
          'dist/index.d.ts',
          'cjs/index.js',
          'cjs/package.json',
        ]),
      )
    }
  })

  // Packing, installing and type-checking the consumers takes about a minute alone and over two
  // beside the rest of the suite on 2 cores: the budget (300 s) is for a slow build, not a bound.
  it('ES module and CommonJS consumers typecheck, and run against the published causeway bin', async () => {
    const consumers = {
      'esm-bundler': {
        type: 'module',
        source: 'esm.ts',
        options: { module: 'esnext', moduleResolution: 'bundler' },
      },
      'esm-node16': {
        type: 'module',
        source: 'esm.ts',
        options: { module: 'node16', moduleResolution: 'node16' },
      },
      'cjs-commonjs': { type: 'commonjs', source: 'cjs.ts', options: { module: 'commonjs' } },
      // TypeScript before 6 resolved `module: commonjs` this way: `types` and `typesVersions`.
      'cjs-node10': {
        type: 'commonjs',
        source: 'cjs.ts',
        options: { module: 'commonjs', moduleResolution: 'node10', ignoreDeprecations: '6.0' },
      },
      'cjs-nodenext': {
        type: 'commonjs',
        source: 'cjs.ts',
        options: { module: 'nodenext', moduleResolution: 'nodenext' },
      },
    }
    await Promise.all(
      Object.entries(consumers).map(async ([name, consumer]) => {
        const dir = join(packed.app, name)
        await mkdir(dir, { recursive: true })
        await writeFile(join(dir, 'package.json'), JSON.stringify({ type: consumer.type }))
        await writeFile(
          join(dir, 'main.ts'),
          await readFile(join(ROOT, 'test', 'consumers', consumer.source), 'utf8'),
        )
        const compilerOptions = {
          target: 'es2022',
          strict: true,
          // Checking every declaration file costs ~15 s of CPU (TypeBox's ~350): done once, for
          // the case most likely to break (CommonJS declarations that refer to an ES module).
          skipLibCheck: name !== 'cjs-nodenext',
          types: ['node'],
          outDir: 'out',
          rootDir: '.',
          ...consumer.options,
        }
        await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions }))
        const typecheck = await run(process.execPath, [TSC, '-p', dir]).catch(
          (e: { stdout: string }) => ({ stdout: `tsc failed:\n${e.stdout}` }),
        )
        expect(typecheck.stdout, name).toBe('')
      }),
    )

    // The published bin runs the build (no sources are run outside a checkout).
    const bin = join(packed.app, 'node_modules', '.bin', 'causeway')
    const cluster = spawn(
      process.execPath,
      [bin, 'dev', '--memory', '--port', '0', '--log-level', 'silent'],
      {
        cwd: packed.app,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    try {
      const url = await firstUrl(cluster)
      for (const name of Object.keys(consumers)) {
        const { stdout } = await run(process.execPath, [join(packed.app, name, 'out', 'main.js')], {
          env: { ...process.env, CAUSEWAY_URL: url },
          timeout: 30_000,
        })
        const seen = JSON.parse(stdout) as Record<string, unknown>
        expect(seen, name).toMatchObject({ found: true, regions: 2, node: true, typedError: true })
        expect(seen.via, name).toBe(name.startsWith('esm') ? 'esm' : 'cjs')
        // CommonJS: nothing of the schema library was loaded for the SDK.
        if (name.startsWith('cjs')) expect(seen.typebox, name).toEqual([])
      }
    } finally {
      cluster.kill('SIGTERM')
    }
    // The gateway is an ES module; require() loads it on Node >= 20.19 (require(esm)).
    const { stdout } = await run(
      process.execPath,
      ['-e', 'console.log(typeof require("@causeway/gateway").startDevCluster)'],
      { cwd: packed.app },
    )
    expect(stdout.trim()).toBe('function')
  }, 300_000)
})

/** The first region URL the bin prints (it prints one line per region once all listen). */
function firstUrl(child: ReturnType<typeof spawn>): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = ''
    let err = ''
    const timer = setTimeout(() => reject(new Error(`no URL in 30 s: ${out} ${err}`)), 30_000)
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()))
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match =
        /^region 1 \(\S+\) (http:\/\/\S+)$/m.exec(out) &&
        /^region 0 \(\S+\) (http:\/\/\S+)$/m.exec(out)
      if (match) {
        clearTimeout(timer)
        resolve(match[1]!)
      }
    })
    child.once('exit', (code) => reject(new Error(`causeway exited with ${code}: ${err}`)))
  })
}
