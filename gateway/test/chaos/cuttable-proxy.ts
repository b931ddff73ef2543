/**
 * A TCP proxy the chaos suite puts between regions (the URL other regions ship to, see
 * `RedisDevClusterOptions.shippingVia`) and can cut: a cut link drops every open connection and
 * black-holes new ones (accepted, never answered), as a partitioned network does, until healed.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net'

/** A running proxy. */
export interface CuttableProxy {
  readonly url: string
  /** Drops every connection; new ones hang unanswered until {@link heal}. */
  cut(): void
  /** Forwards new connections again (the held ones are dropped, as a timed-out peer would). */
  heal(): void
  close(): Promise<void>
}

/** Starts a proxy on a free loopback port in front of `target` (`http://host:port`). */
export async function startCuttableProxy(target: string): Promise<CuttableProxy> {
  const { hostname, port } = new URL(target)
  const sockets = new Set<Socket>()
  const held = new Set<Socket>()
  let isCut = false
  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
    socket.on('error', () => socket.destroy())
  }
  const server = createServer((client) => {
    track(client)
    if (isCut) {
      held.add(client)
      client.once('close', () => held.delete(client))
      return
    }
    client.pause()
    const upstream = createConnection({ host: hostname, port: Number(port) })
    // A target that is down gets the answer a load balancer gives, 502: a connection closed
    // before any answer would make undici send an idempotent request again at once, and again.
    upstream.once('error', () => {
      upstream.destroy()
      client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n')
    })
    upstream.once('connect', () => {
      upstream.removeAllListeners('error')
      track(upstream)
      client.pipe(upstream)
      upstream.pipe(client)
      client.once('close', () => upstream.destroy())
      upstream.once('close', () => client.destroy())
      client.resume()
    })
  })
  const bound = await listenBelowEphemeral(server)
  return {
    url: `http://127.0.0.1:${bound}`,
    cut() {
      isCut = true
      for (const socket of sockets) socket.destroy()
    },
    heal() {
      isCut = false
      for (const socket of held) socket.destroy()
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}

/**
 * Listens on a random port below Linux's ephemeral range (32768 and up): the dev cluster picks its
 * gateways' ports from that range ahead of starting them, and a proxy bound there in between
 * could take one.
 */
async function listenBelowEphemeral(server: Server): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    const bound = await new Promise<boolean>((resolve) => {
      const onError = () => resolve(false)
      server.once('error', onError)
      server.listen(port, '127.0.0.1', () => {
        server.off('error', onError)
        resolve(true)
      })
    })
    if (bound) return port
  }
  throw new Error('no free port for a proxy below the ephemeral range')
}
