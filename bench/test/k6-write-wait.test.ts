import { createServer, type Server } from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildK6Bundle } from '../src/k6-bundle.js'
import type * as K6Bundle from '../src/k6/causeway-k6.js'

// The k6 transport records the write wait a "without HLC" gateway reports in its
// `causeway-waited-ms` reply header (the nukv suite's "write wait ms"), here against a stand-in
// gateway that answers every request with a fixed header.
describe('k6 transport write wait', () => {
  let dir: string
  let sdk: typeof K6Bundle
  let server: Server
  let base: string

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'causeway-k6-wait-'))
    const stub = fileURLToPath(new URL('./support/k6-http-node.ts', import.meta.url))
    const { outfile } = await buildK6Bundle({ outfile: join(dir, 'node.mjs'), k6Http: stub })
    sdk = (await import(pathToFileURL(outfile).href)) as typeof K6Bundle
    server = createServer((req, res) => {
      req.resume()
      res.setHeader('content-type', 'application/json')
      res.setHeader('causeway-waited-ms', req.method === 'PUT' ? '12.250' : '99')
      res.end('{}')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const address = server.address()
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  })

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve))
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('keeps the wait of the last write since reset, and ignores reads', async () => {
    const transport = sdk.k6Transport()
    const url = `${base}/v1/kv/k?level=session`
    await transport.request({ method: 'GET', url, headers: {} })
    expect(transport.writeWaitMs()).toBeUndefined()
    await transport.request({ method: 'PUT', url, headers: {}, body: '{"value":1}' })
    expect(transport.writeWaitMs()).toBe(12.25)
    transport.reset()
    expect(transport.writeWaitMs()).toBeUndefined()
  })
})
