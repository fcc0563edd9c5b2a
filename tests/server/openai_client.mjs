// Drives a running `sluice serve` with the official `openai` npm package: chat (streamed and not),
// completions, an API error, an abort mid-stream, and structured output through its parse() helper (a json_schema
// answer and a forced strict tool call, whose message then goes back with the tool's result); then checks
// /health. Exits non-zero on any failure.
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

// Logprobs with alternatives and token bytes, whole and streamed (the same seed gives the same entries).
const lpRequest = { model, messages, max_tokens: 4, ignore_eos: true, seed: 9, logprobs: true, top_logprobs: 2 };
const lp = await client.chat.completions.create(lpRequest);
const entries = lp.choices[0].logprobs.content;
assert.equal(entries.length, 4);
for (const e of entries) {
    assert.equal(typeof e.token, 'string');
    assert.ok(e.logprob <= 0);
    assert.ok(Array.isArray(e.bytes));
    assert.equal(e.top_logprobs.length, 2);
    assert.ok(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob);
}
const lpStream = await client.chat.completions.create({ ...lpRequest, stream: true });
const streamedEntries = [];
for await (const chunk of lpStream) {
    for (const c of chunk.choices) streamedEntries.push(...(c.logprobs?.content ?? []));
}
assert.deepEqual(streamedEntries, entries);

// n > 1: indexed choices.
const several = await client.chat.completions.create({ model, messages, max_tokens: 3, ignore_eos: true, n: 2 });
assert.deepEqual(several.choices.map((c) => c.index), [0, 1]);
assert.equal(several.usage.completion_tokens, 6);

// Legacy completions' logprobs.
const clp = await client.completions.create({ model, prompt: 'Once upon', max_tokens: 3, ignore_eos: true, logprobs: 1 });
assert.equal(clp.choices[0].logprobs.tokens.length, 3);
assert.equal(clp.choices[0].logprobs.text_offset[0], 0);

// A multi-turn history as the client builds it: an assistant tool call (arguments as a string) and its result.
const history = await client.chat.completions.create({
    model, max_tokens: 2,
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
    messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ],
});
assert.equal(history.choices.length, 1);

// Structured output through the SDK's parse() helper: a strict json_schema answer comes back parsed, and a
// strict tool forced with tool_choice "required" comes back with parsed arguments.
const schema = {
    type: 'object', additionalProperties: false, required: ['answer', 'confidence'],
    properties: { answer: { type: 'string', maxLength: 12 }, confidence: { enum: ['low', 'high'] } },
};
const structured = await client.chat.completions.parse({
    model, messages, max_tokens: 200, seed: 4,
    response_format: { type: 'json_schema', json_schema: { name: 'reply', strict: true, schema } },
});
const parsed = structured.choices[0].message.parsed;
assert.equal(typeof parsed.answer, 'string');
assert.ok(['low', 'high'].includes(parsed.confidence));
const forced = await client.chat.completions.parse({
    model, messages, max_tokens: 200, seed: 5, tool_choice: 'required', parallel_tool_calls: false,
    tools: [{ type: 'function', function: { name: 'reply', strict: true, parameters: schema } }],
});
assert.equal(forced.choices[0].finish_reason, 'tool_calls');
const call = forced.choices[0].message.tool_calls[0];
assert.equal(call.function.name, 'reply');
assert.ok(['low', 'high'].includes(call.function.parsed_arguments.confidence));

// The loop an agent runs: the returned message (with the SDK's parsed fields) goes back into the history with the
// tool's result, and the model answers; the history renders and the answer is an ordinary message.
const loop = await client.chat.completions.create({
    model, max_tokens: 8, temperature: 0,
    tools: [{ type: 'function', function: { name: 'reply', strict: true, parameters: schema } }],
    messages: [...messages, forced.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'noted' }],
});
assert.equal(loop.choices[0].message.role, 'assistant');
assert.ok(['stop', 'length', 'tool_calls'].includes(loop.choices[0].finish_reason), loop.choices[0].finish_reason);
assert.ok(loop.usage.prompt_tokens > forced.usage.prompt_tokens, 'the call and its result are in the prompt');

const health = await fetch(`${baseUrl}/health`);
assert.equal(health.status, 200);
console.log('openai client: ok');
