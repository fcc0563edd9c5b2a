#!/usr/bin/env python3
"""Train Sluice's tiny Qwen3-MoE model end to end on one GPU, deterministic given the seed.

Steps: corpus (corpus.py) -> byte-level BPE tokenizer (4096 ids incl. specials, Qwen2 pre-tokenizer, ChatML
template) -> Qwen3MoeForCausalLM from scratch (bf16 autocast) -> checkpoint saved in bfloat16 -> evaluation of
that checkpoint in float32 (greedy accuracy per held-out task, held-out prose perplexity) -> float64 reference
logits for tests/fidelity.

Usage: python3 tools/train/train.py --corpus build/train/corpus --out OUT [--steps N] [--seed 1]
Writes OUT/hf (config.json, model.safetensors, tokenizer.json, tokenizer_config.json), OUT/metrics.json,
OUT/reference (reference.json, logits.bin); the log goes to stdout.
"""

import argparse
import json
import math
import os
import re
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # data workers are forked processes
sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus as corpus_mod  # noqa: E402

VOCAB = 4096
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
REGULAR = VOCAB - len(SPECIALS)
EOT, IM_START, IM_END = REGULAR, REGULAR + 1, REGULAR + 2
QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Qwen3-style: tools in a system turn, <tool_call> / <tool_response> blocks, think blocks, enable_thinking.
CHAT_TEMPLATE = (Path(__file__).resolve().parent / "sluice-tiny-moe.jinja").read_text()
MODEL = dict(
    vocab_size=VOCAB, hidden_size=256, num_hidden_layers=8, num_attention_heads=4, num_key_value_heads=2,
    head_dim=64, intermediate_size=768, moe_intermediate_size=96, num_experts=16, num_experts_per_tok=4,
    norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[], max_position_embeddings=512,
    rms_norm_eps=1e-6, tie_word_embeddings=True, use_sliding_window=False, attention_bias=False,
    router_aux_loss_coef=0.01, output_router_logits=False, bos_token_id=EOT, eos_token_id=IM_END,
    pad_token_id=EOT,
)
# The draft for speculative decoding: a dense Qwen3 of 2 layers with the same tokenizer.
DRAFT = dict(
    vocab_size=VOCAB, hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    head_dim=64, intermediate_size=512, max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=True,
    use_sliding_window=False, attention_bias=False, bos_token_id=EOT, eos_token_id=IM_END, pad_token_id=EOT,
)
ROPE_THETA = 10000.0
SEQ = 512  # a tool exchange with both tools listed is about 300 tokens
PPL_CTX = 256


def log(*a):
    print(*a, flush=True)


# ---------------------------------------------------------------- tokenizer


def train_tokenizer(text_file):
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=REGULAR, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train([str(text_file)], trainer=trainer)
    assert tok.get_vocab_size() == REGULAR, tok.get_vocab_size()
    tok.add_special_tokens([AddedToken(t, single_word=False, lstrip=False, rstrip=False, normalized=False,
                                       special=True) for t in SPECIALS])
    for i, t in enumerate(SPECIALS):
        assert tok.token_to_id(t) == REGULAR + i
    data = json.loads(tok.to_str())
    for part in (data["post_processor"], data["decoder"], data["pre_tokenizer"]["pretokenizers"][1]):
        part.update(add_prefix_space=False, trim_offsets=False, use_regex=False)
    return data


def tokenizer_config():
    return {
        "add_bos_token": False, "add_prefix_space": False,
        "added_tokens_decoder": {str(REGULAR + i): dict(content=t, lstrip=False, normalized=False, rstrip=False,
                                                        single_word=False, special=True)
                                 for i, t in enumerate(SPECIALS)},
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"], "bos_token": None,
        "chat_template": CHAT_TEMPLATE, "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>",
        "errors": "replace", "model_max_length": 512, "pad_token": "<|endoftext|>",
        "split_special_tokens": False, "tokenizer_class": "Qwen2Tokenizer", "unk_token": None,
    }


# ---------------------------------------------------------------- data


