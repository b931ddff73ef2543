/**
 * Case `ordering` of the `eunomia` suite, as the thesis measures it (section 4.1.2): the ordering
 * service alone at saturation, fed by `partitions` partitions issuing operations eagerly, each on
 * its own connection, against a synchronous sequencer fed the same way. The service runs in a
 * child process (`ordering-server.ts`); the partitions run here.
 *
 * - Sequencer: each partition asks for the next sequence number and waits for it before its next
 *   operation (a sequencer sits in every write's path).
 * - Stabiliser: each partition stamps its operations with a hybrid clock and sends their labels in
 *   a batch every 2 ms (nothing waits for the service); the service orders what is stable every
 *   `theta` ms.
 *
 * Throughput is counted at the service: operations numbered, or labels ordered and serialised
 * for shipping, per second. The two alternate (sequencer, stabiliser, stabiliser, sequencer, ...)
 * and each number is the median of its rounds.
 */
import { spawn } from 'node:child_process'
import { connect as connectTcp, type Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { hlcFrom } from '@causeway/core'
import { FROM_SOURCE } from '../cluster-process.js'

/** What one round measured. */
export interface OrderingRound {
  service: 'sequencer' | 'stabiliser'
  opsPerS: number
}

/** What the case measured. */
export interface OrderingResults {
  partitions: number
  thetaMs: number
  batchMs: number
  measureS: number
  rounds: OrderingRound[]
  sequencerOpsPerS: number
  stabiliserOpsPerS: number
  /** Stabiliser over sequencer: the thesis reports 7.7. */
  ratio: number
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** A running ordering service: its port, and what it reported ordered so far, by its clock. */
interface OrderingServer {
  port: number
  /** `[ms, ordered]` samples, every 250 ms. */
  samples: [number, number][]
  stop(): Promise<void>
}

function startServer(
  service: string,
  partitions: number,
  thetaMs: number,
): Promise<OrderingServer> {
  const fromSource = import.meta.url.endsWith('.ts')
  const script = fileURLToPath(
    new URL(`./ordering-server.${fromSource ? 'ts' : 'js'}`, import.meta.url),
  )
  const child = spawn(
    process.execPath,
    [
      ...(fromSource ? FROM_SOURCE : []),
      script,
      '--service',
      service,
      '--partitions',
      String(partitions),
      '--theta',
      String(thetaMs),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const samples: [number, number][] = []
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)))
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    await exited
    clearTimeout(timer)
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop()
      reject(new Error(`the ${service} did not start in 60 s:\n${stderr}`))
    }, 60_000)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`the ${service} exited with ${code}:\n${stderr}`))
    })
    let buffered = ''
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString()
      let nl: number
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const [what, a, b] = buffered.slice(0, nl).trim().split(' ')
        buffered = buffered.slice(nl + 1)
        if (what === 'ordered') samples.push([Number(a), Number(b)])
        else if (what === 'ready') {
          clearTimeout(timer)
          resolve({ port: Number(a), samples, stop })
        }
      }
    })
  })
}

function open(port: number, first: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connectTcp(port, '127.0.0.1', () => {
      socket.setNoDelay(true)
      socket.write(`${first}\n`)
      resolve(socket)
    })
    socket.once('error', reject)
  })
}

