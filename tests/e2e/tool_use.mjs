// The trained model's tool, reasoning, logprobs and structured-output skills through a running `sluice serve` and
// the official `openai` npm client: a multi-turn tool loop (the model calls calculator / get_capital, this script
// runs the tool and sends the result back, the model answers with it), two calls in one turn, streamed tool calls,
// the think block split off as reasoning_content (and none with enable_thinking false), logprobs, and a JSON
// schema through the client's parse() helper. Greedy (temperature 0) throughout. The prompts are fixed ones the
// model answers right, held out from training where the corpus has a held-out split (the calculations, the
// countries, the reversed word, the counted letter); models/README.md gives its held-out rates. Exits non-zero on the first failed check.
// Usage: node tool_use.mjs PACKAGE_DIR BASE_URL
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const [packageDir, baseUrl] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const OpenAI = require(packageDir).default ?? require(packageDir);
const client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
const model = 'sluice-tiny-moe';

// The tools as the model was trained with them (tools/train/corpus.py: TOOL_CALCULATOR, TOOL_CAPITAL).
const calculator = {
    type: 'function',
    function: {
        name: 'calculator', description: 'Evaluate an arithmetic expression.',
        parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
    },
};
const getCapital = {
    type: 'function',
    function: {
        name: 'get_capital', description: 'Look up the capital city of a country.',
        parameters: { type: 'object', properties: { country: { type: 'string' } }, required: ['country'] },
    },
};
const tools = [calculator, getCapital];
// get_capital's table: countries the model never saw in training (their capitals come only from this tool).
const capitals = { Kazakhstan: 'Astana', Belize: 'Belmopan', Nauru: 'Yaren', Mauritius: 'Port Louis' };

/// Runs one tool call as a client application would.
function runTool(call) {
    const args = JSON.parse(call.function.arguments);
    if (call.function.name === 'calculator') {
        const m = /^(\d+) ([-+*]) (\d+)$/.exec(args.expression);
        assert.ok(m, `an expression the calculator reads: ${args.expression}`);
        const [a, b] = [Number(m[1]), Number(m[3])];
        return String(m[2] === '+' ? a + b : m[2] === '-' ? a - b : a * b);
    }
    assert.equal(call.function.name, 'get_capital');
    assert.ok(args.country in capitals, `a country in the table: ${args.country}`);
    return JSON.stringify({ capital: capitals[args.country] });
}

/// The tool loop: asks, runs every call the model makes, sends the results back, until the model answers.
/// Returns the final message and the calls made, in order.
async function toolLoop(question, extra = {}) {
    const messages = [{ role: 'user', content: question }];
    const calls = [];
    for (let round = 0; round < 3; ++round) {
        const reply = await client.chat.completions.create({ model, messages, tools, temperature: 0, max_tokens: 96, ...extra });
        const choice = reply.choices[0];
        if (choice.finish_reason !== 'tool_calls') {
            assert.equal(choice.finish_reason, 'stop');
            return { message: choice.message, calls };
        }
        assert.ok(choice.message.tool_calls.length > 0);
        messages.push(choice.message);
        for (const call of choice.message.tool_calls) {
            assert.equal(call.type, 'function');
            assert.match(call.id, /\S/);
            calls.push({ name: call.function.name, arguments: JSON.parse(call.function.arguments) });
            messages.push({ role: 'tool', tool_call_id: call.id, content: runTool(call) });
        }
    }
    assert.fail(`no answer after three rounds of tool calls: ${JSON.stringify(calls)}`);
}

// 1. The calculator loop, in thinking mode: the call turn thinks first (reasoning_content), then the answer
//    carries the tool's result.
{
    const first = await client.chat.completions.create({
        model, messages: [{ role: 'user', content: 'What is 31 * 58?' }], tools, temperature: 0, max_tokens: 96,
    });
    assert.equal(first.choices[0].finish_reason, 'tool_calls');
    assert.equal(first.choices[0].message.content ?? '', '');
    assert.match(first.choices[0].message.reasoning_content ?? '', /calculator/);
    const { message, calls } = await toolLoop('What is 31 * 58?');
    assert.deepEqual(calls, [{ name: 'calculator', arguments: { expression: '31 * 58' } }]);
    assert.equal(message.content, '31 * 58 = 1798.');
    assert.match(message.reasoning_content ?? '', /1798/);
}

// 2. get_capital for countries the model never saw: it copies the country into the call and the capital from the
//    tool's answer (without thinking, to test that mode too).
for (const [country, capital] of [['Kazakhstan', 'Astana'], ['Belize', 'Belmopan']]) {
    const { message, calls } = await toolLoop(`What is the capital of ${country}?`,
        { chat_template_kwargs: { enable_thinking: false } });
    assert.deepEqual(calls, [{ name: 'get_capital', arguments: { country } }]);
    assert.equal(message.content, `The capital of ${country} is ${capital}.`);
    assert.equal(message.reasoning_content ?? '', '');
}

