// The ops a job may tune, their params, and each target's knobs (shown for one example workload: choices
// depend on the sizes).
import { api } from "./api.js";
import { h, render, table } from "./dom.js";

function paramRange(p) {
  if (p.choices) return p.choices.join(", ");
  if (p.min !== undefined) return `${p.min} – ${p.max}`;
  return p.kind;
}

function spaceSection(kind, space) {
  if (space.error) return h("div", {}, h("h4", {}, `${kind} (${space.target})`), h("p", { class: "error" }, space.error));
  const knobs = space.knobs.map((k) => h("tr", {}, h("td", {}, k.name), h("td", {}, k.choices.join(", ")),
                                         h("td", {}, k.doc ?? "")));
  return h("div", { class: "space", dataset: { target: kind } }, h("h4", {}, `${kind} (${space.target})`),
    table(null, ["Knob", "Choices", "What it does"], knobs),
    space.constraints?.length ? h("ul", {}, space.constraints.map((c) => h("li", {}, c))) : null);
}

export async function opsPage(ctx) {
  const ops = await api("/v1/ops?limit=1000");
  const sections = ops.items.map((op) => h("section", { class: "op", dataset: { op: op.name } },
    h("h2", {}, op.name), h("p", {}, op.doc),
    table(null, ["Param", "Kind", "Allowed", "Default"], op.params.map((p) => h("tr", {}, h("td", {}, p.name),
      h("td", {}, p.kind), h("td", {}, paramRange(p)), h("td", {}, p.default ?? "")))),
    h("h3", {}, "Spaces, for ", h("code", {}, op.example_workload)),
    Object.entries(op.spaces).map(([kind, space]) => spaceSection(kind, space))));
  const strategies = Object.entries(ops.strategies).map(([name, st]) => h("li", {}, h("b", {}, name), " ",
    st.doc ?? ""));
  render(ctx.view, h("h1", {}, "Ops and their spaces"), sections, h("h2", {}, "Search strategies"),
                           h("ul", {}, strategies));
}
