/**
 * The app's service worker: it precaches every file of the build when installed (the build puts
 * their list in place of the placeholder below), then answers the app's own requests from that
 * cache, so the app opens and reloads without a network. Pages are asked of the network first
 * (a new build shows as soon as it is deployed) and fall back to the cache; the gateways'
 * requests (another origin) are never touched: the SDK decides what to do offline.
 */
const PRECACHE = self.__PRECACHE__
const CACHE = `offline-mobile:${PRECACHE.version}`

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(PRECACHE.files))
      .then(() => self.skipWaiting()),
  )
})

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) =>
        Promise.all(
          names
            .filter((n) => n.startsWith('offline-mobile:') && n !== CACHE)
            .map((n) => caches.delete(n)),
        ),
      )
      .then(() => self.clients.claim()),
  )
})

self.addEventListener('fetch', (event) => {
  const request = event.request
  const url = new URL(request.url)
  if (request.method !== 'GET' || url.origin !== self.location.origin) return
  if (request.mode === 'navigate') {
    event.respondWith(
      fetch(request).catch(() =>
        caches
          .match(request, { ignoreSearch: true, ignoreVary: true })
          .then((hit) => hit ?? caches.match('./', { ignoreSearch: true })),
      ),
    )
    return
  }
  event.respondWith(
    caches
      .match(request, { ignoreSearch: true, ignoreVary: true })
      .then((hit) => hit ?? fetch(request)),
  )
})
