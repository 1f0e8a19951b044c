// Drives a running `thermocline serve --models-dir` with the official Ollama
// JavaScript client (npm ollama) and checks what its users rely on: version,
// tags, show, ps, generate and chat (whole and streamed, the streamed text
// equal to the whole), options mapped onto the sampler (greedy text equal
// to /v1/completions'), keep_alive (load without a prompt, unload with 0),
// think (accepted; no thinking for a reply without a <think> block),
// embed and embeddings, fill in the middle (generate's suffix: the text of
// the same FIM prompt written out; "insert" among a code model's
// capabilities), the client's ResponseError for unknown, broken and
// unsupported requests, and aborting a stream.
//
// Usage: node ollama_sdk_check.mjs HOST API_KEY MODEL_A MODEL_B BROKEN CODER [NODE_MODULES_DIR]
//   HOST     http://127.0.0.1:PORT
//   API_KEY  a key the server accepts
//   MODEL_A, MODEL_B  two good models of the folder; BROKEN a corrupt one
//   CODER    a model with FIM tokens (make-model --fim)
// Prints one line per check; exits 1 on the first failure, 2 on bad usage.
import assert from 'node:assert/strict';

import { check, importPackage, modulesDirFrom, passedCount } from './check_harness.mjs';

const [host, apiKey, modelA, modelB, broken, coder, modulesArg] = process.argv.slice(2);
if (!host || !apiKey || !modelA || !modelB || !broken || !coder) {
  console.error('usage: node ollama_sdk_check.mjs HOST API_KEY MODEL_A MODEL_B BROKEN CODER [NODE_MODULES_DIR]');
  process.exit(2);
}
const { Ollama } = await importPackage(modulesDirFrom(modulesArg), 'ollama/dist/index.mjs', 'ollama client');
const headers = { Authorization: `Bearer ${apiKey}` };
const ollama = new Ollama({ host, headers });

