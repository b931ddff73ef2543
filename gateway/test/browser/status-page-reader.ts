/** Reads what the status page shows (its text and data-* attributes) in a Playwright page. */
import type { Page } from 'playwright-core'

/** One replica's cell. */
export interface ReplicaView {
  partition: number
  replica: number
  role: string
  /** Parsed from the text the cell shows (`sv [3, 0]`). */
  sv: number[]
}

/** One region's section. */
export interface RegionView {
  /** The heading's text before the URL: `name (region d)`. */
  title: string
  /** The error shown instead of the region's status, if any. */
  error: string | undefined
  replicas: ReplicaView[]
  /** Cells drawn, leaders among them, shipping links listed. */
  cells: number
  leaders: number
  links: number
  /** From the region's summary line. */
  backlog: number
  linkLagMs: number
  replicaLagEntries: number
  replicaLagMs: number
}

/** The page as a reader sees it now. */
export async function readStatusPage(
  page: Page,
): Promise<{ summary: string; cluster: string; regions: RegionView[] }> {
  return page.evaluate(() => {
    const number = (element: Element | null, name: string) =>
      Number(element?.getAttribute(name) ?? 'NaN')
    const regions = [...document.querySelectorAll('section[data-region]')].map((section) => {
      const heading = section.querySelector('h2')
      // The heading's own text nodes (the name and the id), without the URL after them.
      const title = [...(heading?.childNodes ?? [])]
        .filter((node) => node.nodeType === Node.TEXT_NODE)
        .map((node) => node.textContent)
        .join('')
      const summary = section.querySelector('[data-summary]')
      const replicas = [...section.querySelectorAll('td.replica')].map((cell) => ({
        partition: number(cell, 'data-partition'),
        replica: number(cell, 'data-replica'),
        role: cell.getAttribute('data-role') ?? '',
        sv: (/\[(.*)\]/.exec(cell.querySelector('.sv')?.textContent ?? '')?.[1] ?? '')
          .split(',')
          .map(Number),
      }))
      return {
        title,
        error: section.querySelector('.error')?.textContent ?? undefined,
        replicas,
        cells: replicas.length,
        leaders: replicas.filter((r) => r.role === 'leader').length,
        links: section.querySelectorAll('tr[data-link]').length,
        backlog: number(summary, 'data-backlog'),
        linkLagMs: number(summary, 'data-lag-ms'),
        replicaLagEntries: number(summary, 'data-replica-lag-entries'),
        replicaLagMs: number(summary, 'data-replica-lag-ms'),
      }
    })
    return {
      summary: document.getElementById('summary')?.textContent ?? '',
      cluster: document.getElementById('cluster')?.textContent ?? '',
      regions,
    }
  })
}

/** Waits for the page's next refresh (at most `timeoutMs`). */
export async function waitForRefresh(page: Page, timeoutMs = 5000): Promise<void> {
  const ticks = await page.evaluate(() =>
    Number(document.getElementById('updated')?.getAttribute('data-ticks') ?? '0'),
  )
  await page.waitForFunction(
    (before) =>
      Number(document.getElementById('updated')?.getAttribute('data-ticks') ?? '0') > before,
    ticks,
    { timeout: timeoutMs },
  )
}
