#!/usr/bin/env node
/**
 * The `causeway` command. Installed from npm, it runs the build (`dist/cli.js`). In a checkout
 * of the repository (the package's `tsconfig.json` is there, and not published) it runs the
 * TypeScript sources through tsx, every `@causeway/*` package resolved to its sources by the
 * `@causeway/source` export condition: so `npx causeway` works right after `npm ci`, and never
 * runs a build older than the sources.
 */
import { existsSync } from 'node:fs'
import { register } from 'node:module'

const here = (path) => new URL(path, import.meta.url)

async function loadTsx() {
  try {
    return await import('tsx/esm/api')
  } catch {
    return undefined // a checkout installed without its dev dependencies
  }
}

const checkout = existsSync(here('../tsconfig.json')) && existsSync(here('../src/cli.ts'))
const tsx = checkout ? await loadTsx() : undefined
if (tsx !== undefined) {
  tsx.register()
  // Registered after tsx, so it runs first and hands tsx the extra condition.
  register('./source-condition.js', import.meta.url)
  await import('../src/cli.ts')
} else if (existsSync(here('../dist/cli.js'))) {
  await import('../dist/cli.js')
} else {
  process.stderr.write(
    'causeway: neither the build (dist/cli.js) nor tsx to run the sources: ' +
      'run `npm ci` (with dev dependencies) or `npm run build` in the repository\n',
  )
  process.exitCode = 1
}
