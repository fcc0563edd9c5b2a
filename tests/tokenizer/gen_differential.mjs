// Writes the reference data of the differential tokenizer test: deterministic strings (English, code, CJK,
// emoji, combining marks, white-space runs, digits, special-token text, and text that is not in NFC:
// decomposed accents, conjoining Hangul jamo, combining marks out of canonical order, singletons) and the ids
// @lenml/tokenizers (a JS port of Hugging Face tokenizers) gives them. The strings are not normalised: the
// tokenizers that declare a normalizer (Qwen: NFC) must apply it. Usage: node gen_differential.mjs CACHE_DIR [COUNT]
// Output: CACHE_DIR/differential/MODEL.jsonl (records {s, ids}, plus d, the reference decode, for llama2); a header line records the parameters and a hash of this file,
// so reruns are no-ops until the generator changes.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const cache = process.argv[2];
const count = Number(process.argv[3] ?? 100000);
const seed = 20261121;
const version = 2;
const generatorHash = crypto.createHash("sha256").update(fs.readFileSync(fileURLToPath(import.meta.url)))
    .digest("hex").slice(0, 16);
const models = {
    qwen3: ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>"],
    llama3: ["<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>"],
    deepseek_v3: ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<think>"],
    gptoss: ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|endoftext|>"],
    llama2: ["<s>", "</s>", "<unk>"],
    qwen35: ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>"],
};
// Tokenizers whose decode(encode(s)) is not s (the SentencePiece decoder strips the space the normalizer
// prepended, per segment between special tokens): their records carry the reference decode as "d".
const recordDecode = new Set(["llama2"]);

