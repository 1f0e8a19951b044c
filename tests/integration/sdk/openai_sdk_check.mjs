// Drives a running `thermocline serve` with the official OpenAI Node SDK and
// checks what SDK users rely on: models, chat and legacy completions (plain
// and streamed, with seeded sampling reproducing), logprobs, n, stop strings,
// function calling, JSON Schema replies, the SDK's typed errors, and
// aborting a stream mid-way.
//
// Usage: node openai_sdk_check.mjs BASE_URL API_KEY MODEL [NODE_MODULES_DIR]
//   BASE_URL          http://127.0.0.1:PORT/v1
//   API_KEY           a key the server accepts ("" when auth is off)
//   MODEL             the model id the server lists
//   NODE_MODULES_DIR  where `openai` is installed; default $THERMOCLINE_NODE_MODULES,
//                     then <repo>/.deps/npm/node_modules
// Prints one line per check; exits 1 on the first failure, 2 on bad usage or
// when the SDK cannot be loaded.
import assert from 'node:assert/strict';

import {
  check, expectApiError as expectError, importPackage, modulesDirFrom, passedCount, tokenIds,
} from './check_harness.mjs';

const [baseURL, apiKey, modelId, modulesArg] = process.argv.slice(2);
if (!baseURL || apiKey === undefined || !modelId) {
  console.error('usage: node openai_sdk_check.mjs BASE_URL API_KEY MODEL [NODE_MODULES_DIR]');
  process.exit(2);
}
const { default: OpenAI } = await importPackage(modulesDirFrom(modulesArg), 'openai/index.mjs', 'openai SDK');

// No retries: a retried 5xx would hide a server failure, and a retried
// request after a 4xx would be a test bug.
const client = new OpenAI({ baseURL, apiKey: apiKey || 'unused', maxRetries: 0, timeout: 60_000 });
const MAX_TOKENS = 16;

// Token counts only: prompt_tokens_details.cached_tokens depends on the
// prefix cache, which a repeated request hits.
const counts = (u) => ({ prompt: u.prompt_tokens, completion: u.completion_tokens, total: u.total_tokens });

function checkUsage(usage, maxTokens, finishReasons) {
  assert.ok(usage, 'usage present');
  assert.ok(Number.isInteger(usage.prompt_tokens) && usage.prompt_tokens > 0, `prompt_tokens ${usage.prompt_tokens}`);
  assert.ok(Number.isInteger(usage.completion_tokens) && usage.completion_tokens >= 0,
    `completion_tokens ${usage.completion_tokens}`);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens, 'total = prompt + completion');
  assert.ok(usage.completion_tokens <= maxTokens * finishReasons.length,
    `completion_tokens ${usage.completion_tokens} <= ${maxTokens} per choice`);
  if (finishReasons.length === 1 && finishReasons[0] === 'length') {
    assert.equal(usage.completion_tokens, maxTokens, 'finish_reason length: completion_tokens = max_tokens');
  }
}

// Collects a streamed response: every chunk, the text per choice index, and
// the finish reasons seen.
async function collect(stream, textOf) {
  const chunks = [];
  const text = new Map();
  const finishes = new Map();
  for await (const chunk of stream) {
    chunks.push(chunk);
    for (const c of chunk.choices) {
      text.set(c.index, (text.get(c.index) ?? '') + (textOf(c) ?? ''));
      if (c.finish_reason !== null && c.finish_reason !== undefined) {
        finishes.set(c.index, [...(finishes.get(c.index) ?? []), c.finish_reason]);
      }
    }
  }
  return { chunks, text, finishes };
}

