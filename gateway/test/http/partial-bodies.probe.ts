/**
 * Probe (issue 12, defect 2): 100 connections each declare `content-length: 100`, send 9 bytes of
 * body and stop. Prints the gateway's memory and open connections before, while they hang and
 * after the gateway dropped them, and when it did. Not a test (vitest runs `*.test.ts` only; the
 * behaviour is tested in http-limits.test.ts):
 *
 *   npx tsc -b gateway && node --expose-gc --import tsx gateway/test/http/partial-bodies.probe.ts [--body-timeout 10000]
 */
import { connect } from 'node:net'
import { parseArgs } from 'node:util'
import { startDevCluster } from '../../src/dev-server.js'

const { values } = parseArgs({ options: { 'body-timeout': { type: 'string' } } })
const bodyTimeoutMs = Number(values['body-timeout'] ?? 10_000)
const CONNECTIONS = 100

const gc = (globalThis as { gc?: () => void }).gc
const rssMb = (): number => {
  gc?.()
  return Math.round(process.memoryUsage().rss / 1e6)
}

const dev = await startDevCluster({
  regions: 2,
  partitions: 4,
  replicas: 3,
  port: 0,
  http: { bodyTimeoutMs },
})
const gateway = dev.gateways[0]!
const port = Number(new URL(dev.urls[0]!).port)
const open = (): Promise<number> =>
  new Promise((resolve, reject) =>
    gateway.server.getConnections((error, n) => (error ? reject(error) : resolve(n))),
  )

console.log(`body timeout ${bodyTimeoutMs} ms; rss before: ${rssMb()} MB`)
const started = performance.now()
const closed: Promise<number>[] = []
for (let i = 0; i < CONNECTIONS; i++) {
  const socket = connect({ host: '127.0.0.1', port })
  socket.on('error', () => undefined)
  // Read what the gateway answers, so the close that follows is seen.
  socket.resume()
  socket.write(
    `PUT /v1/kv/k${i} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"value":`,
  )
  closed.push(new Promise((r) => socket.once('close', () => r(performance.now() - started))))
}
await new Promise((r) => setTimeout(r, Math.min(1000, bodyTimeoutMs / 2)))
console.log(`with ${CONNECTIONS} partial bodies: rss ${rssMb()} MB, ${await open()} connections`)
const times = await Promise.all(closed)
console.log(
  `dropped by the gateway after ${Math.round(Math.min(...times))}-${Math.round(Math.max(...times))} ms`,
)
await new Promise((r) => setTimeout(r, 500))
console.log(`after: rss ${rssMb()} MB, ${await open()} connections`)
await dev.close()
