// The page's entry point: the API key prompt, the model picker (GET
// v1/models), the status line and the Chat / Engine views (side by side on
// wide screens, tabs on narrow ones).
import { ApiError, apiKey, getJson, setApiKey, url } from "./api.js";
import { initChat } from "./chat.js";
import { initEngine } from "./engine.js";

const $ = (id) => document.getElementById(id);

function setStatus(message, isError) {
  const s = $("status");
  s.textContent = message || "";
  s.classList.toggle("error", Boolean(isError));
}

// Shows the key form; resolves once a key was entered (and stored).
let keyWaiters = null;
function askForKey(message) {
  const form = $("key-form");
  $("key-error").textContent = message || "";
  form.hidden = false;
  $("key-input").value = "";
  $("key-input").focus();
  if (!keyWaiters) keyWaiters = [];
  return new Promise((resolve) => keyWaiters.push(resolve));
}

$("key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const key = $("key-input").value.trim();
  if (!key) return;
  setApiKey(key);
  $("key-form").hidden = true;
  const waiters = keyWaiters || [];
  keyWaiters = null;
  for (const resolve of waiters) resolve();
});

// Asks for the key up front when the server needs one and the tab has none.
async function keyIfNeeded() {
  try {
    const response = await fetch(url("webui/config.json"), { cache: "no-store" });
    const config = response.ok ? await response.json() : {};
    if (config.api_key_required && !apiKey()) await askForKey("");
  } catch (e) {
    // no config: the first 401 asks instead
  }
}

async function loadModels() {
  await keyIfNeeded();
  for (;;) {
    try {
      const list = await getJson("v1/models");
      const select = $("model");
      const previous = select.value;
      // Every served model; a models folder's unloaded ones load on their first request.
      select.replaceChildren(
        ...list.data.map((m) => {
          const state = m.status?.value;
          // An embedding model or a reranker is listed, but does not chat.
          const chats = !m.capabilities || m.capabilities.includes("completion");
          const kind = m.capabilities?.includes("rerank") ? "reranker" : "embeddings only";
          const note = state === "failed" ? " (failed to load)" : !chats ? ` (${kind})`
            : state && state !== "loaded" ? ` (${state})` : "";
          const option = Object.assign(document.createElement("option"), {
            value: m.id, textContent: m.id + note, disabled: state === "failed" || !chats,
            title: m.status?.failure ?? "",
          });
          option.dataset.vision = m.vision ? "1" : "";
          return option;
        }),
      );
      if (list.data.some((m) => m.id === previous)) select.value = previous;
      select.dispatchEvent(new Event("change"));
      setStatus("");
      return;
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        setApiKey("");
        await askForKey(e.message.includes("key") ? "" : e.message);
        continue;
      }
      if (e instanceof ApiError && e.status === 503) {
        setStatus("The model is loading…");
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      setStatus("Cannot list the models: " + e.message, true);
      return;
    }
  }
}

let engine = null;
async function onAuthError() {
  setApiKey("");
  await askForKey("The key was refused; enter it again.");
  engine?.start();
}

// Narrow screens show one view at a time; wide ones show both.
function showView(view) {
  document.querySelector(".layout").dataset.view = view;
  $("tab-chat").setAttribute("aria-pressed", String(view === "chat"));
  $("tab-engine").setAttribute("aria-pressed", String(view === "engine"));
  if (view === "engine") engine?.start();
}
$("tab-chat").addEventListener("click", () => showView("chat"));
$("tab-engine").addEventListener("click", () => showView("engine"));

const isVisible = () => $("engine").getClientRects().length > 0;
initChat({
  model: () => $("model").value,
  vision: () => $("model").selectedOptions[0]?.dataset.vision === "1",
  setStatus,
  onAuthError,
});
engine = initEngine({ onAuthError, isVisible, model: () => $("model").value });
window.matchMedia("(min-width: 900px)").addEventListener("change", () => engine.start());
loadModels().then(() => engine.start());
