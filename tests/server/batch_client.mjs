// Concurrent requests through the official `openai` npm client against `sluice serve --parallel 8` on the bundled
// model: the held-out questions asked greedily one at a time, then 4 and 8 at once (the server batches them into
// shared forward steps), must get the same answers; then one streamed request of four concurrent ones is aborted
// mid-way and the other three still get their answers alone. Prints "batch client: ok" and a JSON summary.
// Usage: node batch_client.mjs PACKAGE_DIR BASE_URL HELDOUT_JSONL
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

const [packageDir, baseUrl, heldoutPath] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const OpenAI = require(packageDir).default ?? require(packageDir);
const client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
const rows = readFileSync(heldoutPath, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
// Every eleventh row: a mix of the tasks (the file groups them).
const questions = rows.filter((_, i) => i % 11 === 0).slice(0, 8).map((r) => r.question);

function fail(message) {
    console.error(`batch client: ${message}`);
    process.exit(1);
}

async function ask(question, maxTokens = 24) {
    const reply = await client.chat.completions.create({
        model: 'sluice-tiny-moe',
        messages: [{ role: 'user', content: question }],
        temperature: 0,
        max_tokens: maxTokens,
    });
    return reply.choices[0].message.content ?? '';
}

async function askAll(concurrency) {
    const answers = new Array(questions.length);
    let next = 0;
    async function worker() {
        while (next < questions.length) {
            const i = next++;
            answers[i] = await ask(questions[i]);
        }
    }
    await Promise.all(Array.from({ length: concurrency }, worker));
    return answers;
}

const alone = await askAll(1);
for (const c of [4, 8]) {
    const together = await askAll(c);
    together.forEach((a, i) => {
        if (a !== alone[i]) {
            fail(`concurrency ${c}: question ${JSON.stringify(questions[i])} answered ${JSON.stringify(a)}, ` +
                 `alone ${JSON.stringify(alone[i])}`);
        }
    });
}

// Four streams at once with the end-of-generation ignored (long answers); the third is aborted after 3 chunks.
const long = questions.slice(0, 4);
async function stream(question, abortAfter) {
    const controller = new AbortController();
    const s = await client.chat.completions.create(
        { model: 'sluice-tiny-moe', messages: [{ role: 'user', content: question }], temperature: 0, max_tokens: 48,
          stream: true, ignore_eos: true },
        { signal: controller.signal });
    let text = '';
    let chunks = 0;
    try {
        for await (const ev of s) {
            text += ev.choices[0]?.delta?.content ?? '';
            if (++chunks === abortAfter) {
                controller.abort();
                return null;
            }
        }
    } catch (e) {
        if (abortAfter === 0) {
            throw e;
        }
        return null;
    }
    return text;
}
const longAlone = [];
for (const q of long) {
    longAlone.push(await stream(q, 0));
}
const longTogether = await Promise.all(long.map((q, i) => stream(q, i === 2 ? 3 : 0)));
for (const i of [0, 1, 3]) {
    if (longTogether[i] !== longAlone[i]) {
        fail(`stream ${i} beside an aborted one: ${JSON.stringify(longTogether[i])}, alone ${JSON.stringify(longAlone[i])}`);
    }
}
console.log('batch client: ok');
console.log(JSON.stringify({ questions, answers: alone }));
