/**
 * A child process for the kill tests: connects online with a LevelDB store, makes `count` puts of
 * `<prefix><i>` one after the other, says `acked <result>` on stdout (synchronously) as each
 * returns applied, and kills itself with SIGKILL the moment the last one returns: before anything
 * the SDK does after a call (the op's removal from the outbox with its session row) is written.
 */
import { writeSync } from 'node:fs'
import { connect } from '@causeway/client/node'

const [url, dir, prefix, count] = process.argv.slice(2) as [string, string, string, string]
const db = await connect({ url, persist: dir, defaults: { timeoutMs: 5000 } })
for (let i = 0; i < Number(count); i++) {
  const key = `${prefix}${i}`
  const w = await db.put(key, i)
  if (w.pending) throw new Error(`write ${i} stayed pending: the network was meant to be on`)
  const acked = { key, opId: w.opId, partition: db.partitionOf(key), dc: w.dc, idx: w.idx }
  writeSync(1, `acked ${JSON.stringify(acked)}\n`)
}
process.kill(process.pid, 'SIGKILL')
