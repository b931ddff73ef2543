/**
 * A round-robin TCP load balancer for `causeway dev --backend redis --gateways N`: the region's
 * one public URL in front of its N gateway processes, as a real deployment puts a load balancer
 * in front of stateless gateways. Each client connection goes to the next gateway; a gateway that
 * refuses the connection (it is down) is skipped.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net'

/** A target of a {@link TcpBalancer}. */
export interface BalancerTarget {
  host: string
  port: number
}

/** A listening balancer. */
export interface TcpBalancer {
  readonly port: number
  /** Stops listening and closes every connection. */
  close(): Promise<void>
}

/** Starts a balancer on `host:port` (0: a free port) in front of `targets`. */
export async function startTcpBalancer(
  targets: readonly BalancerTarget[],
  host: string,
  port: number,
): Promise<TcpBalancer> {
  if (targets.length === 0) throw new RangeError('a balancer needs a target')
  const sockets = new Set<Socket>()
  let next = 0
  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  }
  const server: Server = createServer((client) => {
    track(client)
    client.pause()
    client.on('error', () => client.destroy())
    const attempt = (tries: number) => {
      const target = targets[next++ % targets.length]!
      const upstream = createConnection({ host: target.host, port: target.port })
      track(upstream)
      upstream.once('connect', () => {
        upstream.removeAllListeners('error')
        upstream.on('error', () => client.destroy())
        client.on('close', () => upstream.destroy())
        upstream.on('close', () => client.destroy())
        client.pipe(upstream)
        upstream.pipe(client)
        client.resume()
      })
      upstream.once('error', () => {
        upstream.destroy()
        if (tries + 1 < targets.length && !client.destroyed) attempt(tries + 1)
        else client.destroy()
      })
    }
    attempt(0)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address()
  const bound = typeof address === 'object' && address !== null ? address.port : port
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}
