// The chat view: the conversation (kept in localStorage), streaming replies
// with a stop button, settings, copy and regenerate, and per reply the time
// to first token and tokens per second. Max tokens left empty lets the
// server give a reply what the context leaves; min-p, top-k, the repeat
// penalty and the seed left empty are off (a random seed); a conversation that outgrows
// the context is sent with `truncate`, so its oldest messages are left out
// (the system prompt stays) rather than refused, and with `context_shift`,
// so a reply that fills the context goes on (where the model can shift).
// A model served with a vision projector takes images: attached with the
// Image button or pasted, sent inline as data: URLs beside the text.
import { streamChat } from "./api.js";
import { renderMarkdown } from "./markdown.js";

const STORAGE = "thermocline.chat";
// Settings sent only when set: [request field, input id, integer?].
const OPTIONAL = [["min_p", "min-p", false], ["top_k", "top-k", true], ["repeat_penalty", "repeat-penalty", false],
                  ["seed", "seed", true]];
const $ = (id) => document.getElementById(id);

function load() {
  try {
    const saved = JSON.parse(localStorage.getItem(STORAGE) || "{}");
    return {
      messages: Array.isArray(saved.messages) ? saved.messages : [],
      system: typeof saved.system === "string" ? saved.system : "",
      temperature: saved.temperature ?? 0.7,
      top_p: saved.top_p ?? 1,
      // null: auto. 512 was the page's old default, which small contexts refused.
      max_tokens: Number.isFinite(saved.max_tokens) && saved.max_tokens !== 512 ? saved.max_tokens : null,
      ...Object.fromEntries(OPTIONAL.map(([key]) => [key, Number.isFinite(saved[key]) ? saved[key] : null])),
    };
  } catch (e) {
    return { messages: [], system: "", temperature: 0.7, top_p: 1, max_tokens: null,
             ...Object.fromEntries(OPTIONAL.map(([key]) => [key, null])) };
  }
}

function number(input, fallback) {
  const v = Number(input.value);
  return input.value !== "" && Number.isFinite(v) ? v : fallback;
}

async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = document.createElement("textarea");
  area.value = text;
  document.body.appendChild(area);
  area.select();
  document.execCommand("copy");
  area.remove();
}

function metaText(meta) {
  if (!meta) return "";
  const parts = [];
  if (meta.ttft_ms != null) parts.push("first token " + Math.round(meta.ttft_ms) + " ms");
  if (meta.tps != null) parts.push(meta.tps.toFixed(1) + " tokens/s");
  if (meta.tokens != null) parts.push(meta.tokens + " tokens");
  if (meta.finish) parts.push(meta.finish);
  if (meta.error) parts.push("error: " + meta.error);
  return parts.join(" · ");
}

// A message's content as the API takes it: its text, or with images the
// text part and one image_url part per image.
function apiContent(m) {
  if (!Array.isArray(m.images) || !m.images.length) return m.content;
  return [{ type: "text", text: m.content }, ...m.images.map((url) => ({ type: "image_url", image_url: { url } }))];
}

function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