// Invariants of any streamed response with include_usage.
function checkStreamShape({ chunks, finishes }, object, nChoices, maxTokens) {
  assert.ok(chunks.length >= 2, `at least 2 chunks, got ${chunks.length}`);
  const { id, created } = chunks[0];
  assert.equal(typeof id, 'string');
  for (const c of chunks) {
    assert.equal(c.id, id, 'same id on every chunk');
    assert.equal(c.created, created, 'same created on every chunk');
    assert.equal(c.object, object);
    assert.equal(c.model, modelId);
  }
  for (let i = 0; i < nChoices; i++) {
    assert.equal((finishes.get(i) ?? []).length, 1, `choice ${i}: exactly one finish_reason`);
    assert.ok(['stop', 'length'].includes(finishes.get(i)[0]), `finish_reason ${finishes.get(i)[0]}`);
  }
  assert.equal(finishes.size, nChoices, 'no finish_reason for unknown choice indices');
  const last = chunks[chunks.length - 1];
  assert.deepEqual(last.choices, [], 'the usage chunk has empty choices');
  checkUsage(last.usage, maxTokens, [...finishes.values()].map((f) => f[0]));
  for (const c of chunks.slice(0, -1)) {
    assert.ok(c.usage === undefined || c.usage === null, 'only the last chunk carries usage');
    assert.ok(c.choices.length > 0, 'only the last chunk has empty choices');
  }
  return last.usage;
}

// A two-character stop string taken from `text` (a few characters in), or
// one that never occurs when the text has none usable.
function pickStop(text) {
  const chars = [...text];
  for (let i = Math.min(3, chars.length - 2); i >= 1; i--) {
    const s = chars.slice(i, i + 2).join('');
    if (s.trim() !== '' && !s.includes('\uFFFD')) return s;
  }
  console.log(`     (no usable stop string in ${JSON.stringify(text)}; using one that never occurs)`);
  return '\u0007never\u0007';
}

const chatBase = {
  model: modelId,
  messages: [
    { role: 'system', content: 'You are a test.' },
    { role: 'user', content: 'Tell me a story about a lighthouse.' },
  ],
  max_tokens: MAX_TOKENS,
  temperature: 0.8,
  seed: 1234,
};
const completionBase = {
  model: modelId,
  prompt: 'Once upon a time, in a small village',
  max_tokens: MAX_TOKENS,
  temperature: 0.8,
  seed: 4321,
};

await check('models.list() lists the model, models.retrieve() gets it', async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  assert.ok(models.some((m) => m.id === modelId), `'${modelId}' in ${JSON.stringify(models.map((m) => m.id))}`);
  const m = models.find((x) => x.id === modelId);
  assert.equal(m.object, 'model');
  assert.equal(typeof m.created, 'number');
  assert.equal(typeof m.owned_by, 'string');
  // models.retrieve: the same entry; an unknown id is a NotFoundError.
  const one = await client.models.retrieve(modelId);
  assert.equal(one.id, modelId);
  assert.equal(one.created, m.created);
  const e = await expectError(client.models.retrieve('no-such-model'), OpenAI.NotFoundError, 404);
  assert.equal(e.code, 'model_not_found');
});

