/**
 * Starts a server as a child process and waits for the first line it prints that `ready`
 * accepts; stops it with SIGTERM (then SIGKILL) later.
 */
import { spawn } from 'node:child_process'

/** A running child server. */
export interface ChildServer {
  /** What `ready` returned for the line that announced it. */
  address: string
  pid: number
  stop(): Promise<void>
}

/** Spawns `command args` and resolves once a line of its stdout (or stderr) satisfies `ready`. */
export function startChild(
  command: string,
  args: string[],
  ready: (line: string) => string | undefined,
  timeoutMs = 20_000,
): Promise<ChildServer> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let output = ''
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
      reject(new Error(`${command} did not start within ${timeoutMs} ms:\n${output}`))
    }, timeoutMs)
    const onExit = (code: number | null): void => {
      clearTimeout(timer)
      reject(new Error(`${command} exited with ${code} before it was ready:\n${output}`))
    }
    child.once('exit', onExit)
    const onData = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-4000)
      for (const line of chunk.toString().split('\n')) {
        const address = ready(line.trim())
        if (address === undefined) continue
        clearTimeout(timer)
        child.off('exit', onExit)
        child.stdout.off('data', onData)
        child.stderr.off('data', onData)
        // Keep draining so a chatty child never blocks on a full pipe.
        child.stdout.resume()
        child.stderr.resume()
        resolve({ address, pid: child.pid!, stop })
        return
      }
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
  })
}
