/**
 * A TCP proxy in front of a gateway, for the offline tests: it can refuse every connection
 * (offline), cut every open one (a dropped network), or let a `POST /v1/ops` through and drop
 * its reply (the gateway applied the batch; the client never learns it).
 */
import net from 'node:net'

export interface NetProxy {
  url: string
  /** Offline: open connections are cut and new ones refused. */
  setOffline(offline: boolean): void
  /** Cuts every open connection (the server's sockets too). */
  cutAll(): void
  /**
   * The next `count` replies to `POST /v1/ops` are dropped: the connection closes (the server's
   * socket too) as they start. With `skip`, that many requests pass untouched first. `onDrop` runs
   * at each drop.
   */
  dropOpsReplies(count: number, skip?: number, onDrop?: () => void): void
  /** `POST /v1/ops` requests seen. */
  readonly opsRequests: number
  close(): Promise<void>
}

export async function startProxy(target: string): Promise<NetProxy> {
  const { hostname, port } = new URL(target)
  const pairs = new Set<[net.Socket, net.Socket]>()
  let offline = false
  let dropReplies = 0
  let skipReplies = 0
  let dropped: (() => void) | undefined
  let opsRequests = 0
  const server = net.createServer((client) => {
    if (offline) {
      client.destroy()
      return
    }
    const upstream = net.connect(Number(port), hostname)
    const pair: [net.Socket, net.Socket] = [client, upstream]
    pairs.add(pair)
    let dropNext = false
    const done = () => {
      client.destroy()
      upstream.destroy()
      pairs.delete(pair)
    }
    client.on('data', (chunk: Buffer) => {
      if (chunk.subarray(0, 16).toString('latin1').startsWith('POST /v1/ops')) {
        opsRequests++
        if (skipReplies > 0) skipReplies--
        else if (dropReplies > 0) {
          dropReplies--
          dropNext = true
        }
      }
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (dropNext) {
        done()
        dropped?.()
        return
      }
      client.write(chunk)
    })
    client.on('error', done)
    upstream.on('error', done)
    client.on('close', done)
    upstream.on('close', done)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address() as net.AddressInfo
  const cutAll = () => {
    for (const [a, b] of pairs) {
      a.destroy()
      b.destroy()
    }
    pairs.clear()
  }
  return {
    url: `http://127.0.0.1:${address.port}`,
    setOffline(value) {
      offline = value
      if (value) cutAll()
    },
    cutAll,
    dropOpsReplies(count, skip = 0, onDrop) {
      dropReplies = count
      skipReplies = skip
      dropped = onDrop
    },
    get opsRequests() {
      return opsRequests
    },
    close() {
      cutAll()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}
