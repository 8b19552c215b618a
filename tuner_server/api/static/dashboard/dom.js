// Building the page from API data: elements and text nodes only (never innerHTML), and the units shown.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function table(id, headings, rows) {
  return h("table", {id}, h("thead", {}, h("tr", {}, headings.map((t) => h("th", {}, t)))), h("tbody", {}, rows));
}

export function seconds(s) {
  if (s === null || s === undefined) return "–";
  if (s < 1e-3) return `${(s * 1e6).toPrecision(3)} µs`;
  if (s < 1) return `${(s * 1e3).toPrecision(3)} ms`;
  return `${s.toPrecision(3)} s`;
}

export function rate(value, unit) {
  return value === null || value === undefined ? "–" : `${value.toPrecision(3)} ${unit}`;
}

export function ago(iso) {
  if (!iso) return "–";
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return `${s.toFixed(0)} s ago`;
  if (s < 3600) return `${(s / 60).toFixed(0)} min ago`;
  return `${(s / 3600).toFixed(1)} h ago`;
}

export function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "–";
}

export function shortId(id) {
  return id ? id.slice(0, 8) : "–";
}

export function config(cfg) {
  return Object.entries(cfg ?? {}).map(([k, v]) => `${k}=${v}`).join(" ");
}

// Replace an element's content; arrays among the children are flattened (replaceChildren would print them).
export function render(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}