def tokenized_documents(tok, gen, train_prose, seed, chunk=50000):
    """Endless (ids, loss mask) documents: chats mask their prompt out; prose ends with <|endoftext|>."""
    stream = corpus_mod.training_stream(gen, train_prose, seed)
    prose_ids = {}
    while True:
        docs = [next(stream) for _ in range(chunk)]
        chats = [d for d in docs if d[0] == "chat"]
        enc_p = tok.encode_batch([d[1] for d in chats])
        enc_a = tok.encode_batch([d[2] for d in chats])
        new = sorted({d[1] for d in docs if d[0] == "prose"} - prose_ids.keys())
        for text, e in zip(new, tok.encode_batch(new)):
            prose_ids[text] = e.ids + [EOT]
        ci = 0
        for d in docs:
            if d[0] == "prose":
                p = prose_ids[d[1]]
                yield p, [1] * len(p)
            else:
                p, a = enc_p[ci].ids, enc_a[ci].ids
                ci += 1
                yield p + a, [0] * len(p) + [1] * len(a)


SEQS_PER_CHUNK = 8192
_worker = {}


def _build_chunk(index):
    """Sequences of chunk `index`: SEQS_PER_CHUNK packed sequences of SEQ+1 tokens, each starting at a document
    boundary, with a loss mask (the answers and <|im_end|> of chats, all of prose). Seeded by (seed, index)."""
    w = _worker
    docs = tokenized_documents(w["tok"], w["gen"], w["prose"], f"{w['seed']}:{index}", chunk=4096)
    toks = np.zeros((SEQS_PER_CHUNK, SEQ + 1), dtype=np.int32)
    mask = np.zeros((SEQS_PER_CHUNK, SEQ + 1), dtype=np.uint8)
    for s in range(SEQS_PER_CHUNK):
        ids, m = [], []
        while len(ids) < SEQ + 1:
            d, dm = next(docs)
            if len(d) > SEQ + 1 - len(ids) and not ids:
                continue  # a document longer than a sequence never starts one (its reply would be cut off)
            ids += d
            m += dm
        toks[s] = ids[:SEQ + 1]
        mask[s] = m[:SEQ + 1]
    return toks, mask


def build_sequences(tok, gen, train_prose, seed, n_seq):
    """n_seq training sequences, built in parallel chunks (the result does not depend on the worker count)."""
    import multiprocessing as mp
    t0 = time.time()
    _worker.update(tok=tok, gen=gen, prose=train_prose, seed=seed)
    n_chunks = (n_seq + SEQS_PER_CHUNK - 1) // SEQS_PER_CHUNK
    with mp.get_context("fork").Pool(min(n_chunks, os.cpu_count() or 1)) as pool:
        parts = pool.map(_build_chunk, range(n_chunks))
    toks = np.concatenate([p[0] for p in parts])[:n_seq]
    mask = np.concatenate([p[1] for p in parts])[:n_seq]
    log(f"data: {n_seq} sequences, {mask.mean():.2f} of tokens in the loss, {time.time() - t0:.1f} s")
    return torch.from_numpy(toks).long(), torch.from_numpy(mask).bool()


# ---------------------------------------------------------------- model


def make_config(arch="moe"):
    rope = {"rope_parameters": {"rope_type": "default", "rope_theta": ROPE_THETA}}
    if arch == "draft":
        return transformers.Qwen3Config(**DRAFT, **rope)
    return transformers.Qwen3MoeConfig(**MODEL, **rope)


def model_class(arch):
    return transformers.Qwen3ForCausalLM if arch == "draft" else transformers.Qwen3MoeForCausalLM


def make_model(cfg, experts_impl, arch="moe"):
    kw = {} if experts_impl is None or arch == "draft" else {"experts_implementation": experts_impl}
    return model_class(arch)._from_config(cfg, attn_implementation="sdpa", **kw)


def save_checkpoint(model, out):
    out.mkdir(parents=True, exist_ok=True)
    model.to(torch.bfloat16).save_pretrained(str(out), safe_serialization=True)
    (out / "generation_config.json").unlink(missing_ok=True)
    data = json.loads((out / "config.json").read_text())
    data.setdefault("rope_theta", ROPE_THETA)
    if "num_experts" not in data and "num_local_experts" in data:
        data["num_experts"] = data["num_local_experts"]
    (out / "config.json").write_text(json.dumps(data, indent=2) + "\n")


