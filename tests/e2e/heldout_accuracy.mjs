// Asks a running `sluice serve` every held-out question of tests/fixtures/trained/heldout.jsonl through the
// official `openai` npm client (chat completions, greedy: temperature 0), a few requests at a time, and prints
// one JSON object: overall and per-task exact-match accuracy and every answer. Exits non-zero on a request error.
// Usage: node heldout_accuracy.mjs PACKAGE_DIR BASE_URL HELDOUT_JSONL [CONCURRENCY]
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

const [packageDir, baseUrl, heldoutPath, concurrencyArg] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const OpenAI = require(packageDir).default ?? require(packageDir);
const client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
const rows = readFileSync(heldoutPath, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
const concurrency = Number(concurrencyArg ?? 4);

const answers = new Array(rows.length);
let next = 0;
async function worker() {
    while (next < rows.length) {
        const i = next++;
        const reply = await client.chat.completions.create({
            model: 'sluice-tiny-moe',
            messages: [{ role: 'user', content: rows[i].question }],
            temperature: 0,
            max_tokens: 64, // a brief think block (split off as reasoning_content), then the answer
        });
        answers[i] = reply.choices[0].message.content ?? '';
    }
}
await Promise.all(Array.from({ length: concurrency }, worker));

const perTask = {};
let correct = 0;
rows.forEach((r, i) => {
    const ok = answers[i].trim() === r.answer;
    correct += ok;
    perTask[r.task] ??= { correct: 0, total: 0 };
    perTask[r.task].correct += ok;
    perTask[r.task].total += 1;
});
console.log(JSON.stringify({ accuracy: correct / rows.length, correct, total: rows.length, per_task: perTask, answers }));
