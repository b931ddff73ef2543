// @ts-check
/**
 * The status page's script (served as is by the gateway at /status-page.js; no build step).
 * Every second it reads this gateway's /v1/topology, then /v1/status of every region (this
 * gateway's own, and the other regions' gateways at the URLs the topology publishes, which answer
 * a page of another origin only if they allow it: --cors-origin), and redraws the page.
 *
 * Everything the gateway says reaches the page as text (`textContent`, `append` of strings,
 * `setAttribute` of data-* attributes), never as HTML: a cluster id, region name or namespace
 * chosen by whoever configured the cluster shows as written and cannot run script here.
 */

const REFRESH_MS = 1000
const REQUEST_TIMEOUT_MS = 5000
/** More than this many partitions per region are summed up but not drawn one by one. */
const MAX_PARTITIONS_DRAWN = 128
const KEY_STORAGE = 'causeway-status-api-key'

/** A reply of 401: the gateway wants an API key. */
class NeedsKey extends Error {}

/**
 * An element with text or element children. Only `class` and data-* attributes can be set, so
 * nothing from the gateway ever becomes a URL, a handler or markup.
 * @param {string} tag
 * @param {Record<string, string | number>} [props]
 * @param {...(Node | string | number)} children
 * @returns {HTMLElement}
 */
function h(tag, props = {}, ...children) {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(props)) {
    if (name === 'class') element.className = String(value)
    else if (name.startsWith('data-')) element.setAttribute(name, String(value))
    else throw new TypeError(`h(): attribute ${name} is not allowed`)
  }
  for (const child of children) element.append(typeof child === 'number' ? String(child) : child)
  return element
}

/**
 * A link to an http(s) URL, or the URL as plain text when it is anything else.
 * @param {string} url
 */
