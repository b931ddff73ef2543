/**
 * Runs the `causeway` command as a child process, as users run it (`npx causeway`): its bin,
 * which in a checkout runs the TypeScript sources (tsx, every workspace resolved to its sources),
 * so the tests need no build.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const BIN = fileURLToPath(new URL('../../bin/causeway.js', import.meta.url))

/** A running CLI process. */
export interface CliProcess {
  child: ChildProcessWithoutNullStreams
  stdout(): string
  stderr(): string
  /** Resolves with the exit code (or the signal's name) when the process ends. */
  exited: Promise<number | string>
}

/** Starts `causeway <args>`. */
export function startCli(args: string[]): CliProcess {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1' },
  })
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'))
  })
  return { child, stdout: () => out, stderr: () => err, exited }
}

/** Runs `causeway <args>` to its end (at most `timeoutMs`). */
export async function runCli(
  args: string[],
  // A fail-safe, not a verdict: on a loaded 2-core machine the bin (tsx compiling the sources)
  // took over 15 s just to refuse a bad config.
  timeoutMs = 90_000,
): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const cli = startCli(args)
  const timer = setTimeout(() => cli.child.kill('SIGKILL'), timeoutMs)
  const code = await cli.exited
  clearTimeout(timer)
  return { code, stdout: cli.stdout(), stderr: cli.stderr() }
}

/** Waits until the CLI has printed one URL line per region; returns the URLs by region id. */
export async function urlsOf(
  cli: CliProcess,
  regions: number,
  // A fail-safe, not a verdict: a CLI that starts redis-servers and compiles on the fly took over
  // 20 s to print its URLs on a loaded 2-core machine.
  timeoutMs = 90_000,
): Promise<string[]> {
  const printed = () =>
    [...cli.stdout().matchAll(/^region (\d+) \(\S+\) (http:\/\/\S+)$/gm)].map((m) => m[2]!)
  // On each chunk of output (after startCli's own listener kept it), until the exit or deadline.
  const urls = await new Promise<string[] | undefined>((resolve) => {
    const done = (found: string[] | undefined) => {
      clearTimeout(timer)
      cli.child.stdout.off('data', check)
      cli.child.off('exit', exited)
      resolve(found)
    }
    const check = () => {
      const found = printed()
      if (found.length === regions) done(found)
    }
    const exited = () => done(printed().length === regions ? printed() : undefined)
    const timer = setTimeout(() => done(undefined), timeoutMs)
    cli.child.stdout.on('data', check)
    cli.child.once('exit', exited)
    if (cli.child.exitCode !== null) exited()
    else check()
  })
  if (urls !== undefined) return urls
  cli.child.kill('SIGKILL')
  throw new Error(
    `the CLI did not print ${regions} URLs; stdout: ${cli.stdout()} stderr: ${cli.stderr()}`,
  )
}

/** Sends `signal` and waits (at most `timeoutMs`) for the exit code. */
export async function stopCli(
  cli: CliProcess,
  signal: NodeJS.Signals = 'SIGTERM',
  timeoutMs = 15_000,
) {
  if (cli.child.exitCode !== null || cli.child.signalCode !== null) return cli.exited
  cli.child.kill(signal)
  const timer = setTimeout(() => cli.child.kill('SIGKILL'), timeoutMs)
  const code = await cli.exited
  clearTimeout(timer)
  return code
}
