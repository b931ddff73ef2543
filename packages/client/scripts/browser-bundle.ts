/**
 * The SDK as a browser app bundles it: the default entry, minified by esbuild for the browser,
 * with `@causeway/core` from its sources (its `@causeway/source` export condition), so no build
 * is needed first. The size script and the browser-bundle test both measure this.
 */
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { type Plugin, build, version } from 'esbuild'

/** What {@link bundleForBrowser} built. */
export interface BrowserBundle {
  /** The bundle's code. */
  code: string
  /** Minified size in bytes. */
  bytes: number
  /** Gzipped size in bytes (zlib, level 9). */
  gzipBytes: number
  /** npm packages with code in the bundle (none is expected). */
  packages: string[]
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
    minify: true,
    metafile: true,
    logLevel: 'silent',
    // The sources, as the tests use them (the packages' dist/ may be stale or missing). Nothing
    // marks core side-effect free here: esbuild reads `"sideEffects": false` from core's
    // package.json, as a user's bundler will.
    conditions: ['@causeway/source'],
    plugins: options.plugins ?? [],
  })
  const code = result.outputFiles[0]?.text ?? ''
  const packages = new Set<string>()
  for (const output of Object.values(result.metafile.outputs)) {
    for (const [path, input] of Object.entries(output.inputs)) {
      const name = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1]
      if (name !== undefined && input.bytesInOutput > 0) packages.add(name)
    }
  }
  return {
    code,
    bytes: Buffer.byteLength(code),
    gzipBytes: gzipSync(code, { level: 9 }).length,
    packages: [...packages].sort(),
    esbuild: version,
    errors: result.errors.map((e) => e.text),
  }
}

/** `bytes` in kB (1000 bytes), one decimal. */
export function kB(bytes: number): string {
  return `${(bytes / 1000).toFixed(1)} kB`
}
