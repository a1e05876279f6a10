// The inspector's actions: each asks for confirmation in a dialog, then calls the public API
// through /ui/api/ with the session's token (the API checks the token may do it).
import { send, query, namespace } from "./api.js";
import { el, rerender } from "./dom.js";

// confirmAction opens a dialog with message (and optional form fields); Confirm runs act with
// the fields' values and shows the page again, Cancel closes it. An error stays in the
// dialog.
export function confirmAction(title, message, act, fields = []) {
  const error = el("p", { class: "error dialog-error" });
  const ok = el("button", { type: "submit", class: "confirm" }, title);
  const form = el("form", { method: "dialog" }, el("h3", {}, title), el("p", {}, message), fields, error,
    el("div", { class: "buttons" }, el("button", { type: "button", class: "cancel", onclick: () => dialog.close() }, "Cancel"), ok));
  const dialog = el("dialog", { id: "confirm" }, form);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    ok.disabled = true;
    try {
      await act(Object.fromEntries(new FormData(form)));
      dialog.close();
      rerender();
    } catch (err) {
      error.textContent = String(err.message || err);
      ok.disabled = false;
    }
  });
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
}

const ns = () => query({ namespace: namespace() });
const actorPath = (aid) => "/actors/" + encodeURIComponent(aid);

// actorButtons are the actions on one actor.
export function actorButtons(a) {
  const label = a.name + (a.key ? " [" + a.key + "]" : "") + " (" + a.actor_id + ")";
  const button = (cls, text, message, act) => el("button", { class: "action " + cls, onclick: () => confirmAction(text, message, act) }, text);
  return el("div", { class: "actions" },
    button("sleep", "Sleep", "Put " + label + " to sleep? It stops, and wakes on its next request or alarm.", () => send("POST", actorPath(a.actor_id) + "/sleep" + ns())),
    button("reschedule", "Reschedule", "Stop " + label + " and place it again now?", () => send("POST", actorPath(a.actor_id) + "/reschedule" + ns())),
    button("destroy danger", "Destroy", "Destroy " + label + " for good? Its state is lost.", () => send("DELETE", actorPath(a.actor_id) + ns())),
  );
}

// drainButton drains runner r.
export function drainButton(r) {
  return el("button", { class: "action drain", onclick: () => confirmAction("Drain", "Drain runner " + r.key + " of pool " + r.name +
    "? It gets no new actors and its actors are moved as it stops.", () => send("POST", "/runners/" + encodeURIComponent(r.runner_id) + "/drain" + ns())) }, "Drain");
}

// drainEnvoyButton drains envoy e (berth's POST /envoys/{envoy_key}/drain).
export function drainEnvoyButton(e) {
  return el("button", { class: "action drain", onclick: () => confirmAction("Drain", "Drain envoy " + e.envoy_key + " of pool " + e.pool_name +
    "? It gets no new actors, its actors are moved away, and it closes once none is left.", () => send("POST", "/envoys/" + encodeURIComponent(e.envoy_key) + "/drain" + ns())) }, "Drain");
}

// createButton opens the create-actor form.
export function createButton(defaults) {
  const field = (label, name, attrs = {}) => el("label", {}, label, " ", el("input", { name, ...attrs }));
  return el("button", { class: "action create", onclick: () => confirmAction("Create", "Create an actor in namespace " + namespace() + ".", async (v) => {
    const body = { name: v.name, runner_name_selector: v.pool, crash_policy: v.crash_policy };
    if (v.key) body.key = v.key;
    const out = await send("POST", "/actors" + ns(), body);
    location.hash = "#/actor/" + out.actor.actor_id;
  }, [
    field("Name", "name", { required: true, value: defaults.name || "" }),
    field("Key", "key", { placeholder: "optional" }),
    field("Pool", "pool", { required: true, value: defaults.pool || "" }),
    el("label", {}, "Crash policy ", el("select", { name: "crash_policy" }, ["sleep", "restart", "destroy"].map((p) => el("option", { value: p }, p)))),
  ]) }, "Create actor…");
}