let chatText;
let chatUsage;
await check('chat.completions.create (non-streamed)', async () => {
  const r = await client.chat.completions.create(chatBase);
  assert.equal(r.object, 'chat.completion');
  assert.ok(r.id.startsWith('chatcmpl-'), `id ${r.id}`);
  assert.equal(r.model, modelId);
  assert.equal(r.choices.length, 1);
  const c = r.choices[0];
  assert.equal(c.index, 0);
  assert.equal(c.message.role, 'assistant');
  assert.equal(typeof c.message.content, 'string');
  assert.ok(['stop', 'length'].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
  checkUsage(r.usage, MAX_TOKENS, [c.finish_reason]);
  chatText = c.message.content;
  chatUsage = r.usage;
});

await check('chat.completions.create stream + include_usage equals non-streamed (seed, temperature 0.8)', async () => {
  const stream = await client.chat.completions.create({
    ...chatBase, stream: true, stream_options: { include_usage: true },
  });
  const got = await collect(stream, (c) => c.delta?.content);
  const usage = checkStreamShape(got, 'chat.completion.chunk', 1, MAX_TOKENS);
  const first = got.chunks[0].choices[0];
  assert.equal(first.delta.role, 'assistant', 'the first delta has role assistant');
  for (const c of got.chunks.slice(1)) {
    for (const ch of c.choices) assert.ok(ch.delta.role === undefined, 'role only in the first delta');
  }
  const finishChunk = got.chunks.find((c) => c.choices.some((ch) => ch.finish_reason));
  assert.deepEqual(finishChunk.choices[0].delta, {}, 'the finish chunk has an empty delta');
  assert.equal(got.text.get(0), chatText, 'streamed text equals the non-streamed text');
  assert.deepEqual(counts(usage), counts(chatUsage), 'streamed usage equals the non-streamed usage');
});

let completionText;
let completionUsage;
await check('completions.create (non-streamed)', async () => {
  const r = await client.completions.create(completionBase);
  assert.equal(r.object, 'text_completion');
  assert.ok(r.id.startsWith('cmpl-'), `id ${r.id}`);
  assert.equal(r.model, modelId);
  assert.equal(r.choices.length, 1);
  const c = r.choices[0];
  assert.equal(c.index, 0);
  assert.equal(typeof c.text, 'string');
  assert.ok(['stop', 'length'].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
  checkUsage(r.usage, MAX_TOKENS, [c.finish_reason]);
  completionText = c.text;
  completionUsage = r.usage;
});

await check('completions.create stream + include_usage equals non-streamed', async () => {
  const stream = await client.completions.create({
    ...completionBase, stream: true, stream_options: { include_usage: true },
  });
  const got = await collect(stream, (c) => c.text);
  const usage = checkStreamShape(got, 'text_completion', 1, MAX_TOKENS);
  assert.equal(got.text.get(0), completionText, 'streamed text equals the non-streamed text');
  assert.deepEqual(counts(usage), counts(completionUsage), 'streamed usage equals the non-streamed usage');
});

await check('seeded sampling reproduces across requests', async () => {
  const r = await client.completions.create(completionBase);
  assert.equal(r.choices[0].text, completionText);
});

await check('chat logprobs: true, top_logprobs: 2', async () => {
  const r = await client.chat.completions.create({ ...chatBase, max_tokens: 8, logprobs: true, top_logprobs: 2 });
  const c = r.choices[0];
  assert.ok(c.logprobs && Array.isArray(c.logprobs.content), 'choices[0].logprobs.content is an array');
  const entries = c.logprobs.content;
  assert.equal(entries.length, r.usage.completion_tokens, 'one logprobs entry per completion token');
  for (const e of entries) {
    assert.equal(typeof e.token, 'string');
    assert.ok(typeof e.logprob === 'number' && e.logprob <= 0, `logprob ${e.logprob}`);
    assert.ok(Array.isArray(e.bytes) && e.bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256),
      `bytes ${JSON.stringify(e.bytes)}`);
    assert.equal(e.top_logprobs.length, 2, 'top_logprobs has 2 entries');
    for (const t of e.top_logprobs) {
      assert.equal(typeof t.token, 'string');
      assert.ok(typeof t.logprob === 'number' && t.logprob <= 0);
      assert.ok(Array.isArray(t.bytes));
    }
    assert.ok(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob, 'top_logprobs sorted');
  }
  const content = c.message.content;
  if (!content.includes('\uFFFD') && c.finish_reason === 'length') {
    const bytes = Buffer.from(entries.flatMap((e) => e.bytes));
    assert.equal(bytes.toString('utf8'), content, 'the tokens\' bytes spell the content');
  }
});

await check('completions logprobs: 2', async () => {
  const r = await client.completions.create({ ...completionBase, max_tokens: 8, logprobs: 2 });
  const c = r.choices[0];
  const lp = c.logprobs;
  assert.ok(lp, 'choices[0].logprobs present');
  const n = r.usage.completion_tokens;
  assert.equal(lp.tokens.length, n, 'one token per completion token');
  assert.equal(lp.token_logprobs.length, n);
  assert.equal(lp.top_logprobs.length, n);
  assert.equal(lp.text_offset.length, n);
  for (let i = 0; i < n; i++) {
    assert.equal(typeof lp.tokens[i], 'string');
    assert.ok(lp.token_logprobs[i] <= 0, `token_logprobs[${i}] ${lp.token_logprobs[i]}`);
    const top = Object.entries(lp.top_logprobs[i]);
    assert.ok(top.length >= 1 && top.length <= 2, `top_logprobs[${i}] has ${top.length} entries`);
    for (const [, v] of top) assert.ok(typeof v === 'number' && v <= 0);
    if (i > 0) assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1], 'text_offset non-decreasing');
  }
  if (n > 0) assert.equal(lp.text_offset[0], 0, 'text_offset starts at 0 without echo');
});

