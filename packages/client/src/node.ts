/// <reference types="node" />
/**
 * `@causeway/client/node`: everything of `@causeway/client`, plus what only Node can do: keep-alive
 * transports on undici ({@link undiciTransport}, the default of this entry's `connect`) and on
 * `node:http` ({@link httpTransport}), and a file-backed session store, so a CLI or a worker can
 * carry its guarantees across restarts.
 * @packageDocumentation
 */
import { randomUUID } from 'node:crypto'
import { readFile, rename, writeFile } from 'node:fs/promises'
import http from 'node:http'
import https from 'node:https'
import { CausewayError, type Session, type SessionJSON } from '@causeway/core'
import type { Causeway } from './client.js'
import { openClient } from './connect.js'
import type { PersistStore } from './offline/outbox-types.js'
import type { ConnectOptions } from './options.js'
import { type Transport, parseJsonBody } from './transport.js'
import { replyTooLarge } from './reply-guard.js'
import { undiciTransport } from './undici-transport.js'

export * from './index.js'
export { type UndiciTransportOptions, undiciTransport } from './undici-transport.js'

/** Options of {@link httpTransport}. */
export interface HttpTransportOptions {
  /** Most sockets open to one gateway. @default 64 */
  maxSockets?: number
  /** Most idle sockets kept open per gateway. @default 16 */
  maxFreeSockets?: number
  /** Initial delay of TCP keep-alive probes on idle sockets, in ms. @default 1000 */
  keepAliveMsecs?: number
}

/**
 * A transport on `node:http`/`node:https` with a keep-alive agent: connections to each gateway
 * are reused across calls, which saves a TCP handshake per call and costs less per request than
 * `fetch` in Node 20. {@link undiciTransport}, the default, costs less still; this one is for a
 * process that wants Node's own `http` module (its agents, its diagnostics).
 */
export function httpTransport(options: HttpTransportOptions = {}): Transport {
  const agentOptions = {
    keepAlive: true,
    keepAliveMsecs: options.keepAliveMsecs ?? 1000,
    maxSockets: options.maxSockets ?? 64,
    maxFreeSockets: options.maxFreeSockets ?? 16,
  }
  const httpAgent = new http.Agent(agentOptions)
  const httpsAgent = new https.Agent(agentOptions)
  return {
    request(req) {
      const secure = req.url.startsWith('https:')
      const headers: Record<string, string | number> = { ...req.headers }
      if (req.body !== undefined) headers['content-length'] = Buffer.byteLength(req.body)
      return new Promise((resolve, reject) => {
        const request = (secure ? https : http).request(
          req.url,
          {
            method: req.method,
            headers,
            agent: secure ? httpsAgent : httpAgent,
            signal: req.signal,
          },
          (res) => {
            const chunks: Buffer[] = []
            let size = 0
            const limit = req.maxReplyBytes ?? Infinity
            res.on('data', (chunk: Buffer) => {
              size += chunk.length
              // Past maxReplyBytes: stop reading (the socket is dropped) rather than buffer it.
              if (size > limit) {
                reject(replyTooLarge(req.url, limit))
                return void res.destroy()
              }
              chunks.push(chunk)
            })
            res.on('end', () =>
              resolve({
                status: res.statusCode ?? 0,
                body: parseJsonBody(Buffer.concat(chunks).toString('utf8')),
              }),
            )
            res.on('error', reject)
            res.on('close', () => {
              if (!res.complete)
                reject(new Error('the connection closed before the reply was complete'))
            })
          },
        )
        request.on('error', reject)
        request.end(req.body)
      })
    },
    close() {
      httpAgent.destroy()
      httpsAgent.destroy()
    },
  }
}

/**
 * The store a `persist` name stands for in Node: a `classic-level` (LevelDB) database in that
 * directory. `classic-level` is an optional peer dependency: install it to use a name.
 */
export async function levelStore(directory: string): Promise<PersistStore> {
  let mod: { ClassicLevel: new (location: string) => unknown }
  try {
    // CommonJS: named exports in Node, possibly only `default` once bundled: either shape.
    const loaded = (await import('classic-level')) as unknown as typeof mod & {
      default?: typeof mod
    }
    mod = loaded.ClassicLevel === undefined && loaded.default ? loaded.default : loaded
  } catch (cause) {
    throw new CausewayError(
      'INVALID_OPTION',
      `persist: ${JSON.stringify(directory)} names a LevelDB directory, which needs the classic-level package (npm install classic-level), or pass an abstract-level store`,
      undefined,
      { cause },
    )
  }
  return new mod.ClassicLevel(directory) as PersistStore
}

/**
 * Connects like `@causeway/client`'s `connect`, with {@link undiciTransport} as the default
 * transport (pass `transport: httpTransport()` to use `node:http` instead); `persist` may name a
 * directory, kept with `classic-level`.
 */
export function connect(
  options: ConnectOptions & { persist: PersistStore | string },
): Promise<Causeway<true>>
export function connect(options: ConnectOptions & { persist?: false }): Promise<Causeway<false>>
export function connect(options: ConnectOptions): Promise<Causeway<boolean>>
export function connect(options: ConnectOptions): Promise<Causeway<boolean>> {
  return openClient(options, undiciTransport, levelStore)
}

/** A session saved in a file; see {@link fileSessionStore}. */
export interface SessionStore {
  /** The saved session's JSON text, or undefined when nothing was saved yet. Pass it to `connect`. */
  load(): Promise<string | undefined>
  /** Saves a session atomically: a crash leaves the old file or the new one, never half of one. */
  save(session: Session | SessionJSON): Promise<void>
}

/**
 * Stores a session in a file.
 *
 * @example
 * const store = fileSessionStore('.session.json')
 * const db = await connect({ url, session: await store.load() })
 * ...
 * await store.save(db.session)
 */
export function fileSessionStore(path: string): SessionStore {
  return {
    async load() {
      try {
        return await readFile(path, 'utf8')
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
        throw error
      }
    },
    async save(session) {
      const tmp = `${path}.${randomUUID()}.tmp`
      await writeFile(tmp, JSON.stringify(session))
      await rename(tmp, path)
    },
  }
}
