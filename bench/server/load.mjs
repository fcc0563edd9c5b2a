// Load generator for `sluice serve`: N concurrent clients on real keep-alive sockets doing chat completions
// with short outputs (half of them streamed as SSE) mixed with GET /health, bounded by a request count and a
// duration; samples the server's RSS (VmRSS from /proc/PID/status) while it runs. Node's own http module only,
// so nothing retries behind our back: every status the server answers is counted as it came.
//
// Usage: node bench/server/load.mjs --url http://127.0.0.1:8080 [--pid PID] [--clients 200] [--duration 60]
//            [--requests 0] [--max-tokens 8] [--health-every 4] [--rss-every 1] [--json FILE] [--key KEY]
// --duration is seconds (clients start no request after it); --requests 0 means no count bound; every
// --health-every'th request of a client is a GET /health. Prints a summary; --json writes every number and the
// RSS series. Exit status 1 when any answer was an error other than a designed 503 (server_busy with
// Retry-After), or a request failed on the socket.
import http from 'node:http';
import fs from 'node:fs';

function parse_args(argv) {
    const o = {url: 'http://127.0.0.1:8080', pid: 0, clients: 200, duration: 60, requests: 0, max_tokens: 8,
               health_every: 4, rss_every: 1, json: '', key: ''};
    for (let i = 2; i < argv.length; i += 2) {
        const k = argv[i].replace(/^--/, '').replace(/-/g, '_');
        if (!(k in o) || i + 1 >= argv.length) {
            console.error(`load.mjs: unknown or incomplete option ${argv[i]}`);
            process.exit(2);
        }
        o[k] = typeof o[k] === 'number' ? Number(argv[i + 1]) : argv[i + 1];
    }
    return o;
}

const opt = parse_args(process.argv);
const base = new URL(opt.url);
const agent = new http.Agent({keepAlive: true, maxSockets: opt.clients + 8});
const prompts = ['Say hello', 'Count to three', 'Name a colour', 'What is 2+2?', 'Tell me a word'];

/// One request; resolves {status, body, ms, error?}. Reads the whole answer (SSE included) before resolving.
function request(method, path, body) {
    const t0 = process.hrtime.bigint();
    return new Promise((resolve) => {
        const headers = {'Content-Type': 'application/json'};
        if (opt.key) headers.Authorization = `Bearer ${opt.key}`;
        if (body) headers['Content-Length'] = Buffer.byteLength(body);
        const req = http.request({host: base.hostname, port: base.port, method, path, headers, agent}, (res) => {
            const chunks = [];
            res.on('data', (c) => chunks.push(c));
            res.on('end', () => resolve({status: res.statusCode, headers: res.headers,
                                         body: Buffer.concat(chunks).toString(),
                                         ms: Number(process.hrtime.bigint() - t0) / 1e6}));
            res.on('error', (e) => resolve({status: 0, error: e.code || e.message,
                                            ms: Number(process.hrtime.bigint() - t0) / 1e6}));
        });
        req.on('error', (e) => resolve({status: 0, error: e.code || e.message,
                                        ms: Number(process.hrtime.bigint() - t0) / 1e6}));
        req.setTimeout(120000, () => req.destroy(new Error('client timeout')));
        if (body) req.write(body);
        req.end();
    });
}

/// A 503 the server is designed to give: queue full (or still loading), OpenAI-shaped, with Retry-After.
function designed_503(r) {
    if (r.status !== 503 || r.headers['retry-after'] === undefined) return false;
    try {
        const code = JSON.parse(r.body).error.code;
        return code === 'server_busy' || code === 'model_loading';
    } catch {
        return false;
    }
}

/// A 200 chat answer whose content is what it should be: a chat.completion, or an SSE stream ending in [DONE].
function valid_chat(r, stream) {
    if (stream) return r.body.startsWith('data: ') && r.body.trimEnd().endsWith('data: [DONE]');
    try {
        return JSON.parse(r.body).object === 'chat.completion';
    } catch {
        return false;
    }
}

const stats = new Map(); // kind -> {latencies: [], by_status: {}}
const failures = [];     // first few unexpected answers
let issued = 0;
let completion_tokens = 0;
function record(kind, r, ok) {
    if (!stats.has(kind)) stats.set(kind, {latencies: [], by_status: {}, designed_503: 0, bad: 0});
    const s = stats.get(kind);
    const key = r.status === 0 ? `socket:${r.error}` : String(r.status);
    s.by_status[key] = (s.by_status[key] || 0) + 1;
    if (r.status === 200) s.latencies.push(r.ms);
    if (designed_503(r)) s.designed_503++;
    else if (!ok) {
        s.bad++;
        if (failures.length < 5) failures.push({kind, status: r.status, error: r.error, body: (r.body || '').slice(0, 300)});
    }
}