await check('n: 2 gives 2 choices with indices 0 and 1 (chat and completions)', async () => {
  const chat = await client.chat.completions.create({ ...chatBase, max_tokens: 6, n: 2 });
  assert.deepEqual(chat.choices.map((c) => c.index).sort(), [0, 1]);
  for (const c of chat.choices) assert.equal(typeof c.message.content, 'string');
  checkUsage(chat.usage, 6, chat.choices.map((c) => c.finish_reason));
  const comp = await client.completions.create({ ...completionBase, max_tokens: 6, n: 2 });
  assert.deepEqual(comp.choices.map((c) => c.index).sort(), [0, 1]);
  checkUsage(comp.usage, 6, comp.choices.map((c) => c.finish_reason));
});

await check('n: 2 streamed: each index finishes once', async () => {
  const stream = await client.chat.completions.create({
    ...chatBase, max_tokens: 6, n: 2, stream: true, stream_options: { include_usage: true },
  });
  const got = await collect(stream, (c) => c.delta?.content);
  checkStreamShape(got, 'chat.completion.chunk', 2, 6);
  const roles = got.chunks.flatMap((c) => c.choices.filter((ch) => ch.delta.role).map((ch) => ch.index));
  assert.deepEqual(roles.sort(), [0, 1], 'one role delta per choice');
});

await check('stop strings are honoured (non-streamed and streamed)', async () => {
  // Pick a stop string from the seeded output, then ask again with it: the
  // output must be the text before its first occurrence.
  const full = completionText;
  const stop = pickStop(full);
  const expected = full.includes(stop) ? full.slice(0, full.indexOf(stop)) : full;
  const r = await client.completions.create({ ...completionBase, stop: [stop, '\u0007unused'] });
  const c = r.choices[0];
  assert.ok(!c.text.includes(stop), `output ${JSON.stringify(c.text)} contains the stop ${JSON.stringify(stop)}`);
  assert.equal(c.text, expected, `text before the stop ${JSON.stringify(stop)}`);
  if (full.includes(stop)) assert.equal(c.finish_reason, 'stop');
  console.log(`     (stop ${JSON.stringify(stop)}: ${JSON.stringify(full)} -> ${JSON.stringify(c.text)})`);
  const stream = await client.completions.create({ ...completionBase, stop, stream: true });
  const got = await collect(stream, (ch) => ch.text);
  assert.equal(got.text.get(0), expected, 'streamed text cut at the stop string');
  const chatStop = pickStop(chatText);
  const chat = await client.chat.completions.create({ ...chatBase, stop: chatStop });
  const chatOut = chat.choices[0].message.content;
  assert.ok(!chatOut.includes(chatStop), `chat output ${JSON.stringify(chatOut)} contains its stop string`);
  assert.equal(chatOut, chatText.includes(chatStop) ? chatText.slice(0, chatText.indexOf(chatStop)) : chatText);
});

await check('bad temperature -> BadRequestError (400)', async () => {
  const e = await expectError(client.chat.completions.create({ ...chatBase, temperature: 7 }),
    OpenAI.BadRequestError, 400);
  assert.equal(e.type, 'invalid_request_error');
  assert.equal(e.param, 'temperature');
  await expectError(client.completions.create({ ...completionBase, temperature: -1, stream: true }),
    OpenAI.BadRequestError, 400);
});

await check('unknown model -> NotFoundError (404, model_not_found)', async () => {
  const e = await expectError(client.chat.completions.create({ ...chatBase, model: 'no-such-model' }),
    OpenAI.NotFoundError, 404);
  assert.equal(e.code, 'model_not_found');
  await expectError(client.completions.create({ ...completionBase, model: 'no-such-model', stream: true }),
    OpenAI.NotFoundError, 404);
});

