/**
 * Renders the report's charts headless: a Vega-Lite spec is compiled to Vega, rendered to SVG
 * without a browser, and rasterised to PNG with resvg (DejaVu/system fonts).
 */
import { Resvg } from '@resvg/resvg-js'
import * as vega from 'vega'
import { compile, type TopLevelSpec } from 'vega-lite'

/** Common look: white background, readable fonts, a fixed size. */
const CONFIG = {
  background: 'white',
  font: 'DejaVu Sans',
  axis: { labelFontSize: 11, titleFontSize: 12 },
  legend: { labelFontSize: 11, titleFontSize: 12 },
  title: { fontSize: 14 },
}

/** SVG text of a Vega-Lite spec. */
export async function chartSvg(spec: Record<string, unknown>): Promise<string> {
  const full = { config: CONFIG, ...spec } as TopLevelSpec
  const view = new vega.View(vega.parse(compile(full).spec), { renderer: 'none' })
  try {
    return await view.toSVG()
  } finally {
    view.finalize()
  }
}

/** PNG bytes of a Vega-Lite spec, at twice the SVG's resolution. */
export async function chartPng(spec: Record<string, unknown>): Promise<Buffer> {
  const svg = await chartSvg(spec)
  const png = new Resvg(svg, {
    background: 'white',
    fitTo: { mode: 'zoom', value: 2 },
    font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' },
  })
    .render()
    .asPng()
  return Buffer.from(png)
}

/**
 * A line chart of `y` against `x`, one line per `series`, optionally one panel per `facet`.
 * `rows` are plain objects holding those fields.
 */
export function lineChart(options: {
  rows: Record<string, unknown>[]
  x: { field: string; title: string; scale?: Record<string, unknown> }
  y: { field: string; title: string; scale?: Record<string, unknown> }
  series: { field: string; title: string; sort?: string[] }
  facet?: { field: string; title: string; sort?: string[] }
  title: string
  width?: number
  height?: number
}): Record<string, unknown> {
  const { rows, x, y, series, facet } = options
  const layer = {
    mark: { type: 'line', point: true, strokeWidth: 1.5 },
    encoding: {
      x: {
        field: x.field,
        type: 'quantitative',
        title: x.title,
        scale: x.scale ?? { zero: false },
      },
      y: { field: y.field, type: 'quantitative', title: y.title, scale: y.scale ?? { zero: true } },
      color: {
        field: series.field,
        type: 'nominal',
        title: series.title,
        sort: series.sort ?? 'ascending',
      },
      // Same field and title as the colour: Vega-Lite merges the two into one legend.
      strokeDash: {
        field: series.field,
        type: 'nominal',
        title: series.title,
        sort: series.sort ?? 'ascending',
      },
    },
  }
  const size = { width: options.width ?? 320, height: options.height ?? 220 }
  if (!facet) return { title: options.title, data: { values: rows }, ...size, ...layer }
  return {
    title: options.title,
    data: { values: rows },
    facet: { column: { field: facet.field, title: facet.title, sort: facet.sort ?? 'ascending' } },
    spec: { ...size, ...layer },
    resolve: { scale: { y: 'independent' } },
  }
}

/**
 * Grouped bars: `y` for each `x`, one bar per `group` side by side (e.g. ours and the paper's
 * number for each case).
 */
export function groupedBars(options: {
  rows: Record<string, unknown>[]
  x: { field: string; title: string; sort?: string[] }
  y: { field: string; title: string }
  group: { field: string; title: string; sort?: string[] }
  title: string
  width?: number
  height?: number
}): Record<string, unknown> {
  const { rows, x, y, group } = options
  return {
    title: options.title,
    data: { values: rows },
    width: options.width ?? 480,
    height: options.height ?? 220,
    mark: { type: 'bar' },
    encoding: {
      x: {
        field: x.field,
        type: 'nominal',
        title: x.title,
        sort: x.sort ?? null,
        axis: { labelAngle: 0 },
      },
      xOffset: { field: group.field, type: 'nominal', sort: group.sort ?? null },
      y: { field: y.field, type: 'quantitative', title: y.title },
      color: { field: group.field, type: 'nominal', title: group.title, sort: group.sort ?? null },
    },
  }
}
