import js from '@eslint/js'
import tseslint from 'typescript-eslint'

const NO_HTTP = { group: ['**/http/**'], message: 'cluster/ never imports http/' }
const NO_BACKEND = {
  group: ['**/storage/level/**', '**/storage/redis/**'],
  message: 'above storage/, use the contract (AbstractPartitionReplica), not a backend',
}

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      'packages/*/cjs/**',
      '**/node_modules/**',
      '.causeway/**',
      'bench/results/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // Type-aware rules: a promise nobody awaits or handles loses its error (an unhandled
    // rejection ends the process) and its ordering; one passed where a callback's result is
    // ignored does the same. Types come from one program of every TypeScript file, the
    // workspaces read from their sources (tsconfig.eslint.json), so lint needs no build.
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: {
        project: './tsconfig.eslint.json',
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    // Every log line of the gateway goes through pino (gateway/src/log.ts); what a command prints
    // for its user goes to process.stdout / process.stderr.
    files: ['gateway/src/**/*.ts'],
    rules: { 'no-console': 'error' },
  },
  // The layers (docs/architecture.md): the cluster service knows nothing of HTTP, and above
  // storage/ only the files where a deployment chooses its backend name one.
  {
    files: ['gateway/src/cluster/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_HTTP, NO_BACKEND] }] },
  },
  {
    files: [
      // Where a deployment chooses its backend, and the Redis deployment's shipping lease and
      // failover of partition leaders.
      'gateway/src/cluster/embedded-cluster.ts',
      'gateway/src/cluster/redis-cluster.ts',
      'gateway/src/cluster/redis-failover.ts',
      'gateway/src/cluster/shipping-lease.ts',
    ],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_HTTP] }] },
  },
  {
    files: ['gateway/src/{replication,http,ablation}/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_BACKEND] }] },
  },
  {
    // Plain JavaScript that Node runs as it is (the `causeway` bin).
    files: ['**/*.js'],
    languageOptions: { globals: { process: 'readonly', URL: 'readonly', console: 'readonly' } },
  },
  {
    // The demo app's service worker: plain JavaScript the build copies with its file list.
    files: ['examples/offline-mobile/sw/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: Object.fromEntries(
        ['self', 'caches', 'fetch', 'URL', 'Promise'].map((name) => [name, 'readonly']),
      ),
    },
  },
  {
    // The status page's script runs in browsers (type-checked with the DOM types too).
    files: ['gateway/static/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(
        [
          'AbortSignal',
          'Node',
          'URL',
          'document',
          'fetch',
          'location',
          'sessionStorage',
          'setTimeout',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
)
