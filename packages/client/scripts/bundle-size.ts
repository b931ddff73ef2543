/**
 * `npm run size`: the size of the SDK in a browser app (the default entry, minified, and
 * gzipped), the figure the README states.
 */
import { bundleForBrowser, kB } from './browser-bundle.js'

const bundle = await bundleForBrowser()
if (bundle.errors.length > 0) throw new Error(bundle.errors.join('\n'))
console.log(
  `@causeway/client in a browser bundle (src/index.ts, esbuild ${bundle.esbuild}, ES2022, minified): ` +
    `${kB(bundle.bytes)}, ${kB(bundle.gzipBytes)} gzipped; npm packages in it: ${bundle.packages.join(', ') || 'none'}`,
)
for (const chunk of bundle.lazy) {
  const what = chunk.holds.filter((h) => h.includes('/') || !h.includes('.')).slice(0, 6)
  console.log(
    `  loaded on first use: ${kB(chunk.bytes)}, ${kB(chunk.gzipBytes)} gzipped (${what.join(', ')}${chunk.holds.length > what.length ? ', ...' : ''})`,
  )
}