/** Drives `partitions` partitions against the service until `stop` resolves. */
export async function drive(
  service: 'sequencer' | 'stabiliser',
  port: number,
  partitions: number,
  batchMs: number,
  stop: Promise<void>,
): Promise<void> {
  const sockets = await Promise.all(
    Array.from({ length: partitions }, (_, p) => open(port, `p ${p}`)),
  )
  let stopped = false
  void stop.then(() => (stopped = true))
  if (service === 'sequencer') {
    await Promise.all(
      sockets.map(
        (socket) =>
          new Promise<void>((resolve) => {
            // One request at a time: the next once the number of the last has come back.
            socket.on('data', () => {
              if (stopped) return resolve()
              socket.write('x\n')
            })
            socket.write('x\n')
          }),
      ),
    )
  } else {
    // Each partition stamps with a hybrid clock (strictly increasing) and batches for batchMs.
    const clock = sockets.map(() => ({ ms: Date.now(), c: 0, idx: 0, busy: false }))
    // A batch is its first idx and its timestamps (a partition's idx run one by one), as JSON.
    const batches = sockets.map(() => [] as string[])
    const firsts = sockets.map(() => 1)
    const flush = setInterval(() => {
      sockets.forEach((socket, p) => {
        const batch = batches[p]!
        if (batch.length === 0) return
        batches[p] = []
        const first = firsts[p]!
        firsts[p] = first + batch.length
        if (!socket.write(`L ${first} ${JSON.stringify(batch)}\n`)) {
          clock[p]!.busy = true
          socket.once('drain', () => (clock[p]!.busy = false))
        }
      })
    }, batchMs)
    // Eagerly: as many operations as the service takes, round robin over the partitions; while
    // every partition waits for its connection to drain, nothing spins.
    let wake: (() => void) | undefined
    sockets.forEach((socket) =>
      socket.on('drain', () => {
        wake?.()
        wake = undefined
      }),
    )
    await new Promise<void>((resolve) => {
      const turn = (): void => {
        if (stopped) return resolve()
        const now = Date.now()
        let made = 0
        for (let p = 0; p < partitions; p++) {
          const state = clock[p]!
          const batch = batches[p]!
          // A partition whose connection is full, or whose batch is large, waits for the flush.
          if (state.busy || batch.length >= 4096) continue
          for (let i = 0; i < 64; i++) {
            if (now > state.ms) {
              state.ms = now
              state.c = 0
            } else if (++state.c > 0xffff) {
              state.ms++
              state.c = 0
            }
            batch.push(hlcFrom(state.ms, state.c))
          }
          made++
        }
        if (made > 0) setImmediate(turn)
        else {
          // Every partition waits: for a drain, or for the next flush to empty its batch.
          const timer = setTimeout(() => {
            wake = undefined
            turn()
          }, batchMs)
          wake = () => {
            clearTimeout(timer)
            setImmediate(turn)
          }
        }
      }
      turn()
    })
    clearInterval(flush)
  }
  for (const socket of sockets) socket.destroy()
}

/** One round: warm up, then count what the service ordered over `measureS`. */
async function round(
  service: 'sequencer' | 'stabiliser',
  partitions: number,
  thetaMs: number,
  batchMs: number,
  warmupS: number,
  measureS: number,
): Promise<number> {
  const server = await startServer(service, partitions, thetaMs)
  try {
    let end!: () => void
    const stop = new Promise<void>((resolve) => (end = resolve))
    const driving = drive(service, server.port, partitions, batchMs, stop)
    // Warm up, then measure over the service's own samples of the window.
    const skip = server.samples.length + Math.ceil((warmupS * 1000) / 250)
    const want = skip + Math.ceil((measureS * 1000) / 250)
    const deadline = performance.now() + (warmupS + measureS) * 1000 * 10 + 30_000
    while (server.samples.length <= want && performance.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100))
    end()
    await driving
    const window = server.samples.slice(skip, want + 1)
    const first = window[0]
    const last = window.at(-1)
    if (!first || !last || last[0] <= first[0])
      throw new Error(`the ${service} reported too few samples`)
    return ((last[1] - first[1]) * 1000) / (last[0] - first[0])
  } finally {
    await server.stop()
  }
}

/** Measures both services, alternating, `rounds` rounds each. */
export async function measureOrdering(options: {
  partitions: number
  thetaMs: number
  rounds: number
  warmupS: number
  measureS: number
  log: (line: string) => void
}): Promise<OrderingResults> {
  const batchMs = 2
  const rounds: OrderingRound[] = []
  for (let r = 0; r < options.rounds; r++) {
    const order: ('sequencer' | 'stabiliser')[] =
      r % 2 === 0 ? ['sequencer', 'stabiliser'] : ['stabiliser', 'sequencer']
    for (const service of order) {
      const opsPerS = await round(
        service,
        options.partitions,
        options.thetaMs,
        batchMs,
        options.warmupS,
        options.measureS,
      )
      rounds.push({ service, opsPerS })
      options.log(`ordering, ${service}: ${Math.round(opsPerS).toLocaleString('en-US')} ops/s`)
    }
  }
  const sequencerOpsPerS = median(
    rounds.filter((r) => r.service === 'sequencer').map((r) => r.opsPerS),
  )
  const stabiliserOpsPerS = median(
    rounds.filter((r) => r.service === 'stabiliser').map((r) => r.opsPerS),
  )
  return {
    partitions: options.partitions,
    thetaMs: options.thetaMs,
    batchMs,
    measureS: options.measureS,
    rounds,
    sequencerOpsPerS,
    stabiliserOpsPerS,
    ratio: stabiliserOpsPerS / sequencerOpsPerS,
  }
}
