/**
 * Issue 12, defect 1, on the embedded cluster (LevelDB replicas in memory): a forged causal
 * context (counter 2^53 - 1) answered 400 but committed a counter of 2^53, after which the key
 * was unreadable and the partition's followers and shipping stopped, logging a failure every
 * retry. Now it is refused before anything is planned, and nothing in the background fails.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevCluster, type DevCluster } from '../../src/dev-server.js'
import { expectForgedContextHarmless } from '../support/forged-context.js'

const PARTITIONS = 2
let dev: DevCluster
const background: string[] = []

beforeAll(async () => {
  dev = await startDevCluster({
    regions: 2,
    partitions: PARTITIONS,
    replicas: 2,
    port: 0,
    wanDelayMs: 20,
    replicaLagMs: 5,
    namespaces: { cart: { conflicts: 'siblings' } },
    onError: (error, source) => background.push(`${source}: ${String(error)}`),
  })
})
afterAll(() => dev.close())

describe('a forged causal context on the embedded cluster', () => {
  it('is a 400 that leaves the key readable, writable and its partition replicating', async () => {
    await expectForgedContextHarmless(dev.urls as [string, string], PARTITIONS)
    expect(background).toEqual([])
  })
})
