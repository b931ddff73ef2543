/** Reads one sample out of a Prometheus text exposition, whatever the order of its labels. */
export function sample(
  text: string,
  name: string,
  labels: Record<string, string>,
): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null || match[1] !== name) continue
    const found = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [
        m[1],
        m[2],
      ]),
    )
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3])
  }
  return undefined
}