// 3. Two calls in one turn, both answered in one tool turn.
{
    const { message, calls } = await toolLoop('What are 11 * 7 and 4208 + 1375?');
    assert.deepEqual(calls, [{ name: 'calculator', arguments: { expression: '11 * 7' } },
        { name: 'calculator', arguments: { expression: '4208 + 1375' } }]);
    assert.equal(message.content, '11 * 7 = 77 and 4208 + 1375 = 5583.');
}

// 4. Tools offered but not needed: the model answers directly.
{
    const { message, calls } = await toolLoop('What is 478 + 356?');
    assert.deepEqual(calls, []);
    assert.equal(message.content, '834');
}

// 5. Streamed tool calls: the deltas assemble the same call as the whole reply, finish_reason tool_calls.
{
    const request = { model, messages: [{ role: 'user', content: 'Calculate 4613 - 387.' }], tools, temperature: 0, max_tokens: 96 };
    const whole = await client.chat.completions.create(request);
    const stream = await client.chat.completions.create({ ...request, stream: true });
    const streamed = [];
    let finish = null;
    let reasoning = '';
    for await (const chunk of stream) {
        const choice = chunk.choices[0];
        if (!choice) continue;
        reasoning += choice.delta?.reasoning_content ?? '';
        for (const d of choice.delta?.tool_calls ?? []) {
            streamed[d.index] ??= { id: '', name: '', arguments: '' };
            streamed[d.index].id += d.id ?? '';
            streamed[d.index].name += d.function?.name ?? '';
            streamed[d.index].arguments += d.function?.arguments ?? '';
        }
        finish = choice.finish_reason ?? finish;
    }
    assert.equal(finish, 'tool_calls');
    assert.equal(streamed.length, 1);
    assert.equal(streamed[0].name, 'calculator');
    assert.deepEqual(JSON.parse(streamed[0].arguments), { expression: '4613 - 387' });
    assert.equal(streamed[0].arguments, whole.choices[0].message.tool_calls[0].function.arguments);
    assert.equal(reasoning, whole.choices[0].message.reasoning_content);
}

// 6. The reasoning split: a think block becomes reasoning_content; enable_thinking false leaves none.
{
    const question = { role: 'user', content: 'Reverse the word "water".' };
    const thinking = await client.chat.completions.create({ model, messages: [question], temperature: 0, max_tokens: 64 });
    assert.equal(thinking.choices[0].message.content, 'retaw');
    assert.equal(thinking.choices[0].message.reasoning_content, '"water" is spelled w-a-t-e-r. I read it backwards.');
    const direct = await client.chat.completions.create({
        model, messages: [question], temperature: 0, max_tokens: 64, chat_template_kwargs: { enable_thinking: false },
    });
    assert.equal(direct.choices[0].message.content, 'retaw');
    assert.equal(direct.choices[0].message.reasoning_content ?? '', '');
    assert.ok(direct.usage.completion_tokens < thinking.usage.completion_tokens);
}

// 7. Logprobs: one entry per generated token, greedy picks the most likely, the pieces spell the content.
{
    const reply = await client.chat.completions.create({
        model, messages: [{ role: 'user', content: 'What is 478 + 356?' }], temperature: 0, max_tokens: 16,
        logprobs: true, top_logprobs: 3, chat_template_kwargs: { enable_thinking: false },
    });
    const choice = reply.choices[0];
    assert.equal(choice.message.content, '834');
    const entries = choice.logprobs.content;
    assert.ok(entries.length >= 1);
    assert.equal(entries.map((e) => e.token).join(''), '834');
    for (const e of entries) {
        assert.ok(e.logprob <= 0 && e.logprob > -0.7, `a confident greedy token: ${JSON.stringify(e)}`);
        assert.equal(e.top_logprobs.length, 3);
        assert.equal(e.top_logprobs[0].token, e.token);
        assert.ok(e.top_logprobs[1].logprob <= e.top_logprobs[0].logprob);
    }
}

// 8. Structured output: a JSON schema through the client's parse() helper (message.parsed), without thinking.
{
    const schema = {
        type: 'object',
        properties: { country: { type: 'string' }, capital: { type: 'string' } },
        required: ['country', 'capital'],
        additionalProperties: false,
    };
    const reply = await client.chat.completions.parse({
        model, temperature: 0, max_tokens: 48, chat_template_kwargs: { enable_thinking: false },
        messages: [{ role: 'user', content: 'Give the capital of Kenya as JSON with the keys "country" and "capital".' }],
        response_format: { type: 'json_schema', json_schema: { name: 'capital', schema, strict: true } },
    });
    assert.deepEqual(reply.choices[0].message.parsed, { country: 'Kenya', capital: 'Nairobi' });
    const count = await client.chat.completions.parse({
        model, temperature: 0, max_tokens: 48, chat_template_kwargs: { enable_thinking: false },
        messages: [{ role: 'user', content: 'How many times does the letter "h" appear in "three"? Answer in JSON with the key "count".' }],
        response_format: {
            type: 'json_schema',
            json_schema: { name: 'count', strict: true, schema: { type: 'object', properties: { count: { type: 'integer' } }, required: ['count'], additionalProperties: false } },
        },
    });
    assert.deepEqual(count.choices[0].message.parsed, { count: 1 });
}

console.log('tool use: ok');