await check('wrong API key -> AuthenticationError (401, invalid_api_key)', async () => {
  const bad = new OpenAI({ baseURL, apiKey: 'wrong-key', maxRetries: 0 });
  const e = await expectError(bad.models.list(), OpenAI.AuthenticationError, 401);
  assert.equal(e.code, 'invalid_api_key');
  assert.equal(e.type, 'authentication_error');
  await expectError(bad.chat.completions.create(chatBase), OpenAI.AuthenticationError, 401);
});

await check('context overflow -> BadRequestError code context_length_exceeded', async () => {
  const long = 'the quick brown fox jumps over the lazy dog '.repeat(400);
  const e = await expectError(client.chat.completions.create({
    ...chatBase, messages: [{ role: 'user', content: long }],
  }), OpenAI.BadRequestError, 400);
  assert.equal(e.code, 'context_length_exceeded');
  const s = await expectError(client.completions.create({ ...completionBase, prompt: long, stream: true }),
    OpenAI.BadRequestError, 400);
  assert.equal(s.code, 'context_length_exceeded');
});

// A gauge from /metrics (the SDK has no call for it).
// Function calling. A random-weight model will not call a tool of its own
// accord, so the calls here are forced (tool_choice naming a function: the
// server constrains sampling to the call's form and the arguments to the
// function's parameters) with a bias towards '}' so that the call closes
// soon; what is checked is the wire shape, the arguments against the
// schema, streamed against non-streamed, and a call sent back in the history.
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'The weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 3 }, unit: { enum: ['C', 'F'] } },
      required: ['city'] } } },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
];
const closeBrace = (await tokenIds(baseURL, apiKey, '}')).at(-1);
const toolBase = {
  model: modelId,
  messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
  tools,
  tool_choice: { type: 'function', function: { name: 'get_weather' } },
  logit_bias: { [closeBrace]: 100 },
  max_tokens: 100, // the prompt (the tools as text: ChatML knows none) takes ~360 of the 512
  temperature: 0.7,
  seed: 77,
};

let forcedCall;
await check('tools: a forced call comes back as tool_calls (non-streamed and streamed alike)', async () => {
  const r = await client.chat.completions.create(toolBase);
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls', `finish_reason ${c.finish_reason}; message ${JSON.stringify(c.message)}`);
  assert.equal(c.message.content, null, 'content null beside the calls');
  assert.equal(c.message.tool_calls.length, 1);
  const call = c.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.ok(/^call_[0-9a-f]{24}$/.test(call.id), `id ${call.id}`);
  assert.equal(call.function.name, 'get_weather');
  // The arguments fit get_weather's parameters (the constraint follows them).
  const args = JSON.parse(call.function.arguments);
  assert.ok(args && typeof args === 'object' && !Array.isArray(args), `arguments ${call.function.arguments}`);
  assert.ok(typeof args.city === 'string' && [...args.city].length <= 3, `city in ${call.function.arguments}`);
  assert.ok(Object.keys(args).every((k) => ['city', 'unit'].includes(k)), `keys of ${call.function.arguments}`);
  if ('unit' in args) assert.ok(['C', 'F'].includes(args.unit));
  forcedCall = call;

  const stream = await client.chat.completions.create({ ...toolBase, stream: true });
  const calls = [];
  let content = '';
  const finishes = [];
  for await (const chunk of stream) {
    for (const ch of chunk.choices) {
      if (ch.delta?.content) content += ch.delta.content;
      for (const d of ch.delta?.tool_calls ?? []) {
        // What SDK users do: the first delta of an index has id and name, later ones add to arguments.
        if (!calls[d.index]) calls[d.index] = { id: d.id, name: d.function?.name, arguments: '' };
        calls[d.index].arguments += d.function?.arguments ?? '';
      }
      if (ch.finish_reason) finishes.push(ch.finish_reason);
    }
  }
  assert.deepEqual(finishes, ['tool_calls']);
  assert.equal(content, '', 'nothing of the call is shown as text');
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, call.function.name);
  assert.equal(calls[0].arguments, call.function.arguments, 'the same seed writes the same call');
  assert.ok(calls[0].id.startsWith('call_'));
});

