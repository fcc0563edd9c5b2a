// Drives a running `sluice serve` with concurrent streamed completions and reports, per concurrency level, the
// aggregate tokens/s and each stream's inter-token latency; then the time to first token of a short request on the
// idle server and while LONG long ones decode. Node's own fetch, SSE parsed by hand; prints one JSON object.
// Any server with an OpenAI-compatible streamed /v1/completions that takes `ignore_eos` works (llama-server too);
// the profile lines need sluice's /metrics and read zeros elsewhere. --ttft 0 skips the time-to-first-token part.
// --short-prompts same sends one short prompt every time (a repeat finds its prefix, and on a streamed server its
// experts, cached when the server is idle); distinct (the default) sends a prompt not sent before, so the idle and
// the loaded requests both start from an uncached prompt, as a new user's request does.
// Usage: node batch.mjs --url URL [--levels 1,2,4,8,16] [--tokens 32] [--long 7] [--long-tokens 256] [--rounds 1]
//        [--ttft 1] [--short-prompts distinct|same]
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
    return acc;
}, []));
const url = args.url;
const levels = (args.levels ?? '1,2,4,8,16').split(',').map(Number);
const tokens = Number(args.tokens ?? 32);
const longCount = Number(args.long ?? 7);
const longTokens = Number(args['long-tokens'] ?? 256);
const rounds = Number(args.rounds ?? 1);
const ttft = (args.ttft ?? '1') !== '0';
const shortPrompts = args['short-prompts'] ?? 'distinct';
if (shortPrompts !== 'distinct' && shortPrompts !== 'same') {
    console.error(`--short-prompts must be distinct or same, not ${shortPrompts}`);
    process.exit(2);
}

const prompts = ['The history of the', 'In the beginning', 'A short story about', 'The quick brown fox',
                 'Once upon a time', 'The river flows', 'Numbers and letters', 'Under the old bridge'];