export function initChat({ model, vision, setStatus, onAuthError }) {
  const state = load();
  let controller = null;
  let attached = [];  // data: URLs of the images the next message carries
  const save = () => {
    try {
      localStorage.setItem(STORAGE, JSON.stringify(state));
    } catch (e) {
      setStatus("The conversation is too large to keep in this browser (its images); it stays until the page closes.",
                true);
    }
  };

  function renderAttached() {
    const list = $("attached");
    list.hidden = attached.length === 0;
    list.replaceChildren(...attached.map((url, i) => {
      const li = document.createElement("li");
      const img = Object.assign(document.createElement("img"),
                                { src: url, className: "thumb", alt: "image " + (i + 1) });
      const remove = Object.assign(document.createElement("button"), { type: "button", textContent: "×" });
      remove.setAttribute("aria-label", "Remove image " + (i + 1));
      remove.addEventListener("click", () => {
        attached.splice(i, 1);
        renderAttached();
      });
      li.append(img, remove);
      return li;
    }));
  }

  async function attach(files) {
    for (const file of files) {
      if (!file.type.startsWith("image/")) continue;
      try {
        attached.push(await readAsDataUrl(file));
      } catch (e) {
        setStatus("Cannot read " + file.name + ": " + e.message, true);
      }
    }
    renderAttached();
  }

  const showAttach = () => {
    $("attach").hidden = !vision();
  };
  $("model").addEventListener("change", showAttach);
  showAttach();
  $("attach").addEventListener("click", () => $("image-file").click());
  $("image-file").addEventListener("change", async (e) => {
    await attach([...e.target.files]);
    e.target.value = "";
  });
  $("prompt").addEventListener("paste", (e) => {
    const files = [...(e.clipboardData?.files ?? [])].filter((f) => f.type.startsWith("image/"));
    if (!files.length || !vision()) return;
    e.preventDefault();
    attach(files);
  });

  $("system").value = state.system;
  $("temperature").value = state.temperature;
  $("top-p").value = state.top_p;
  $("max-tokens").value = state.max_tokens ?? "";
  for (const [key, id] of OPTIONAL) $(id).value = state[key] ?? "";
  for (const id of ["system", "temperature", "top-p", "max-tokens", ...OPTIONAL.map(([, id]) => id)]) {
    $(id).addEventListener("change", () => {
      state.system = $("system").value;
      state.temperature = number($("temperature"), 0.7);
      state.top_p = number($("top-p"), 1);
      const max = number($("max-tokens"), null);
      state.max_tokens = max === null ? null : Math.max(1, Math.round(max));
      for (const [key, input, integer] of OPTIONAL) {
        const v = number($(input), null);
        state[key] = v === null ? null : integer ? Math.round(v) : v;
      }
      save();
    });
  }

  function messageElement(msg, index) {
    const li = document.createElement("li");
    li.className = "message " + msg.role;
    li.dataset.index = String(index);
    const who = document.createElement("div");
    who.className = "who";
    who.textContent = msg.role === "user" ? "You" : "Assistant";
    const body = document.createElement("div");
    body.className = "content";
    if (msg.role === "assistant") body.innerHTML = renderMarkdown(msg.content);
    else body.textContent = msg.content;
    li.append(who);
    if (Array.isArray(msg.images) && msg.images.length) {
      const images = document.createElement("div");
      images.className = "images";
      images.append(...msg.images.map((src, i) =>
        Object.assign(document.createElement("img"), { src, className: "thumb", alt: "image " + (i + 1) })));
      li.append(images);
    }
    li.append(body);
    if (msg.role === "assistant") {
      const foot = document.createElement("div");
      foot.className = "foot";
      const meta = document.createElement("span");
      meta.className = "meta";
      meta.textContent = metaText(msg.meta);
      const copy = document.createElement("button");
      copy.type = "button";
      copy.className = "copy";
      copy.textContent = "Copy";
      copy.setAttribute("aria-label", "Copy this reply");
      copy.addEventListener("click", async () => {
        try {
          await copyText(msg.content);
          setStatus("Copied.");
        } catch (e) {
          setStatus("Copy failed: " + e.message, true);
        }
      });
      foot.append(meta, copy);
      if (index === state.messages.length - 1) {
        const again = document.createElement("button");
        again.type = "button";
        again.className = "regenerate";
        again.textContent = "Regenerate";
        again.addEventListener("click", regenerate);
        foot.append(again);
      }
      li.append(foot);
    }
    return li;
  }

  function render() {
    const list = $("messages");
    list.replaceChildren(...state.messages.map(messageElement));
    list.scrollTop = list.scrollHeight;
  }

  function setBusy(busy) {
    $("send").disabled = busy;
    $("stop").disabled = !busy;
    $("model").disabled = busy;
    for (const b of document.querySelectorAll(".regenerate")) b.disabled = busy;
  }

  async function reply() {
    const history = state.messages.map((m) => ({ role: m.role, content: apiContent(m) }));
    const messages = (state.system.trim() ? [{ role: "system", content: state.system }] : []).concat(history);
    const msg = { role: "assistant", content: "", meta: null };
    state.messages.push(msg);
    render();
    const li = $("messages").lastElementChild;
    const body = li.querySelector(".content");
    const meta = li.querySelector(".meta");
    li.classList.add("streaming");
    controller = new AbortController();
    setBusy(true);
    const sent = performance.now();
    let first = null;
    let pieces = 0;
    let pending = false;
    const paint = () => {
      pending = false;
      body.innerHTML = renderMarkdown(msg.content);
      const list = $("messages");
      list.scrollTop = list.scrollHeight;
    };
    try {
      const result = await streamChat(
        {
          model: model(),
          messages,
          temperature: state.temperature,
          top_p: state.top_p,
          ...(state.max_tokens !== null ? { max_tokens: state.max_tokens } : {}),
          ...Object.fromEntries(OPTIONAL.filter(([key]) => state[key] !== null).map(([key]) => [key, state[key]])),
          truncate: true,
          context_shift: true,
        },
        controller.signal,
        (text) => {
          if (first === null) first = performance.now();
          pieces++;
          msg.content += text;
          if (!pending) {
            pending = true;
            requestAnimationFrame(paint);
          }
        },
      );
      const end = performance.now();
      const tokens = result.usage ? result.usage.completion_tokens : pieces;
      msg.meta = {
        ttft_ms: first !== null ? first - sent : null,
        tps: first !== null && tokens > 1 && end > first ? (tokens - 1) / ((end - first) / 1000) : null,
        tokens,
        finish: result.finish_reason,
      };
      setStatus("");
    } catch (e) {
      if (e.name === "AbortError") {
        msg.meta = { ttft_ms: first !== null ? first - sent : null, tokens: pieces, finish: "stopped" };
        setStatus("Stopped.");
      } else {
        msg.meta = { error: e.message };
        setStatus(e.message, true);
        if (e.status === 401) onAuthError();
      }
    } finally {
      controller = null;
      save();
      render();
      setBusy(false);
    }
  }

  function send(event) {
    event?.preventDefault();
    const text = $("prompt").value;
    if ((!text.trim() && !attached.length) || controller) return;
    if (!model()) {
      setStatus("No model to talk to yet.", true);
      return;
    }
    state.messages.push(attached.length ? { role: "user", content: text, images: attached }
                                        : { role: "user", content: text });
    attached = [];
    renderAttached();
    $("prompt").value = "";
    save();
    reply();
  }

  function regenerate() {
    if (controller) return;
    if (state.messages.length && state.messages[state.messages.length - 1].role === "assistant") state.messages.pop();
    if (!state.messages.length) return;
    reply();
  }

  function stop() {
    if (controller) controller.abort();
  }

  $("composer").addEventListener("submit", send);
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) send(e);
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && controller) stop();
  });
  $("stop").addEventListener("click", stop);
  $("clear").addEventListener("click", () => {
    if (controller) return;
    state.messages = [];
    save();
    render();
  });
  render();
}
