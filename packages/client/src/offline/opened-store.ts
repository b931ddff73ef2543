/**
 * Opening the local store of `connect({ persist })`: what it holds when the client starts (the
 * device id, the topology and URL connected with, the session) and the name the clients sharing
 * it coordinate under.
 */
import type { Topology } from '@causeway/core'
import { randomId } from './ids.js'
import { LocalStore } from './local-store.js'
import type { PersistStore } from './outbox-types.js'
import { SESSION_ROW_PREFIX, joinStoredSession } from './session-store.js'

/** The local store, opened, with what it holds. */
export interface OpenedStore {
  local: LocalStore
  /** The device id (persisted). */
  device: string
  topology: unknown
  url: string | undefined
  /** The stored session, joined (`session-store.ts`): a `SessionJSON` unless it is damaged. */
  session: unknown
  /** Whether `close()` closes the database (the SDK opened it from a name or path). */
  ownsStore: boolean
  /** The name tabs coordinate under. */
  name: string
}

// Names of stores without a location of their own (memory-level): one per store object, so two
// clients given the same object share its outbox, as two tabs share one IndexedDB database.
const anonymousNames = new WeakMap<object, string>()

function storeName(db: PersistStore): string {
  const location = (db as { location?: unknown }).location
  if (typeof location === 'string' && location !== '') return location
  let name = anonymousNames.get(db)
  if (name === undefined) anonymousNames.set(db, (name = `memory-${randomId(12)}`))
  return name
}

/** Opens the local store and reads what it holds. */
export async function openStore(db: PersistStore, ownsStore: boolean): Promise<OpenedStore> {
  const local = new LocalStore(db)
  await local.open()
  const state = await local.loadState()
  let device = state.device
  if (device === undefined) {
    device = randomId(12)
    await local.commit([{ type: 'put', in: 'meta', key: 'device', value: device }])
  }
  return {
    local,
    device,
    topology: state.topology,
    url: state.url,
    session: joinStoredSession({
      whole: state.session,
      head: state.sessionHead,
      rows: await local.entries('meta', { prefix: SESSION_ROW_PREFIX }),
    }),
    ownsStore,
    name: storeName(db),
  }
}

/** Saves the topology the client connected with (so the next connect needs no network). */
export function saveTopology(opened: OpenedStore, topology: Topology, url: string): Promise<void> {
  return opened.local.commit([
    { type: 'put', in: 'meta', key: 'topology', value: topology },
    { type: 'put', in: 'meta', key: 'url', value: url },
  ])
}
