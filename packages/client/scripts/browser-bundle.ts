/**
 * The SDK as a browser app bundles it: the default entry, minified by esbuild for the browser,
 * with `@causeway/core` from its sources (its `@causeway/source` export condition), so no build
 * is needed first. The size script and the browser-bundle test both measure this.
 */
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { type Plugin, build, version } from 'esbuild'

/** A chunk loaded only when a feature is first used (offline, watch, IndexedDB). */
export interface LazyChunk {
  /** The modules it holds, as the SDK names them (`offline/engine.ts`, `browser-level`, ...). */
  holds: string[]
  bytes: number
  gzipBytes: number
  /** npm packages with code in it. */
  packages: string[]
}

/** What {@link bundleForBrowser} built. */
export interface BrowserBundle {
  /** The entry chunk's code: what every app that imports the SDK loads. */
  code: string
  /** The entry chunk, minified, in bytes. */
  bytes: number
  /** The entry chunk gzipped, in bytes (zlib, level 9). */
  gzipBytes: number
  /** npm packages with code in the entry chunk (none is expected). */
  packages: string[]
  /** Chunks loaded on first use (`connect({ persist })`, `db.watch`), as a bundler splits them. */
  lazy: LazyChunk[]
  /** The esbuild version that built it. */
  esbuild: string
  /** esbuild's errors. */
  errors: string[]
}

/** Options of {@link bundleForBrowser}. */
export interface BrowserBundleOptions {
  /**
   * The entry, relative to the package.
   * @default 'src/index.ts'
   */
  entry?: string
  /** esbuild plugins (the test's Node built-in detector). */
  plugins?: Plugin[]
}

/** Bundles an entry of the SDK for browsers. */
export async function bundleForBrowser(options: BrowserBundleOptions = {}): Promise<BrowserBundle> {
  const entry = fileURLToPath(new URL(`../${options.entry ?? 'src/index.ts'}`, import.meta.url))
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    write: false,
    // As an app's bundler (Vite, Rollup, webpack) does: dynamic imports become chunks of their own.
    splitting: true,
    outdir: 'out',
    minify: true,
    metafile: true,
    logLevel: 'silent',
    // The sources, as the tests use them (the packages' dist/ may be stale or missing). Nothing
    // marks core side-effect free here: esbuild reads `"sideEffects": false` from core's
    // package.json, as a user's bundler will.
    conditions: ['@causeway/source'],
    plugins: options.plugins ?? [],
  })
  const texts = new Map(result.outputFiles.map((f) => [f.path.split('/out/').pop()!, f.text]))
  const packagesOf = (inputs: Record<string, { bytesInOutput: number }>): string[] => {
    const packages = new Set<string>()
    for (const [path, input] of Object.entries(inputs)) {
      const name = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1]
      if (name !== undefined && input.bytesInOutput > 0) packages.add(name)
    }
    return [...packages].sort()
  }
  // What an app loads with the SDK: the entry chunk and the chunks it imports statically. The
  // rest is loaded by a dynamic import, on first use.
  const outputs = result.metafile.outputs
  const entryChunk = Object.keys(outputs).find((p) => outputs[p]!.entryPoint !== undefined)!
  const eager = new Set<string>([entryChunk])
  for (const path of eager)
    for (const imported of outputs[path]!.imports)
      if (imported.kind === 'import-statement' && outputs[imported.path] !== undefined)
        eager.add(imported.path)
  const textOf = (path: string) => texts.get(path.replace(/^out\//, '')) ?? ''
  const code = [...eager].map(textOf).join('\n')
  const inputsOf = (paths: Iterable<string>) =>
    Object.assign({}, ...[...paths].map((p) => outputs[p]!.inputs)) as Record<
      string,
      { bytesInOutput: number }
    >
  const packages = packagesOf(inputsOf(eager))
  const lazy: LazyChunk[] = []
  for (const [path, output] of Object.entries(outputs)) {
    if (eager.has(path) || path.endsWith('.map')) continue
    const text = textOf(path)
    const holds = Object.entries(output.inputs)
      .filter(([, input]) => input.bytesInOutput > 0)
      .map(([p]) =>
        p.replace(/^.*node_modules\/((?:@[^/]+\/)?[^/]+).*$/, '$1').replace(/^.*\/src\//, ''),
      )
    lazy.push({
      holds: [...new Set(holds)],
      bytes: Buffer.byteLength(text),
      gzipBytes: gzipSync(text, { level: 9 }).length,
      packages: packagesOf(output.inputs),
    })
  }
  return {
    code,
    bytes: Buffer.byteLength(code),
    gzipBytes: gzipSync(code, { level: 9 }).length,
    packages,
    lazy,
    esbuild: version,
    errors: result.errors.map((e) => e.text),
  }
}

/** `bytes` in kB (1000 bytes), one decimal. */
export function kB(bytes: number): string {
  return `${(bytes / 1000).toFixed(1)} kB`
}
