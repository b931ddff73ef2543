/**
 * The proxy the chaos suite puts on every shipping link: it forwards, a cut black-holes requests
 * (no answer, as a partitioned network gives none) until healed, and a target that is down gets
 * a 502 at once (not a closed connection, which undici would retry without end).
 */
import { createServer, type Server } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { freePort } from '../../src/dev/redis-process.js'
import { startCuttableProxy, type CuttableProxy } from './cuttable-proxy.js'

let server: Server | undefined
let proxy: CuttableProxy | undefined

afterEach(async () => {
  await proxy?.close()
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)))
  server = proxy = undefined
})

async function echoServer(port = 0): Promise<string> {
  server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => res.end(`got ${body.length}`))
  })
  await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve))
  const address = server.address()
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : port}`
}

describe('the cuttable proxy', () => {
  it('forwards, black-holes while cut, and forwards again once healed', async () => {
    proxy = await startCuttableProxy(await echoServer())
    const post = (timeoutMs: number) =>
      fetch(proxy!.url, {
        method: 'POST',
        body: 'x'.repeat(100_000),
        signal: AbortSignal.timeout(timeoutMs),
      }).then((r) => r.text())
    expect(await post(5000)).toBe('got 100000')
    proxy.cut()
    // Let the client see its kept-alive connection closed, so the next request opens a new one.
    await new Promise((resolve) => setTimeout(resolve, 50))
    const started = performance.now()
    await expect(post(500)).rejects.toThrow()
    // No answer at all: the request waited out its own deadline.
    expect(performance.now() - started).toBeGreaterThanOrEqual(450)
    proxy.heal()
    expect(await post(5000)).toBe('got 100000')
  })

  it('answers 502 at once for a target that is down', async () => {
    const port = await freePort()
    proxy = await startCuttableProxy(`http://127.0.0.1:${port}`)
    const started = performance.now()
    const res = await fetch(proxy.url, { signal: AbortSignal.timeout(5000) })
    expect(res.status).toBe(502)
    expect(performance.now() - started).toBeLessThan(2000)
    await echoServer(port)
    expect(await (await fetch(proxy.url)).text()).toBe('got 0')
  })
})