// One streamed completion: token arrival times (ms since its start) and the time of the first one.
async function stream(prompt, maxTokens, signal) {
    const t0 = performance.now();
    const res = await fetch(`${url}/v1/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0, stream: true, ignore_eos: true }),
        signal,
    });
    if (res.status !== 200) {
        throw new Error(`status ${res.status}: ${await res.text()}`);
    }
    const times = [];
    const decoder = new TextDecoder();
    let buf = '';
    try {
        for await (const chunk of res.body) {
            buf += decoder.decode(chunk, { stream: true });
            let i;
            while ((i = buf.indexOf('\n\n')) >= 0) {
                const ev = buf.slice(0, i);
                buf = buf.slice(i + 2);
                if (ev.startsWith('data: ') && !ev.startsWith('data: [DONE]')) {
                    const d = JSON.parse(ev.slice(6));
                    if ((d.choices?.[0]?.text ?? '') !== '' || d.choices?.[0]?.finish_reason == null) {
                        times.push(performance.now() - t0);
                    }
                }
            }
        }
    } catch (e) {
        if (!signal?.aborted) throw e;
    }
    return { times, ttft: times[0] ?? NaN, total: performance.now() - t0 };
}

// The server's counters (GET /metrics): unlabelled samples as they are, per-layer ones summed over layers.
async function counters() {
    const res = await fetch(`${url}/metrics`);
    const text = res.ok ? await res.text() : '';
    const out = {};
    for (const line of text.split('\n')) {
        const m = /^(sluice_[a-z_]+)(\{layer="\d+"\})? ([-0-9.e+]+)$/.exec(line);
        if (m) out[m[1]] = (out[m[1]] ?? 0) + Number(m[3]);
    }
    return out;
}

// What one level cost the server: steps and their mean width, where the step time went, and the expert cache.
function profile(before, after) {
    const d = (k) => (after[k] ?? 0) - (before[k] ?? 0);
    const steps = d('sluice_batch_steps_total');
    const hits = d('sluice_expert_cache_hits_total');
    const misses = d('sluice_expert_cache_misses_total');
    const tokens = d('sluice_batch_tokens_total');
    return {
        steps, step_width: steps ? d('sluice_batch_sequence_rows_total') / steps : 0,
        step_ms: steps ? (1000 * d('sluice_batch_step_seconds_total')) / steps : 0,
        expert_wait_ms: steps ? (1000 * d('sluice_batch_expert_wait_seconds_total')) / steps : 0,
        gather_ms: steps ? (1000 * d('sluice_batch_gather_seconds_total')) / steps : 0,
        hit_rate: hits + misses ? hits / (hits + misses) : 0,
        fetched_per_step: steps ? (hits + misses) / steps : 0,
        misses_per_step: steps ? misses / steps : 0,
        read_gbps_busy: d('sluice_disk_busy_seconds_total') > 0
            ? d('sluice_disk_read_bytes_total') / d('sluice_disk_busy_seconds_total') / 1e9 : 0,
        reads_per_token: tokens ? d('sluice_disk_reads_total') / tokens : 0,
        read_mb_per_token: tokens ? d('sluice_disk_read_bytes_total') / tokens / 1e6 : 0,
        prefetch_issued: d('sluice_expert_prefetch_issued_total'),
        prefetch_used: d('sluice_expert_prefetch_used_total'),
        prefetch_wasted: d('sluice_expert_prefetch_wasted_total'),
        disk_busy_s: d('sluice_disk_busy_seconds_total'),
    };
}

function median(xs) {
    const s = [...xs].sort((a, b) => a - b);
    return s.length ? s[Math.floor(s.length / 2)] : NaN;
}
function pct(xs, p) {
    const s = [...xs].sort((a, b) => a - b);
    return s.length ? s[Math.min(s.length - 1, Math.floor(s.length * p))] : NaN;
}

const report = { tokens, levels: [], ttft: {} };
await stream(prompts[0], 4); // warm-up
for (const c of levels) {
    const results = [];
    for (let r = 0; r < rounds; ++r) {
        const before = await counters();
        const t0 = performance.now();
        const runs = await Promise.all(Array.from({ length: c }, (_, i) => stream(prompts[i % prompts.length], tokens)));
        const wall = (performance.now() - t0) / 1000;
        const n = runs.reduce((a, x) => a + x.times.length, 0);
        const gaps = runs.flatMap((x) => x.times.slice(1).map((t, j) => t - x.times[j]));
        results.push({ wall_s: wall, tokens: n, aggregate_tps: n / wall, itl_median_ms: median(gaps),
                       itl_p90_ms: pct(gaps, 0.9), profile: profile(before, await counters()) });
    }
    const best = results.reduce((a, b) => (b.aggregate_tps > a.aggregate_tps ? b : a));
    report.levels.push({ streams: c, ...best });
    console.error(`streams ${c}: ${best.aggregate_tps.toFixed(2)} tok/s aggregate, inter-token median ` +
                  `${best.itl_median_ms.toFixed(1)} ms (p90 ${best.itl_p90_ms.toFixed(1)})`);
    const p = best.profile;
    console.error(`  ${p.steps} steps of ${p.step_width.toFixed(2)} sequences, ${p.step_ms.toFixed(1)} ms each ` +
                  `(${p.expert_wait_ms.toFixed(1)} waiting for experts, ${p.gather_ms.toFixed(2)} gathering before); ` +
                  `experts: ${p.fetched_per_step.toFixed(0)} per step (${p.misses_per_step.toFixed(0)} misses), hit rate ${(100 * p.hit_rate).toFixed(1)}%, ` +
                  `${p.read_mb_per_token.toFixed(0)} MB read per token, prefetch ${p.prefetch_issued} issued ` +
                  `${p.prefetch_used} used ${p.prefetch_wasted} wasted, disk busy ${p.disk_busy_s.toFixed(1)} s ` +
                  `(${p.read_gbps_busy.toFixed(2)} GB/s while busy)`);
}

if (!ttft) {
    console.log(JSON.stringify(report));
    process.exit(0);
}
// Where one short request's first token waited (sluice's /metrics around it): its prefill steps, the time from its
// arrival to their start (waiting for the step in progress to reach a layer boundary), their own time and their
// expert waits, and what the disk read meanwhile (its reads and the decoders' together).
const shortTopics = ['rain', 'iron', 'glass', 'bread', 'salt', 'paper', 'stone', 'sugar', 'copper', 'cotton',
                     'honey', 'clay'];
let shortSent = 0;
function shortPrompt() {
    if (shortPrompts === 'same') return 'What is 2 + 2?';
    const topic = shortTopics[shortSent % shortTopics.length];
    return `Where does ${topic} come from? Answer ${++shortSent}:`;
}
async function shortRequest() {
    const before = await counters();
    const r = await stream(shortPrompt(), 2);
    const after = await counters();
    const d = (k) => (after[k] ?? 0) - (before[k] ?? 0);
    return { ttft_ms: r.ttft, prefill_steps: d('sluice_batch_prefill_steps_total'),
             prefill_tokens: d('sluice_batch_prefill_tokens_total'),
             prefill_queue_ms: 1000 * d('sluice_batch_prefill_queue_seconds_total'),
             prefill_step_ms: 1000 * d('sluice_batch_prefill_step_seconds_total'),
             prefill_expert_wait_ms: 1000 * d('sluice_batch_prefill_expert_wait_seconds_total'),
             steps: d('sluice_batch_steps_total'), misses: d('sluice_expert_cache_misses_total'),
             read_mb: d('sluice_disk_read_bytes_total') / 1e6 };
}
function describe(x) {
    return `${x.ttft_ms.toFixed(0)} ms: ${x.prefill_steps} prefill steps of ${x.prefill_tokens} tokens, queued ` +
           `${x.prefill_queue_ms.toFixed(0)} ms, ran ${x.prefill_step_ms.toFixed(0)} ms (${x.prefill_expert_wait_ms.toFixed(0)} ` +
           `waiting for experts); meanwhile ${x.steps} steps, ${x.misses} misses, ${x.read_mb.toFixed(0)} MB read`;
}

// Time to first token of a short request: idle, then while `longCount` long streams decode.
const idle = [];
const idleDetail = [];
for (let r = 0; r < 3; ++r) {
    const x = await shortRequest();
    idle.push(x.ttft_ms);
    idleDetail.push(x);
    console.error(`  idle short request ${describe(x)}`);
}
const controller = new AbortController();
const longs = Array.from({ length: longCount }, (_, i) => stream(prompts[i % prompts.length], longTokens,
                                                                  controller.signal).catch(() => null));
await new Promise((r) => setTimeout(r, 1500)); // the long ones are past their prefill and decoding
const loaded = [];
const loadedDetail = [];
for (let r = 0; r < 3; ++r) {
    const x = await shortRequest();
    loaded.push(x.ttft_ms);
    loadedDetail.push(x);
    console.error(`  loaded short request ${describe(x)}`);
}
controller.abort();
await Promise.all(longs);
report.ttft = { idle_ms: median(idle), under_load_ms: median(loaded), long_streams: longCount, short_prompts: shortPrompts,
                ratio: median(loaded) / median(idle), idle_requests: idleDetail, loaded_requests: loadedDetail };
console.error(`time to first token: idle ${report.ttft.idle_ms.toFixed(1)} ms, beside ${longCount} decoding ` +
              `${report.ttft.under_load_ms.toFixed(1)} ms (x${report.ttft.ratio.toFixed(2)})`);
console.log(JSON.stringify(report));
