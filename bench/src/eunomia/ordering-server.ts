/**
 * The two ordering services of the `eunomia` suite's first case, as a child process on loopback:
 *
 * - `--service sequencer`: a synchronous sequencer. Every request (a line naming its partition)
 *   gets the next sequence number back; a partition sends its next request only once it has the
 *   number of the last (the writer waits for it, as with a sequencer in every write's path).
 * - `--service stabiliser`: Eunomia's stabiliser, the gateway's own `Stabiliser` (Algorithm 3).
 *   Partitions send their labels in batches (every 2 ms, as the thesis' C++ implementation) and
 *   heartbeats; every `theta` ms the service computes the stable time, orders the stable labels
 *   and serialises them as the label envelopes a leader ships (then forgets them, as when every
 *   region has applied them).
 *
 * Both speak newline-delimited text over one TCP connection per partition: the first line is
 * `p <partition>`. Prints `ready <port>` once it listens, then `ordered <ms> <count>` every 250 ms
 * (the operations ordered so far, stamped with its own clock, so the rate is measured where the
 * work is done, however busy the process that reads it); stops on SIGTERM.
 */
import { createServer, type Socket } from 'node:net'
import { parseArgs } from 'node:util'
import { HLC_ZERO, type Hlc, type Label, label, labelEnvelope } from '@causeway/core'
import { Stabiliser } from '@causeway/gateway'

const { values } = parseArgs({
  options: {
    service: { type: 'string' },
    partitions: { type: 'string' },
    theta: { type: 'string', default: '5' },
  },
})
const service = values.service
const partitions = Number(values.partitions)
const thetaMs = Number(values.theta)
if ((service !== 'sequencer' && service !== 'stabiliser') || !(partitions >= 1))
  throw new Error(
    'usage: ordering-server --service sequencer|stabiliser --partitions N [--theta MS]',
  )

let ordered = 0
let seq = 0
const stabiliser = new Stabiliser({ origin: 0, regions: 2, partitions })

// Labels of one partition received and not yet stable, at most: past it the service stops
// reading that partition until it has ordered what it holds (TCP then holds the partition back),
// as a real service must. Partitions that lag behind are still read, so the stable time moves on.
const MAX_PENDING_PER_PARTITION = 20_000
const byPartition = new Map<number, Socket>()
const paused = new Set<number>()

/** Handles one connection: its first line names the partition (or asks for stats). */
function serve(socket: Socket): void {
  socket.setNoDelay(true)
  let partition = -1
  let buffered = ''
  socket.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('latin1')
    let replies = ''
    let nl: number
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl)
      buffered = buffered.slice(nl + 1)
      if (partition < 0) {
        partition = Number(line.slice(2))
        byPartition.set(partition, socket)
        continue
      }
      if (service === 'sequencer') {
        // The next number, now: the writer is waiting for it.
        replies += `${++seq}\n`
        ordered++
      } else take(partition, line)
    }
    if (replies) socket.write(replies)
    if (service === 'stabiliser' && pending(partition) > MAX_PENDING_PER_PARTITION) {
      paused.add(partition)
      socket.pause()
    }
  })
  socket.on('error', () => {})
}

/**
 * A batch of labels (`L <first idx> ["ts",...]`: JSON, as a real envelope is) or a heartbeat
 * (`H ts idx`) of a partition.
 */
function take(p: number, line: string): void {
  if (line.startsWith('H ')) {
    const [, ts, idx] = line.split(' ')
    stabiliser.heartbeat(p, ts as Hlc, Number(idx))
    return
  }
  const space = line.indexOf(' ', 2)
  const first = Number(line.slice(2, space))
  const times = JSON.parse(line.slice(space + 1)) as Hlc[]
  const labels: Label[] = new Array<Label>(times.length)
  for (let i = 0; i < times.length; i++) labels[i] = label(p, first + i, [times[i]!, HLC_ZERO])
  stabiliser.addLabels(p, labels)
}

const shipped = new Array<number>(partitions).fill(0)

/** Labels of partition `p` received and not yet stable (or not yet shipped). */
function pending(p: number): number {
  return stabiliser.top(p) - shipped[p]!
}
if (service === 'stabiliser') {
  // PROCESS_STABLE every theta: order what is stable and serialise it as it would be shipped.
  setInterval(() => {
    stabiliser.stabilise()
    const end = stabiliser.endSeq()
    for (let from = stabiliser.firstSeq(); from < end; from += 4096) {
      const batch = stabiliser.slice(from, 4096)
      JSON.stringify(labelEnvelope(0, stabiliser.stabilisedTo(), batch))
      ordered += batch.length
      for (const l of batch) if (l.idx > shipped[l.p]!) shipped[l.p] = l.idx
    }
    // Every destination applied what was shipped: forget it.
    stabiliser.trim(shipped)
    for (const p of paused)
      if (pending(p) < MAX_PENDING_PER_PARTITION / 2) {
        paused.delete(p)
        byPartition.get(p)?.resume()
      }
  }, thetaMs)
}

setInterval(() => process.stdout.write(`ordered ${performance.now().toFixed(1)} ${ordered}\n`), 250)

const server = createServer(serve)
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  process.stdout.write(`ready ${typeof address === 'object' && address ? address.port : 0}\n`)
})
process.on('SIGTERM', () => process.exit(0))