const rss = []; // [seconds since start, VmRSS KiB]
const t_start = Date.now();
function sample_rss() {
    if (!opt.pid) return;
    try {
        const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${opt.pid}/status`, 'utf8'));
        if (m) rss.push([(Date.now() - t_start) / 1000, Number(m[1])]);
    } catch { /* the server is gone: the requests will say so */ }
}

const deadline = t_start + opt.duration * 1000;
const more = () => Date.now() < deadline && (opt.requests === 0 || issued < opt.requests);

async function client(id) {
    for (let n = 0; more(); ++n) {
        ++issued;
        if (opt.health_every > 0 && n % opt.health_every === opt.health_every - 1) {
            const r = await request('GET', '/health');
            record('health', r, r.status === 200);
            continue;
        }
        const stream = (id + n) % 2 === 0;
        const body = JSON.stringify({messages: [{role: 'user', content: prompts[(id + n) % prompts.length]}],
                                     max_tokens: opt.max_tokens, temperature: 0.7, seed: id * 1000 + n, stream,
                                     ...(stream ? {stream_options: {include_usage: true}} : {})});
        const r = await request('POST', '/v1/chat/completions', body);
        const ok = r.status === 200 && valid_chat(r, stream);
        record(stream ? 'chat_sse' : 'chat', r, ok);
        if (ok) {
            const u = /"completion_tokens":(\d+)/.exec(r.body);
            if (u) completion_tokens += Number(u[1]);
        }
        if (designed_503(r)) {
            await new Promise((res) => setTimeout(res, 1000 * Number(r.headers['retry-after'])));
        }
    }
}

function percentile(sorted, p) {
    if (sorted.length === 0) return null;
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

sample_rss();
const timer = setInterval(sample_rss, opt.rss_every * 1000);
await Promise.all(Array.from({length: opt.clients}, (_, i) => client(i)));
clearInterval(timer);
sample_rss();
const elapsed = (Date.now() - t_start) / 1000;
agent.destroy();

const report = {clients: opt.clients, duration_s: elapsed, max_tokens: opt.max_tokens, requests: issued,
                completion_tokens, kinds: {}, unexpected: 0, failures, rss_kib: rss};
for (const [kind, s] of stats) {
    const sorted = s.latencies.sort((a, b) => a - b);
    report.kinds[kind] = {by_status: s.by_status, designed_503: s.designed_503, unexpected: s.bad, ok: sorted.length,
                          p50_ms: percentile(sorted, 50), p99_ms: percentile(sorted, 99),
                          max_ms: sorted.length ? sorted[sorted.length - 1] : null};
    report.unexpected += s.bad;
}
if (rss.length) {
    // Growth: the mean of the last quarter of samples against the mean of the second quarter (after warm-up).
    const q = Math.max(1, Math.floor(rss.length / 4));
    const mean = (a) => a.reduce((x, [, v]) => x + v, 0) / a.length;
    report.rss_summary_kib = {first: rss[0][1], min: Math.min(...rss.map(([, v]) => v)),
                              max: Math.max(...rss.map(([, v]) => v)), last: rss[rss.length - 1][1],
                              second_quarter_mean: Math.round(mean(rss.slice(q, 2 * q))),
                              last_quarter_mean: Math.round(mean(rss.slice(rss.length - q)))};
}
if (opt.json) fs.writeFileSync(opt.json, JSON.stringify(report, null, 1));

console.log(`${report.requests} requests by ${opt.clients} clients in ${elapsed.toFixed(1)} s ` +
            `(${(report.requests / elapsed).toFixed(1)}/s), ${completion_tokens} completion tokens`);
for (const [kind, k] of Object.entries(report.kinds)) {
    const ms = (v) => (v === null ? '-' : v.toFixed(1));
    console.log(`  ${kind.padEnd(8)} ${JSON.stringify(k.by_status)}  designed 503: ${k.designed_503}  ` +
                `unexpected: ${k.unexpected}  p50 ${ms(k.p50_ms)} ms  p99 ${ms(k.p99_ms)} ms  max ${ms(k.max_ms)} ms`);
}
if (report.rss_summary_kib) {
    const r = report.rss_summary_kib;
    const mib = (v) => (v / 1024).toFixed(1);
    console.log(`  RSS MiB: first ${mib(r.first)}  min ${mib(r.min)}  max ${mib(r.max)}  last ${mib(r.last)}  ` +
                `2nd-quarter mean ${mib(r.second_quarter_mean)}  last-quarter mean ${mib(r.last_quarter_mean)} ` +
                `(${rss.length} samples)`);
}
for (const f of failures) console.log('  unexpected:', JSON.stringify(f));
process.exit(report.unexpected === 0 ? 0 : 1);
