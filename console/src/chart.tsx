import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

/** One bucket of the analytics series. */
export interface SeriesPoint {
  start: string;
  sent: number;
  failed: number;
  /** Not sent by Herald's choice (a render skip, a cap, a control group): neither sent nor failed. */
  skipped: number;
}

const H = 220;
const PAD = { left: 44, right: 12, top: 12, bottom: 36 };

/**
 * The element's width in CSS pixels, followed as it changes. The chart draws in that many units, so
 * its text keeps its CSS size on a phone instead of shrinking with a fixed-width drawing.
 */
function useWidth(fallback: number) {
  const ref = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(fallback);
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    const measure = () => setWidth(Math.max(240, Math.round(element.clientWidth)));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return [width, ref] as const;
}

/** Round axis maximum: 1, 2 or 5 times a power of ten, at least `max`. */
export function niceMax(max: number): number {
  if (max <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

/**
 * Sends over time as stacked bars (sent, failed, skipped), drawn as plain SVG: scales with its container,
 * with a title, a description and a data table alternative for screen readers.
 */
export function SendsChart(props: { series: SeriesPoint[]; bucket: string }) {
  const { series } = props;
  const [W, ref] = useWidth(640);
  const top = niceMax(Math.max(0, ...series.map((p) => p.sent + p.failed + p.skipped)));
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const slot = innerW / Math.max(1, series.length);
  const barW = Math.max(2, Math.min(40, slot * 0.7));
  const y = (v: number) => PAD.top + innerH - (v / top) * innerH;
  const label = (iso: string) => {
    const d = new Date(iso);
    return props.bucket === 'day'
      ? d.toLocaleDateString()
      : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  };
  // A label every ~80 px, so they never overlap however narrow the chart.
  const every = Math.max(1, Math.ceil(series.length / Math.max(1, Math.floor((W - PAD.left) / 80))));
  const total = series.reduce((n, p) => n + p.sent, 0);
  const failed = series.reduce((n, p) => n + p.failed, 0);
  const skipped = series.reduce((n, p) => n + p.skipped, 0);
  return (
    <figure class="chart">
      <div ref={ref}>
        <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby="chart-title chart-desc" data-testid="sends-chart">
          <title id="chart-title">Sends per {props.bucket}</title>
          <desc id="chart-desc">
            {series.length} buckets, {total} sent, {failed} failed and {skipped} skipped in all.
          </desc>
          {[0, 0.5, 1].map((f) => (
            <g key={f}>
              <line x1={PAD.left} x2={W - PAD.right} y1={y(top * f)} y2={y(top * f)} class="grid" />
              <text x={PAD.left - 6} y={y(top * f) + 4} text-anchor="end" class="axis">
                {Number.isInteger(top * f) ? top * f : (top * f).toFixed(1)}
              </text>
            </g>
          ))}
          {series.map((p, i) => {
            const x = PAD.left + i * slot + (slot - barW) / 2;
            return (
              <g key={p.start}>
                <rect x={x} y={y(p.sent)} width={barW} height={y(0) - y(p.sent)} class="bar-sent">
                  <title>
                    {label(p.start)}: {p.sent} sent, {p.failed} failed, {p.skipped} skipped
                  </title>
                </rect>
                <rect
                  x={x}
                  y={y(p.sent + p.failed)}
                  width={barW}
                  height={y(p.sent) - y(p.sent + p.failed)}
                  class="bar-failed"
                />
                <rect
                  x={x}
                  y={y(p.sent + p.failed + p.skipped)}
                  width={barW}
                  height={y(p.sent + p.failed) - y(p.sent + p.failed + p.skipped)}
                  class="bar-skipped"
                />
                {i % every === 0 && (
                  <text x={x + barW / 2} y={H - PAD.bottom + 16} text-anchor="middle" class="axis">
                    {label(p.start)}
                  </text>
                )}
              </g>
            );
          })}
        </svg>
      </div>
      <figcaption>
        <span class="key sent" aria-hidden="true" /> sent <span class="key failed" aria-hidden="true" /> failed{' '}
        <span class="key skipped" aria-hidden="true" /> skipped
      </figcaption>
    </figure>
  );
}

/** Failures by reason as horizontal bars (also a readable list). */
export function ReasonBars(props: { byReason: Record<string, number>; label?: (reason: string) => ComponentChildren }) {
  const entries = Object.entries(props.byReason).sort((a, b) => b[1] - a[1]);
  if (entries.length === 0) return <p>No failures.</p>;
  const max = entries[0]![1];
  return (
    <ul class="reasons" aria-label="Failures by reason">
      {entries.map(([reason, n]) => (
        <li key={reason}>
          <span class="reason-name">{props.label ? props.label(reason) : reason}</span>
          <span class="reason-bar" style={{ width: `${Math.max(2, (n / max) * 100)}%` }} aria-hidden="true" />
          <span class="reason-count">{n}</span>
        </li>
      ))}
    </ul>
  );
}
