// Drives a running `thermocline serve` through the official OpenAI Node
// SDK's Responses API (client.responses): replies equal to the chat route's
// for the same conversation, streamed events in order with their sequence
// numbers and item ids, deltas that spell the final text, the SDK's stream
// helper, a forced function call and its output sent back, text.format
// json_schema, and the 400s of what is not served.
//
// Usage: node openai_responses_check.mjs BASE_URL API_KEY MODEL [NODE_MODULES_DIR]
//   as openai_sdk_check.mjs. Prints one line per check; exits 1 on the first
//   failure, 2 on bad usage or when the SDK cannot be loaded.
import assert from 'node:assert/strict';

import {
  check, expectApiError as expectError, importPackage, modulesDirFrom, passedCount, tokenIds,
} from './check_harness.mjs';

const [baseURL, apiKey, modelId, modulesArg] = process.argv.slice(2);
if (!baseURL || apiKey === undefined || !modelId) {
  console.error('usage: node openai_responses_check.mjs BASE_URL API_KEY MODEL [NODE_MODULES_DIR]');
  process.exit(2);
}
const { default: OpenAI } = await importPackage(modulesDirFrom(modulesArg), 'openai/index.mjs', 'openai SDK');
const client = new OpenAI({ baseURL, apiKey: apiKey || 'unused', maxRetries: 0, timeout: 60_000 });

// The text of a raw response object's message items (what the SDK's
// output_text holds).
function outputText(response) {
  return response.output.filter((o) => o.type === 'message')
    .flatMap((o) => o.content).filter((c) => c.type === 'output_text').map((c) => c.text).join('');
}

const messages = [
  { role: 'system', content: 'You are a test.' },
  { role: 'user', content: 'Tell me a story about a lighthouse.' },
];
const base = { model: modelId, input: messages, max_output_tokens: 16, temperature: 0 };

let plainText;
await check('responses.create: the reply, its usage and status equal the chat route\'s', async () => {
  const chat = await client.chat.completions.create({ model: modelId, messages, max_tokens: 16, temperature: 0 });
  const r = await client.responses.create(base);
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_[0-9a-f]{24}$/);
  assert.equal(r.model, modelId);
  assert.equal(r.output_text, chat.choices[0].message.content);
  assert.equal(r.output.length, 1);
  assert.equal(r.output[0].type, 'message');
  assert.equal(r.output[0].role, 'assistant');
  assert.match(r.output[0].id, /^msg_/);
  const cut = chat.choices[0].finish_reason === 'length';
  assert.equal(r.status, cut ? 'incomplete' : 'completed');
  if (cut) assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(r.usage.output_tokens, chat.usage.completion_tokens);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.equal(r.max_output_tokens, 16);
  plainText = r.output_text;
  // POST /v1/responses/input_tokens counts the same prompt.
  const url = baseURL.replace(/\/?$/, '/responses/input_tokens');
  const counted = await fetch(url, { method: 'POST', headers: { Authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ model: modelId, input: messages }) });
  assert.equal(counted.status, 200);
  assert.deepEqual(await counted.json(), { object: 'response.input_tokens', input_tokens: r.usage.input_tokens });
  // `instructions` and a string input mean the same conversation.
  const r2 = await client.responses.create({ ...base, instructions: messages[0].content, input: messages[1].content });
  assert.equal(r2.output_text, plainText);
  assert.equal(r2.instructions, messages[0].content);
});

await check('responses stream: events in order with sequence numbers, deltas spelling the text', async () => {
  const events = [];
  for await (const e of await client.responses.create({ ...base, stream: true })) events.push(e);
  events.forEach((e, i) => assert.equal(e.sequence_number, i, `event ${i} (${e.type})`));
  const types = events.map((e) => e.type);
  assert.deepEqual(types.slice(0, 4),
    ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
  assert.deepEqual(types.slice(-4, -1),
    ['response.output_text.done', 'response.content_part.done', 'response.output_item.done']);
  const last = events.at(-1);
  assert.ok(['response.completed', 'response.incomplete'].includes(last.type), last.type);
  assert.equal(events[0].response.status, 'in_progress');
  assert.equal(last.response.id, events[0].response.id);
  const itemId = events[2].item.id;
  const deltas = events.filter((e) => e.type === 'response.output_text.delta');
  assert.ok(deltas.length > 0);
  assert.ok(deltas.every((d) => d.item_id === itemId && d.output_index === 0 && d.content_index === 0));
  const text = deltas.map((d) => d.delta).join('');
  assert.equal(text, plainText, 'the stream writes what the plain reply holds');
  assert.equal(events.at(-4).text, text);
  assert.equal(outputText(last.response), text);
  // The SDK's helper gathers the same.
  const helper = client.responses.stream(base);
  let seen = '';
  helper.on('response.output_text.delta', (e) => { seen += e.delta; });
  const final = await helper.finalResponse();
  assert.equal(outputText(final), plainText);
  assert.equal(seen, plainText);
});

const tools = [{
  type: 'function', name: 'get_weather', description: 'The weather in a city.', strict: true,
  parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 3 }, unit: { enum: ['C', 'F'] } },
    required: ['city'] },
}];
const closeBrace = (await tokenIds(baseURL, apiKey, '}')).at(-1);