function link(url) {
  let parsed
  try {
    parsed = new URL(url)
  } catch {
    return h('span', {}, url)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return h('span', {}, url)
  const a = document.createElement('a')
  a.href = parsed.href
  a.textContent = url
  return a
}

/**
 * GETs JSON with the API key the operator gave, if any.
 * @param {string} url
 */
async function getJson(url) {
  const key = sessionStorage.getItem(KEY_STORAGE)
  const res = await fetch(url, {
    headers: key ? { authorization: `Bearer ${key}` } : {},
    cache: 'no-store',
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  })
  const body = await res.json().catch(() => undefined)
  if (res.status === 401) throw new NeedsKey(body?.message ?? 'this gateway needs an API key')
  if (!res.ok)
    throw new Error(body?.code ? `${res.status} ${body.code}: ${body.message}` : `${res.status}`)
  return body
}

/**
 * One region's status: this gateway's own, or another region's, read across origins.
 * @param {{ id: number, url: string }} region
 * @param {number} self
 */
async function statusOf(region, self) {
  if (region.id === self) return getJson('/v1/status')
  const url = `${region.url}/v1/status`
  try {
    return await getJson(url)
  } catch (error) {
    if (error instanceof NeedsKey) throw error
    const why = error instanceof Error ? error.message : String(error)
    return {
      error:
        `could not read ${url} (${why}). The page reads other regions from their gateways: ` +
        `each must be reachable from this browser and allow this page's origin ` +
        `(${location.origin}) with --cors-origin.`,
    }
  }
}

/** @param {number} ms */
function duration(ms) {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`
}

/** @param {{ entries: number, ms: number }} lag */
function lagText(lag) {
  return lag.entries === 0
    ? 'up to date'
    : `lag ${lag.entries} ${lag.entries === 1 ? 'entry' : 'entries'} · ${duration(lag.ms)}`
}

/**
 * @param {any} topology
 * @param {any} region
 * @param {any} status
 */
function drawRegion(topology, region, status) {
  const self = region.id === topology.region
  const section = h(
    'section',
    { 'data-region': region.id },
    h(
      'h2',
      {},
      region.name,
      ` (region ${region.id})`,
      h('span', { class: 'url' }, link(region.url)),
      self ? h('span', { class: 'url' }, '· this gateway') : '',
    ),
  )
  if (status.error) {
    section.append(h('p', { class: 'error' }, status.error))
    return section
  }

  /** @type {Map<number, any[]>} */
  const byPartition = new Map()
  for (const replica of status.replicas) {
    const list = byPartition.get(replica.partition) ?? []
    list.push(replica)
    byPartition.set(replica.partition, list)
  }
  const shippers = [...status.shippers].sort((a, b) => a.partition - b.partition || a.to - b.to)
  const maxLag = status.replicas.reduce(
    (/** @type {{ entries: number, ms: number }} */ max, /** @type {any} */ r) => ({
      entries: Math.max(max.entries, r.lag.entries),
      ms: Math.max(max.ms, r.lag.ms),
    }),
    { entries: 0, ms: 0 },
  )
  const backlog = shippers.reduce((sum, s) => sum + s.backlog, 0)
  const linkLagMs = shippers.reduce((max, s) => Math.max(max, s.lagMs ?? 0), 0)
  section.append(
    h(
      'p',
      {
        'data-summary': '',
        'data-replica-lag-entries': maxLag.entries,
        'data-replica-lag-ms': maxLag.ms,
        'data-backlog': backlog,
        'data-lag-ms': linkLagMs,
      },
      `Replicas: ${maxLag.entries === 0 ? 'all up to date' : `most behind ${maxLag.entries} entries, ${duration(maxLag.ms)}`}. ` +
        `Shipping to other regions: ${backlog === 0 ? 'nothing waiting' : `${backlog} entries waiting, oldest ${duration(linkLagMs)}`}.`,
    ),
  )

  const partitions = [...byPartition.keys()].sort((a, b) => a - b)
  const drawn = partitions.slice(0, MAX_PARTITIONS_DRAWN)
  const head = h('tr', {}, h('th', {}, 'partition'))
  for (let i = 0; i < topology.replicas; i++) head.append(h('th', {}, `replica ${i}`))
  const body = h('tbody')
  /** @type {Map<number, any>} */
  const leaders = new Map((status.leaders ?? []).map((/** @type {any} */ l) => [l.partition, l]))
  for (const p of drawn) {
    const leader = leaders.get(p)
    const row = h(
      'tr',
      {},
      h(
        'th',
        leader
          ? {
              'data-leader': leader.replica,
              'data-leader-state': leader.state,
              'data-epoch': leader.epoch,
              'data-note': leader.note ?? '',
              'data-serves': leader.serves === false ? 'false' : 'true',
            }
          : {},
        `p${p}`,
        leader
          ? h(
              'div',
              { class: leader.state === 'leading' ? 'muted' : 'error' },
              `epoch ${leader.epoch}${leader.state === 'leading' ? '' : ` · ${leader.state}`}${leader.serves === false ? ' · serves nothing (reads go to followers)' : ''}`,
            )
          : '',
      ),
    )
    for (const replica of byPartition.get(p) ?? []) {
      const classes = ['replica', replica.role]
      if (replica.lag.entries > 0) classes.push('lagging')
      row.append(
        h(
          'td',
          {
            class: classes.join(' '),
            'data-partition': p,
            'data-replica': replica.replica,
            'data-role': replica.role,
            'data-lag-entries': replica.lag.entries,
            'data-lag-ms': replica.lag.ms,
          },
          h('div', { class: 'role' }, replica.role),
          h('div', { class: 'sv' }, `sv [${replica.sv.join(', ')}]`),
          h('div', {}, `epoch ${replica.epoch}`),
          h('div', {}, lagText(replica.lag)),
          h('div', { class: 'muted' }, replica.backend),
        ),
      )
    }
    body.append(row)
  }
  const origins = topology.regions.map((/** @type {any} */ r) => r.name).join(', ')
  section.append(
    h('p', { class: 'muted' }, `Stable vectors: the highest entry applied from [${origins}].`),
    h('table', { class: 'replicas' }, h('thead', {}, head), body),
  )
  if (partitions.length > drawn.length)
    section.append(
      h(
        'p',
        { class: 'muted' },
        `${partitions.length - drawn.length} more partitions (counted in the summary above; all in /v1/status).`,
      ),
    )

  const troubled = (status.leaders ?? []).filter((/** @type {any} */ l) => l.note)
  if (troubled.length > 0)
    section.append(
      h(
        'ul',
        { class: 'error', 'data-leadership': '' },
        ...troubled.map((/** @type {any} */ l) =>
          h('li', {}, `p${l.partition}: ${l.state}: ${l.note}`),
        ),
      ),
    )
  if ((status.divergence ?? []).length > 0) {
    const names = new Map(topology.regions.map((/** @type {any} */ r) => [r.id, r.name]))
    section.append(
      h('h3', {}, 'Shipping that disagreed'),
      h(
        'ul',
        { class: 'error', 'data-divergence': '' },
        ...status.divergence.map((/** @type {any} */ d) =>
          h(
            'li',
            { 'data-origin': d.origin, 'data-partition': d.partition, 'data-state': d.state },
            `p${d.partition} from ${names.get(d.origin) ?? d.origin}: ${d.state === 'extra' ? 'holds entries the origin lost' : 'refused'}: ${d.note}`,
          ),
        ),
      ),
    )
  }

  if (topology.regions.length > 1) {
    const names = new Map(topology.regions.map((/** @type {any} */ r) => [r.id, r.name]))
    const links = h(
      'tbody',
      {},
      ...shippers
        .filter((s) => s.partition < (drawn.at(-1) ?? -1) + 1)
        .map((s) =>
          h(
            'tr',
            {
              class: s.backlog > 0 ? 'lagging' : '',
              'data-link': `${s.partition}:${s.from}:${s.to}`,
              'data-backlog': s.backlog,
              'data-lag-ms': s.lagMs ?? 0,
            },
            h('td', {}, `p${s.partition}`),
            h('td', {}, `→ ${names.get(s.to) ?? s.to}`),
            h('td', { class: 'num' }, s.shipped),
            h('td', { class: 'num' }, s.backlog),
            h('td', { class: 'num' }, s.backlog === 0 ? '–' : duration(s.lagMs ?? 0)),
          ),
        ),
    )
    section.append(
      h('h3', {}, 'Shipping'),
      shippers.length === 0
        ? h(
            'p',
            { class: 'muted' },
            'This gateway ships no partition now (with several gateways in a region, the one holding a partition’s lease reports it).',
          )
        : h(
            'table',
            { class: 'links' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                h('th', {}, 'partition'),
                h('th', {}, 'to'),
                h('th', {}, 'acknowledged idx'),
                h('th', {}, 'backlog (entries)'),
                h('th', {}, 'oldest waiting'),
              ),
            ),
            links,
          ),
    )
  }
  if (status.causal) section.append(...drawCausal(topology, status.causal))
  return section
}

/**
 * The causal shipping section: the region's stabiliser (as this gateway's replica sees it), its
 * label links when it leads, and the receiver's SiteTime and queues.
 * @param {any} topology
 * @param {any} causal
 */
function drawCausal(topology, causal) {
  const names = new Map(topology.regions.map((/** @type {any} */ r) => [r.id, r.name]))
  const st = causal.stabiliser
  const waiting = causal.receiver.origins.filter((/** @type {any} */ o) => o.queued > 0)
  const out = [
    h('h3', {}, 'Causal shipping'),
    h(
      'p',
      {
        'data-causal': '',
        'data-leader': st.leader ? 'yes' : 'no',
        'data-stable-time': st.stableTime,
        'data-pending': st.pending,
      },
      `Stabiliser replica ${st.replica}${st.leader ? ' (leader)' : ''}: stable time ${st.stableTime}, ` +
        `${st.pending} labels not yet stable, ${st.retained} kept until every region applied them, ` +
        `${st.ordered} ordered. Theta ${causal.thetaMs} ms, Delta ${causal.deltaMs} ms.`,
    ),
    h(
      'p',
      { 'data-site-time': causal.receiver.siteTime.join(',') },
      `SiteTime: ${causal.receiver.siteTime
        .map((/** @type {string} */ t, /** @type {number} */ d) =>
          d === topology.region ? '' : `${names.get(d) ?? d} ${t}`,
        )
        .filter(Boolean)
        .join(', ')}. ` +
        (waiting.length === 0
          ? 'No label waits to be applied.'
          : `Waiting: ${waiting
              .map(
                (/** @type {any} */ o) =>
                  `${o.queued} of ${names.get(o.origin) ?? o.origin}${o.blocked ? ` (for ${o.blocked})` : ''}`,
              )
              .join(', ')}.`),
    ),
  ]
  if (causal.links.length > 0)
    out.push(
      h(
        'table',
        { class: 'links' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', {}, 'labels to'),
            h('th', {}, 'sent'),
            h('th', {}, 'backlog (labels)'),
            h('th', {}, 'applied there (per partition)'),
          ),
        ),
        h(
          'tbody',
          {},
          ...causal.links.map((/** @type {any} */ l) =>
            h(
              'tr',
              { 'data-label-link': l.to, 'data-backlog': l.backlog },
              h('td', {}, `→ ${names.get(l.to) ?? l.to}`),
              h('td', { class: 'num' }, l.sent),
              h('td', { class: 'num' }, l.backlog),
              h('td', {}, `[${l.applied.join(', ')}]`),
            ),
          ),
        ),
      ),
    )
  return out
}

/** @param {any} topology */
function drawSummary(topology) {
  const cluster = document.getElementById('cluster')
  if (cluster) cluster.textContent = topology.cluster
  const self = topology.regions.find((/** @type {any} */ r) => r.id === topology.region)
  const namespaces = Object.entries(topology.namespaces ?? {})
    .map(([name, ns]) => `${name} (${/** @type {any} */ (ns).conflicts})`)
    .join(', ')
  const summary = document.getElementById('summary')
  if (summary)
    summary.textContent =
      `${topology.regions.length} regions × ${topology.partitions} partitions × ${topology.replicas} replicas, ` +
      `${topology.shipping} shipping, protocol ${topology.protocol}. This gateway serves ${self?.name ?? topology.region}. ` +
      `Namespaces: ${namespaces || 'none configured (every key last-writer-wins)'}.`
}

let ticks = 0

async function refresh() {
  const updated = document.getElementById('updated')
  const regions = document.getElementById('regions')
  const form = document.getElementById('key-form')
  if (!updated || !regions || !form) return
  try {
    const topology = await getJson('/v1/topology')
    const statuses = await Promise.all(
      topology.regions.map((/** @type {any} */ r) => statusOf(r, topology.region)),
    )
    drawSummary(topology)
    regions.replaceChildren(
      ...topology.regions.map((/** @type {any} */ r, /** @type {number} */ i) =>
        drawRegion(topology, r, statuses[i]),
      ),
    )
    form.hidden = true
    ticks++
    updated.setAttribute('data-ticks', String(ticks))
    updated.textContent = `Updated ${new Date().toLocaleTimeString()}.`
  } catch (error) {
    if (error instanceof NeedsKey) form.hidden = false
    updated.textContent = `Could not refresh: ${error instanceof Error ? error.message : String(error)}`
  }
}

async function loop() {
  // A hidden tab does not poll; it catches up when shown again.
  if (document.visibilityState !== 'hidden') await refresh()
  setTimeout(loop, REFRESH_MS)
}

document.getElementById('key-form')?.addEventListener('submit', (event) => {
  event.preventDefault()
  const input = /** @type {HTMLInputElement | null} */ (document.getElementById('key'))
  if (input?.value) sessionStorage.setItem(KEY_STORAGE, input.value)
  void refresh()
})
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') void refresh()
})
void loop()
