/**
 * `connect()`: learn the cluster from one gateway, restore or start the session, and return a
 * client. Everything is checked here, once, so a bad URL, option or session fails the connect
 * rather than some later call.
 */
import { CausewayError, DEFAULT_LIMITS, Session, type Topology } from '@causeway/core'
import { CallDeadline } from './call-deadline.js'
import { Causeway } from './client.js'
import { type ConnectOptions, checkTimeout, resolveDefaults } from './options.js'
import { baseUrl, checkTopology, findRegion, regionRoutes, scopeOf } from './topology.js'
import type { PersistStore } from './offline/outbox-types.js'
import { type Transport, fetchTransport } from './transport.js'
import {
  type ReplyGuard,
  checkMaxReplyBytes,
  isGuardRefusal,
  trustedOriginsOf,
} from './reply-guard.js'

/** Opens the store a `persist` name stands for in this runtime. */
export type StoreOpener = (name: string) => Promise<PersistStore>

/** The browser's: an IndexedDB database through `browser-level`, loaded only when used. */
export async function browserStore(name: string): Promise<PersistStore> {
  if (typeof (globalThis as { indexedDB?: unknown }).indexedDB === 'undefined')
    throw new CausewayError(
      'INVALID_OPTION',
      `persist: ${JSON.stringify(name)} names an IndexedDB database, and this runtime has no IndexedDB; in Node, import connect from '@causeway/client/node' (a directory) or pass an abstract-level store`,
    )
  type Ctor = new (name: string) => unknown
  // `browser-level` is CommonJS: a plain bundle (and Node) gives its exports as named ones, a
  // split ESM bundle (esbuild --splitting) only as `default`. Take it from either shape.
  const mod = (await import('browser-level')) as {
    BrowserLevel?: Ctor
    default?: { BrowserLevel?: Ctor }
  }
  const BrowserLevel = mod.BrowserLevel ?? mod.default?.BrowserLevel
  if (typeof BrowserLevel !== 'function')
    throw new CausewayError('INTERNAL', 'browser-level did not load: no BrowserLevel export found')
  return new BrowserLevel(name) as unknown as PersistStore
}

function checkUrl(url: unknown): string {
  let parsed: URL | undefined
  try {
    parsed = typeof url === 'string' ? new URL(url) : undefined
  } catch {
    parsed = undefined
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw new CausewayError(
      'INVALID_OPTION',
      `url must be an absolute http(s) URL of a gateway, not ${JSON.stringify(url)}`,
    )
  }
  return baseUrl(url as string)
}

function baseHeaders(options: ConnectOptions): Record<string, string> {
  const headers: Record<string, string> = { accept: 'application/json' }
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (typeof value !== 'string') {
      throw new CausewayError('INVALID_OPTION', `header ${JSON.stringify(name)} must be a string`)
    }
    headers[name.toLowerCase()] = value
  }
  if (options.apiKey !== undefined) {
    if (typeof options.apiKey !== 'string' || options.apiKey === '') {
      throw new CausewayError('INVALID_OPTION', 'apiKey must be a non-empty string')
    }
    headers.authorization = `Bearer ${options.apiKey}`
  }
  return headers
}

/**
 * Connects to a Causeway cluster through the gateway at `options.url`: fetches its topology,
 * restores `options.session` (validated: a malformed session rejects with `INVALID_SESSION`, one
 * of another cluster with `FOREIGN_SESSION`) or starts a fresh one.
 *
 * @example
 * const db = await connect({ url: 'http://localhost:7070' })
 * await db.put('user:1', { name: 'Ada' })
 * const r = await db.get('user:1', { read: 'read-your-writes', region: 'eu' })
 */
export function connect(
  options: ConnectOptions & { persist: PersistStore | string },
): Promise<Causeway<true>>
export function connect(options: ConnectOptions & { persist?: false }): Promise<Causeway<false>>
export function connect(options: ConnectOptions): Promise<Causeway<boolean>>
export function connect(options: ConnectOptions): Promise<Causeway<boolean>> {
  return openClient(options, fetchTransport, browserStore)
}

/**
 * `connect` with the transport to make when the options bring none; the client closes a
 * transport it made. Each entry point passes its own default.
 */
export async function openClient(
  options: ConnectOptions,
  defaultTransport: () => Transport,
  openStoreNamed: StoreOpener,
): Promise<Causeway<boolean>> {
  if (typeof options !== 'object' || options === null) {
    throw new CausewayError('INVALID_OPTION', 'connect() needs an options object with a url')
  }
  const url = checkUrl(options.url)
  const headers = baseHeaders(options)
  const persist = options.persist ?? false
  if (persist === false) return openOnline(options, url, headers, defaultTransport)
  if (typeof persist !== 'string' && (typeof persist !== 'object' || persist === null))
    throw new CausewayError(
      'INVALID_OPTION',
      'persist must be an abstract-level store, the name of one, or false',
    )
  const offline = await import('./offline/open-offline.js')
  const db = typeof persist === 'string' ? await openStoreNamed(persist) : persist
  const opened = await offline.openStore(db, typeof persist === 'string')
  try {
    return await offline.openOfflineClient(options, url, headers, defaultTransport, opened, {
      fetchTopology: (transport) => fetchTopology(options, url, headers, transport),
      build: (parts) => buildClient(options, url, headers, parts),
    })
  } catch (error) {
    if (opened.ownsStore) await db.close().catch(() => {})
    throw error
  }
}