async function expectError(promise, status, needle) {
  let err;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected an error ${status}, the request succeeded`);
  assert.equal(err.name, 'ResponseError', `expected a ResponseError, got ${err.name}: ${err.message}`);
  assert.equal(err.status_code, status, `status of: ${err.message}`);
  if (needle) assert.ok(err.message.includes(needle), `"${err.message}" should mention "${needle}"`);
  return err;
}

const greedy = { temperature: 0, num_predict: 8, repeat_penalty: 1 };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function loadedNames() {
  return (await ollama.ps()).models.map((m) => m.name);
}
async function waitFor(pred, what) {
  for (let i = 0; i < 100; i++) {
    if (await pred()) return;
    await sleep(50);
  }
  assert.fail(`timed out waiting for ${what}`);
}

await check('version', async () => {
  const v = await ollama.version();
  assert.equal(typeof v.version, 'string');
  assert.match(v.version, /^\d+\.\d+\.\d+/);
});

await check('list (tags): every model of the folder, with details', async () => {
  const { models } = await ollama.list();
  const names = models.map((m) => m.name);
  for (const n of [modelA, modelB, broken]) assert.ok(names.includes(n), `${n} in ${names}`);
  const a = models.find((m) => m.name === modelA);
  assert.equal(a.model, modelA);
  assert.ok(a.size > 0);
  assert.match(a.digest, /^[0-9a-f]{64}$/);
  assert.ok(!Number.isNaN(Date.parse(a.modified_at)), a.modified_at);
  assert.equal(a.details.format, 'gguf');
  assert.equal(a.details.family, 'llama');
  assert.match(a.details.parameter_size, /^[\d.]+[KMB]?$/);
  assert.ok(a.details.quantization_level.length > 0);
});

await check('show: template, details and model_info', async () => {
  const s = await ollama.show({ model: modelA });
  assert.equal(typeof s.template, 'string');
  assert.equal(s.details.family, 'llama');
  assert.equal(s.model_info['general.architecture'], 'llama');
  assert.ok(s.capabilities.includes('completion'));
  assert.ok(s.capabilities.includes('tools'), 'every model takes tools');
  await expectError(ollama.show({ model: 'no-such-model' }), 404, 'no-such-model');
  await expectError(ollama.show({ model: broken }), 500, `${broken}.gguf`);
});

let wholeText;
await check('generate: one body with counts and durations', async () => {
  const r = await ollama.generate({ model: modelA, prompt: 'Once upon a time', options: greedy });
  assert.equal(r.model, modelA);
  assert.equal(r.done, true);
  assert.ok(['stop', 'length'].includes(r.done_reason), r.done_reason);
  assert.equal(typeof r.response, 'string');
  assert.ok(r.eval_count >= 1 && r.eval_count <= 8, `eval_count ${r.eval_count}`);
  assert.ok(r.prompt_eval_count > 0);
  assert.ok(r.total_duration > 0 && r.eval_duration >= 0 && r.load_duration >= 0);
  assert.ok(!Number.isNaN(Date.parse(r.created_at)));
  wholeText = r.response;
});

await check('generate streamed: NDJSON parts add up to the whole text', async () => {
  const parts = [];
  for await (const part of await ollama.generate({ model: modelA, prompt: 'Once upon a time', options: greedy, stream: true })) {
    parts.push(part);
  }
  assert.ok(parts.length >= 2);
  const last = parts.at(-1);
  assert.equal(last.done, true);
  assert.ok(parts.slice(0, -1).every((p) => p.done === false));
  assert.equal(parts.map((p) => p.response).join(''), wholeText);
  assert.ok(last.eval_count >= 1);
});

await check('options map onto the sampler: greedy raw generate equals /v1/completions', async () => {
  const r = await ollama.generate({ model: modelB, prompt: 'The sea', raw: true, options: greedy });
  const v1 = await fetch(`${host}/v1/completions`, {
    method: 'POST',
    headers: { ...headers, 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: modelB, prompt: 'The sea', max_tokens: 8, temperature: 0 }),
  });
  assert.equal(v1.status, 200);
  const body = await v1.json();
  assert.equal(r.response, body.choices[0].text);
  assert.equal(r.eval_count, body.usage.completion_tokens);
});

let chatText;
await check('chat: an assistant message', async () => {
  const r = await ollama.chat({ model: modelB, messages: [{ role: 'user', content: 'Hi there' }], options: greedy });
  assert.equal(r.model, modelB);
  assert.equal(r.message.role, 'assistant');
  assert.equal(typeof r.message.content, 'string');
  assert.equal(r.done, true);
  assert.ok(r.eval_count >= 1 && r.eval_count <= 8);
  chatText = r.message.content;
});

await check('chat streamed: the same text in parts', async () => {
  let text = '';
  let last;
  for await (const part of await ollama.chat({ model: modelB, messages: [{ role: 'user', content: 'Hi there' }], options: greedy, stream: true })) {
    assert.equal(part.message.role, 'assistant');
    text += part.message.content;
    last = part;
  }
  assert.equal(last.done, true);
  assert.equal(text, chatText);
});

await check('chat with think: accepted; a reply without a <think> block has no thinking and the same content', async () => {
  // This model's template (ChatML) ignores enable_thinking and its reply
  // opens no reasoning block, so think only changes where reasoning would go.
  for (const think of [true, false]) {
    const r = await ollama.chat({ model: modelB, messages: [{ role: 'user', content: 'Hi there' }], options: greedy, think });
    assert.equal(r.message.content, chatText);
    assert.equal(r.message.thinking, undefined);
  }
  const s = await ollama.show({ model: modelB });
  assert.ok(!s.capabilities.includes('thinking'), 'a ChatML template is not a thinking one');
});

await check('ps: the loaded models with sizes and expiry', async () => {
  const { models } = await ollama.ps();
  const names = models.map((m) => m.name);
  assert.ok(names.includes(modelA) && names.includes(modelB), String(names));
  for (const m of models) {
    assert.ok(m.size > 0, `${m.name} size`);
    assert.equal(typeof m.size_vram, 'number');
    assert.ok(!Number.isNaN(Date.parse(m.expires_at)), m.expires_at);
  }
});

await check('keep_alive 0 without a prompt unloads; a request without a prompt loads', async () => {
  const r = await ollama.generate({ model: modelA, prompt: '', keep_alive: 0 });
  assert.equal(r.done, true);
  assert.equal(r.done_reason, 'unload');
  await waitFor(async () => !(await loadedNames()).includes(modelA), `${modelA} to unload`);
  const l = await ollama.chat({ model: modelA, messages: [], keep_alive: '10m' });
  assert.equal(l.done_reason, 'load');
  assert.ok((await loadedNames()).includes(modelA));
  // A request's keep_alive 0 unloads the model once the request is done.
  await ollama.generate({ model: modelB, prompt: 'x', options: greedy, keep_alive: 0 });
  await waitFor(async () => !(await loadedNames()).includes(modelB), `${modelB} to unload after its request`);
});

await check('format "json": the reply opens a JSON object (and parses when it closed)', async () => {
  const r = await ollama.generate({ model: modelA, prompt: 'x', format: 'json', options: { ...greedy, num_predict: 48 } });
  assert.match(r.response, /^\s{0,4}\{/);
  if (r.done_reason === 'stop') assert.equal(typeof JSON.parse(r.response), 'object');
});

await check('chat with tools: a call and its result in the history render; the reply is text or calls', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'The weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
  const r = await ollama.chat({
    model: modelA,
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
      { role: 'tool', content: '{"temperature": 21}' },
    ],
    tools,
    options: greedy,
  });
  assert.equal(r.done, true);
  assert.equal(typeof r.message.content, 'string');
  // A random-weight model does not call tools; if it did, the call names the declared function.
  for (const call of r.message.tool_calls ?? []) {
    assert.equal(call.function.name, 'get_weather');
    assert.equal(typeof call.function.arguments, 'object');
  }
  await expectError(ollama.chat({ model: modelA, messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'retrieval' }] }),
    400, 'tools');
});

await check('format with a schema: the reply is an instance, properties in the order declared', async () => {
  const format = {
    type: 'object',
    properties: { mood: { enum: ['happy', 'sad'] }, ok: { type: 'boolean' }, n: { type: 'integer' },
      tags: { type: 'array', items: { type: 'string', maxLength: 3 }, maxItems: 2 } },
    required: ['mood', 'ok', 'n', 'tags'],
  };
  const r = await ollama.chat({ model: modelA, messages: [{ role: 'user', content: 'x' }], format,
    options: { temperature: 0.7, seed: 3, num_predict: 400 } });
  assert.equal(r.done_reason, 'stop', `closed within num_predict: ${JSON.stringify(r.message.content)}`);
  const v = JSON.parse(r.message.content);
  assert.deepEqual(Object.keys(v), ['mood', 'ok', 'n', 'tags']);
  assert.ok(['happy', 'sad'].includes(v.mood));
  assert.equal(typeof v.ok, 'boolean');
  assert.ok(Number.isInteger(v.n));
  assert.ok(Array.isArray(v.tags) && v.tags.length <= 2 && v.tags.every((t) => typeof t === 'string' && [...t].length <= 3));
  await expectError(ollama.chat({ model: modelA, messages: [{ role: 'user', content: 'x' }],
    format: { type: 'object', properties: { d: { type: 'string', format: 'email' } } } }), 400, 'format');
});

await check('errors: unknown model 404, broken file 500 naming it, bad format 400, bad keep_alive 400', async () => {
  await expectError(ollama.generate({ model: 'no-such-model', prompt: 'x' }), 404, 'no-such-model');
  await expectError(ollama.chat({ model: broken, messages: [{ role: 'user', content: 'x' }] }), 500, `${broken}.gguf`);
  await expectError(ollama.generate({ model: modelA, prompt: 'x', format: 'yaml' }), 400, 'format');
  await expectError(ollama.generate({ model: modelA, prompt: 'x', keep_alive: 'soon' }), 400, 'keep_alive');
  await expectError(ollama.chat({ model: modelA, messages: [{ role: 'user', content: 'x', images: ['aGk='] }] }), 400, 'images');
  await expectError(ollama.chat({ model: modelA, messages: 'hello' }), 400, 'messages');
});

function norm(v) {
  return Math.sqrt(v.reduce((s, x) => s + x * x, 0));
}

await check('embed: unit vectors per input, equal to embeddings (raw) scaled; dimensions; pull 501', async () => {
  const r = await ollama.embed({ model: modelA, input: ['hello there', 'a different text'] });
  assert.equal(r.model, modelA);
  assert.equal(r.embeddings.length, 2);
  const width = r.embeddings[0].length;
  assert.ok(width > 0 && r.embeddings[1].length === width);
  for (const v of r.embeddings) assert.ok(Math.abs(norm(v) - 1) < 1e-5, `norm ${norm(v)}`);
  assert.notDeepEqual(r.embeddings[0], r.embeddings[1]);
  assert.ok(r.prompt_eval_count > 0);
  // The same input alone gives the same vector (whatever ran beside it).
  const one = await ollama.embed({ model: modelA, input: 'hello there' });
  assert.deepEqual(one.embeddings[0], r.embeddings[0]);
  // /api/embeddings: the raw pool, the same direction.
  const raw = await ollama.embeddings({ model: modelA, prompt: 'hello there' });
  const n = norm(raw.embedding);
  raw.embedding.forEach((x, i) => assert.ok(Math.abs(x / n - r.embeddings[0][i]) < 1e-5));
  const cut = await ollama.embed({ model: modelA, input: 'hello there', dimensions: 8 });
  assert.equal(cut.embeddings[0].length, 8);
  assert.ok(Math.abs(norm(cut.embeddings[0]) - 1) < 1e-5);
  // No input: the model is loaded only.
  const load = await ollama.embed({ model: modelB, input: [] });
  assert.deepEqual(load.embeddings, []);
  await expectError(ollama.embed({ model: modelA, input: 'x', dimensions: 100000 }), 400, 'dimensions');
  await expectError(ollama.embed({ model: 'no-such-model', input: 'x' }), 404, 'no-such-model');
  await expectError(ollama.pull({ model: 'llama3' }), 501, 'models folder');
});

await check('generate with a suffix fills in the middle: the FIM prompt written out gives the same text', async () => {
  const prefix = 'def add(a, b):\n    return';
  const suffix = '\n\nprint(add(1, 2))\n';
  const s = await ollama.show({ model: coder });
  assert.ok(s.capabilities.includes('insert'), JSON.stringify(s.capabilities));
  assert.ok(!(await ollama.show({ model: modelA })).capabilities.includes('insert'));
  const r = await ollama.generate({ model: coder, prompt: prefix, suffix, options: greedy });
  const v1 = await fetch(`${host}/v1/completions`, {
    method: 'POST',
    headers: { ...headers, 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: coder, prompt: `<|fim_prefix|>${prefix}<|fim_suffix|>${suffix}<|fim_middle|>`,
                           max_tokens: 8, temperature: 0 }),
  });
  assert.equal(v1.status, 200);
  const body = await v1.json();
  assert.equal(r.response, body.choices[0].text);
  assert.ok(r.response.length > 0, 'a comparison of real text');
  assert.equal(r.prompt_eval_count, body.usage.prompt_tokens);
  const parts = [];
  const streamed = await ollama.generate({ model: coder, prompt: prefix, suffix, options: greedy, stream: true });
  for await (const part of streamed) parts.push(part.response);
  assert.equal(parts.join(''), r.response);
  await expectError(ollama.generate({ model: modelA, prompt: prefix, suffix }), 400, 'fill in the middle');
});

await check('shift (on by default) goes on past the context; shift false keeps the context\'s bound', async () => {
  // The server's context is 512 tokens; greedy with EOS possible, so the
  // reply could end sooner, which this model's greedy path does not.
  const r = await ollama.generate({ model: modelA, prompt: 'x', raw: true, options: { ...greedy, num_predict: 700, num_keep: 8 } });
  assert.ok(r.prompt_eval_count + r.eval_count > 512, `${r.prompt_eval_count} + ${r.eval_count} tokens`);
  await expectError(ollama.generate({ model: modelA, prompt: 'x', raw: true, shift: false, options: { ...greedy, num_predict: 700 } }),
    400, 'max_tokens');
});

await check('an aborted stream ends; the next request is served', async () => {
  // Up to the context (num_predict -1), so that the abort lands mid-stream;
  // on a loaded machine the client may still read the last part first.
  const stream = await ollama.generate({ model: modelA, prompt: 'Tell a long story', options: { num_predict: -1 }, stream: true });
  let n = 0;
  let aborted = false;
  let finished = false;
  try {
    for await (const part of stream) {
      if (part.done) finished = true;
      if (++n === 2) stream.abort();
    }
  } catch (e) {
    aborted = e.name === 'AbortError';
  }
  assert.ok(aborted || finished, 'the iteration ended with an AbortError (or after the last part)');
  if (!aborted) console.log('     (the stream had ended before the abort)');
  const r = await ollama.generate({ model: modelA, prompt: 'Once upon a time', options: greedy });
  assert.equal(r.response, wholeText);
});

console.log(`all ${passedCount()} checks passed`);