await check('responses: a forced function call, streamed alike, and its output sent back', async () => {
  const callBase = {
    model: modelId, input: 'What is the weather in Paris?', tools,
    tool_choice: { type: 'function', name: 'get_weather' },
    logit_bias: { [closeBrace]: 100 }, // an extension: the random model closes the arguments soon
    max_output_tokens: 100, temperature: 0.7, seed: 77,
  };
  const r = await client.responses.create(callBase);
  assert.equal(r.status, 'completed', JSON.stringify(r.output));
  const calls = r.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1, JSON.stringify(r.output));
  const call = calls[0];
  assert.equal(call.name, 'get_weather');
  assert.match(call.call_id, /^call_[0-9a-f]{24}$/);
  assert.match(call.id, /^fc_/);
  const args = JSON.parse(call.arguments);
  assert.ok(typeof args.city === 'string' && [...args.city].length <= 3, call.arguments);
  assert.equal(r.output_text, '');

  const events = [];
  for await (const e of await client.responses.create({ ...callBase, stream: true })) events.push(e);
  const done = events.filter((e) => e.type === 'response.function_call_arguments.done');
  assert.equal(done.length, 1);
  assert.equal(done[0].arguments, call.arguments, 'the same seed writes the same call');
  const added = events.find((e) => e.type === 'response.output_item.added' && e.item.type === 'function_call');
  assert.equal(added.item.id, done[0].item_id);

  const back = await client.responses.create({
    model: modelId,
    input: [
      { role: 'user', content: 'What is the weather in Paris?' },
      call,
      { type: 'function_call_output', call_id: call.call_id, output: '{"temperature": 21}' },
    ],
    tools, tool_choice: 'none', max_output_tokens: 8, seed: 5,
  });
  assert.equal(back.output.length, 1);
  assert.equal(back.output[0].type, 'message');
  assert.equal(typeof back.output_text, 'string');
  const without = await client.responses.create({
    model: modelId, input: 'What is the weather in Paris?', tools, tool_choice: 'none', max_output_tokens: 8, seed: 5,
  });
  assert.ok(back.usage.input_tokens > without.usage.input_tokens + 10, 'the call and its output are in the prompt');
});

await check('responses: text.format json_schema gives an instance in declared order', async () => {
  const r = await client.responses.create({
    ...base, max_output_tokens: 200, temperature: 0.8, seed: 11,
    text: { format: { type: 'json_schema', name: 'mood', strict: true, schema: {
      type: 'object', properties: { reasoning: { type: 'string', maxLength: 12 }, mood: { enum: ['happy', 'sad'] } },
      required: ['reasoning', 'mood'], additionalProperties: false,
    } } },
  });
  assert.equal(r.status, 'completed', r.output_text);
  const v = JSON.parse(r.output_text);
  assert.deepEqual(Object.keys(v), ['reasoning', 'mood']);
  assert.ok(['happy', 'sad'].includes(v.mood));
  assert.equal(r.text.format.type, 'json_schema');
});

await check('responses: what is not served is a BadRequestError naming the field', async () => {
  let e = await expectError(client.responses.create({ ...base, conversation: 'conv_1' }),
    OpenAI.BadRequestError, 400);
  assert.equal(e.param, 'conversation');
  e = await expectError(client.responses.create({ ...base, tools: [{ type: 'web_search_preview' }] }),
    OpenAI.BadRequestError, 400);
  assert.equal(e.param, 'tools');
  e = await expectError(client.responses.create({ ...base, input: [{ role: 'user', content: [
    { type: 'input_image', file_id: 'file_1' }] }] }), OpenAI.BadRequestError, 400);
  assert.equal(e.param, 'input');
  e = await expectError(client.responses.create({ ...base, input: [{ role: 'user', content: [
    { type: 'input_image', image_url: 'data:image/png;base64,AAAA' }] }] }), OpenAI.BadRequestError, 400);
  assert.match(e.message, /without a vision projector/);
  e = await expectError(client.responses.create({ model: modelId }), OpenAI.BadRequestError, 400);
  assert.equal(e.param, 'input');
});

await check('responses: previous_response_id goes on from a stored response; retrieve and delete', async () => {
  const first = await client.responses.create({
    model: modelId, input: 'My name is Ada.', max_output_tokens: 8, temperature: 0,
  });
  assert.equal(first.store, true);
  const second = await client.responses.create({
    model: modelId, previous_response_id: first.id, input: 'What is my name?', max_output_tokens: 8, temperature: 0,
  });
  assert.equal(second.previous_response_id, first.id);
  // The same as sending the whole conversation.
  const whole = await client.responses.create({
    model: modelId, max_output_tokens: 8, temperature: 0, store: false,
    input: [{ role: 'user', content: 'My name is Ada.' }, ...first.output,
      { role: 'user', content: 'What is my name?' }],
  });
  assert.equal(second.output_text, whole.output_text);
  assert.equal(second.usage.input_tokens, whole.usage.input_tokens);
  assert.ok(second.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens);
  const got = await client.responses.retrieve(first.id);
  assert.equal(got.id, first.id);
  assert.equal(outputText(got), first.output_text);
  const deleted = await client.responses.del(first.id);
  assert.ok(deleted === undefined || deleted.deleted === true || deleted.id === first.id, JSON.stringify(deleted));
  let e = await expectError(client.responses.retrieve(first.id), OpenAI.NotFoundError, 404);
  e = await expectError(client.responses.create({ ...base, previous_response_id: first.id }),
    OpenAI.NotFoundError, 404);
  assert.equal(e.param, 'previous_response_id');
  // store: false keeps nothing.
  await expectError(client.responses.retrieve(whole.id), OpenAI.NotFoundError, 404);
});

console.log(`all ${passedCount()} checks passed`);
