/**
 * The default entry must run in browsers: bundling it for the browser must not pull in a single
 * Node built-in, from our code or from a dependency, nor a schema library; and the README states
 * its size as measured.
 */
import { readFile } from 'node:fs/promises'
import { builtinModules } from 'node:module'
import type { Plugin } from 'esbuild'
import { describe, expect, it } from 'vitest'
import { bundleForBrowser, kB } from '../scripts/browser-bundle.js'

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
        // abstract-level (the IndexedDB store's chunk, loaded only with persist) imports `events`
        // and `buffer`: in a browser bundle those are the npm packages of the same names, which
        // the SDK and abstract-level depend on.
        if (
          (args.path === 'events' || args.path === 'buffer') &&
          args.importer.includes('/node_modules/')
        )
          return undefined
        found.push(`${args.path} (imported by ${args.importer})`)
        return { path: args.path, external: true }
      })
    },
  }
}

describe('browser bundle', () => {
  it('src/index.ts bundles for the browser without any Node built-in or npm package', async () => {
    const found: string[] = []
    const bundle = await bundleForBrowser({ plugins: [builtinDetector(found)] })
    expect(bundle.errors).toEqual([])
    expect(found).toEqual([])
    expect(bundle.code).toContain('causeway-after')
    // What browsers download: no schema library (TypeBox stays in @causeway/core/schemas).
    expect(bundle.packages).toEqual([])
    // 46.0 kB with the epochs of session positions and the re-base on EPOCH_MISMATCH (issue 16);
    // transactions (issue 18: db.transaction and runTransaction) about 8 kB more, and the causal
    // levels' vector clock (issue 17) about 1.7 kB; the checks of replies the SDK does not trust
    // (issue 23: size caps in the transports, bounds, region URLs, credentials' origins) 4 kB.
    expect(bundle.bytes).toBeLessThan(62_500)
  })

  it('the README states the size it has, minified and gzipped (npm run size)', async () => {
    const bundle = await bundleForBrowser()
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
    const stated = /(\d+(?:\.\d)?) kB minified, (\d+(?:\.\d)?) kB gzipped/.exec(readme)
    expect(stated, 'the README has "<n> kB minified, <n> kB gzipped"').not.toBeNull()
    // Within 10%: small changes need not touch the README, growth does.
    expect(Number(stated![1]) * 1000).toBeGreaterThan(bundle.bytes * 0.9)
    expect(Number(stated![1]) * 1000).toBeLessThan(bundle.bytes * 1.1)
    expect(Number(stated![2]) * 1000).toBeGreaterThan(bundle.gzipBytes * 0.9)
    expect(Number(stated![2]) * 1000).toBeLessThan(bundle.gzipBytes * 1.1)
    expect(kB(bundle.bytes)).toMatch(/ kB$/)
  })

  it('the detector works: the Node entry is caught importing built-ins', async () => {
    const found: string[] = []
    await bundleForBrowser({ entry: 'src/node.ts', plugins: [builtinDetector(found)] })
    expect(found.some((f) => f.startsWith('node:http'))).toBe(true)
  })
})
