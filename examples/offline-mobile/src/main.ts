/**
 * One phone: connects with `persist` (its own IndexedDB database), shares its session with its
 * other tabs, shows the list, follows the other phone through the change feed, and shows what
 * waits for the network. Works offline from the first open on: the service worker serves the
 * app, the SDK the data.
 */
import './style.css'
import {
  OfflineError,
  connect,
  fetchTransport,
  shareSession,
  type Causeway,
  type CausewayError,
} from '@causeway/client'
import { demoGateways, phoneConfig, type PhoneConfig } from './config.js'
import { NetworkSwitch } from './network-switch.js'
import { ShoppingList } from './shopping-list.js'
import { PhoneView } from './view.js'

/** What a test (or a curious developer's console) reaches of the running app. */
export interface AppHandle {
  config: PhoneConfig
  network: NetworkSwitch
  db: Causeway<true> | undefined
  list: ShoppingList | undefined
  /** Resolves once the list has been shown (from the gateway or from the device). */
  ready: Promise<void>
  /** Every event the SDK emitted, in order (name and a short summary). */
  events: { name: string; at: number; detail?: unknown }[]
}

declare global {
  interface Window {
    app: AppHandle
  }
}

const config = phoneConfig(
  location.search,
  localStorage,
  demoGateways(import.meta.env.VITE_CAUSEWAY_GATEWAYS),
)
const network = new NetworkSwitch()
let markReady!: () => void
const app: AppHandle = {
  config,
  network,
  db: undefined,
  list: undefined,
  ready: new Promise((resolve) => (markReady = resolve)),
  events: [],
}
window.app = app
document.title = `Shopping list · phone ${config.phone.toUpperCase()}`

const view = new PhoneView({
  add: (text) => run(() => app.list?.add(text)),
  tick: (id, done) => run(() => app.list?.tick(id, done)),
  rename: (id, text) => run(() => app.list?.rename(id, text)),
  remove: (id) => run(() => app.list?.remove(id)),
  keep: (id, version) => run(() => app.list?.keep(id, version)),
  merge: (id) => run(() => app.list?.merge(id)),
  network: (on) => {
    network.set(on)
    showNetwork()
    // Switched on: replay what waits now (and find out that the gateway answers again).
    if (on) void app.db?.sync().catch(() => {})
  },
})

function showNetwork(): void {
  view.showNetwork(network.on, network.on && navigator.onLine && (app.db?.online ?? false))
}

/** Runs a user action; what fails is said on the status line (the data stays as it was). */
function run(action: () => Promise<unknown> | undefined): void {
  void Promise.resolve()
    .then(action)
    .then(
      () => showSynced(),
      (error: unknown) => {
        const e = error as CausewayError
        if (e?.code === 'STORAGE_FULL')
          view.showStatus("This phone's storage is full: that change was not saved.", 'error')
        else view.showStatus(`That did not work: ${e?.message ?? String(error)}`, 'error')
        app.events.push({ name: 'action-error', at: Date.now(), detail: e?.code ?? String(e) })
      },
    )
}

let pendingCount = 0

function showSynced(): void {
  const db = app.db
  if (db === undefined) return
  if (pendingCount > 0)
    view.showStatus(
      `${pendingCount} change${pendingCount === 1 ? '' : 's'} waiting for the network`,
    )
  else if (!db.online) view.showStatus('Offline: changes are kept on this phone')
  else view.showStatus('All changes saved')
}

function render(): void {
  if (app.list !== undefined) view.render(app.list.items())
}

async function boot(): Promise<void> {
  view.showNetwork(network.on, false)
  let db: Causeway<true>
  try {
    db = await connect({
      url: config.gateway,
      persist: config.store,
      transport: fetchTransport({ fetch: network.fetch }),
      defaults: { timeoutMs: 4000 },
    })
  } catch (error) {
    // Only the very first start needs the network: after it, the topology is on the phone.
    view.showStatus(
      `Cannot start: this phone has never reached ${config.gateway} (${(error as Error).message}). Connect once online.`,
      'error',
    )
    network.onChange((on) => on && location.reload())
    addEventListener('online', () => location.reload(), { once: true })
    return
  }
  app.db = db
  const region = db.regions[db.home.id]
  view.showFooter(
    `Phone ${config.phone.toUpperCase()} · region ${region?.name ?? db.home.id} · ${config.gateway}`,
  )
  // Tabs of this phone share one session (and, through the store, one outbox); the two phones of
  // the demo page must not: one channel per phone.
  const sharing = shareSession(db, { channel: new BroadcastChannel(`${config.store}:session`) })
  await sharing.ready

  const record = (name: string, detail?: unknown) =>
    app.events.push({ name, at: Date.now(), ...(detail === undefined ? {} : { detail }) })
  const list = new ShoppingList(db, config.list, { fetch: network.fetch })
  app.list = list
  list.onChange(render)

  pendingCount = (await db.pending()).length
  view.showPending(pendingCount)
  db.on('pending', ({ count }) => {
    record('pending', count)
    pendingCount = count
    view.showPending(count)
    showSynced()
  })
  db.on('offline', ({ error }) => {
    record('offline', error.code)
    showNetwork()
    showSynced()
  })
  db.on('online', () => {
    record('online')
    showNetwork()
    showSynced()
    // Back online with nothing to replay: what the other phone did meanwhile shows now.
    void list.load().catch(() => {})
  })
  db.on('synced', (result) => {
    record('synced', { applied: result.applied, failed: result.failed })
    showSynced()
    void list.load().catch(() => {})
  })
  db.on('conflict', ({ key }) => {
    record('conflict', key)
    if (key.startsWith(list.keys.itemPrefix))
      void list.refresh(key.slice(list.keys.itemPrefix.length))
  })
  db.on('error', ({ error, op }) => {
    record('error', { code: error.code, op: op?.opId })
    view.showStatus(`A change was refused: ${error.message}`, 'error')
  })
  addEventListener('online', showNetwork)
  addEventListener('offline', showNetwork)

  try {
    await list.load()
    showSynced()
  } catch (error) {
    if (!(error instanceof OfflineError)) throw error
    view.showStatus('Offline, and this phone has not seen the list yet: it shows once online.')
  }
  showNetwork()
  render()
  list.watch()
  markReady()
}

async function registerServiceWorker(): Promise<void> {
  // Only the build has one (the dev server's modules change on every edit).
  if (import.meta.env.DEV || !('serviceWorker' in navigator)) return
  await navigator.serviceWorker.register('./sw.js').catch((error: unknown) => {
    console.warn('no service worker: the app will not open offline', error)
  })
}

void registerServiceWorker()
boot().catch((error: unknown) => {
  view.showStatus(`Something went wrong: ${(error as Error)?.message ?? String(error)}`, 'error')
  console.error(error)
})