def train(args, tok, gen, train_prose):
    torch.manual_seed(args.seed)
    cfg = make_config(args.arch)
    impl = args.experts_impl if args.experts_impl != "default" else None
    model = make_model(cfg, impl, args.arch).cuda()
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model ({args.arch}): {n_params} parameters, experts implementation "
        f"{getattr(model.config, '_experts_implementation', None)}")
    cache = Path(args.data_cache) if args.data_cache else None
    if cache and (cache / "done").exists():
        toks = torch.from_numpy(np.load(cache / "toks.npy")[:args.steps * args.batch]).long()
        mask = torch.from_numpy(np.load(cache / "mask.npy")[:args.steps * args.batch]).bool()
        log(f"data: {len(toks)} sequences from {cache}")
    else:
        toks, mask = build_sequences(tok, gen, train_prose, args.seed, args.steps * args.batch)
        if cache:
            cache.mkdir(parents=True, exist_ok=True)
            np.save(cache / "toks.npy", toks.numpy().astype(np.int32))
            np.save(cache / "mask.npy", mask.numpy())
            (cache / "done").touch()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)
    warm = max(1, args.steps // 25)

    def lr_at(step):
        if step < warm:
            return args.lr * (step + 1) / warm
        p = (step - warm) / max(1, args.steps - warm)
        return args.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * p)))

    moe_kw = {"output_router_logits": True} if args.arch == "moe" else {}
    aux_coef = cfg.router_aux_loss_coef if args.arch == "moe" else 0.0
    model.train()
    t0 = time.time()
    done = args.steps
    for step in range(args.steps):
        if args.max_train_seconds and time.time() - t0 > args.max_train_seconds:
            done = step
            log(f"stopping early at step {step}: --max-train-seconds {args.max_train_seconds} reached")
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        sl = slice(step * args.batch, (step + 1) * args.batch)
        x = toks[sl].cuda(non_blocking=True)
        m = mask[sl, 1:].cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(input_ids=x[:, :-1], use_cache=False, **moe_kw)
        logits = out.logits.float()
        ce = F.cross_entropy(logits.view(-1, VOCAB), x[:, 1:].reshape(-1), reduction="none").view_as(m)
        loss = (ce * m).sum() / m.sum()
        total = loss + aux_coef * out.aux_loss.float() if aux_coef else loss
        opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == args.steps - 1:
            torch.cuda.synchronize()
            aux = out.aux_loss.item() if aux_coef else 0.0
            log(f"step {step}/{args.steps} loss {loss.item():.4f} aux {aux:.3f} "
                f"lr {lr_at(step):.2e} {time.time() - t0:.1f} s")
    torch.cuda.synchronize()
    seconds = time.time() - t0
    log(f"training: {done} steps of {args.batch}x{SEQ} tokens in {seconds:.1f} s")
    return model, n_params, seconds, done


# ---------------------------------------------------------------- evaluation


def load_eval_model(hf_dir, dtype, device, arch="moe"):
    kw = {"experts_implementation": "eager"} if arch == "moe" else {}
    m = model_class(arch).from_pretrained(str(hf_dir), dtype=torch.float32, attn_implementation="eager", **kw)
    return m.to(dtype).to(device).eval()


def final_answer(text):
    """The content a client sees: the text after the think block, whitespace trimmed."""
    return text.split("</think>")[-1].strip()


