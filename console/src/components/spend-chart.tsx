/**
 * Spend over time, one stacked bar series per model, drawn by uPlot on a canvas (no inline
 * styles or scripts, so it runs under the console's strict CSP; uPlot sets element.style from
 * JS, which CSP allows). Colours come from the theme's CSS variables.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { credits } from '../format';
import type { SpendBucket } from '../types';

const PALETTE_VARS = ['--chart-1', '--chart-2', '--chart-3', '--chart-4', '--chart-5', '--chart-6'];

function color(index: number): string {
  const style = getComputedStyle(document.documentElement);
  return style.getPropertyValue(PALETTE_VARS[index % PALETTE_VARS.length] ?? '--chart-1').trim() || '#4a7bd0';
}

/** Rows of (bucket start, spent per model), each model's values stacked on the previous ones. */
export function stackedSeries(buckets: SpendBucket[]): { models: string[]; data: uPlot.AlignedData } {
  const starts = [...new Set(buckets.map((b) => b.start))].sort((a, b) => a - b);
  const models = [...new Set(buckets.map((b) => b.model))].sort();
  const index = new Map(starts.map((s, i) => [s, i]));
  const rows = models.map(() => starts.map(() => 0));
  for (const b of buckets) {
    const row = rows[models.indexOf(b.model)];
    const i = index.get(b.start);
    if (row && i !== undefined) row[i] = (row[i] ?? 0) + b.spent;
  }
  for (let m = 1; m < rows.length; m += 1) {
    const row = rows[m];
    const below = rows[m - 1];
    if (row && below) for (let i = 0; i < row.length; i += 1) row[i] = (row[i] ?? 0) + (below[i] ?? 0);
  }
  return { models, data: [starts, ...rows] };
}

export function SpendChart({ buckets, granularity, since, until }: { buckets: SpendBucket[]; granularity: 'day' | 'hour'; since: number; until: number }) {
  const holder = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const el = holder.current;
    if (!el || buckets.length === 0) return;
    const { models, data } = stackedSeries(buckets);
    const bars = uPlot.paths.bars?.({ size: [0.8, 40], align: 0 });
    const axisColor = getComputedStyle(document.documentElement).getPropertyValue('--muted').trim() || '#888';
    const opts: uPlot.Options = {
      width: Math.max(280, el.clientWidth),
      height: 240,
      // Bars drawn last-to-first so the stacked totals sit behind the lower series.
      series: [
        {
          value: (_u, v) =>
            v === null
              ? ''
              : new Date(v * 1000)
                  .toISOString()
                  .slice(0, granularity === 'day' ? 10 : 13)
                  .replace('T', ' '),
        },
        ...models.map((model, i) => ({
          label: model,
          stroke: color(i),
          fill: color(i),
          paths: bars,
          points: { show: false },
          value: (_u: uPlot, v: number | null) => (v === null ? '' : credits(v)),
        })),
      ],
      axes: [
        { stroke: axisColor, grid: { stroke: 'transparent' } },
        { stroke: axisColor, size: 70, values: (_u, ticks) => ticks.map((t) => (t >= 1e6 ? `${t / 1e6}M` : t >= 1e3 ? `${t / 1e3}k` : String(t))) },
      ],
      // The whole period, not just the buckets with spending (one bucket alone would span years).
      scales: { x: { time: true, range: () => [since, until] }, y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] } },
      cursor: { points: { show: false } },
      legend: { live: true },
    };
    // uPlot draws series in order; reverse so the topmost (largest stacked) bar is drawn first.
    const order = [0, ...models.map((_m, i) => models.length - i)];
    const reordered: uPlot.Options = { ...opts, series: order.map((i) => opts.series[i]).filter((s): s is uPlot.Series => s !== undefined) };
    const plot = new uPlot(reordered, order.map((i) => data[i] ?? []) as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(280, el.clientWidth), height: 240 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [buckets, granularity, since, until]);

  if (buckets.length === 0) return <p class="muted">No spending in this period.</p>;
  return <div class="chart" ref={holder} role="img" aria-label={`Spend per ${granularity}, stacked by model`} />;
}

/** Spend per model over the period, as bars the width of their share (set from JS, not a style attribute). */
export function ModelBars({ buckets }: { buckets: SpendBucket[] }) {
  const totals = new Map<string, number>();
  for (const b of buckets) totals.set(b.model, (totals.get(b.model) ?? 0) + b.spent);
  // Colours by the model's place in the sorted names, as in the time chart; rows by spend.
  const names = [...totals.keys()].sort();
  const rows = [...totals].sort((a, b) => b[1] - a[1]);
  const max = Math.max(1, ...rows.map(([, v]) => v));
  if (rows.length === 0) return null;
  return (
    <ul class="model-bars" aria-label="Spend by model">
      {rows.map(([model, spent]) => (
        <li key={model}>
          <span class="model-bars-name">{model}</span>
          <span class="model-bars-track">
            <span
              class={`model-bars-fill fill-${names.indexOf(model) % PALETTE_VARS.length}`}
              ref={(el) => {
                if (el) el.style.width = `${(Math.max(0, spent) / max) * 100}%`;
              }}
            />
          </span>
          <span class="model-bars-value">{credits(spent)}</span>
        </li>
      ))}
    </ul>
  );
}
