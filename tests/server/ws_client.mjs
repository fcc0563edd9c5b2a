// Drives /v1/ws of a running `sluice serve` with the `ws` npm package: a wrong key is refused, two requests
// run at once on one socket, a cancel stops one, a bad message gives an error event, and closing the socket
// mid-generation leaves the server healthy. Exits non-zero on any failure.
// Usage: node ws_client.mjs PACKAGE_DIR BASE_URL API_KEY
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const [packageDir, baseUrl, apiKey] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const WebSocket = require(packageDir);
const wsUrl = baseUrl.replace(/^http/, 'ws') + '/v1/ws';

/// Opens a socket; resolves to {ws, next(predicate)} where next waits for a matching event.
function open(key) {
    return new Promise((resolve, reject) => {
        const ws = new WebSocket(wsUrl, { headers: { Authorization: `Bearer ${key}` } });
        const events = [];
        const waiters = [];
        ws.on('message', (data, isBinary) => {
            assert.equal(isBinary, false);
            events.push(JSON.parse(data.toString()));
            for (const w of [...waiters]) w();
        });
        const next = (pred) => new Promise((res, rej) => {
            const timer = setTimeout(() => rej(new Error('no matching event in 10 s')), 10000);
            const check = () => {
                const i = events.findIndex(pred);
                if (i < 0) return false;
                const [ev] = events.splice(i, 1);
                clearTimeout(timer);
                waiters.splice(waiters.indexOf(check), 1);
                res(ev);
                return true;
            };
            waiters.push(check);
            check();
        });
        ws.on('open', () => resolve({ ws, next }));
        ws.on('unexpected-response', (req, res) => reject(Object.assign(new Error('refused'), { status: res.statusCode })));
        ws.on('error', reject);
    });
}

// A wrong key: the upgrade is answered 401.
await assert.rejects(open('wrong-key'), (e) => e.status === 401);

const { ws, next } = await open(apiKey);
const send = (m) => ws.send(JSON.stringify(m));

// Two requests at once (the server runs with --parallel 2); one is cancelled after its first delta.
send({ type: 'request', id: 'long', endpoint: 'completions', body: { prompt: 'Hi', max_tokens: 3000, ignore_eos: true } });
await next((e) => e.type === 'delta' && e.id === 'long');
send({ type: 'request', id: 'chat', endpoint: 'chat',
       body: { messages: [{ role: 'user', content: 'Hello' }], max_tokens: 5, ignore_eos: true } });
send({ type: 'cancel', id: 'long' });
const cancelled = await next((e) => e.type === 'done' && e.id === 'long');
assert.equal(cancelled.finish_reason, 'cancelled');
const chat = await next((e) => e.type === 'done' && e.id === 'chat');
assert.equal(chat.finish_reason, 'length');
assert.equal(chat.usage.completion_tokens, 5);
assert.equal(typeof chat.timings, 'object');

// A bad message: an error event, and the socket still serves.
ws.send('{not json');
const err = await next((e) => e.type === 'error');
assert.equal(typeof err.error.message, 'string');
assert.equal(err.error.type, 'invalid_request_error');
send({ type: 'request', id: 'again', endpoint: 'completions', body: { prompt: 'Hi', max_tokens: 3 } });
assert.equal((await next((e) => e.type === 'done' && e.id === 'again')).type, 'done');

// Close mid-generation; the server frees the slots.
send({ type: 'request', id: 'dropped', endpoint: 'completions', body: { prompt: 'Hi', max_tokens: 3000, ignore_eos: true } });
await next((e) => e.type === 'delta' && e.id === 'dropped');
ws.terminate();
for (let i = 0; ; ++i) {
    const h = await (await fetch(`${baseUrl}/health`)).json();
    if (h.slots_busy === 0) break;
    assert.ok(i < 500, 'slots still busy after the socket closed');
    await new Promise((r) => setTimeout(r, 10));
}
console.log('ws client: ok');
