/**
 * Plain SVG charts for the bench results (no dependencies): grouped bars, and lines over a numeric
 * x axis (latency by depth, load rate over time, rows/s by workers).
 */

const COLORS = ['#4878d0', '#ee854a', '#6acc64', '#d65f5f', '#956cb4', '#8c613c'];
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** A plain SVG bar chart (no dependencies): one group per label, one bar per series. */
export function barChartSvg(
  title: string,
  labels: string[],
  series: { name: string; values: number[] }[],
  unit: string,
) {
  const w = 720;
  const h = 360;
  const pad = { l: 60, r: 20, t: 40, b: 60 };
  const max = Math.max(...series.flatMap((s) => s.values), 1e-9) * 1.1;
  const gw = (w - pad.l - pad.r) / labels.length;
  const bw = (gw * 0.8) / series.length;
  const colors = COLORS;
  const y = (v: number) => pad.t + (h - pad.t - pad.b) * (1 - v / max);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="12"><title>${esc(title)}</title>`,
    `<text x="${w / 2}" y="20" text-anchor="middle" font-size="14">${esc(title)}</text>`,
    `<line x1="${pad.l}" y1="${h - pad.b}" x2="${w - pad.r}" y2="${h - pad.b}" stroke="#333"/>`,
    `<text x="14" y="${pad.t - 10}">${unit}</text>`,
  ];
  for (let t = 0; t <= 4; t++) {
    const v = (max / 4) * t;
    parts.push(`<text x="${pad.l - 6}" y="${y(v) + 4}" text-anchor="end">${v.toFixed(2)}</text>`);
    parts.push(`<line x1="${pad.l}" y1="${y(v)}" x2="${w - pad.r}" y2="${y(v)}" stroke="#ddd"/>`);
  }
  labels.forEach((label, i) => {
    const gx = pad.l + i * gw + gw * 0.1;
    series.forEach((s, j) => {
      const v = s.values[i] ?? 0;
      parts.push(
        `<rect x="${gx + j * bw}" y="${y(v)}" width="${bw - 2}" height="${h - pad.b - y(v)}" fill="${colors[j % colors.length]}"/>`,
      );
    });
    parts.push(`<text x="${gx + gw * 0.4}" y="${h - pad.b + 18}" text-anchor="middle">${esc(label)}</text>`);
  });
  series.forEach((s, j) => {
    const lx = pad.l + j * 150;
    parts.push(`<rect x="${lx}" y="${h - 22}" width="12" height="12" fill="${colors[j % colors.length]}"/>`);
    parts.push(`<text x="${lx + 16}" y="${h - 12}">${esc(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

/**
 * Lines over a numeric x axis: one polyline per series, dots at the points, a legend. `logX`
 * spaces x by its logarithm (depths 1, 100, 10,000 or workers 1, 4, 16, 64 read evenly).
 */
export function lineChartSvg(
  title: string,
  series: { name: string; points: readonly (readonly [number, number])[] }[],
  axes: { x: string; y: string; logX?: boolean },
) {
  const w = 760;
  const h = 380;
  const pad = { l: 70, r: 20, t: 40, b: 80 };
  const pts = series.flatMap((s) => s.points);
  const fx = (x: number) => (axes.logX ? Math.log10(Math.max(x, 1e-9)) : x);
  const xs = pts.map(([x]) => fx(x));
  const x0 = Math.min(...xs, 0);
  const x1 = Math.max(...xs, x0 + 1e-9);
  const yMax = Math.max(...pts.map(([, y]) => y), 1e-9) * 1.1;
  const X = (x: number) => pad.l + ((w - pad.l - pad.r) * (fx(x) - x0)) / (x1 - x0 || 1);
  const Y = (v: number) => pad.t + (h - pad.t - pad.b) * (1 - v / yMax);
  const fmt = (v: number) =>
    Math.abs(v) >= 1e6
      ? `${(v / 1e6).toFixed(1)}M`
      : Math.abs(v) >= 1e4
        ? `${(v / 1e3).toFixed(0)}k`
        : v.toFixed(2);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="12">`,
    `<text x="${w / 2}" y="20" text-anchor="middle" font-size="14">${esc(title)}</text>`,
    `<line x1="${pad.l}" y1="${h - pad.b}" x2="${w - pad.r}" y2="${h - pad.b}" stroke="#333"/>`,
    `<text x="14" y="${pad.t - 10}">${esc(axes.y)}</text>`,
    `<text x="${w / 2}" y="${h - pad.b + 36}" text-anchor="middle">${esc(axes.x)}${axes.logX ? ' (log scale)' : ''}</text>`,
  ];
  for (let t = 0; t <= 4; t++) {
    const v = (yMax / 4) * t;
    parts.push(`<text x="${pad.l - 6}" y="${Y(v) + 4}" text-anchor="end">${fmt(v)}</text>`);
    parts.push(`<line x1="${pad.l}" y1="${Y(v)}" x2="${w - pad.r}" y2="${Y(v)}" stroke="#ddd"/>`);
  }
  const ticks = [...new Set(pts.map(([x]) => x))].sort((a, b) => a - b);
  const shown =
    ticks.length <= 12
      ? ticks
      : Array.from({ length: 6 }, (_, k) => ticks[Math.round((k * (ticks.length - 1)) / 5)]!);
  for (const x of shown) {
    parts.push(`<text x="${X(x)}" y="${h - pad.b + 16}" text-anchor="middle">${fmt(x)}</text>`);
  }
  series.forEach((s, j) => {
    const color = COLORS[j % COLORS.length];
    const sorted = [...s.points].sort((a, b) => a[0] - b[0]);
    parts.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2" points="${sorted.map(([x, y]) => `${X(x).toFixed(1)},${Y(y).toFixed(1)}`).join(' ')}"/>`,
    );
    if (sorted.length <= 40) {
      for (const [x, y] of sorted)
        parts.push(`<circle cx="${X(x).toFixed(1)}" cy="${Y(y).toFixed(1)}" r="3" fill="${color}"/>`);
    }
    const lx = pad.l + (j % 4) * 170;
    const ly = h - 26 + Math.floor(j / 4) * 16;
    parts.push(`<rect x="${lx}" y="${ly - 10}" width="12" height="12" fill="${color}"/>`);
    parts.push(`<text x="${lx + 16}" y="${ly}">${esc(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}
