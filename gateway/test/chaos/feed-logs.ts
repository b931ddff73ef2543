/**
 * Each region's copy of the partition logs, read through its public change feed (`GET /v1/watch`)
 * from the start: for a backend the harness cannot open while it runs (the embedded cluster's
 * LevelDB stores). A feed resumed from a cursor whose positions are all 0 streams every entry of
 * the watched keys, per partition in each origin's log order, from one replica of the region.
 */
import type { Topology } from '@causeway/core'
import { decodeCursor, encodeCursor } from '../../src/cluster/watch-cursor.js'
import { openSse, type SseStream } from '../support/sse-client.js'
import type { LogCopy, LoggedEntry } from './chaos-checks.js'

const HEARTBEAT_MS = 1000

/**
 * The entries of keys starting with `prefix` in every partition log of every region, one copy per
 * region (`feed`). Reads a region until a whole heartbeat period brings no change.
 */
export async function readFeedLogs(urls: readonly string[], prefix: string): Promise<LogCopy[]> {
  const copies: LogCopy[] = []
  for (const [region, url] of urls.entries())
    copies.push(...(await readRegion(region, url, prefix)))
  return copies
}

async function readRegion(region: number, url: string, prefix: string): Promise<LogCopy[]> {
  const topology = (await (await fetch(`${url}/v1/topology`)).json()) as Topology
  const shape = {
    cluster: topology.cluster,
    regions: topology.regions.length,
    partitions: topology.partitions,
  }
  const watch = `${url}/v1/watch?prefix=${encodeURIComponent(prefix)}&heartbeatMs=${HEARTBEAT_MS}`
  // The cursor of "now" names every partition with its epoch; the same at 0 is "from the start".
  const now = await open(watch)
  const first = await now.nextOf('heartbeat', 10_000)
  now.close()
  const positions = decodeCursor(first.id!, shape)
  for (const position of positions.values()) position.idx = position.idx.map(() => 0)
  const stream = await open(`${watch}&since=${encodeCursor(shape, positions)}`)

  const logs = new Map<string, LoggedEntry[]>()
  for (let p = 0; p < shape.partitions; p++)
    for (let origin = 0; origin < shape.regions; origin++) logs.set(`${p}/${origin}`, [])
  try {
    let heartbeats = 0
    let changes = 0
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline) {
      const event = await stream.next(HEARTBEAT_MS * 5)
      if (event.event === 'change') {
        const change = JSON.parse(event.data) as {
          key: string
          p: number
          dc: number
          idx: number
          ts: string
        }
        logs
          .get(`${change.p}/${change.dc}`)!
          .push({ idx: change.idx, ts: change.ts, key: change.key })
        changes++
      } else if (event.event === 'heartbeat') {
        if (heartbeats++ > 0 && changes === 0) break
        changes = 0
      } else throw new Error(`the change feed of region ${region} failed: ${event.data}`)
    }
  } finally {
    stream.close()
  }
  return [...logs].map(([id, entries]) => {
    const [partition, origin] = id.split('/').map(Number) as [number, number]
    return { region, copy: 'feed', partition, origin, entries }
  })
}

async function open(url: string): Promise<SseStream> {
  const opened = await openSse(url)
  if (!opened.ok) throw new Error(`GET ${url}: ${opened.status} ${JSON.stringify(opened.body)}`)
  return opened.stream
}