/** What {@link buildClient} needs beyond the options. */
export interface ClientPieces {
  topology: Topology
  transport: Transport
  ownsTransport: boolean
  persist: boolean
  session?: Session
}

/** Builds the client once the topology is known. */
export function buildClient(
  options: ConnectOptions,
  url: string,
  headers: Record<string, string>,
  pieces: ClientPieces,
): Causeway<boolean> {
  const { topology, transport } = pieces
  const scope = scopeOf(topology)
  const session = pieces.session ?? restoreSession(options.session, scope)
  const defaults = resolveDefaults(options.defaults, topology.limits)
  const regions = regionRoutes(topology, url)
  const guard: ReplyGuard = {
    maxReplyBytes: checkMaxReplyBytes(options.maxReplyBytes),
    trustedOrigins: trustedOriginsOf(url, options.trustedOrigins),
  }
  const home =
    options.region === undefined ? regions[topology.region]! : findRegion(regions, options.region)
  return new Causeway<boolean>({
    topology,
    session,
    regions,
    home,
    defaults,
    transport,
    headers,
    ownsTransport: pieces.ownsTransport,
    persist: pieces.persist,
    guard,
  })
}

/** Fetches and checks the topology of the gateway at `url`. */
export async function fetchTopology(
  options: ConnectOptions,
  url: string,
  headers: Record<string, string>,
  transport: Transport,
): Promise<Topology> {
  const topologyTimeout =
    options.defaults?.timeoutMs === undefined
      ? DEFAULT_LIMITS.defaultTimeoutMs
      : checkTimeout(options.defaults.timeoutMs, DEFAULT_LIMITS.maxTimeoutMs)
  const maxReplyBytes = checkMaxReplyBytes(options.maxReplyBytes)
  const deadline = new CallDeadline(topologyTimeout, options.signal, new AbortController().signal)
  let res
  try {
    res = await transport.request({
      method: 'GET',
      url: url + '/v1/topology',
      headers: { ...headers },
      signal: deadline.signal,
      maxReplyBytes,
    })
  } catch (cause) {
    if (isGuardRefusal(cause)) throw cause
    deadline.throwIfStopped(`connect to ${url}`)
    // The fetch transport's error names the URL that failed and, in a browser, why it may have.
    const why = cause instanceof Error ? cause.message : String(cause)
    const failed = cause instanceof CausewayError ? cause.details?.url : undefined
    throw new CausewayError(
      'NETWORK_ERROR',
      `cannot reach the gateway at ${url}: ${why}`,
      { url: typeof failed === 'string' ? failed : url },
      { cause },
    )
  } finally {
    deadline.dispose()
  }
  if (res.status !== 200) throw CausewayError.fromBody(res.body, res.status)
  return checkTopology(res.body)
}

/** `connect` without `persist`: the topology from the gateway, or a rejection. */
async function openOnline(
  options: ConnectOptions,
  url: string,
  headers: Record<string, string>,
  defaultTransport: () => Transport,
): Promise<Causeway<boolean>> {
  const ownsTransport = options.transport === undefined
  const transport: Transport = options.transport ?? defaultTransport()
  try {
    const topology = await fetchTopology(options, url, headers, transport)
    return buildClient(options, url, headers, {
      topology,
      transport,
      ownsTransport,
      persist: false,
    })
  } catch (error) {
    if (ownsTransport) await transport.close?.()
    throw error
  }
}

/**
 * The session a client starts with. A `Session` object is used as is (two clients given the same
 * object share it); JSON is validated and copied. Either way it must belong to this cluster.
 */
export function restoreSession(
  session: ConnectOptions['session'],
  scope: { cluster: string; regions: number; partitions: number },
): Session {
  if (session === undefined) return new Session(scope)
  if (session instanceof Session) {
    if (
      session.cluster !== scope.cluster ||
      session.regions !== scope.regions ||
      session.partitions !== scope.partitions
    ) {
      throw new CausewayError(
        'FOREIGN_SESSION',
        `session belongs to cluster ${JSON.stringify(session.cluster)} (${session.regions} regions × ${session.partitions} partitions), not ${JSON.stringify(scope.cluster)} (${scope.regions} × ${scope.partitions})`,
      )
    }
    return session
  }
  // A Session from another bundled copy of the SDK is not `instanceof` ours: go through its JSON.
  const toJSON = (session as { toJSON?: unknown } | null)?.toJSON
  const json = typeof toJSON === 'function' ? (toJSON.call(session) as unknown) : session
  return Session.fromJSON(json, scope)
}
