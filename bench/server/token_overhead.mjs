// Server overhead per streamed token: one client streams long greedy completions (SSE) from `sluice serve`
// and compares the time it sees between tokens with the engine's own decode time of the same tokens.
//
// Usage: node bench/server/token_overhead.mjs --url http://127.0.0.1:8080 [--tokens 128] [--runs 5] [--key KEY]
//
// Method. The engine measures `timings.predicted_ms`: the time inside its decode steps of tokens 2..n (the
// first token's step is prompt time), excluding whatever happens between steps. Generation is pull-driven, so
// between two steps the server does its per-token work: detokenize, build the chunk's JSON, start the next
// step, write the SSE event (while the step computes), and come back for the next token. The client timestamps every event on arrival. From the first
// content event to the event carrying finish_reason lie the n-1 decode steps plus the server's work for n-1
// content events and the final one (as much of it as does not overlap a step), plus the socket and this
// client's parsing:
//     overhead per token = (t_finish - t_first_content - predicted_ms) / (n - 1)
// and it is compared with the decode time per token, predicted_ms / (n - 1). Everything not the engine's
// decode counts as overhead (the loopback socket and this client's parsing included), so this errs high.
// The server's own view is printed beside it: its inter-token latency histogram (GET /metrics) sums, for tokens
// 2..n, the time from one token to the next (the previous chunk's write included, overlapping the step); minus
// predicted_ms, that is the time the server spent per token outside the engine's decode, without the socket or
// the client.
import http from 'node:http';

const opt = {url: 'http://127.0.0.1:8080', tokens: 128, runs: 5, key: ''};
for (let i = 2; i + 1 < process.argv.length; i += 2) {
    const k = process.argv[i].replace(/^--/, '');
    opt[k] = typeof opt[k] === 'number' ? Number(process.argv[i + 1]) : process.argv[i + 1];
}
const base = new URL(opt.url);

/// Streams one completion; resolves {first, finish, timings, events} with arrival times in ms.
function stream_once(seed) {
    const body = JSON.stringify({messages: [{role: 'user', content: 'Write a long story about a lighthouse.'}],
                                 max_tokens: opt.tokens, temperature: 0, ignore_eos: true, seed, stream: true});
    const headers = {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body)};
    if (opt.key) headers.Authorization = `Bearer ${opt.key}`;
    return new Promise((resolve, reject) => {
        const req = http.request({host: base.hostname, port: base.port, method: 'POST',
                                  path: '/v1/chat/completions', headers}, (res) => {
            if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
            let buf = '';
            const out = {first: null, finish: null, timings: null, events: 0};
            res.setEncoding('utf8');
            res.on('data', (chunk) => {
                const now = Number(process.hrtime.bigint()) / 1e6;
                buf += chunk;
                let end;
                while ((end = buf.indexOf('\n\n')) >= 0) {
                    const event = buf.slice(0, end);
                    buf = buf.slice(end + 2);
                    if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
                    const c = JSON.parse(event.slice(6));
                    const choice = c.choices[0];
                    if (choice && choice.delta.content) {
                        ++out.events;
                        if (out.first === null) out.first = now;
                    }
                    if (choice && choice.finish_reason) {
                        out.finish = now;
                        out.timings = c.timings;
                    }
                }
            });
            res.on('end', () => resolve(out));
        });
        req.on('error', reject);
        req.end(body);
    });
}

/// sluice_inter_token_latency_seconds_sum from GET /metrics, in ms.
function itl_sum_ms() {
    const headers = opt.key ? {Authorization: `Bearer ${opt.key}`} : {};
    return new Promise((resolve, reject) => {
        http.get({host: base.hostname, port: base.port, path: '/metrics', headers}, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c) => (text += c));
            res.on('end', () => resolve(1000 * Number(/^sluice_inter_token_latency_seconds_sum (\S+)$/m.exec(text)[1])));
        }).on('error', reject);
    });
}

const rows = [];
for (let run = 0; run <= opt.runs; ++run) {
    const itl0 = await itl_sum_ms();
    const r = await stream_once(run + 1);
    const itl = (await itl_sum_ms()) - itl0;
    if (run === 0) continue; // warm-up: page cache, allocations
    const n = r.timings.predicted_n;
    const span = r.finish - r.first;
    const decode = r.timings.predicted_ms;
    rows.push({n, events: r.events, span_ms: span, decode_ms: decode, decode_per_token_ms: decode / (n - 1),
               overhead_per_token_ms: (span - decode) / (n - 1), overhead_pct: (100 * (span - decode)) / decode,
               server_per_token_ms: (itl - decode) / (n - 1), server_pct: (100 * (itl - decode)) / decode});
}
const us = (ms) => (1000 * ms).toFixed(1);
for (const r of rows) {
    console.log(`tokens ${r.n} (content events ${r.events}): engine decode ${r.decode_ms.toFixed(1)} ms = ` +
                `${r.decode_per_token_ms.toFixed(3)} ms/token; client-seen overhead ${us(r.overhead_per_token_ms)} ` +
                `us/token = ${r.overhead_pct.toFixed(2)} %; server-side ${us(r.server_per_token_ms)} us/token = ` +
                `${r.server_pct.toFixed(2)} %`);
}
const med = (f) => rows.map(f).sort((a, b) => a - b)[Math.floor(rows.length / 2)];
console.log(JSON.stringify({runs: rows.length, tokens: opt.tokens,
                            median_decode_per_token_ms: med((r) => r.decode_per_token_ms),
                            median_client_overhead_per_token_us: 1000 * med((r) => r.overhead_per_token_ms),
                            median_client_overhead_pct: med((r) => r.overhead_pct),
                            median_server_overhead_per_token_us: 1000 * med((r) => r.server_per_token_ms),
                            median_server_overhead_pct: med((r) => r.server_pct)}));
