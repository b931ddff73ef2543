/**
 * The README's example, runnable: `npm start` in the repo root, then
 * `npm start -w @causeway/example-quickstart` (another cluster: `CAUSEWAY_URL=... npm start ...`).
 * It runs the SDK from its sources (the `@causeway/source` condition), so no build is needed.
 */
import { connect } from '@causeway/client'

/** What the walk-through observed, so a test can check it. */
export interface QuickstartReport {
  regions: string[]
  readInOtherRegion: { found: boolean; value: unknown; region: number; waitedMs: number }
  restoredSessionRead: { found: boolean; value: unknown }
  sessionBytes: number
}

/** Writes in the home region, reads it at once in another, then moves the session to a new client. */
export async function quickstart(
  url: string,
  log: (line: string) => void = console.log,
): Promise<QuickstartReport> {
  const db = await connect({ url })
  const regions = db.topology.regions.map((r) => r.name)
  log(
    `connected to ${db.topology.cluster}: regions ${regions.join(', ')}, ${db.topology.partitions} partitions`,
  )

  const key = `user:${Date.now()}`
  const w = await db.put(key, { name: 'Ada' })
  log(`put ${key} in region ${w.region}: ts ${w.ts}, idx ${w.idx}`)

  // Read it in the other region at once: the replica there waits until shipping delivered it.
  const other = regions.length > 1 ? 1 : 0
  const r = await db.get(key, { read: 'read-your-writes', region: other, timeoutMs: 5000 })
  log(
    `get in region ${r.region}: found=${r.found} value=${JSON.stringify(r.value)} (waited ${r.waitedMs.toFixed(1)} ms)`,
  )

  // Carry the session elsewhere (another tab, process or device) and keep the guarantees.
  const saved = JSON.stringify(db.session)
  const db2 = await connect({ url: db.topology.regions[other]!.url, session: JSON.parse(saved) })
  const r2 = await db2.get(key)
  log(`a second client with the restored session (${saved.length} bytes) reads found=${r2.found}`)

  await db.close()
  await db2.close()
  return {
    regions,
    readInOtherRegion: { found: r.found, value: r.value, region: r.region, waitedMs: r.waitedMs },
    restoredSessionRead: { found: r2.found, value: r2.value },
    sessionBytes: saved.length,
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await quickstart(process.env.CAUSEWAY_URL ?? 'http://127.0.0.1:7070')
}
