// Drives a running `sluice serve` with the official `openai` npm package: chat (streamed and not),
// completions, an API error, and an abort mid-stream; then checks /health. Exits non-zero on any failure.
// Usage: node openai_client.mjs PACKAGE_DIR BASE_URL API_KEY
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const [packageDir, baseUrl, apiKey] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const OpenAI = require(packageDir).default ?? require(packageDir);
const client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey, maxRetries: 0 });
const model = 'tiny-qwen3moe';
const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }];

// Non-streamed chat.
const chat = await client.chat.completions.create({ model, messages, max_tokens: 5, ignore_eos: true, seed: 1 });
assert.equal(chat.object, 'chat.completion');
assert.equal(chat.choices[0].message.role, 'assistant');
assert.equal(typeof chat.choices[0].message.content, 'string');
assert.equal(chat.choices[0].finish_reason, 'length');
assert.equal(chat.usage.completion_tokens, 5);

// Streamed chat with usage.
const stream = await client.chat.completions.create({
    model, messages, max_tokens: 5, ignore_eos: true, stream: true, stream_options: { include_usage: true },
});
let role = null, text = '', finish = null, usage = null, ids = new Set();
for await (const chunk of stream) {
    ids.add(chunk.id);
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
        if (c.delta.role) role ??= c.delta.role;
        if (c.delta.content) text += c.delta.content;
        if (c.finish_reason) finish = c.finish_reason;
    }
}
assert.equal(role, 'assistant');
assert.equal(finish, 'length');
assert.equal(usage?.completion_tokens, 5);
assert.equal(ids.size, 1);

// Legacy completions.
const completion = await client.completions.create({ model, prompt: 'Once upon', max_tokens: 4, ignore_eos: true });
assert.equal(completion.object, 'text_completion');
assert.equal(typeof completion.choices[0].text, 'string');
assert.equal(completion.usage.completion_tokens, 4);

// An invalid request surfaces as the client's BadRequestError with the server's message.
await assert.rejects(client.chat.completions.create({ model, messages: [] }), (e) => {
    assert.equal(e.status, 400);
    assert.match(e.message, /messages must not be empty/);
    return true;
});

// Abort mid-stream: the client stops, the server frees the slot.
const controller = new AbortController();
const long = await client.chat.completions.create(
    { model, messages, max_tokens: 3000, ignore_eos: true, stream: true }, { signal: controller.signal });
let seen = 0;
try {
    for await (const chunk of long) {
        if (++seen === 3) controller.abort();
    }
} catch (e) {
    // openai v6 ends an aborted stream quietly; older versions throw APIUserAbortError.
    if (!(e instanceof OpenAI.APIUserAbortError) && e.name !== 'AbortError') throw e;
}
assert.ok(controller.signal.aborted);
assert.ok(seen < 100, `the stream ended by the abort (after ${seen} chunks)`);

const health = await fetch(`${baseUrl}/health`);
assert.equal(health.status, 200);
console.log('openai client: ok');
