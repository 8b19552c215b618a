// Best schedules: every key with its head, and one key's version history with a diff between two versions;
// admins may pin a version, unpin, or roll back to an earlier one (each appends a version).
import { api, intParam, keyQuery, session } from "./api.js";
import { ago, config, h, rate, render, seconds, shortId, table, when } from "./dom.js";

let opsCatalogue = null; // param kinds per op: a key's params come back typed (ints stay ints) in pin/rollback

async function typedParams(op, raw) {
  opsCatalogue ??= api("/v1/ops?limit=1000");
  const spec = (await opsCatalogue).items.find((o) => o.name === op);
  const kinds = Object.fromEntries((spec?.params ?? []).map((p) => [p.name, p.kind]));
  return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, kinds[k] === "int" ? intParam(v) : v]));
}

export async function schedulesPage(ctx) {
  const keys = await api("/v1/best/keys?limit=1000");
  const rows = keys.items.map((k) => h("tr", { dataset: { workload: k.workload, deviceClass: k.device_class } },
    h("td", {}, h("a", { href: `#/history?${keyQuery(k.op, k.params, k.device_class)}` }, k.workload)),
    h("td", {}, k.device_class), h("td", {}, `v${k.head_version}`), h("td", {}, k.pinned ? "pinned" : ""),
    h("td", { title: k.updated_at }, ago(k.updated_at))));
  render(ctx.view, h("h1", {}, "Best schedules"),
    keys.total ? table("keys", ["Workload", "Device class", "Head", "", "Changed"], rows)
      : h("p", {}, "No schedule yet: the first verified trial of a job makes one."));
}

function adminButtons(ctx, key, v, newest) {
  if (!session.admin) return null;
  const act = (path, extra, what) => ctx.act(() => api(path, { method: "POST", body: { ...key, ...extra,
    message: `${what} from the dashboard` } }));
  return [
    v.version !== newest.version || !newest.pinned
      ? h("button", { type: "button", class: "pin", dataset: { version: v.version },
                      onclick: () => act("/v1/best/pin", { version: v.version }, `pin v${v.version}`) }, "Pin") : null,
    // a pinned key refuses rollbacks (409): unpin first
    v.version !== newest.version && !newest.pinned
      ? h("button", { type: "button", class: "rollback", dataset: { version: v.version },
                      onclick: () => act("/v1/best/rollback", { to_version: v.version }, `roll back to v${v.version}`) },
          "Roll back here") : null];
}

async function showDiff(ctx, qs, v1, v2, into) {
  const d = await api(`/v1/best/diff?${qs}&v1=${v1}&v2=${v2}`);
  const rows = Object.entries(d.changed).map(([knob, [a, b]]) => h("tr", {}, h("td", {}, knob),
    h("td", {}, String(a)), h("td", {}, String(b))));
  const ratio = d.median_ratio === null ? "–" : `${d.median_ratio.toFixed(3)}× the time`;
  render(into, h("p", {}, `v${v2} against v${v1}: ${ratio}`),
    rows.length ? table("diff-knobs", ["Knob", `v${v1}`, `v${v2}`], rows) : h("p", {}, "same config"));
}

export async function historyPage(ctx) {
  const q = ctx.query;
  const op = q.get("op"), device = q.get("device");
  const raw = Object.fromEntries([...q.entries()].filter(([k]) => k !== "op" && k !== "device"));
  const qs = keyQuery(op, raw, device);
  const page = await api(`/v1/best/history?${qs}&limit=1000`);
  const versions = page.items; // newest first
  if (!versions.length) {
    render(ctx.view, h("h1", {}, "History"), h("p", {}, "No version of this key."));
    return;
  }
  const newest = versions[0];
  const key = { op, params: await typedParams(op, raw), device };
  const rows = versions.map((v) => h("tr", { dataset: { version: v.version, reason: v.reason } },
    h("td", {}, `v${v.version}`), h("td", {}, v.reason + (v.pinned ? " · pinned" : "")),
    h("td", {}, seconds(v.median_s)), h("td", {}, rate(v.gflops, "GFLOP/s")), h("td", { class: "cfg" }, config(v.config)),
    h("td", {}, v.author ?? (v.job_id ? `job ${shortId(v.job_id)}` : "")), h("td", {}, v.message ?? ""),
    h("td", { title: v.created_at }, when(v.created_at)), h("td", {}, adminButtons(ctx, key, v, newest))));
  const pick = (id, selected) => h("select", { id }, versions.map((v) => h("option",
    { value: v.version, selected: v.version === selected }, `v${v.version}`)));
  const from = pick("diff-from", versions[Math.min(1, versions.length - 1)].version);
  const to = pick("diff-to", newest.version);
  const diffOut = h("div", { id: "diff" });
  const redo = () => showDiff(ctx, qs, from.value, to.value, diffOut).catch((e) => ctx.fail(e));
  from.addEventListener("change", redo);
  to.addEventListener("change", redo);
  const unpin = session.admin && newest.pinned
    ? h("button", { type: "button", id: "unpin", onclick: () => ctx.act(() => api("/v1/best/pin",
      { method: "POST", body: { ...key, version: null, message: "unpinned from the dashboard" } })) }, "Unpin") : null;
  render(ctx.view, 
    h("h1", {}, newest.workload), h("p", {}, `on ${device} · head v${newest.version}`,
      newest.pinned ? " · pinned (jobs do not move it)" : "", " ", unpin),
    table("versions", ["Version", "Reason", "Median", "Throughput", "Config", "By", "Message", "Made", ""], rows),
    h("h2", {}, "Diff"), h("p", {}, "from ", from, " to ", to), diffOut);
  await showDiff(ctx, qs, from.value, to.value, diffOut);
}
