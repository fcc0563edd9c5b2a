// Runs the README's serving examples as pasted: the shell block (start `sluice serve`, wait for /health, curl a
// chat completion), the official `openai` SDK block and the `ws` WebSocket block, each found after its
// `<!-- example: NAME` marker. Only three things are substituted: the executable's path, the path
// build/release/demo-qwen3moe.gguf should an example name it (a tiny model made here) and port 8080 (a free
// port); examples without -m serve the bundled model. Exits non-zero on failure.
// Usage: node readme_examples.mjs SLUICE_EXE README.md NPM_CACHE_DIR
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const [exe, readmePath, npmCache] = process.argv.slice(2);
const readme = fs.readFileSync(readmePath, 'utf8');

/// The fenced code block that follows `<!-- example: NAME`.
function example(name) {
    const m = new RegExp(`<!-- example: ${name}\\b[^\\n]*\\n+\`\`\`(\\w+)\\n([\\s\\S]*?)\\n\`\`\`\\n`).exec(readme);
    assert.ok(m, `README.md has no code block after <!-- example: ${name} -->`);
    return m[2];
}

const freePort = await new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address();
        s.close(() => resolve(port));
    });
});

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-readme-'));
const model = path.join(dir, 'demo-qwen3moe.gguf');
const pidFile = path.join(dir, 'server.pid');
const localize = (code) => code.replaceAll('build/release/cli/sluice', exe)
    .replaceAll('build/release/demo-qwen3moe.gguf', model)
    .replaceAll('8080', String(freePort));

/// Runs a command with a time limit, its output into files (the server the shell example leaves running
/// inherits them, as it would a terminal); fails with its output unless it exits 0.
function run(what, cmd, args) {
    const out = path.join(dir, `${what.replace(/\W/g, '_')}.out`);
    const err = path.join(dir, `${what.replace(/\W/g, '_')}.err`);
    const r = spawnSync(cmd, args, { cwd: dir, timeout: 60000,
                                     stdio: ['ignore', fs.openSync(out, 'w'), fs.openSync(err, 'w')] });
    const stdout = fs.readFileSync(out, 'utf8');
    const stderr = fs.readFileSync(err, 'utf8');
    assert.equal(r.status, 0, `${what} failed (status ${r.status}, ${r.error ?? 'no error'}):\n${stdout}\n${stderr}`);
    console.log(`--- ${what}:\n${stdout.trimEnd()}`);
    return stdout;
}

let failed = false;
try {
    // The demo model and the npm packages where `import ... from 'openai'` / 'ws' find them.
    run('mkmodel', exe, ['mkmodel', '-q', '-o', model, '--preset', 'tiny-qwen3moe', '--type', 'q8_0', '--seed', '1']);
    fs.mkdirSync(path.join(dir, 'node_modules'));
    fs.symlinkSync(path.join(npmCache, 'openai-6.30.1'), path.join(dir, 'node_modules', 'openai'));
    fs.symlinkSync(path.join(npmCache, 'ws-8.18.3'), path.join(dir, 'node_modules', 'ws'));

    // The shell block leaves the server running in the background; remember its pid to stop it.
    fs.writeFileSync(path.join(dir, 'curl.sh'), `set -e\n${localize(example('curl'))}\necho $! > ${pidFile}\n`);
    const curlOut = run('curl example', 'sh', ['curl.sh']);
    const answer = JSON.parse(curlOut.trim().split('\n').pop());
    assert.equal(answer.object, 'chat.completion');
    assert.equal(typeof answer.choices[0].message.content, 'string');
    assert.ok(answer.usage.completion_tokens > 0);

    fs.writeFileSync(path.join(dir, 'chat.mjs'), localize(example('openai')));
    const chatOut = run('openai example', 'node', ['chat.mjs']);
    assert.ok(chatOut.trim().length > 0, 'the openai example printed nothing');

    fs.writeFileSync(path.join(dir, 'ws.mjs'), localize(example('ws')));
    const wsOut = run('ws example', 'node', ['ws.mjs']);
    assert.match(wsOut, /^a: done (stop|length)$/m);
    assert.match(wsOut, /^b: done (stop|length)$/m);
    assert.match(wsOut, /^a: ".*"$/m);
} catch (e) {
    console.error(e.message);
    failed = true;
} finally {
    if (fs.existsSync(pidFile)) {
        const pid = Number(fs.readFileSync(pidFile, 'utf8'));
        try {
            process.kill(pid, 'SIGTERM');
        } catch { /* already gone */ }
    }
    fs.rmSync(dir, { recursive: true, force: true });
}
console.log(failed ? 'readme examples: FAILED' : 'readme examples: ok');
process.exit(failed ? 1 : 0);
