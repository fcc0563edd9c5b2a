// The trained model's tool use through `sluice serve`'s Messages API and the official `@anthropic-ai/sdk` npm
// client: a tool_use / tool_result loop without thinking (the API's default) and with thinking enabled (a
// thinking block before the call), get_capital for a country the model never saw, and a streamed call whose
// input_json_delta events assemble the same input. Greedy (temperature 0). Exits non-zero on a failed check.
// Usage: node anthropic_tools.mjs PACKAGE_DIR BASE_URL
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const [packageDir, baseUrl] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const Anthropic = require(packageDir).default ?? require(packageDir);
const client = new Anthropic({ baseURL: baseUrl, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
const model = 'sluice-tiny-moe';

// The model's tools in the Messages API's form (the server hands them to the template as OpenAI functions).
const tools = [
    {
        name: 'calculator', description: 'Evaluate an arithmetic expression.',
        input_schema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
    },
    {
        name: 'get_capital', description: 'Look up the capital city of a country.',
        input_schema: { type: 'object', properties: { country: { type: 'string' } }, required: ['country'] },
    },
];

function runTool(block) {
    if (block.name === 'calculator') {
        const m = /^(\d+) ([-+*]) (\d+)$/.exec(block.input.expression);
        assert.ok(m, `an expression the calculator reads: ${block.input.expression}`);
        const [a, b] = [Number(m[1]), Number(m[3])];
        return String(m[2] === '+' ? a + b : m[2] === '-' ? a - b : a * b);
    }
    assert.equal(block.name, 'get_capital');
    assert.equal(block.input.country, 'Nauru');
    return JSON.stringify({ capital: 'Yaren' });
}

/// Asks, runs the tool_use blocks, sends tool_result blocks back, until the model ends its turn.
async function toolLoop(question, extra = {}) {
    const messages = [{ role: 'user', content: question }];
    const uses = [];
    const firsts = [];
    for (let round = 0; round < 3; ++round) {
        const reply = await client.messages.create({ model, max_tokens: 96, temperature: 0, tools, messages, ...extra });
        firsts.push(reply);
        if (reply.stop_reason !== 'tool_use') {
            assert.equal(reply.stop_reason, 'end_turn');
            return { reply, uses, replies: firsts };
        }
        messages.push({ role: 'assistant', content: reply.content });
        const results = [];
        for (const block of reply.content.filter((b) => b.type === 'tool_use')) {
            assert.match(block.id, /^toolu_/);
            uses.push({ name: block.name, input: block.input });
            results.push({ type: 'tool_result', tool_use_id: block.id, content: runTool(block) });
        }
        assert.ok(results.length > 0);
        messages.push({ role: 'user', content: results });
    }
    assert.fail(`no answer after three rounds of tool use: ${JSON.stringify(uses)}`);
}

const text = (reply) => reply.content.filter((b) => b.type === 'text').map((b) => b.text).join('');

// 1. Without thinking (the Messages API's default): tool_use, then the answer from the tool_result.
{
    const { reply, uses, replies } = await toolLoop('What is 31 * 58?');
    assert.deepEqual(uses, [{ name: 'calculator', input: { expression: '31 * 58' } }]);
    assert.equal(text(reply), '31 * 58 = 1798.');
    for (const r of replies) {
        assert.ok(!r.content.some((b) => b.type === 'thinking'), 'no thinking block unless enabled');
    }
}

// 2. With thinking enabled: a thinking block comes before the tool_use block, and the history carries it back.
{
    const { reply, uses, replies } = await toolLoop('What is 31 * 58?', { thinking: { type: 'enabled', budget_tokens: 1024 } });
    assert.deepEqual(uses, [{ name: 'calculator', input: { expression: '31 * 58' } }]);
    assert.deepEqual(replies[0].content.map((b) => b.type), ['thinking', 'tool_use']);
    assert.match(replies[0].content[0].thinking, /calculator/);
    assert.equal(text(reply), '31 * 58 = 1798.');
}

// 3. get_capital for a country that occurs nowhere in training.
{
    const { reply, uses } = await toolLoop('What is the capital of Nauru?');
    assert.deepEqual(uses, [{ name: 'get_capital', input: { country: 'Nauru' } }]);
    assert.equal(text(reply), 'The capital of Nauru is Yaren.');
}

// 4. Streamed: input_json_delta events assemble the same input as the whole reply.
{
    const request = { model, max_tokens: 96, temperature: 0, tools, messages: [{ role: 'user', content: 'Calculate 4613 - 387.' }] };
    const whole = await client.messages.create(request);
    const stream = client.messages.stream(request);
    let partial = '';
    stream.on('inputJson', (delta) => { partial += delta; });
    const final = await stream.finalMessage();
    assert.equal(final.stop_reason, 'tool_use');
    const use = final.content.find((b) => b.type === 'tool_use');
    assert.deepEqual(use.input, { expression: '4613 - 387' });
    assert.deepEqual(JSON.parse(partial), use.input);
    assert.deepEqual(whole.content.find((b) => b.type === 'tool_use').input, use.input);
}

console.log('anthropic tools: ok');
