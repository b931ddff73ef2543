import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url))

// Tests run against the TypeScript sources of every workspace, so no build step is needed first.
export default defineConfig({
  resolve: {
    alias: {
      '@causeway/core/schemas': src('./packages/core/src/schemas.ts'),
      '@causeway/core': src('./packages/core/src/index.ts'),
      '@causeway/client/node': src('./packages/client/src/node.ts'),
      '@causeway/client': src('./packages/client/src/index.ts'),
      '@causeway/history': src('./packages/history/src/index.ts'),
      '@causeway/gateway': src('./gateway/src/index.ts'),
    },
  },
  test: {
    include: [
      'packages/*/test/**/*.test.ts',
      'gateway/test/**/*.test.ts',
      'bench/test/**/*.test.ts',
      'examples/*/test/**/*.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
})
