/**
 * The Redis command counter of the `gateway` suite (`redis-commands.ts`), on a real Redis
 * deployment: it must find the one script call of a GET, the writes of a PUT in the leader's
 * script and at its follower, and leave the harness's own and the timers' commands out.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { readFile } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ClusterProcess, startCluster } from '../src/cluster-process.js'
import { costOfCalls, total } from '../src/redis-commands.js'

let dev: ClusterProcess
let servers: string[]
beforeAll(async () => {
  dev = await startCluster({ backend: 'redis', regions: 1, partitions: 1, replicas: 2 })
  const config = JSON.parse(await readFile(dev.configPath!, 'utf8')) as {
    regions: { replicas: string[][] }[]
  }
  servers = config.regions.flatMap((r) => r.replicas.flat())
}, 60_000)
afterAll(() => dev?.stop())

describe('Redis commands per call', () => {
  it('counts a session GET as one script call, and a PUT as a script with its effects replicated', async () => {
    const deployment = { servers, url: dev.urls[0]!, gatewayPids: dev.gatewayPids }
    expect(dev.gatewayPids).toHaveLength(1)
    const [get] = await costOfCalls([deployment], 'GET', 20, 2, 16)
    expect(get!.roundTrips.evalsha).toBe(1)
    expect(get!.replicated).toEqual({})
    expect(total(get!.inScripts)).toBeGreaterThan(0)
    const [put] = await costOfCalls([deployment], 'PUT', 20, 1, 16, 2)
    expect(put!.roundTrips.evalsha).toBe(1)
    // The follower applies the script's effects: its XADD among them, once per PUT.
    expect(put!.replicated.xadd).toBe(1)
    expect(put!.inScripts.xadd).toBe(1)
    if (process.platform === 'linux') {
      expect(put!.gatewayCpuMs).toBeGreaterThan(0)
      expect(put!.redisCpuMs).toBeGreaterThanOrEqual(0)
    }
  })
})