@torch.no_grad()
def greedy_answers(model, tok, questions, device, max_new=64, prompts=None):
    """Greedy replies (text before <|im_end|>, think block included), batched by prompt length so no padding is
    needed. `prompts` (rendered texts) replace the thinking-mode chat prompts of `questions`."""
    prompts = [tok.encode(p).ids for p in (prompts or [corpus_mod.chat(q) for q in questions])]
    answers = [None] * len(prompts)
    by_len = {}
    for i, p in enumerate(prompts):
        by_len.setdefault(len(p), []).append(i)
    for n, idx in sorted(by_len.items()):
        for b in range(0, len(idx), 256):
            chunk = idx[b:b + 256]
            seq = torch.tensor([prompts[i] for i in chunk], device=device)
            done = torch.zeros(len(chunk), dtype=torch.bool, device=device)
            outs = [[] for _ in chunk]
            past = None
            cur = seq
            for _ in range(max_new):
                o = model(input_ids=cur, past_key_values=past, use_cache=True)
                past = o.past_key_values
                nxt = o.logits[:, -1].argmax(-1)
                for j, t in enumerate(nxt.tolist()):
                    if not done[j]:
                        if t == IM_END:
                            done[j] = True
                        else:
                            outs[j].append(t)
                if bool(done.all()):
                    break
                cur = nxt[:, None]
            for j, i in enumerate(chunk):
                answers[i] = tok.decode(outs[j], skip_special_tokens=False)
    return answers


def accuracy(model, tok, rows, device, thinking=True):
    prompts = [corpus_mod.render([{"role": "user", "content": r["question"]}], enable_thinking=thinking)
               for r in rows]
    replies = greedy_answers(model, tok, None, device, max_new=64 if thinking else 16, prompts=prompts)
    answers = [final_answer(a) for a in replies]
    per = {}
    wrong = []
    for r, a, full in zip(rows, answers, replies):
        ok = a == r["answer"] and (not thinking or full.lstrip().startswith("<think>"))
        c = per.setdefault(r["task"], [0, 0])
        c[0] += ok
        c[1] += 1
        if not ok and len(wrong) < 40:
            wrong.append({"task": r["task"], "question": r["question"], "expected": r["answer"], "got": full})
    total = sum(c[0] for c in per.values()) / sum(c[1] for c in per.values())
    return {"overall": total, "per_task": {k: c[0] / c[1] for k, c in per.items()},
            "counts": {k: c[1] for k, c in per.items()}, "wrong_examples": wrong}, answers


@torch.no_grad()
def generate_texts(model, tok, prompts, device, max_new=96, batch=64):
    """Greedy replies of many prompts of different lengths (left-padded batches through generate)."""
    ids = [tok.encode(p).ids for p in prompts]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = [None] * len(ids)
    for b in range(0, len(order), batch):
        idx = order[b:b + batch]
        n = max(len(ids[i]) for i in idx)
        x = torch.full((len(idx), n), EOT, dtype=torch.long)
        att = torch.zeros((len(idx), n), dtype=torch.long)
        for j, i in enumerate(idx):
            x[j, n - len(ids[i]):] = torch.tensor(ids[i])
            att[j, n - len(ids[i]):] = 1
        g = model.generate(input_ids=x.to(device), attention_mask=att.to(device), max_new_tokens=max_new,
                           do_sample=False, eos_token_id=IM_END, pad_token_id=EOT)
        for j, i in enumerate(idx):
            new = g[j, n:].tolist()
            if IM_END in new:
                new = new[:new.index(IM_END)]
            out[i] = tok.decode(new, skip_special_tokens=False)
    return out


def parse_calls(text):
    """[[name, arguments]] of the <tool_call> blocks after the think block; None where one is not JSON."""
    calls = []
    for block in re.findall(r"<tool_call>\n(.*?)\n</tool_call>", text.split("</think>")[-1], re.S):
        try:
            c = json.loads(block)
            calls.append([c["name"], c["arguments"]])
        except (ValueError, KeyError, TypeError):
            return None
    return calls


def think_ok(reply, thinking):
    """Thinking mode: a non-empty think block first; otherwise no think block at all."""
    if not thinking:
        return "<think>" not in reply
    m = re.match(r"<think>\n(.+?)\n</think>\n\n", reply, re.S)
    return m is not None and m.group(1).strip() != ""


