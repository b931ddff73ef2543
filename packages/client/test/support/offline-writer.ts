/**
 * A child process for the kill test: connects with a LevelDB store (whatever the network),
 * queues `count` puts of `<prefix><i>`, says `queued <opIds>` on stdout, and waits to be killed.
 */
import { connect } from '@causeway/client/node'

const [url, dir, prefix, count] = process.argv.slice(2) as [string, string, string, string]
const db = await connect({ url, persist: dir, defaults: { timeoutMs: 2000 } })
const ids: string[] = []
for (let i = 0; i < Number(count); i++) {
  const w = await db.put(`${prefix}${i}`, i)
  if (!w.pending) throw new Error(`write ${i} was applied: the network was meant to be off`)
  ids.push(w.opId)
}
process.stdout.write(`queued ${ids.join(',')}\n`)
// Killed here (SIGKILL): nothing is flushed or closed on the way out.
setInterval(() => {}, 1000)
