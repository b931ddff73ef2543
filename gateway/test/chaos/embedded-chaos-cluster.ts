/**
 * `causeway dev --data DIR` (the embedded cluster: every region in one process, on LevelDB) as a
 * child process the chaos suite can kill -9 as a whole and start again on the same data and ports.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from '../../src/dev/redis-process.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const BIN = fileURLToPath(new URL('../../bin/causeway.js', import.meta.url))

/** The shape of the embedded cluster. */
export interface EmbeddedChaosOptions {
  regions: number
  partitions: number
  replicas: number
  log: (line: string) => void
}

/** A running `causeway dev --data` process. */
export class EmbeddedChaosCluster {
  readonly urls: string[]
  readonly dataDir: string
  readonly #args: string[]
  readonly #options: EmbeddedChaosOptions
  #child: ChildProcessWithoutNullStreams

  private constructor(
    options: EmbeddedChaosOptions,
    args: string[],
    dataDir: string,
    started: { child: ChildProcessWithoutNullStreams; urls: string[] },
  ) {
    this.#options = options
    this.#args = args
    this.dataDir = dataDir
    this.#child = started.child
    this.urls = started.urls
  }

  /** Starts `causeway dev --data <temp dir>` on two free consecutive ports. */
  static async start(options: EmbeddedChaosOptions): Promise<EmbeddedChaosCluster> {
    const dataDir = await mkdtemp(join(tmpdir(), 'causeway-chaos-embedded-'))
    const port = await consecutiveFreePorts(options.regions)
    const args = [
      'dev',
      '--data',
      dataDir,
      '--port',
      String(port),
      '--regions',
      String(options.regions),
      '--partitions',
      String(options.partitions),
      '--replicas',
      String(options.replicas),
    ]
    const started = await launch(args, options)
    return new EmbeddedChaosCluster(options, args, dataDir, started)
  }

  get pid(): number {
    return this.#child.pid!
  }

  /** kill -9 of the whole process; resolves once it is gone. */
  async kill(): Promise<void> {
    const exited = new Promise((resolve) => this.#child.once('exit', resolve))
    this.#child.kill('SIGKILL')
    await exited
  }

  /** Starts the same command again: the same data directory and ports. */
  async restart(): Promise<void> {
    const started = await launch(this.#args, this.#options)
    this.#child = started.child
    if (started.urls.join(' ') !== this.urls.join(' '))
      throw new Error(`restarted on ${started.urls.join(' ')}, not ${this.urls.join(' ')}`)
  }

  async close(): Promise<void> {
    const child = this.#child
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      await exited
      clearTimeout(timer)
    }
    await rm(this.dataDir, { recursive: true, force: true, maxRetries: 5 })
  }
}

async function launch(
  args: string[],
  options: EmbeddedChaosOptions,
): Promise<{ child: ChildProcessWithoutNullStreams; urls: string[] }> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1' },
  })
  let out = ''
  let err = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err = (err + chunk).slice(-8000)))
  const urls = await new Promise<string[]>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`causeway dev did not start in 60 s: ${err}`))
    }, 60_000)
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      const found = [...out.matchAll(/^region (\d+) \(\S+\) (http:\/\/\S+)$/gm)].map((m) => m[2]!)
      if (found.length === options.regions) {
        clearTimeout(timer)
        resolve(found)
      }
    })
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`causeway dev exited (${code ?? signal}) before it listened: ${err}`))
    })
  })
  child.removeAllListeners('exit')
  child.on('exit', (code, signal) => options.log(`causeway dev exited (${code ?? signal})`))
  return { child, urls }
}

// `causeway dev --port N` puts region d on N + d.
async function consecutiveFreePorts(count: number): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const base = await freePort()
    if (base + count > 65_535) continue
    let free = true
    for (let d = 1; d < count && free; d++) free = await isFree(base + d)
    if (free) return base
  }
  throw new Error(`no ${count} consecutive free ports`)
}

async function isFree(port: number): Promise<boolean> {
  const { createServer } = await import('node:net')
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}