def tool_skills(model, tok, rows, device):
    """Held-out tool, JSON and no-tool tasks: exact tool calls at the call turn, the final answer after the tool
    results, think blocks present in thinking mode and absent otherwise."""
    first = generate_texts(model, tok, [r["call_prompt"] for r in rows], device)
    second_rows = [i for i, r in enumerate(rows) if "answer_prompt" in r]
    second = generate_texts(model, tok, [rows[i]["answer_prompt"] for i in second_rows], device)
    second_of = dict(zip(second_rows, second))
    per, examples = {}, []
    for i, r in enumerate(rows):
        key = f"{r['kind']}/{'think' if r['thinking'] else 'nothink'}"
        c = per.setdefault(key, {"n": 0, "call": 0, "answer": 0, "think": 0})
        c["n"] += 1
        c["think"] += think_ok(first[i], r["thinking"])
        if "answer_prompt" in r:
            c["call"] += parse_calls(first[i]) == r["calls"]
            c["answer"] += final_answer(second_of[i]) == r["answer"]
            c["think"] += think_ok(second_of[i], r["thinking"])
        elif r["kind"] == "json":
            try:
                c["answer"] += json.loads(final_answer(first[i])) == json.loads(r["answer"])
            except ValueError:
                pass
        else:
            c["answer"] += final_answer(first[i]) == r["answer"] and "<tool_call>" not in first[i]
        if len(examples) < 24 and i % 10 == 0:
            examples.append({"kind": key, "first": first[i], "second": second_of.get(i)})
    turns = lambda k, c: c["n"] * (2 if not k.startswith(("json", "no_tool")) else 1)  # noqa: E731
    table = {k: {"n": c["n"], "call": c["call"] / c["n"], "answer": c["answer"] / c["n"],
                 "think": c["think"] / turns(k, c)} for k, c in sorted(per.items())}
    return {"per_kind": table, "examples": examples}


@torch.no_grad()
def agreement(big, draft, tok, prompts, device, max_new=96):
    """How often the draft's argmax equals the big model's greedy token, along the big model's greedy replies
    (teacher-forced): the acceptance rate a greedy speculative decoder would see, token by token."""
    replies = generate_texts(big, tok, prompts, device, max_new=max_new)
    same = total = 0
    for p, r in zip(prompts, replies):
        pi, ri = tok.encode(p).ids, tok.encode(r).ids + [IM_END]
        x = torch.tensor([pi + ri], device=device)
        a = big(input_ids=x, use_cache=False).logits[0, len(pi) - 1:-1].argmax(-1)
        b = draft(input_ids=x, use_cache=False).logits[0, len(pi) - 1:-1].argmax(-1)
        same += int((a == b).sum())
        total += len(ri)
    return same / total, total


@torch.no_grad()
def perplexity(model, ids, ctx, device):
    """llama.cpp's definition: non-overlapping windows of ctx tokens (the remainder dropped); in each window the
    tokens at positions ctx/2+1 .. ctx-1 are scored from the logits one position earlier."""
    n_chunk = len(ids) // ctx
    first = ctx // 2
    nll, count = 0.0, 0
    for c in range(n_chunk):
        x = torch.tensor([ids[c * ctx:(c + 1) * ctx]], device=device)
        logits = model(input_ids=x, use_cache=False).logits[0].double()
        lp = torch.log_softmax(logits, -1)
        for j in range(first, ctx - 1):
            nll -= float(lp[j, x[0, j + 1]])
            count += 1
    return math.exp(nll / count), count, n_chunk


# ---------------------------------------------------------------- reference fixture


def trained_positions(sequences):
    """Positions (over the concatenated sequences) whose next token the training loss counted: in a chat, those
    predicting the answer (after '<|im_start|>assistant\\n'); in prose, every position but the last. The prompt
    positions of a chat were never trained, so their top two logits can be near ties."""
    out, base = [], 0
    for s in sequences:
        starts = [i for i, t in enumerate(s) if t == IM_START]
        first = starts[-1] + 3 if len(starts) >= 2 else 1
        out += [base + p for p in range(first - 1, len(s) - 1)]
        base += len(s)
    return out