await check('tools: a call and its result sent back are rendered, and tool_choice none answers in text', async () => {
  const r = await client.chat.completions.create({
    model: modelId,
    messages: [
      ...toolBase.messages,
      { role: 'assistant', content: null, tool_calls: [forcedCall] },
      { role: 'tool', tool_call_id: forcedCall.id, content: '{"temperature": 21}' },
    ],
    tools,
    tool_choice: 'none',
    max_tokens: 8,
    seed: 5,
  });
  const c = r.choices[0];
  assert.ok(['stop', 'length'].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
  assert.equal(typeof c.message.content, 'string');
  assert.equal(c.message.tool_calls, undefined);
});

await check('tools: with tool_choice auto a reply that is not a call streams as the same text', async () => {
  const base = { ...chatBase, tools, tool_choice: 'auto', max_tokens: 24 };
  const r = await client.chat.completions.create(base);
  assert.equal(r.choices[0].message.tool_calls, undefined);
  const stream = await client.chat.completions.create({ ...base, stream: true });
  const got = await collect(stream, (c) => c.delta?.content);
  assert.equal(got.text.get(0), r.choices[0].message.content);
});

await check('tools: malformed tools and unknown tool_choice names -> BadRequestError (400)', async () => {
  let e = await expectError(client.chat.completions.create({ ...toolBase, tools: [{ type: 'function' }] }),
    OpenAI.BadRequestError, 400);
  assert.equal(e.param, 'tools');
  e = await expectError(client.chat.completions.create({
    ...toolBase, tool_choice: { type: 'function', function: { name: 'send_mail' } },
  }), OpenAI.BadRequestError, 400);
  assert.equal(e.param, 'tool_choice');
  e = await expectError(client.chat.completions.create({
    ...toolBase, messages: [...toolBase.messages,
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'get_time', arguments: 'not json' } }] }],
  }), OpenAI.BadRequestError, 400);
  assert.equal(e.param, 'messages');
});

await check('response_format json_schema: the reply is an instance (bounds too), in declared order, streamed alike', async () => {
  const response_format = { type: 'json_schema', json_schema: { name: 'mood', strict: true, schema: {
    type: 'object',
    properties: { reasoning: { type: 'string', maxLength: 12 }, mood: { enum: ['happy', 'sad'] },
      score: { type: ['number', 'null'] }, when: { type: 'string', format: 'date-time' },
      stars: { type: 'integer', minimum: 1, maximum: 5 }, code: { type: 'string', pattern: '^[A-Z]{2}-\\d{2}$' } },
    required: ['reasoning', 'mood', 'score', 'when', 'stars', 'code'], additionalProperties: false,
  } } };
  const base = { ...chatBase, response_format, max_tokens: 200, seed: 11 };
  const r = await client.chat.completions.create(base);
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'stop', `closed within max_tokens: ${JSON.stringify(c.message.content)}`);
  const v = JSON.parse(c.message.content);
  assert.deepEqual(Object.keys(v), ['reasoning', 'mood', 'score', 'when', 'stars', 'code']);
  assert.match(v.code, /^[A-Z]{2}-\d{2}$/);
  assert.ok(Number.isInteger(v.stars) && v.stars >= 1 && v.stars <= 5, `stars ${v.stars}`);
  assert.match(v.when, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
  assert.ok(!Number.isNaN(Date.parse(v.when)), `a date-time: ${v.when}`);
  assert.ok(typeof v.reasoning === 'string' && [...v.reasoning].length <= 12);
  assert.ok(['happy', 'sad'].includes(v.mood));
  assert.ok(v.score === null || typeof v.score === 'number');
  const got = await collect(await client.chat.completions.create({ ...base, stream: true }), (ch) => ch.delta?.content);
  assert.equal(got.text.get(0), c.message.content);
  const e = await expectError(client.chat.completions.create({ ...chatBase, response_format: { type: 'json_schema',
    json_schema: { name: 'x', schema: { type: 'object', properties: { a: { type: 'number', multipleOf: 2 } } } } } }),
  OpenAI.BadRequestError, 400);
  assert.equal(e.param, 'response_format');
  assert.match(e.message, /'multipleOf' is not supported at \/properties\/a/);
});

