// A history chart with uPlot (served by this server from node_modules/uplot).
import uPlot from "./uPlot.js";

/** History points `{t: "YYYY-MM-DDTHH:MM:SS.mmm+0000", v}` as uPlot columns (seconds, numbers). */
export function columns(points) {
  const xs = [];
  const ys = [];
  for (const p of points) {
    const v = typeof p.v === "number" ? p.v : Number(p.v);
    if (!Number.isFinite(v)) continue;
    xs.push(Date.parse(p.t.replace(/([+-]\d\d)(\d\d)$/, "$1:$2")) / 1000);
    ys.push(v);
  }
  return [xs, ys];
}

function colour(name, fallback) {
  const v = getComputedStyle(document.body).getPropertyValue(name).trim();
  return v || fallback;
}

/** Draws (or redraws) the chart in `host`; returns the uPlot instance. */
export function drawChart(host, data, label) {
  host.replaceChildren();
  const width = Math.max(240, host.clientWidth || 320);
  const ink = colour("--ink", "#1d232a");
  const grid = colour("--line", "#d9dee3");
  const axis = { stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } };
  return new uPlot(
    {
      width,
      height: 260,
      title: undefined,
      scales: { x: { time: true } },
      axes: [axis, { ...axis, size: 56 }],
      series: [{}, { label, stroke: colour("--accent", "#2f7ad1"), width: 2, points: { show: data[0].length < 60 } }],
      legend: { show: true },
    },
    data,
    host,
  );
}
