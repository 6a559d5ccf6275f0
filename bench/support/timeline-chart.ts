/**
 * A plain SVG chart of rates over time with the run's phases marked (no dependencies): one
 * polyline per series over seconds, each phase a shaded band labelled at its top, optional
 * horizontal reference lines (a baseline, a bound).
 */

const COLORS = ['#4878d0', '#ee854a', '#6acc64', '#d65f5f', '#956cb4', '#8c613c'];
const BANDS = ['#f2f2f2', '#fbe9d7', '#e3f1e0', '#e6ecf8'];
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** A span of the x axis to shade and name. */
export interface Phase {
  name: string;
  from: number;
  to: number;
}

/**
 * Lines over time (x in seconds), phases as bands, `refs` as dashed horizontal lines.
 *
 * @example
 * timelineChartSvg('requests/s', [{ name: '/metrics', points: [[0, 9], [1, 11]] }],
 *   [{ name: 'idle', from: 0, to: 30 }], { x: 's', y: 'requests/s' }, [{ name: 'A0', y: 10 }]);
 */
export function timelineChartSvg(
  title: string,
  series: { name: string; points: readonly (readonly [number, number])[] }[],
  phases: readonly Phase[],
  axes: { x: string; y: string },
  refs: readonly { name: string; y: number }[] = [],
): string {
  const w = 900;
  const h = 420;
  const pad = { l: 70, r: 20, t: 56, b: 70 };
  const pts = series.flatMap((s) => s.points);
  const x0 = Math.min(...pts.map(([x]) => x), ...phases.map((p) => p.from), 0);
  const x1 = Math.max(...pts.map(([x]) => x), ...phases.map((p) => p.to), x0 + 1);
  const yMax = Math.max(...pts.map(([, y]) => y), ...refs.map((r) => r.y), 1e-9) * 1.1;
  const X = (x: number) => pad.l + ((w - pad.l - pad.r) * (x - x0)) / (x1 - x0);
  const Y = (v: number) => pad.t + (h - pad.t - pad.b) * (1 - v / yMax);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="12"><title>${esc(title)}</title>`,
    `<text x="${w / 2}" y="20" text-anchor="middle" font-size="14">${esc(title)}</text>`,
  ];
  phases.forEach((p, i) => {
    const a = X(Math.max(p.from, x0));
    const b = X(Math.min(p.to, x1));
    parts.push(
      `<rect x="${a.toFixed(1)}" y="${pad.t}" width="${Math.max(0, b - a).toFixed(1)}" height="${h - pad.t - pad.b}" fill="${BANDS[i % BANDS.length]}"/>`,
    );
    parts.push(
      `<text x="${((a + b) / 2).toFixed(1)}" y="${pad.t - 6}" text-anchor="middle">${esc(p.name)}</text>`,
    );
  });
  parts.push(
    `<line x1="${pad.l}" y1="${h - pad.b}" x2="${w - pad.r}" y2="${h - pad.b}" stroke="#333"/>`,
    `<text x="14" y="${pad.t - 24}">${esc(axes.y)}</text>`,
    `<text x="${w / 2}" y="${h - pad.b + 34}" text-anchor="middle">${esc(axes.x)}</text>`,
  );
  for (let t = 0; t <= 4; t++) {
    const v = (yMax / 4) * t;
    parts.push(
      `<text x="${pad.l - 6}" y="${Y(v) + 4}" text-anchor="end">${v.toFixed(v < 10 ? 1 : 0)}</text>`,
    );
    parts.push(`<line x1="${pad.l}" y1="${Y(v)}" x2="${w - pad.r}" y2="${Y(v)}" stroke="#ddd"/>`);
  }
  const step = Math.max(1, 10 ** Math.floor(Math.log10((x1 - x0) / 5)));
  const tick = (x1 - x0) / step > 10 ? step * 2 : step;
  for (let x = Math.ceil(x0 / tick) * tick; x <= x1; x += tick) {
    parts.push(`<text x="${X(x).toFixed(1)}" y="${h - pad.b + 16}" text-anchor="middle">${x}</text>`);
  }
  for (const r of refs) {
    parts.push(
      `<line x1="${pad.l}" y1="${Y(r.y).toFixed(1)}" x2="${w - pad.r}" y2="${Y(r.y).toFixed(1)}" stroke="#555" stroke-dasharray="4 3"/>`,
      `<text x="${w - pad.r - 4}" y="${(Y(r.y) - 4).toFixed(1)}" text-anchor="end" fill="#555">${esc(r.name)}</text>`,
    );
  }
  series.forEach((s, j) => {
    const color = COLORS[j % COLORS.length];
    const sorted = [...s.points].sort((a, b) => a[0] - b[0]);
    parts.push(
      `<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${sorted.map(([x, y]) => `${X(x).toFixed(1)},${Y(y).toFixed(1)}`).join(' ')}"/>`,
    );
    const lx = pad.l + j * 260;
    parts.push(`<rect x="${lx}" y="${h - 22}" width="12" height="12" fill="${color}"/>`);
    parts.push(`<text x="${lx + 16}" y="${h - 12}">${esc(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}
