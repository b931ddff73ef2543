/**
 * The demo's build: two pages (the phone app, and the page that shows two phones side by side),
 * the SDK taken from its TypeScript sources (the `@causeway/source` condition, so nothing needs
 * building first), and a service worker that precaches every file of the build, so the app
 * starts without a network once it has been opened.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { defaultClientConditions, defineConfig, type Plugin } from 'vite'

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url))

/**
 * Emits `sw.js`: `sw/service-worker.js` with the build's file list put in place of its
 * `self.__PRECACHE__` (what workbox's injectManifest does, for one small file).
 */
function serviceWorker(): Plugin {
  return {
    name: 'offline-mobile-service-worker',
    apply: 'build',
    generateBundle(_options, bundle) {
      const publicFiles = readdirSync(here('./public'))
      const files = [...Object.keys(bundle), ...publicFiles].filter((f) => !f.endsWith('.map'))
      const source = readFileSync(here('./sw/service-worker.js'), 'utf8')
      // The list names this build: a new build is a new worker, which drops the old caches.
      const version = files
        .filter((f) => f.startsWith('assets/'))
        .sort()
        .join(',')
      const list = JSON.stringify({ version, files: ['./', ...files] })
      if (source.split('self.__PRECACHE__').length !== 2)
        this.error('sw/service-worker.js must name self.__PRECACHE__ exactly once')
      this.emitFile({
        type: 'asset',
        fileName: 'sw.js',
        source: source.replace('self.__PRECACHE__', list),
      })
    },
  }
}

export default defineConfig({
  root: here('.'),
  // Relative URLs: the build works under any path (a test's server, a static host's folder).
  base: './',
  resolve: { conditions: ['@causeway/source', ...defaultClientConditions] },
  build: {
    target: 'es2022',
    rollupOptions: { input: { index: here('./index.html'), demo: here('./demo.html') } },
  },
  server: { host: '127.0.0.1' },
  preview: { host: '127.0.0.1' },
  plugins: [serviceWorker()],
})
