import js from '@eslint/js'
import tseslint from 'typescript-eslint'

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
