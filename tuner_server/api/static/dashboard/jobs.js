// Jobs: the list with live progress, and one job with its tuning curve. Admins may cancel open jobs.
import { api, session } from "./api.js";
import { curveSvg } from "./curve.js";
import { ago, h, rate, render, seconds, shortId, table, when } from "./dom.js";

const OPEN = new Set(["queued", "running"]);

function progressBar(job) {
  const p = job.progress;
  if (!p) return OPEN.has(job.state) ? "…" : "";
  const pct = Math.min(100, (100 * p.completed) / p.trial_budget);
  return h("div", { class: "progress", title: `${p.completed} of ${p.trial_budget} trials, ${p.failed} failed` },
           h("div", { class: "bar", "data-pct": pct.toFixed(0) }),
           h("span", {}, `${p.completed}/${p.trial_budget}${p.phase === "final" ? " · final" : ""}`));
}

// The CSP forbids inline styles in markup, so widths are set through the DOM.
function sizeBars(root) {
  for (const bar of root.querySelectorAll(".progress .bar")) bar.style.width = `${bar.dataset.pct}%`;
}

function cancelButton(ctx, job) {
  if (!session.admin || !OPEN.has(job.state)) return null;
  return h("button", { type: "button", class: "cancel danger", dataset: { jobId: job.id },
                       onclick: async () => {
                         if (!window.confirm(`Cancel job ${shortId(job.id)} (${job.workload})?`)) return;
                         await ctx.act(() => api(`/v1/jobs/${encodeURIComponent(job.id)}`, { method: "DELETE" }));
                       } }, "Cancel");
}

export async function jobsPage(ctx) {
  const list = await api("/v1/jobs?limit=50");
  // progress is on a job's own page: fetch it for the open ones (few at a time)
  const jobs = await Promise.all(list.items.map((j) => (OPEN.has(j.state)
    ? api(`/v1/jobs/${encodeURIComponent(j.id)}`) : j)));
  const rows = jobs.map((j) => h("tr", { dataset: { jobId: j.id, state: j.state } },
    h("td", {}, h("a", { href: `#/job/${encodeURIComponent(j.id)}` }, shortId(j.id))),
    h("td", {}, j.workload), h("td", {}, j.device_class ?? j.device_selector),
    h("td", { class: `state ${j.state}` }, j.state), h("td", {}, progressBar(j)),
    h("td", {}, rate(j.progress?.best?.gflops, "GFLOP/s")), h("td", { title: j.created_at }, ago(j.created_at)),
    h("td", {}, cancelButton(ctx, j))));
  render(ctx.view, h("h1", {}, "Jobs"),
    list.total ? table("jobs", ["Job", "Workload", "Device", "State", "Progress", "Best", "Created", ""], rows)
      : h("p", {}, "No job yet: submit one here (New job, as admin), with `tunefarm tune` or POST /v1/jobs."),
    list.total > list.items.length ? h("p", {}, `the newest ${list.items.length} of ${list.total}`) : null);
  sizeBars(ctx.view);
  ctx.poll = 2000;
}

// The class model the job's search started from: its own class's, or another class's of the kind (warm start).
function startModel(job) {
  const m = job.start_model;
  if (!m) return null;
  const whose = m.device_class === job.device_class ? "its class's" : `${m.device_class}'s (warm start)`;
  return h("span", { id: "start-model" }, `${whose} cost model v${m.version}, ${m.trained_on} trials`);
}

function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

function resultFacts(r) {
  if (!r) return null;
  const x = (p) => (p ? `${p.ratio.toFixed(2)}× (95% CI ${p.ci_low.toFixed(2)}–${p.ci_high.toFixed(2)})` : "–");
  return [h("h2", {}, "Result (re-measured head to head)"),
    facts([["head", `${seconds(r.head_median_s)} (trial ${shortId(r.head_trial_id)})`],
           [`vs ${r.reference ?? "reference"}`, x(r.speedup_vs_reference)], ["vs untuned default", x(r.speedup_vs_default)],
           ["comparisons", `${r.comparisons}${r.noisy ? " (noisy)" : ""}`]])];
}

export async function jobPage(ctx) {
  const id = ctx.args[0];
  const [job, curve] = await Promise.all([api(`/v1/jobs/${encodeURIComponent(id)}`),
                                          api(`/v1/jobs/${encodeURIComponent(id)}/curve`)]);
  const p = job.progress;
  const legend = h("p", { class: "legend" }, h("span", { class: "key ok" }, "● verified trial"),
    h("span", { class: "key failed" }, "✕ failed"), h("span", { class: "key best" }, "— best so far"),
    h("span", { class: "key default" }, "- - untuned default"),
    h("span", { class: "key reference" }, `··· ${curve.reference ?? "reference"}`));
  render(ctx.view, 
    h("h1", {}, `Job ${shortId(job.id)} `, h("span", { id: "job-state", class: `state ${job.state}` }, job.state),
      " ", cancelButton(ctx, job)),
    facts([["workload", job.workload], ["device", job.device_class ?? job.device_selector],
           ["strategy", job.strategy], ["started from", startModel(job)], ["phase", job.phase],
           ["progress", progressBar(job)],
           ["verified / failed", p ? `${p.verified} / ${p.failed}` : null],
           ["best so far", p?.best ? `${seconds(p.best.median_s)} · ${rate(p.best.gflops, "GFLOP/s")}` : "–"],
           ["created", when(job.created_at)], ["finished", job.finished_at ? when(job.finished_at) : null],
           ["error", job.error]]),
    h("h2", {}, "Tuning curve"), legend,
    h("div", { id: "curve", dataset: { points: curve.points.length, total: curve.total } }, curveSvg(curve)),
    curve.total > curve.points.length ? h("p", {}, `the first ${curve.points.length} of ${curve.total} trials`) : null,
    resultFacts(job.result));
  sizeBars(ctx.view);
  ctx.poll = OPEN.has(job.state) || p?.comparing ? 2000 : 0;
}
