// Drives a running `sluice serve` with the official `@anthropic-ai/sdk` npm package: messages.create whole and
// streamed (messages.stream, its events and final message), a tool definition with a tool_use round trip in the
// history, count_tokens, an API error, and both ways of sending the key. Exits non-zero on any failure.
// Usage: node anthropic_client.mjs PACKAGE_DIR BASE_URL API_KEY
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const [packageDir, baseUrl, apiKey] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const Anthropic = require(packageDir).default ?? require(packageDir);
const client = new Anthropic({ baseURL: baseUrl, apiKey, maxRetries: 0 });
const model = 'claude-sonnet-4-5';
const messages = [{ role: 'user', content: 'Hello' }];

// Whole answer.
const message = await client.messages.create({ model, max_tokens: 5, messages, system: 'Be brief.', temperature: 0 });
assert.equal(message.type, 'message');
assert.equal(message.role, 'assistant');
assert.match(message.id, /^msg_/);
assert.equal(message.content[0].type, 'text');
assert.equal(typeof message.content[0].text, 'string');
assert.ok(['max_tokens', 'end_turn'].includes(message.stop_reason), message.stop_reason);
assert.ok(message.usage.input_tokens > 0);
assert.ok(message.usage.output_tokens <= 5);

// Streamed through the SDK's MessageStream: its text events add up to the final message it assembles.
const stream = client.messages.stream({ model, max_tokens: 5, messages, system: 'Be brief.', temperature: 0 });
let streamedText = '';
const seen = new Set();
stream.on('text', (delta) => { streamedText += delta; });
stream.on('streamEvent', (event) => { seen.add(event.type); });
const final = await stream.finalMessage();
assert.equal(final.content[0].text, streamedText);
assert.equal(final.content[0].text, message.content[0].text, 'greedy: the same text whole and streamed');
assert.equal(final.stop_reason, message.stop_reason);
assert.equal(final.usage.output_tokens, message.usage.output_tokens);
for (const type of ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop',
    'message_delta', 'message_stop']) {
    assert.ok(seen.has(type), `saw ${type}`);
}

// A tool definition, and a tool_use round trip in the history.
const tools = [{
    name: 'get_weather', description: 'The weather in a city',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}];
const history = [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'sunny' }] },
];
const withTools = await client.messages.create({ model, max_tokens: 3, tools, messages: history });
assert.equal(withTools.type, 'message');

// count_tokens: the same prompt as a generation's input.
const counted = await client.messages.countTokens({ model, tools, messages: history });
const counted2 = await client.messages.countTokens({ model, messages });
assert.ok(counted.input_tokens > counted2.input_tokens);
const fresh = await client.messages.create({ model, max_tokens: 1, messages: [{ role: 'user', content: 'Counting' }] });
const countedFresh = await client.messages.countTokens({ model, messages: [{ role: 'user', content: 'Counting' }] });
assert.equal(countedFresh.input_tokens, fresh.usage.input_tokens + fresh.usage.cache_read_input_tokens);

// An invalid request surfaces as the SDK's BadRequestError carrying the server's Anthropic-shaped error.
await assert.rejects(client.messages.create({ model, max_tokens: 5, messages: [] }), (e) => {
    assert.ok(e instanceof Anthropic.BadRequestError, e.constructor.name);
    assert.equal(e.status, 400);
    assert.equal(e.error?.type, 'error');
    assert.equal(e.error?.error?.type, 'invalid_request_error');
    return true;
});
// tool_choice naming a tool forces one call of it (a grammar does, over the bundled model's Hermes template).
const zoneTools = [tools[0], {
    name: 'get_time', description: 'The time in a zone',
    input_schema: { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'] },
}];
const forced = await client.messages.create({
    model, max_tokens: 400, messages, tools: zoneTools,
    tool_choice: { type: 'tool', name: 'get_time', disable_parallel_tool_use: true },
});
assert.equal(forced.stop_reason, 'tool_use', JSON.stringify(forced));
assert.equal(forced.content.length, 1, JSON.stringify(forced));
assert.equal(forced.content[0].type, 'tool_use');
assert.equal(forced.content[0].name, 'get_time');
assert.ok(['UTC', 'CET'].includes(forced.content[0].input.zone), JSON.stringify(forced.content[0].input));
await assert.rejects(
    client.messages.create({ model, max_tokens: 5, messages, tool_choice: { type: 'any' } }),
    (e) => e.status === 400 && /needs tools/.test(e.message));

// The key as a bearer token (authToken) works too; a wrong key is an AuthenticationError.
const bearer = new Anthropic({ baseURL: baseUrl, authToken: apiKey, apiKey: null, maxRetries: 0 });
assert.equal((await bearer.messages.create({ model, max_tokens: 1, messages })).type, 'message');
const wrong = new Anthropic({ baseURL: baseUrl, apiKey: 'wrong', maxRetries: 0 });
await assert.rejects(wrong.messages.create({ model, max_tokens: 1, messages }),
    (e) => e instanceof Anthropic.AuthenticationError && e.status === 401);

console.log('anthropic client: ok');
