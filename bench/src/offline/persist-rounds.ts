/**
 * What the outbox measurements (`outbox-cpu.ts`, `outbox-client-cpu.ts`) share: one client per way
 * of persisting, and rounds of writes by each in a rotating order, with the CPU this process
 * spent per write (`process.cpuUsage`: every thread, so classic-level's libuv worker and LevelDB's
 * own threads count).
 */
import { connect, type PersistStore, type Transport } from '@causeway/client/node'
import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'

export const PERSIST_RUNS = ['persist off', 'memory-level', 'classic-level'] as const
export type PersistRun = (typeof PERSIST_RUNS)[number]

/** What the measurements use of a client. */
export interface Writer {
  put(key: string, value: unknown): Promise<unknown>
  close(): Promise<void>
}

/** One client of `url` per way of persisting (classic-level in `dir`). */
export async function persistClients(
  url: string,
  dir: string,
  transport?: () => Transport,
): Promise<Record<PersistRun, Writer>> {
  const base = () => (transport === undefined ? { url } : { url, transport: transport() })
  return {
    'persist off': await connect(base()),
    'memory-level': await connect({
      ...base(),
      persist: new MemoryLevel() as unknown as PersistStore,
    }),
    'classic-level': await connect({
      ...base(),
      persist: new ClassicLevel(dir) as unknown as PersistStore,
    }),
  }
}

/** Per run: what each round's `write` returned (writes/s), and the CPU µs per write. */
export interface PersistRounds {
  perS: Record<PersistRun, number[]>
  cpu: Record<PersistRun, number[]>
}

/**
 * `rounds` rounds, each running `write` (which makes `writes` writes and returns writes/s) for
 * every client, in an order that rotates by one each round; progress on stderr.
 */
export async function persistRounds(
  clients: Record<PersistRun, Writer>,
  rounds: number,
  writes: number,
  write: (db: Writer, run: PersistRun, round: number) => Promise<number>,
): Promise<PersistRounds> {
  const perRun = () =>
    Object.fromEntries(PERSIST_RUNS.map((r) => [r, [] as number[]])) as Record<PersistRun, number[]>
  const out: PersistRounds = { perS: perRun(), cpu: perRun() }
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < PERSIST_RUNS.length; i++) {
      const run = PERSIST_RUNS[(i + r) % PERSIST_RUNS.length]!
      const before = process.cpuUsage()
      out.perS[run].push(await write(clients[run], run, r))
      const used = process.cpuUsage(before)
      out.cpu[run].push((used.user + used.system) / writes)
    }
    console.error(
      `round ${r + 1}/${rounds}: ` +
        PERSIST_RUNS.map(
          (run) =>
            `${run} ${out.perS[run].at(-1)!.toFixed(0)}/s ${out.cpu[run].at(-1)!.toFixed(1)} µs`,
        ).join(', '),
    )
  }
  return out
}
