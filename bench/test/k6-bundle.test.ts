import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { startDevCluster, type DevCluster } from '@causeway/gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildK6Bundle, type BuiltK6Bundle } from '../src/k6-bundle.js'
import type * as K6Bundle from '../src/k6/causeway-k6.js'
import type { SeenRequest } from './support/k6-http-node.js'

type Bundle = typeof K6Bundle

const seen = (): SeenRequest[] => (globalThis as { k6HttpSeen?: SeenRequest[] }).k6HttpSeen ?? []

describe('k6 bundle', () => {
  let dir: string
  let dev: DevCluster
  let sdk: Bundle
  let k6: BuiltK6Bundle

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'causeway-k6-bundle-'))
    dev = await startDevCluster({
      regions: 2,
      partitions: 2,
      replicas: 2,
      port: 0,
      wanDelayMs: 150,
    })
    // The bundle as k6 gets it, and a copy whose k6/http is a Node stand-in, to run it here.
    const stub = fileURLToPath(new URL('./support/k6-http-node.ts', import.meta.url))
    k6 = await buildK6Bundle({ outfile: join(dir, 'k6.js') })
    const { outfile } = await buildK6Bundle({ outfile: join(dir, 'node.mjs'), k6Http: stub })
    sdk = (await import(pathToFileURL(outfile).href)) as Bundle
  })

  afterAll(async () => {
    await dev?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('is one ES module whose only imports are k6 built-ins', async () => {
    const text = await readFile(join(dir, 'k6.js'), 'utf8')
    const imports = [...text.matchAll(/^import\s.*?from\s+["']([^"']+)["']/gm)].map((m) => m[1])
    expect(imports).toEqual(['k6/http'])
    expect(text).toMatch(/^export \{/m)
    // No Node built-ins and no require(): k6 has neither.
    expect(text).not.toMatch(/require\(|from ["']node:/)
    // k6's runtime cannot parse async generators; the build rewrites them.
    expect(text).not.toMatch(/async\s*\*/)
  })

  it('carries no TypeBox, nor any other npm package: the SDK validates nothing with schemas', async () => {
    expect(k6.packages).toEqual([])
    const text = await readFile(k6.outfile, 'utf8')
    expect(text).not.toMatch(/typebox/i)
    // TypeBox alone is about 193 kB here; the whole SDK with the k6 transport is about 125 kB
    // (unminified; transactions about 18 kB of it; the offline engine and the change feed,
    // loaded on first use, left out); the checks of replies it does not trust (issue 23: size
    // caps, bounds, credentials' origins) about 20 kB more: 145 kB.
    expect(k6.bytes).toBeLessThan(160_000)
  })

  it('runs the real SDK through the k6 transport: session, tags, wire time', async () => {
    const transport = sdk.k6Transport({ tags: { suite: 'smoke' } })
    const db = await sdk.connect({ url: dev.urls[0]!, transport })
    transport.reset()
    const w = await db.put('k0000000000000001', 'v'.repeat(62))
    expect(transport.requests()).toBe(1)
    expect(transport.elapsedMs()).toBeGreaterThan(0)
    // Read-your-writes in the other region: the session's vector travels and the read waits.
    const r = await db.get('k0000000000000001', { region: 1, read: 'read-your-writes' })
    expect(r.found).toBe(true)
    expect(r.ts).toBe(w.ts)
    const kv = seen().filter((s) => s.url.includes('/v1/kv/'))
    const get = kv.at(-1)!
    expect(get.headers['causeway-after']).toMatch(/^0:\d+@1$/)
    expect(get.tags).toMatchObject({
      suite: 'smoke',
      name: '/v1/kv/{key}',
      op: 'get',
      level: 'read-your-writes',
    })
    // The session is the SDK's own: it serialises and restores like any other.
    const restored = await sdk.connect({
      url: dev.urls[1]!,
      transport,
      session: JSON.stringify(db.session),
    })
    expect(restored.session.toJSON()).toEqual(db.session.toJSON())
    await db.close()
  })

  it('sends the positions a write follows (the without-HLC ablation waits for them)', async () => {
    const transport = sdk.k6Transport()
    const db = await sdk.connect({ url: dev.urls[0]!, transport })
    await db.put('k0000000000000002', 'a')
    await db.put('k0000000000000002', 'b')
    // The SDK sends them itself (a leader refuses a write after a lost one, EPOCH_MISMATCH).
    expect(seen().at(-1)!.headers['causeway-after']).toMatch(/^0:\d+@1$/)
    transport.sendWriteDependencies(db)
    await db.put('k0000000000000002', 'c')
    expect(seen().at(-1)!.headers['causeway-after']).toMatch(/^0:\d+@1$/)
    await db.put('k0000000000000002', 'd', { write: 'eventual' })
    expect(seen().at(-1)!.headers['causeway-after']).toBeUndefined()
    await db.close()
  })

  it('emulates the round trip to a remote region, and turns a failed request into a rejection', async () => {
    const transport = sdk.k6Transport({ home: dev.urls[0]!, remoteDelayMs: 40 })
    const db = await sdk.connect({ url: dev.urls[0]!, transport })
    transport.reset()
    await db.get('k0000000000000003', { region: 1, read: 'eventual' })
    expect(transport.elapsedMs()).toBeGreaterThanOrEqual(80)
    expect(seen().at(-1)!.tags.remote).toBe('true')
    const dead = sdk.k6Transport()
    await expect(
      dead.request({ method: 'GET', url: 'http://127.0.0.1:9/v1/topology', headers: {} }),
    ).rejects.toThrow(/k6 request failed/)
    await db.close()
  })
})
