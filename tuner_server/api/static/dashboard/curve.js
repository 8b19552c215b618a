// A job's tuning curve as SVG: x is the trial's place in measuring order, y its median time on a log scale.
// Verified trials are dots, failed ones crosses in a band above the plot; the best-so-far is a step line; the
// untuned default and the reference library are horizontal lines.
import { seconds } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";
const W = 760, H = 340, M = { left: 70, right: 130, top: 36, bottom: 40 }, FAIL_BAND = 16;

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

// 1-2-5 steps between lo and hi (log scale); every integer step when the range is too narrow for two of those.
function logTicks(lo, hi) {
  for (const steps of [[1, 2, 5], [1, 2, 3, 4, 5, 6, 7, 8, 9]]) {
    const ticks = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      for (const m of steps) {
        const v = m * 10 ** e;
        if (v >= lo && v <= hi) ticks.push(v);
      }
    }
    if (ticks.length >= 2) return ticks;
  }
  return [Math.sqrt(lo * hi)];
}

function bestSoFar(points) {
  let best = Infinity;
  const steps = [];
  points.forEach((p, i) => {
    if (p.status === "OK" && p.median_s && p.median_s < best) {
      best = p.median_s;
      steps.push([i + 1, best]);
    }
  });
  return steps;
}

function pointTitle(p, i) {
  const what = p.status === "OK" ? seconds(p.median_s) : p.status;
  const cfg = Object.entries(p.config).map(([k, v]) => `${k}=${v}`).join(" ");
  return `#${i + 1} ${what} at ${new Date(p.created_at).toLocaleTimeString()}\n${cfg}`;
}

export function curveSvg(curve) {
  const pts = curve.points;
  const timed = pts.filter((p) => p.status === "OK" && p.median_s > 0).map((p) => p.median_s);
  const lines = [[curve.default?.median_s, "default", "default"],
                 [curve.reference_median_s, curve.reference ?? "reference", "reference"]].filter(([v]) => v > 0);
  const values = timed.concat(lines.map(([v]) => v));
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", class: "curve",
                         "aria-label": `tuning curve: ${pts.length} trials` });
  if (!values.length) {
    svg.append(s("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "empty" },
                 pts.length ? "no verified trial yet" : "no trial measured yet"));
    return svg;
  }
  const lo = Math.min(...values) / 1.25, hi = Math.max(...values) * 1.25;
  const n = Math.max(pts.length, 2); // the trials so far: the budget is on the progress bar
  const x = (i) => M.left + ((i - 1) / (n - 1)) * (W - M.left - M.right);
  const top = M.top + FAIL_BAND;
  const y = (v) => top + (1 - (Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo))) * (H - top - M.bottom);

  for (const t of logTicks(lo, hi)) {
    svg.append(s("line", { x1: M.left, x2: W - M.right, y1: y(t), y2: y(t), class: "grid" }),
               s("text", { x: M.left - 6, y: y(t) + 4, "text-anchor": "end", class: "tick" }, seconds(t)));
  }
  for (const i of [1, Math.ceil(n / 2), n]) {
    svg.append(s("text", { x: x(i), y: H - M.bottom + 16, "text-anchor": "middle", class: "tick" }, i));
  }
  svg.append(s("text", { x: (M.left + W - M.right) / 2, y: H - 6, "text-anchor": "middle", class: "label" },
               "trial (measuring order)"),
             s("text", { x: M.left, y: M.top - 22, class: "label" }, "median time (log scale), lower is better"),
             s("text", { x: M.left - 6, y: M.top + 11, "text-anchor": "end", class: "tick fail" }, "failed"));

  for (const [v, name, cls] of lines) {
    svg.append(s("line", { x1: M.left, x2: W - M.right, y1: y(v), y2: y(v), class: `ref ${cls}` }),
               s("text", { x: W - M.right + 6, y: y(v) + 4, class: `ref-label ${cls}` }, `${name} ${seconds(v)}`));
  }
  const steps = bestSoFar(pts);
  if (steps.length) {
    let d = `M${x(steps[0][0])},${y(steps[0][1])}`;
    for (const [i, v] of steps.slice(1)) d += ` H${x(i)} V${y(v)}`;
    d += ` H${x(pts.length)}`;
    const last = steps[steps.length - 1][1];
    svg.append(s("path", { d, class: "best" }),
               s("text", { x: W - M.right + 6, y: y(last) + 4, class: "ref-label best" }, `best ${seconds(last)}`));
  }
  pts.forEach((p, i) => {
    const cx = x(i + 1);
    const isDefault = curve.default && p.trial_id === curve.default.trial_id;
    if (p.status === "OK" && p.median_s > 0) {
      svg.append(s("circle", { cx, cy: y(p.median_s), r: isDefault ? 5 : 3.5, class: `trial ok${isDefault ? " default" : ""}`,
                               "data-trial": p.trial_id }, s("title", {}, pointTitle(p, i))));
    } else {
      const cy = M.top + FAIL_BAND / 2;
      svg.append(s("path", { d: `M${cx - 3},${cy - 3} l6,6 m0,-6 l-6,6`, class: "trial failed",
                             "data-trial": p.trial_id, "data-status": p.status }, s("title", {}, pointTitle(p, i))));
    }
  });
  return svg;
}
