/**
 * `connect({ persist })`, the part loaded only then: open the local store, take the topology it
 * holds (so `connect` needs no network) or fetch and keep it, restore the session it holds
 * (joined with one given), and start the engine.
 */
import { CausewayError, Session, type Topology } from '@causeway/core'
import type { Causeway } from '../client.js'
import { type ClientPieces, restoreSession } from '../connect.js'
import type { ConnectOptions } from '../options.js'
import { checkTopology, scopeOf } from '../topology.js'
import type { Transport } from '../transport.js'
import { OfflineEngine } from './engine.js'
import { type OpenedStore, saveTopology } from './opened-store.js'

export { openStore } from './opened-store.js'

/** How the connect module fetches a topology and builds a client. */
export interface OfflineHooks {
  fetchTopology(transport: Transport): Promise<Topology>
  build(pieces: ClientPieces): Causeway<boolean>
}

function storedTopology(value: unknown): Topology | undefined {
  if (value === undefined) return undefined
  try {
    return checkTopology(value)
  } catch {
    return undefined // from an older SDK, or damaged: fetch it again
  }
}

/** Opens a client over an opened local store. */
export async function openOfflineClient(
  options: ConnectOptions,
  url: string,
  _headers: Record<string, string>,
  defaultTransport: () => Transport,
  opened: OpenedStore,
  hooks: OfflineHooks,
): Promise<Causeway<boolean>> {
  const ownsTransport = options.transport === undefined
  const transport: Transport = options.transport ?? defaultTransport()
  try {
    let topology = storedTopology(opened.topology)
    const fetched = topology === undefined
    if (topology === undefined) topology = await hooks.fetchTopology(transport)
    const scope = scopeOf(topology)
    let session: Session | undefined
    if (opened.session !== undefined) {
      try {
        session = Session.fromJSON(opened.session, scope)
      } catch {
        session = undefined
      }
    }
    if (options.session !== undefined) {
      const given = restoreSession(options.session, scope)
      if (session !== undefined) given.merge(session)
      session = given
    }
    const db = hooks.build({
      topology,
      transport,
      ownsTransport,
      persist: true,
      ...(session === undefined ? {} : { session }),
    })
    const engine = await OfflineEngine.start(db.engineHost, opened)
    db.attachOffline(engine)
    if (fetched) {
      engine.cluster.found(topology)
      await saveTopology(opened, topology, url)
    } else void refreshTopology(db, engine, opened, url, hooks, transport)
    return db
  } catch (error) {
    if (ownsTransport) await transport.close?.()
    throw error
  }
}

/**
 * After a connect from the stored topology: fetch the gateway's (it may have moved) and keep it
 * for the next connect; a failure only says the client starts offline.
 */
async function refreshTopology(
  db: Causeway<boolean>,
  engine: OfflineEngine,
  opened: OpenedStore,
  url: string,
  hooks: OfflineHooks,
  transport: Transport,
): Promise<void> {
  let fresh: Topology
  try {
    fresh = await hooks.fetchTopology(transport)
  } catch (error) {
    if (db.closed) return
    if (
      error instanceof CausewayError &&
      (error.code === 'NETWORK_ERROR' || error.code === 'TIMEOUT')
    )
      engine.connectivity.markOffline(error)
    return
  }
  if (db.closed) return
  engine.connectivity.markOnline()
  // Another cluster (reset, or restored from a copy): the outbox pauses and the app is told
  // (`clusterChanged`); the stored topology stays until `resetCluster` replaces it.
  if (engine.cluster.found(fresh) !== undefined) return
  await saveTopology(opened, fresh, url).catch(() => {})
}