await check('embeddings.create: base64 (the SDK default) and float agree; unit norm; batches; dimensions', async () => {
  const a = await client.embeddings.create({ model: modelId, input: 'The quick brown fox' });
  assert.equal(a.object, 'list');
  assert.equal(a.data.length, 1);
  const v = a.data[0].embedding;
  assert.ok(Array.isArray(v) && v.length > 0, 'the SDK decoded the base64 vector');
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  assert.ok(Math.abs(norm - 1) < 1e-5, `norm ${norm}`);
  assert.ok(a.usage.prompt_tokens > 0 && a.usage.total_tokens === a.usage.prompt_tokens);
  const f = await client.embeddings.create({ model: modelId, input: 'The quick brown fox', encoding_format: 'float' });
  assert.deepEqual(f.data[0].embedding, v);
  const batch = await client.embeddings.create({ model: modelId, input: ['one', 'The quick brown fox', 'three'] });
  assert.deepEqual(batch.data.map((d) => d.index), [0, 1, 2]);
  assert.deepEqual(batch.data[1].embedding, v);
  const cut = await client.embeddings.create({ model: modelId, input: 'The quick brown fox', dimensions: 16 });
  assert.equal(cut.data[0].embedding.length, 16);
  let err;
  try {
    await client.embeddings.create({ model: modelId, input: '' });
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof OpenAI.BadRequestError, `expected a BadRequestError, got ${err}`);
  assert.equal(err.param, 'input');
});

async function metric(name) {
  const url = baseURL.replace(/\/v1\/?$/, '') + '/metrics';
  const res = await fetch(url, { headers: { Authorization: `Bearer ${apiKey}` } });
  assert.equal(res.status, 200, `GET /metrics: ${res.status}`);
  const line = (await res.text()).split('\n').find((l) => l.startsWith(name + ' '));
  assert.ok(line, `${name} in /metrics`);
  return Number(line.slice(name.length + 1));
}

await check('AbortController abort mid-stream; the server cancels and keeps serving', async () => {
  // A long generation (ignore_eos) so that the abort lands while the server
  // is still generating; the SDK may still hand out chunks it had already
  // read, but iteration must end without an error other than an abort.
  const maxTokens = 200;
  const controller = new AbortController();
  const stream = await client.chat.completions.create(
    { ...chatBase, max_tokens: maxTokens, ignore_eos: true, seed: 99, stream: true }, { signal: controller.signal });
  let chunks = 0;
  let afterAbort = 0;
  let finished = false;
  try {
    for await (const chunk of stream) {
      chunks++;
      if (controller.signal.aborted) afterAbort++;
      if (chunk.choices.some((c) => c.finish_reason)) finished = true;
      if (chunks === 2) controller.abort();
    }
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIUserAbortError || e.name === 'AbortError',
      `abort surfaces as APIUserAbortError or AbortError, got ${e.constructor.name}: ${e.message}`);
  }
  assert.ok(chunks >= 2, 'got chunks before the abort');
  console.log(`     (aborted after 2 chunks; ${afterAbort} already-read chunks followed; ` +
    `${finished ? 'the server had already finished' : 'mid-generation'})`);
  // The server drops the aborted request within a few engine steps.
  const deadline = Date.now() + 10_000;
  let running;
  while ((running = await metric('thermocline_requests_running')) !== 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(running, 0, 'the aborted request is no longer running 10 s later');

  // Leaving the loop with `break` aborts the request too.
  const broken = await client.completions.create({ ...completionBase, max_tokens: 24, stream: true });
  for await (const chunk of broken) {
    assert.ok(chunk.id);
    break;
  }
  // Aborting before the response arrives is an APIUserAbortError from create().
  const early = new AbortController();
  early.abort();
  let err;
  try {
    await client.chat.completions.create({ ...chatBase, stream: true }, { signal: early.signal });
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof OpenAI.APIUserAbortError, `pre-aborted: ${err && err.constructor.name}`);
  const r = await client.chat.completions.create(chatBase);
  assert.equal(r.choices[0].message.content, chatText, 'a following request succeeds with the same output');
});

console.log(`all ${passedCount()} checks passed`);