@torch.no_grad()
def reference_fixture(hf_dir, tok, rows, prose, out):
    """tests/fixtures/reference format: float64 logits of a few held-out texts and a greedy chat answer."""
    m = load_eval_model(hf_dir, torch.float64, "cpu")
    sequences = []
    for r in rows[:4]:
        p, a = corpus_mod.chat(r["question"], r["answer"], r["thought"])
        sequences.append(tok.encode(p + a).ids[:28])
    sequences.append(tok.encode(prose).ids[:120 - sum(len(s) for s in sequences)])
    logits = [m(input_ids=torch.tensor([s]), use_cache=False).logits[0] for s in sequences]
    prompt = tok.encode(corpus_mod.chat(rows[0]["question"])).ids
    seq, margins = list(prompt), []
    for _ in range(16):
        lg = m(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1]
        top = lg.topk(2).values
        margins.append(float(top[0] - top[1]))
        seq.append(int(lg.argmax()))
        if seq[-1] == IM_END:
            break
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "logits.bin", "wb") as f:
        for block in logits:
            f.write(block.to(torch.float32).numpy().astype("<f4").tobytes())
    ref = {"name": "trained_moe", "hf_class": "Qwen3MoeForCausalLM", "gguf_arch": "qwen3moe",
           "checkpoint": "models/sluice-tiny-moe", "vocab_size": VOCAB,
           "transformers_version": transformers.__version__, "torch_version": torch.__version__,
           "compute_dtype": "float64", "sequences": sequences, "logits_file": "logits.bin",
           "logits_layout": "float32 little-endian, sequences in order, each [len][vocab_size]",
           "greedy": {"prompt": prompt, "continuation": seq[len(prompt):], "min_margin": min(margins)},
           "trained_positions": trained_positions(sequences)}
    (out / "reference.json").write_text(json.dumps(ref) + "\n")
    return float(torch.cat(logits).abs().max()), min(margins)


