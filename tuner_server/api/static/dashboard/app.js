// The dashboard's shell: sign-in, the hash router (#/farm, #/jobs, #/job/<id>, #/new, #/schedules,
// #/history?<key>, #/ops), and the refresh loop of the page shown (pages that follow live state ask for one with ctx.poll).
import { api, ApiError, session } from "./api.js";
import { farmPage } from "./farm.js";
import { jobPage, jobsPage } from "./jobs.js";
import { newJobPage } from "./newjob.js";
import { opsPage } from "./ops.js";
import { historyPage, schedulesPage } from "./schedules.js";

const PAGES = { farm: farmPage, jobs: jobsPage, job: jobPage, new: newJobPage, schedules: schedulesPage,
                history: historyPage, ops: opsPage };
const $ = (id) => document.getElementById(id);
let shown = null; // the page context being refreshed; replaced (and stopped) on every navigation

function route() {
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  const [name, ...args] = path.split("/");
  return { name: name || "farm", args: args.map(decodeURIComponent), query: new URLSearchParams(query ?? "") };
}

function showLogin(message = "") {
  $("login").hidden = false;
  $("nav").hidden = $("session").hidden = true;
  $("view").replaceChildren();
  $("status").textContent = "";
  $("login-error").textContent = message;
  $("token").focus();
}

function fail(ctx, error) {
  if (error instanceof ApiError && error.status === 401) {
    session.signOut();
    stop();
    showLogin(`Signed out: ${error.message}`);
    return;
  }
  $("status").textContent = error instanceof ApiError ? `${error.status}: ${error.message}` : String(error);
}

function stop() {
  if (shown) {
    shown.alive = false;
    clearTimeout(shown.timer);
  }
  shown = null;
}

async function refresh(ctx) {
  if (!ctx.alive) return;
  try {
    await ctx.page(ctx);
    if (ctx.alive) $("status").textContent = "";
  } catch (error) {
    if (ctx.alive) fail(ctx, error);
  }
  if (ctx.alive && ctx.poll) ctx.timer = setTimeout(() => refresh(ctx), ctx.poll);
}

async function show() {
  stop();
  if (!session.token) return showLogin();
  if (!session.scope) {
    try {
      session.scope = (await api("/v1/whoami")).scope;
    } catch (error) {
      session.signOut();
      return showLogin(error instanceof ApiError && error.status === 401 ? "That token was refused." : String(error));
    }
  }
  $("login").hidden = true;
  $("nav").hidden = $("session").hidden = false;
  $("scope").textContent = `signed in (${session.scope})`;
  $("nav-new").hidden = !session.admin; // submitting a job needs an admin token
  const { name, args, query } = route();
  for (const a of document.querySelectorAll("#nav a[data-page]")) {
    a.classList.toggle("current", a.dataset.page === name || (name === "job" && a.dataset.page === "jobs")
                                   || (name === "history" && a.dataset.page === "schedules"));
  }
  const page = PAGES[name];
  if (!page) {
    $("view").replaceChildren(document.createTextNode(`No page ${name}.`));
    return;
  }
  // each page draws into its own element: a fetch still in flight for the page left behind then draws into an
  // element no longer shown, never over this one
  const view = document.createElement("div");
  $("view").replaceChildren(view);
  const ctx = { page, args, query, view, alive: true, poll: 0, timer: null };
  // an admin action: run it, then redraw the page at once (errors show in the status line)
  ctx.act = async (call) => {
    try {
      await call();
    } catch (error) {
      return fail(ctx, error);
    }
    clearTimeout(ctx.timer);
    await refresh(ctx);
  };
  ctx.fail = (error) => fail(ctx, error);
  shown = ctx;
  await refresh(ctx);
}

$("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = $("token").value.trim();
  $("token").value = "";
  if (!token) return;
  session.signIn(token);
  show();
});
$("logout").addEventListener("click", () => {
  session.signOut();
  stop();
  showLogin();
});
window.addEventListener("hashchange", show);
show();
