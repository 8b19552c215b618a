// The farm: every agent with its device class, state, the task it holds and its last heartbeat; the classes.
import { api } from "./api.js";
import { ago, h, render, shortId, table } from "./dom.js";

// Leases grouped by job and kind: an agent leases a batch of tasks at a time.
function leaseCell(leases) {
  if (!leases.length) return "idle";
  const groups = new Map();
  for (const l of leases) {
    const key = `${l.job_id} ${l.kind}`;
    if (!groups.has(key)) groups.set(key, { ...l, count: 0 });
    groups.get(key).count += 1;
  }
  return [...groups.values()].map((g) => h("div", {},
    `${g.count} ${g.kind.toLowerCase()} task${g.count > 1 ? "s" : ""} of job `,
    h("a", { href: `#/job/${encodeURIComponent(g.job_id)}` }, shortId(g.job_id)), ` (${g.workload})`));
}

export async function farmPage(ctx) {
  const [agents, devices] = await Promise.all([api("/v1/agents?limit=1000"), api("/v1/devices?limit=1000")]);
  const agentRows = agents.items.map((a) => h("tr", { dataset: { agentName: a.name, status: a.status } },
    h("td", {}, a.name), h("td", {}, a.device_class), h("td", { class: `state ${a.status}` }, a.status),
    h("td", { class: "task" }, leaseCell(a.leases)),
    h("td", { title: a.last_heartbeat }, ago(a.last_heartbeat))));
  const deviceRows = devices.items.map((d) => h("tr", { dataset: { deviceClass: d.device_class } },
    h("td", {}, d.device_class), h("td", {}, d.kind), h("td", { class: `state ${d.status}` }, d.status),
    h("td", {}, d.active_agents), h("td", {}, d.fingerprint.model ?? d.fingerprint.name ?? "")));
  render(ctx.view, 
    h("h1", {}, "Farm"),
    h("h2", {}, `Agents (${agents.total})`),
    agents.total ? table("agents", ["Agent", "Device class", "State", "Current task", "Last heartbeat"], agentRows)
      : h("p", {}, "No agent has registered yet."),
    h("h2", {}, `Device classes (${devices.total})`),
    table("devices", ["Device class", "Kind", "State", "Active agents", "Model"], deviceRows));
  ctx.poll = 2000;
}
