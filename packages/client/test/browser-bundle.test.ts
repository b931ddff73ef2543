/**
 * The default entry must run in browsers: bundling it for the browser must not pull in a single
 * Node built-in, from our code or from a dependency.
 */
import { builtinModules } from 'node:module'
import { fileURLToPath } from 'node:url'
import { type Plugin, build } from 'esbuild'
import { describe, expect, it } from 'vitest'

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url))
const builtins = new Set(builtinModules)

function isBuiltin(path: string): boolean {
  return path.startsWith('node:') || builtins.has(path) || builtins.has(path.split('/')[0]!)
}

/** Records every import of a Node built-in instead of letting esbuild resolve it. */
function builtinDetector(found: string[]): Plugin {
  return {
    name: 'detect-node-builtins',
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (!isBuiltin(args.path)) return undefined
        found.push(`${args.path} (imported by ${args.importer})`)
        return { path: args.path, external: true }
      })
    },
  }
}

async function bundle(entry: string, found: string[]) {
  return build({
    entryPoints: [src(entry)],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    write: false,
    minify: true,
    metafile: true,
    logLevel: 'silent',
    // The sources, as the tests use them (the packages' dist/ may be stale or missing).
    alias: { '@causeway/core': src('../../core/src/index.ts') },
    // No plugin marks core side-effect free: esbuild reads `"sideEffects": false` from core's own
    // package.json, as a user's bundler will, so the test fails if that declaration goes.
    plugins: [builtinDetector(found)],
  })
}

describe('browser bundle', () => {
  it('src/index.ts bundles for the browser without any Node built-in', async () => {
    const found: string[] = []
    const result = await bundle('../src/index.ts', found)
    expect(result.errors).toEqual([])
    expect(found).toEqual([])
    const code = result.outputFiles[0]!.text
    expect(code).toContain('causeway-after')
    // The bundle is what browsers download: no schema library, a few tens of kB.
    const output = Object.values(result.metafile.outputs)[0]!
    const included = Object.entries(output.inputs).filter(([, i]) => i.bytesInOutput > 0)
    expect(included.map(([path]) => path).filter((p) => p.includes('node_modules'))).toEqual([])
    expect(code.length).toBeLessThan(40_000)
  })

  it('the detector works: the Node entry is caught importing built-ins', async () => {
    const found: string[] = []
    await bundle('../src/node.ts', found)
    expect(found.some((f) => f.startsWith('node:http'))).toBe(true)
  })
})
