/**
 * What a browser page has and Node lacks, for the README blocks fenced `ts browser`:
 * `localStorage` (in memory, strings only, as Storage keeps them) and `addEventListener` (no
 * event ever fires). `BroadcastChannel` and `fetch` are Node's own.
 */
const items = new Map<string, string>()
const localStorage = new Proxy({} as Record<string, string | undefined>, {
  get: (_, name) => (typeof name === 'string' ? items.get(name) : undefined),
  set: (_, name, value) => {
    items.set(String(name), String(value))
    return true
  },
})
Object.assign(globalThis, { localStorage, addEventListener: () => {} })
