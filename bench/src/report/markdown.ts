/** Markdown pieces for the benchmark report. */

/** A Markdown table; cells are written as given (numbers formatted by the caller). */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`
  const align = header.map((_, i) => (i === 0 ? '---' : '---:'))
  return [line(header), line(align), ...rows.map(line)].join('\n')
}

/** A number with `digits` decimals, or '–' when it is not finite. */
export function fixed(value: number | undefined, digits = 2): string {
  return value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(digits)
}

/** A whole number with thousands separators, or '–'. */
export function whole(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value)
    ? '–'
    : Math.round(value).toLocaleString('en-US')
}

/** A ratio such as `1.07×`, or '–'. */
export function times(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '–' : `${value.toFixed(2)}×`
}

/**
 * Replaces the section of `suite` in a generated document (between its markers), or appends it
 * when the document has none yet. Everything outside the markers is kept as written.
 */
export function replaceSection(document: string, suite: string, body: string): string {
  const start = `<!-- bench:${suite} -->`
  const end = `<!-- /bench:${suite} -->`
  const section = `${start}\n${body.trim()}\n${end}`
  const from = document.indexOf(start)
  const to = document.indexOf(end)
  if (from >= 0 && to > from)
    return document.slice(0, from) + section + document.slice(to + end.length)
  return `${document.trimEnd()}\n\n${section}\n`
}
