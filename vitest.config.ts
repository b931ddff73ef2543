import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import { ensureRedisServer } from './test/redis-availability.js'
import { RedisSkipReporter } from './test/redis-skip-reporter.js'

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url))

// Found, installed, or (unless CAUSEWAY_REQUIRE_REDIS=1) the `redis` suites are skipped, said.
const redis = ensureRedisServer()

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
      'test/**/*.test.ts',
      'packages/*/test/**/*.test.ts',
      'gateway/test/**/*.test.ts',
      'bench/test/**/*.test.ts',
      'examples/*/test/**/*.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    tags: [
      {
        name: 'redis',
        description: 'starts real redis-servers (skipped, and said, where none can be had)',
        skip: !redis.available,
      },
    ],
    reporters: ['default', new RedisSkipReporter(redis)],
  },
})
