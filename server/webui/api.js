// The page's HTTP client: URLs relative to the page (so a reverse proxy may
// serve it under a path prefix), the API key from sessionStorage as
// `Authorization: Bearer`, JSON calls and the chat completion SSE stream.

const KEY_STORAGE = "thermocline.apiKey";

// The folder the page was served from: "/" or "/prefix/".
function base() {
  const path = location.pathname;
  return path.endsWith("/") ? path : path.slice(0, path.lastIndexOf("/") + 1);
}

export function url(route) {
  return base() + route;
}

export function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE) || "";
}

export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
}

// Thrown for a non-2xx answer: the status and the OpenAI error message.
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(extra) {
  const h = Object.assign({}, extra);
  const key = apiKey();
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

async function errorOf(response) {
  let message = "HTTP " + response.status;
  try {
    const body = await response.json();
    if (body && body.error && body.error.message) message = body.error.message;
  } catch (e) {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, message);
}

export async function getJson(route, signal) {
  const response = await fetch(url(route), { headers: headers(), signal, cache: "no-store" });
  if (!response.ok) throw await errorOf(response);
  return response.json();
}

// POSTs a streaming chat completion and calls onDelta(text) per content
// piece; resolves with {finish_reason, usage} at [DONE]. Rejects with an
// AbortError when `signal` aborts (the server then cancels the request).
export async function streamChat(body, signal, onDelta) {
  const response = await fetch(url("v1/chat/completions"), {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify(Object.assign({}, body, { stream: true, stream_options: { include_usage: true } })),
    signal,
  });
  if (!response.ok) throw await errorOf(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const result = { finish_reason: null, usage: null };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data:")) continue;  // ": ping" comments
        const data = line.slice(5).trim();
        if (data === "[DONE]") return result;
        const chunk = JSON.parse(data);
        if (chunk.error) throw new ApiError(500, chunk.error.message || "the stream failed");
        if (chunk.usage) result.usage = chunk.usage;
        for (const choice of chunk.choices || []) {
          if (choice.delta && choice.delta.content) onDelta(choice.delta.content);
          if (choice.finish_reason) result.finish_reason = choice.finish_reason;
        }
      }
    }
  }
  return result;
}
