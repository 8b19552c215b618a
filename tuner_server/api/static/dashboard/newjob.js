// A new tuning job (admins): the op and its params, the device, the budget and the search strategy with its
// options, each field bounded as GET /v1/ops says. What the server refuses is shown beside the form, and nothing is
// made; a job made opens its own page.
import { api, ApiError, intParam, session } from "./api.js";
import { h, render } from "./dom.js";

function paramField(p) {
  const id = `param-${p.name}`;
  const start = p.default ?? ""; // a param without a default is the user's to give (the form requires it)
  const input = p.choices
    ? h("select", { id, name: p.name }, p.choices.map((c) => h("option", { value: c, selected: c === start }, c)))
    : h("input", { id, name: p.name, type: p.kind === "int" ? "number" : "text", value: start,
                   required: p.default === undefined, min: p.min, max: p.max, step: p.kind === "int" ? 1 : null });
  const range = p.min !== undefined ? ` (${p.min}–${p.max})` : "";
  return h("label", { class: "field" }, h("span", {}, `${p.name}${range}`), input,
           p.doc ? h("small", {}, p.doc) : null);
}

function optionRows(strategy) {
  return Object.entries(strategy.options).map(([name, o]) => {
    const allowed = o.choices ? o.choices.join(" | ")
      : o.minimum !== undefined || o.maximum !== undefined ? `${o.minimum ?? ""} … ${o.maximum ?? ""}` : "";
    return h("tr", {}, h("td", {}, h("code", {}, name)), h("td", {}, o.type), h("td", {}, JSON.stringify(o.default)),
             h("td", {}, allowed), h("td", {}, o.doc));
  });
}

function readParams(form, op) {
  const params = {};
  for (const p of op.params) {
    const raw = form.elements[p.name].value.trim();
    if (raw === "" && p.default !== undefined) continue; // the op's default
    params[p.name] = p.kind === "int" ? intParam(raw) : raw;
  }
  return params;
}

function readOptions(text) {
  if (!text.trim()) return {};
  let options;
  try {
    options = JSON.parse(text);
  } catch (error) {
    throw new ApiError(422, `strategy options: not JSON (${error.message})`);
  }
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new ApiError(422, "strategy options: give a JSON object, e.g. {\"acquisition\": \"ei\"}");
  }
  return options;
}

export async function newJobPage(ctx) {
  if (!session.admin) {
    render(ctx.view, h("h1", {}, "New job"), h("p", {}, "Submitting a job needs an admin token."));
    return;
  }
  const [ops, devices] = await Promise.all([api("/v1/ops?limit=1000"), api("/v1/devices?limit=1000")]);
  const error = h("p", { id: "new-job-error", class: "error", role: "alert" });
  const params = h("fieldset", { id: "params" });
  const options = h("tbody", {});
  const opSelect = h("select", { id: "op", name: "op" }, ops.items.map((op) => h("option", { value: op.name }, op.name)));
  const strategySelect = h("select", { id: "strategy", name: "strategy" },
    Object.keys(ops.strategies).map((name) => h("option", { value: name, selected: name === "model" }, name)));
  const kinds = [...new Set(devices.items.map((d) => d.kind))];
  const deviceSelect = h("select", { id: "device", name: "device" },
    devices.items.map((d) => h("option", { value: d.device_class }, `${d.device_class} (${d.status})`)),
    kinds.map((k) => h("option", { value: k }, `any ${k} class`)),
    devices.items.length ? null : ["cpu", "cuda"].map((k) => h("option", { value: k }, `${k} (no agent yet)`)));
  const byName = (name) => ops.items.find((op) => op.name === name);
  const showParams = () => {
    const op = byName(opSelect.value);
    render(params, h("legend", {}, `${op.name}: ${op.doc.split("\n")[0]}`), op.params.map(paramField));
  };
  const showOptions = () => render(options, optionRows(ops.strategies[strategySelect.value]));
  opSelect.addEventListener("change", showParams);
  strategySelect.addEventListener("change", showOptions);

  const form = h("form", { id: "new-job", autocomplete: "off" },
    h("label", { class: "field" }, h("span", {}, "op"), opSelect), params,
    h("label", { class: "field" }, h("span", {}, "device"), deviceSelect),
    h("label", { class: "field" }, h("span", {}, "trials"),
      h("input", { id: "trials", name: "trials", type: "number", min: 1, step: 1, value: 64, required: true })),
    h("label", { class: "field" }, h("span", {}, "priority"),
      h("input", { id: "priority", name: "priority", type: "number", step: 1, value: 0 }),
      h("small", {}, "share of the agents against other jobs: +10 doubles it")),
    h("label", { class: "field" }, h("span", {}, "strategy"), strategySelect),
    h("label", { class: "field" }, h("span", {}, "strategy options (JSON)"),
      h("textarea", { id: "strategy-options", name: "strategy_options", rows: 2, cols: 60,
                      placeholder: "{} — the strategy's defaults; e.g. {\"acquisition\": \"ei\", \"members\": 3}" })),
    h("button", { type: "submit" }, "Submit"), error,
    h("details", {}, h("summary", {}, "the strategy's options"),
      h("table", { id: "strategy-option-list" },
        h("thead", {}, h("tr", {}, ["option", "type", "default", "allowed", "meaning"].map((t) => h("th", {}, t)))),
        options)));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    try {
      const op = byName(opSelect.value);
      const body = { op: op.name, params: readParams(form, op), device: deviceSelect.value,
                     trials: Number(form.elements.trials.value), strategy: strategySelect.value,
                     strategy_options: readOptions(form.elements.strategy_options.value),
                     priority: Number(form.elements.priority.value || 0) };
      const job = await api("/v1/jobs", { method: "POST", body });
      location.hash = `#/job/${encodeURIComponent(job.id)}`;
    } catch (failure) {
      if (failure instanceof ApiError && failure.status === 401) return ctx.fail(failure);
      error.textContent = failure instanceof ApiError ? `${failure.status}: ${failure.message}` : String(failure);
    }
  });
  render(ctx.view, h("h1", {}, "New tuning job"), form);
  showParams();
  showOptions();
}
