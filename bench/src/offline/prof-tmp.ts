import { Session } from 'node:inspector/promises'
import { writeFileSync } from 'node:fs'
import { connect, type PersistStore } from '@causeway/client/node'
import { MemoryLevel } from 'memory-level'
import { sequentialPuts, withCluster } from './sdk-writes.js'
const kind = process.argv[2] ?? 'memory'
await withCluster('memory', async (url) => {
  const db = await connect({
    url,
    ...(kind === 'memory' ? { persist: new MemoryLevel() as unknown as PersistStore } : {}),
  })
  for (let r = 0; r < 3; r++) await sequentialPuts((k, v) => db.put(k, v), `w${r}:`)
  const s = new Session()
  s.connect()
  await s.post('Profiler.enable')
  await s.post('Profiler.setSamplingInterval', { interval: 100 })
  await s.post('Profiler.start')
  const before = process.cpuUsage()
  let rate = 0
  for (let r = 0; r < 5; r++) rate += await sequentialPuts((k, v) => db.put(k, v), `p${r}:`)
  const used = process.cpuUsage(before)
  const { profile } = await s.post('Profiler.stop')
  writeFileSync(`/tmp/prof-${kind}.cpuprofile`, JSON.stringify(profile))
  console.log(
    kind,
    (rate / 5).toFixed(0),
    '/s',
    (used.user / 5000).toFixed(0),
    'user',
    (used.system / 5000).toFixed(0),
    'sys',
  )
  await db.close()
})