function mulberry32(a) {
    return () => {
        a |= 0;
        a = (a + 0x6d2b79f5) | 0;
        let t = Math.imul(a ^ (a >>> 15), 1 | a);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

const words = ("the of and to in is you that it he was for on are as with his they at be this have from or one " +
    "had by word but not what all were we when your can said there use an each which she do how their if will " +
    "up other about out many then them these so some her would make like him into time has look two more write " +
    "go see number no way could people my than first water been call who oil its now find long down day did get " +
    "come made may part Hello World HTTP JSON McDonald iPhone OpenAI naïve café résumé Straße").split(" ");
const code = ["fn main() {", "}", "let x = 42;", "if (a && b) {", "return nullptr;", "std::vector<int> v;", "=>",
    "//", "/* */", "#include <stdio.h>", "def f(x):", "    ", "\t", "print('hi')", "x += 1", "a->b", "::", "[]{}()",
    "0x1F", "i++", "!=", "===", "<div class=\"a\">", "</div>", "$HOME", "@decorator", "`code`", "~/.bashrc"];
const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Ve", "'D", "n't", "'x"];
const spaces = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\t\t", "\u3000", "\u00a0", "\u2003", "\v", "\f"];
const ranges = [ // [first, last] code point ranges for random characters
    [0x4e00, 0x9fa5], [0x3040, 0x309f], [0x30a0, 0x30ff], [0xac00, 0xd7a3], [0x0400, 0x04ff], [0x0370, 0x03ff],
    [0x0600, 0x06ff], [0x0900, 0x097f], [0x0e00, 0x0e7f], [0x00c0, 0x024f], [0x1f300, 0x1f64f], [0x1f900, 0x1f9ff],
    [0x2600, 0x27bf], [0x2000, 0x206f], [0xff01, 0xff5e], [0x0021, 0x007e], [0x00a1, 0x00ff], [0x2190, 0x22ff],
];
// Text NFC changes. Marks of different combining classes: acute 230, dot below 220, cedilla 202, horn 216,
// ypogegrammeni 240, nukta 7, hebrew sheva 10, arabic fatha 30, diaeresis 230, double macron below 233.
const marks = [0x301, 0x323, 0x327, 0x31b, 0x345, 0x93c, 0x5b0, 0x64e, 0x308, 0x35f, 0x302, 0x316];
const decomposedWords = ["cafe\u0301", "re\u0301sume\u0301", "nai\u0308ve", "Stra\u00dfe", "A\u030angstro\u0308m",
    "e\u0301", "E\u0300", "n\u0303", "o\u0302\u0301", "u\u031b\u0323", "\u03b1\u0313\u0301\u0345",
    "\u0915\u093c", "\u0b47\u0b3e", "\u0cc6\u0cc2\u0cd5", "\u3099\u304b", "\u304b\u3099", "\u1100\u1161\u11a8"];
const singletons = [0x212b, 0x2126, 0x212a, 0x340, 0x341, 0x343, 0x344, 0x374, 0x37e, 0x387, 0x1fee, 0x1ffd,
    0x2000, 0x2001, 0x2329, 0x232a, 0xf900, 0xf91d, 0xfa10, 0xfad9, 0x2f800, 0x2fa1d, 0x958, 0xfb1d, 0xfb2a, 0x2adc];
const digits = ["0123456789", "٠١٢٣٤٥٦٧٨٩", "０１２３４５６７８９", "½¼²³", "ⅠⅡⅢⅣ"];

function generator(specials, rnd) {
    const pick = (a) => a[Math.floor(rnd() * a.length)];
    const int = (n) => Math.floor(rnd() * n);
    const ranged = () => {
        const [a, b] = pick(ranges);
        return String.fromCodePoint(a + int(b - a + 1));
    };
    const segment = () => {
        switch (int(12)) {
        case 0: case 1: { const w = pick(words); return int(4) == 0 ? w.toUpperCase() : w; }
        case 2: return pick(code);
        case 3: return pick(words) + pick(contractions);
        case 4: { let s = ""; for (let n = 1 + int(6); n > 0; --n) s += ranged(); return s; }
        case 5: { let s = ""; for (let n = 1 + int(20); n > 0; --n) s += pick(digits)[0] === "0" ? String(int(10)) : pick([...pick(digits)]); return s; }
        case 6: { let s = ""; for (let n = 1 + int(40); n > 0; --n) s += int(3) ? " " : pick(spaces); return s; }
        case 7: { let s = pick(words); for (let n = 1 + int(3); n > 0; --n) s += String.fromCodePoint(0x300 + int(0x70)); return s; }
        case 8: return int(2) ? pick(["👍🏽", "👨‍👩‍👧", "🇩🇪", "❤️", "🦙", "😀", "🧑‍💻", "✋🏿"]) : unnormalized();
        case 9: return pick(specials) + (int(2) ? "" : pick(specials).slice(0, 3));
        case 10: return pick(spaces);
        default: return pick([".", ",", "!", "?", ":", ";", "-", "(", ")", "\"", "'", "...", "—", "“", "”", "。", "、"]);
        }
    };
    const jamo = () => { // conjoining Hangul: L V (T), a syllable + T, or stray jamo
        switch (int(4)) {
        case 0: return String.fromCodePoint(0x1100 + int(19), 0x1161 + int(21));
        case 1: return String.fromCodePoint(0x1100 + int(19), 0x1161 + int(21), 0x11a8 + int(27));
        case 2: return String.fromCodePoint(0xac00 + 28 * int(399), 0x11a8 + int(27));
        default: return String.fromCodePoint(pick([0x1100, 0x1161, 0x11a8, 0x11c2, 0x1175]) + int(3));
        }
    };
    const unnormalized = () => {
        switch (int(5)) {
        case 0: return pick(decomposedWords);
        case 1: { let s = ""; for (let n = 1 + int(4); n > 0; --n) s += jamo(); return s; }
        case 2: { // a base and marks of mixed combining classes, in random order
            let s = pick(["a", "e", "o", "u", "s", "A", "\u03b1", "\u0915", "\u05d0", "\u0628", "x"]);
            for (let n = 1 + int(4); n > 0; --n) s += String.fromCodePoint(pick(marks));
            return s;
        }
        case 3: return String.fromCodePoint(pick(singletons));
        default: return pick(words) + String.fromCodePoint(pick(marks), pick(marks)) + pick(decomposedWords);
        }
    };
    return () => {
        let s = "";
        for (let n = 1 + int(14); n > 0; --n) s += (int(4) ? segment() : unnormalized()) + (int(3) ? " " : "");
        return s;
    };
}

async function main() {
    const lib = await import(pathToFileURL(path.join(cache, "lenml-tokenizers/dist/main.mjs")).href);
    const outDir = path.join(cache, "differential");
    fs.mkdirSync(outDir, { recursive: true });
    for (const [name, specials] of Object.entries(models)) {
        const file = path.join(outDir, `${name}.jsonl`);
        const header = JSON.stringify({ version, generator: generatorHash, seed, count, model: name });
        if (fs.existsSync(file) && fs.readFileSync(file, "utf8").split("\n", 1)[0] === header) continue;
        const dir = path.join(cache, name, "models");
        const tok = lib.TokenizerLoader.fromPreTrained({
            tokenizerJSON: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")),
            tokenizerConfig: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8")),
        });
        const next = generator(specials, mulberry32(seed));
        const lines = [header];
        for (let i = 0; i < count; ++i) {
            const s = next();
            const ids = tok.encode(s, { add_special_tokens: false });
            lines.push(JSON.stringify(recordDecode.has(name) ? { s, ids, d: tok.decode(ids) } : { s, ids }));
        }
        fs.writeFileSync(file + ".tmp", lines.join("\n") + "\n");
        fs.renameSync(file + ".tmp", file);
    }
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
