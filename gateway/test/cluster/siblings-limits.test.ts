/**
 * The bounds on a siblings key: a write that would leave it with more than 100 siblings, or a set
 * longer than one largest value per region, is refused before it is made (every log entry ships
 * the whole set); a write with the context of a read, which resolves them, always fits.
 */
import { HLC_ZERO, type CausalContext } from '@causeway/core'
import { afterEach, describe, expect, it } from 'vitest'
import type { WriteRequest } from '../../src/cluster/cluster-service.js'
import { EmbeddedCluster } from '../../src/cluster/embedded-cluster.js'

const clusters: EmbeddedCluster[] = []
afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.close()))
})

async function start(maxValueBytes?: number) {
  const cluster = await EmbeddedCluster.start({
    regions: 2,
    partitions: 1,
    replicas: 1,
    namespaces: { cart: { conflicts: 'siblings' } },
    ...(maxValueBytes === undefined ? {} : { limits: { maxValueBytes } }),
  })
  clusters.push(cluster)
  return cluster.service(0)
}

function write(key: string, value: string, context?: CausalContext): WriteRequest {
  const request: WriteRequest = {
    key,
    partition: 0,
    value,
    dt: HLC_ZERO,
    durability: 'leader',
    level: 'session',
  }
  if (context !== undefined) request.context = context
  return request
}

const read = { partition: 0, replica: 'leader', timeoutMs: 1000, level: 'session' } as const

describe('sibling limits', () => {
  it('refuses a 101st sibling, and takes the write that resolves them', async () => {
    const service = await start()
    for (let i = 0; i < 100; i++) await service.write(write('cart:1', String(i)))
    await expect(service.write(write('cart:1', '"one too many"'))).rejects.toMatchObject({
      code: 'VALUE_TOO_LARGE',
      details: { siblings: 101, maxSiblings: 100 },
    })
    const before = await service.read({ key: 'cart:1', ...read })
    expect(before.siblings).toHaveLength(100)
    await service.write(write('cart:1', '"merged"', before.context))
    const after = await service.read({ key: 'cart:1', ...read })
    expect(after.siblings?.map((s) => s.value)).toEqual(['"merged"'])
  })

  it('refuses a set longer than one largest value per region', async () => {
    // Two regions, values of at most 100 bytes: room for 2 × (100 + 1024) characters.
    const service = await start(100)
    const value = JSON.stringify('x'.repeat(96))
    let refused = 0
    for (let i = 0; i < 30 && refused === 0; i++)
      await service.write(write('cart:2', value)).catch((error: { code?: string }) => {
        expect(error.code).toBe('VALUE_TOO_LARGE')
        refused = i
      })
    expect(refused).toBeGreaterThan(15)
    const { siblings, context } = await service.read({ key: 'cart:2', ...read })
    expect(siblings).toHaveLength(refused)
    await service.write(write('cart:2', value, context))
    // Last-writer-wins keys have no such bound.
    for (let i = 0; i < 30; i++) await service.write(write('user:1', value))
  })
})