# ---------------------------------------------------------------- driver


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--experts-impl", default="default")
    ap.add_argument("--max-train-seconds", type=float, default=0, help="safety stop (0: none)")
    ap.add_argument("--arch", choices=["moe", "draft"], default="moe", help="the model (moe) or its dense draft")
    ap.add_argument("--tokenizer", help="a folder holding tokenizer.json and tokenizer_config.json to reuse")
    ap.add_argument("--tokenizer-only", action="store_true", help="train and write the tokenizer, then stop")
    ap.add_argument("--data-cache", help="a folder for the training sequences: written if absent, else read "
                    "(the draft reuses the model's sequences)")
    ap.add_argument("--agreement", nargs=2, metavar=("BIG_HF", "DRAFT_HF"),
                    help="measure how often the draft's argmax equals the big model's greedy token")
    args = ap.parse_args()
    t_start = time.time()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    corpus_dir, out = Path(args.corpus), Path(args.out)
    hf_dir = out / "hf"
    hf_dir.mkdir(parents=True, exist_ok=True)

    if args.agreement:
        big = load_eval_model(Path(args.agreement[0]), torch.float32, "cuda")
        draft = load_eval_model(Path(args.agreement[1]), torch.float32, "cuda", "draft")
        tok = Tokenizer.from_file(str(Path(args.agreement[0]) / "tokenizer.json"))
        rows = [json.loads(l) for l in open(corpus_dir / "heldout.jsonl")]
        tools = [json.loads(l) for l in open(corpus_dir / "heldout_tools.jsonl")]
        res = {}
        res["heldout_thinking"] = agreement(big, draft, tok, [corpus_mod.chat(r["question"]) for r in rows], "cuda")
        res["heldout_nothink"] = agreement(big, draft, tok, [corpus_mod.render(
            [{"role": "user", "content": r["question"]}], enable_thinking=False) for r in rows], "cuda")
        res["tool_calls"] = agreement(big, draft, tok, [r["call_prompt"] for r in tools], "cuda")
        res["tool_answers"] = agreement(big, draft, tok, [r["answer_prompt"] for r in tools if "answer_prompt" in r],
                                        "cuda")
        log(f"draft agreement: {res}")
        (out / "agreement.json").write_text(json.dumps(res, indent=1) + "\n")
        return

    _, gen, train_prose, _ = corpus_mod.build(args.seed, corpus_dir / "kjv.txt")
    t0 = time.time()
    if args.tokenizer:
        for name in ("tokenizer.json", "tokenizer_config.json"):
            (hf_dir / name).write_bytes((Path(args.tokenizer) / name).read_bytes())
    else:
        tok_json = train_tokenizer(corpus_dir / "tokenizer_texts.txt")
        (hf_dir / "tokenizer.json").write_text(json.dumps(tok_json, indent=2, ensure_ascii=False) + "\n")
        (hf_dir / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(), indent=2) + "\n")
    tok = Tokenizer.from_file(str(hf_dir / "tokenizer.json"))
    log(f"tokenizer: {tok.get_vocab_size()} ids in {time.time() - t0:.1f} s")
    if args.tokenizer_only:
        return

    model, n_params, train_seconds, steps_done = train(args, tok, gen, train_prose)
    save_checkpoint(model, hf_dir)
    del model

    dev = "cuda"
    m = load_eval_model(hf_dir, torch.float32, dev, args.arch)
    rows_small = [json.loads(l) for l in open(corpus_dir / "heldout.jsonl")]
    rows_large = [json.loads(l) for l in open(corpus_dir / "heldout_large.jsonl")]
    rows_tools = [json.loads(l) for l in open(corpus_dir / "heldout_tools.jsonl")]
    acc_small, answers_small = accuracy(m, tok, rows_small, dev)
    acc_small_nothink, answers_small_nothink = accuracy(m, tok, rows_small, dev, thinking=False)
    log(f"held-out accuracy (fixture 200, thinking): {acc_small['overall']:.4f} {acc_small['per_task']}")
    log(f"held-out accuracy (fixture 200, no thinking): {acc_small_nothink['overall']:.4f} "
        f"{acc_small_nothink['per_task']}")
    acc_large, _ = accuracy(m, tok, rows_large, dev)
    log(f"held-out accuracy (large, thinking): {acc_large['overall']:.4f} {acc_large['per_task']}")
    skills = tool_skills(m, tok, rows_tools, dev)
    log(f"held-out tool skills: {json.dumps(skills['per_kind'])}")
    prose = (corpus_dir / "heldout_prose.txt").read_text()
    prose_all = (corpus_dir / "heldout_prose_all.txt").read_text()
    ids = tok.encode(prose).ids
    ppl, scored, chunks = perplexity(m, ids, PPL_CTX, dev)
    ppl_all, scored_all, _ = perplexity(m, tok.encode(prose_all).ids, PPL_CTX, dev)
    log(f"held-out prose perplexity (fixture, ctx {PPL_CTX}): {ppl:.4f} over {scored} tokens; all held-out "
        f"prose: {ppl_all:.4f} over {scored_all} tokens")
    samples = [prose[:300], corpus_mod.chat(rows_small[0]["question"]), corpus_mod.chat(rows_small[50]["question"]),
               "Hello, world! 12345 naïve café\n\n  tabs\tand  spaces"]
    max_logit = min_margin = None
    if args.arch == "moe":
        max_logit, min_margin = reference_fixture(hf_dir, tok, rows_small, prose, out / "reference")
    metrics = {
        "arch": args.arch, "seed": args.seed, "steps": args.steps, "steps_done": steps_done, "batch": args.batch,
        "seq": SEQ, "lr": args.lr, "parameters": n_params, "config": DRAFT if args.arch == "draft" else MODEL,
        "rope_theta": ROPE_THETA, "train_seconds": train_seconds, "total_seconds": time.time() - t_start,
        "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
        "transformers": transformers.__version__,
        "accuracy_fixture": acc_small, "accuracy_fixture_nothink": acc_small_nothink,
        "accuracy_large": acc_large, "answers_fixture": answers_small,
        "answers_fixture_nothink": answers_small_nothink, "tool_skills": skills,
        "perplexity": {"ctx": PPL_CTX, "fixture": ppl, "fixture_tokens": len(ids), "fixture_scored": scored,
                       "fixture_chunks": chunks, "all_heldout": ppl_all, "all_heldout_scored": scored_all},
        "tokenizer_samples": [{"text": s, "ids": tok.encode(s).ids} for s in samples],
        "fixture_prose_ids": ids,
        "reference": {"max_abs_logit": max_logit, "greedy_min_margin": min_margin},
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    log(f"done in {time.time() - t_start:.1f} s")


if __name__ == "__main__":
    main()
