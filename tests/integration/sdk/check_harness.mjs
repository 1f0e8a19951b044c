// What the SDK check scripts share: where the npm packages are, loading
// one (exit 2 when it is missing), check() that prints one line per check
// and ends the script with exit 1 at the first failure, the OpenAI SDK's
// typed-error expectation and token ids from /tokenize.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// The node_modules folder: the script's argument, else
// $THERMOCLINE_NODE_MODULES, else <repo>/.deps/npm/node_modules.
export function modulesDirFrom(arg) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return arg || process.env.THERMOCLINE_NODE_MODULES || path.resolve(here, '../../../.deps/npm/node_modules');
}

// Imports <modulesDir>/<file> (a package's ES module entry); exits 2 when absent.
export async function importPackage(modulesDir, file, what) {
  const entry = path.join(modulesDir, file);
  if (!existsSync(entry)) {
    console.error(`${what} not found at ${entry} (run scripts/setup.sh)`);
    process.exit(2);
  }
  return import(pathToFileURL(entry).href);
}

let passed = 0;
export async function check(name, fn) {
  try {
    await fn();
  } catch (e) {
    console.log(`FAIL ${name}`);
    console.log(e && e.stack ? e.stack : String(e));
    if (e && e.error) console.log('error body:', JSON.stringify(e.error));
    process.exit(1);
  }
  passed++;
  console.log(`ok   ${name}`);
}
export const passedCount = () => passed;

// Expects `promise` to reject with the OpenAI SDK's `ErrorClass` of HTTP
// `status` and an OpenAI error body; returns the error.
export async function expectApiError(promise, ErrorClass, status) {
  let err;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected ${ErrorClass.name}, the request succeeded`);
  assert.ok(err instanceof ErrorClass,
    `expected ${ErrorClass.name}, got ${err.constructor.name}: ${err.message}`);
  assert.equal(err.status, status);
  assert.equal(typeof err.message, 'string');
  assert.ok(err.error && typeof err.error.message === 'string', 'an OpenAI error body with a message');
  return err;
}

// The ids /tokenize gives `text` on the server at `baseURL` (its /v1 URL).
export async function tokenIds(baseURL, apiKey, text) {
  const url = baseURL.replace(/\/v1\/?$/, '') + '/tokenize';
  const res = await fetch(url, { method: 'POST', headers: { Authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ content: text }) });
  assert.equal(res.status, 200, `POST /tokenize: ${res.status}`);
  return (await res.json()).tokens;
}
