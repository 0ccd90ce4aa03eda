import { html, raw, type Html } from '../web/html.js';
import { milliseconds, percent } from '../web/format.js';

export interface SubscriptionStats {
  window_start: string;
  window_end: string;
  attempts: number;
  succeeded: number;
  failed: number;
  success_rate: number | null;
  latency_ms: { p50: number | null; p99: number | null };
  deliveries: { pending: number; failing: number; dead: number };
}

const WIDTH = 480;
const BAR = 300;
const LEFT = 110;

/**
 * The last 24 hours of a subscription as a small inline SVG (no script, no chart library): a bar
 * split into succeeded and failed attempts, and the p50 and p99 latencies on one scale. The
 * numbers are in the accessible name and in the table beside it, so the chart is never the only
 * way to read them.
 */
export function statsChart(stats: SubscriptionStats): Html {
  const label =
    stats.attempts === 0
      ? 'No delivery attempts in the last 24 hours.'
      : `Last 24 hours: ${stats.attempts} attempts, ${stats.succeeded} succeeded, ${stats.failed} failed (success rate ${percent(stats.success_rate)}); latency p50 ${milliseconds(stats.latency_ms.p50)}, p99 ${milliseconds(stats.latency_ms.p99)}.`;
  const okWidth = stats.attempts === 0 ? 0 : Math.round((stats.succeeded / stats.attempts) * BAR);
  const p50 = stats.latency_ms.p50 ?? 0;
  const p99 = stats.latency_ms.p99 ?? 0;
  const scale = Math.max(p99, p50, 1);
  const latencyBar = (value: number) => Math.max(value > 0 ? 2 : 0, Math.round((value / scale) * BAR));
  const text = (x: number, y: number, content: string, anchor = 'start') =>
    `<text x="${x}" y="${y}" text-anchor="${anchor}">${content.replace(/[<&>]/g, '')}</text>`;
  const svg = [
    `<svg class="chart" viewBox="0 0 ${WIDTH} 112" role="img" aria-labelledby="stats-chart-title"><title id="stats-chart-title">${label.replace(/[<&>]/g, '')}</title>`,
    text(0, 20, 'Attempts'),
    `<rect x="${LEFT}" y="8" width="${BAR}" height="16" fill="#e8eaed"/>`,
    stats.attempts > 0
      ? `<rect x="${LEFT}" y="8" width="${okWidth}" height="16" fill="#1a7f37"/><rect x="${LEFT + okWidth}" y="8" width="${BAR - okWidth}" height="16" fill="#cf222e"/>`
      : '',
    text(LEFT + BAR + 8, 20, stats.attempts === 0 ? 'none' : percent(stats.success_rate)),
    text(0, 58, 'Latency p50'),
    `<rect x="${LEFT}" y="46" width="${latencyBar(p50)}" height="16" fill="#0a4fc4"/>`,
    text(LEFT + latencyBar(p50) + 8, 58, milliseconds(stats.latency_ms.p50)),
    text(0, 94, 'Latency p99'),
    `<rect x="${LEFT}" y="82" width="${latencyBar(p99)}" height="16" fill="#6639ba"/>`,
    text(LEFT + latencyBar(p99) + 8, 94, milliseconds(stats.latency_ms.p99)),
    '</svg>',
  ].join('');
  return html`<figure class="stats">${raw(svg)}<figcaption class="hint">Green: succeeded, red: failed. Window ${stats.window_start.slice(11, 16)}–${stats.window_end.slice(11, 16)} UTC.</figcaption></figure>`;
}
