/**
 * Every code block of the READMEs runs as written against the cluster `npm start` starts: the
 * test starts `causeway` with the flags of the `start` script (on free ports, its data in a temp
 * dir), and runs each TypeScript block with tsx, its `http://127.0.0.1:7070`/`:7071` pointed at
 * that cluster's regions. Blocks fenced `ts browser` get a stand-in `localStorage` and
 * `addEventListener`. A block that is only commands to type is marked
 * `<!-- not run by the README test: ... -->`; any other block fails the test.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type CodeBlock, codeBlocks } from './code-blocks.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const READMES = [
  'README.md',
  'packages/client/README.md',
  'packages/core/README.md',
  'gateway/README.md',
]
const RUNNABLE = new Set(['ts', 'typescript', 'js', 'javascript'])
const run = promisify(execFile)

const blocks = await Promise.all(
  READMES.map(async (file) => ({
    file,
    blocks: codeBlocks(await readFile(join(ROOT, file), 'utf8')),
  })),
)
const runnable = blocks.flatMap(({ file, blocks }) =>
  blocks.filter((b) => RUNNABLE.has(b.info[0] ?? '')).map((block) => ({ file, block })),
)

let cluster: ChildProcess
let urls: string[]
let dir: string // the cluster's data
let scratch: string // the blocks' files: inside the checkout, so their imports resolve
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'causeway-readme-'))
  scratch = join(ROOT, 'node_modules', '.cache', `causeway-readme-${process.pid}`)
  await mkdir(scratch, { recursive: true })
  cluster = spawn(
    process.execPath,
    [join(ROOT, 'gateway', 'bin', 'causeway.js'), ...(await startArgs(dir))],
    {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  urls = await regionUrls(cluster, 2)
}, 60_000)
afterAll(async () => {
  if (cluster && cluster.exitCode === null) {
    cluster.kill('SIGTERM')
    await new Promise((resolve) => cluster.once('exit', resolve))
  }
  await rm(scratch, { recursive: true, force: true })
  await rm(dir, { recursive: true, force: true })
})

/** `npm start`'s arguments, on free ports and with its data in `data`. */
async function startArgs(data: string): Promise<string[]> {
  const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>
  }
  const [command, ...args] = manifest.scripts.start!.split(/\s+/)
  expect(command).toBe('causeway')
  const at = args.indexOf('--data')
  if (at >= 0) args.splice(at, 2)
  expect(args).not.toContain('--port')
  return [...args, '--data', join(data, 'cluster'), '--port', '0']
}

describe('README code blocks', () => {
  it('every block runs, or is marked as commands to type', () => {
    for (const { file, blocks: list } of blocks) {
      for (const block of list) {
        if (RUNNABLE.has(block.info[0] ?? '')) {
          expect(block.notRun, `${file}:${block.line} is TypeScript: it must run`).toBeUndefined()
        } else {
          expect(
            block.notRun,
            `${file}:${block.line} (${block.info.join(' ')}) is neither run nor marked`,
          ).toBeDefined()
          expect(['sh', 'bash'], `${file}:${block.line}`).toContain(block.info[0])
        }
      }
    }
    expect(runnable.length).toBeGreaterThanOrEqual(8)
  })

  it.each(runnable.map(({ file, block }) => [`${file}:${block.line}`, file, block] as const))(
    '%s runs as written',
    async (_, file, block) => {
      const output = await runBlock(file, block)
      // What the blocks' comments say they print.
      if (file === 'README.md' && block.code.includes('waitedMs')) {
        // The quick start's read in the other region waits for shipping over the WAN delay.
        const waited = /waited (\d+\.\d) ms/.exec(output)
        expect(waited, output).not.toBeNull()
        expect(Number(waited![1])).toBeGreaterThan(0)
      }
      if (block.code.includes("items: ['pear']")) {
        expect(output).toMatch(
          /^2 \[ \{ items: \[ '(apple|pear)' \] \}, \{ items: \[ '(apple|pear)' \] \} \]$/m,
        )
        expect(output).toContain("[ { items: [ 'apple', 'pear', 'plum' ] } ]")
      }
      if (block.code.includes('HybridClock')) {
        expect(output).toBe('018bcfe568000000 018bcfe568000001 -1\n3\n')
      }
    },
    60_000,
  )
})

/** Runs a block with tsx, its URLs pointed at the cluster; resolves with its stdout. */
async function runBlock(file: string, block: CodeBlock): Promise<string> {
  const code = block.code.replace(/http:\/\/127\.0\.0\.1:(\d+)/g, (url, port: string) => {
    const region = Number(port) - 7070
    return urls[region] ?? url
  })
  const path = join(scratch, `${file.replaceAll('/', '_')}-${block.line}.mts`)
  await writeFile(path, code)
  const flags = ['--conditions=@causeway/source', '--import', 'tsx']
  if (block.info.includes('browser'))
    flags.push('--import', join(ROOT, 'test', 'readme', 'browser-stand-ins.ts'))
  try {
    const { stdout } = await run(
      process.execPath,
      [...flags, join(ROOT, 'test', 'readme', 'run-block.ts'), path],
      {
        cwd: scratch, // where `--import tsx` resolves, and where a block writes its files
        timeout: 45_000,
      },
    )
    return stdout
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string }
    throw new Error(
      `${file}:${block.line} failed:\n${stderr ?? ''}${stdout ?? ''}\n--- the block ---\n${code}`,
      { cause: error },
    )
  }
}

/** The URLs the CLI prints, one line per region, once every gateway listens. */
function regionUrls(child: ChildProcess, regions: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let out = ''
    let err = ''
    const timer = setTimeout(() => reject(new Error(`no URLs in 45 s: ${out} ${err}`)), 45_000)
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()))
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const found = [...out.matchAll(/^region (\d+) \(\S+\) (http:\/\/\S+)$/gm)].map((m) => m[2]!)
      if (found.length === regions) {
        clearTimeout(timer)
        resolve(found)
      }
    })
    child.once('exit', (code) => reject(new Error(`causeway exited with ${code}: ${err}`)))
  })
}
