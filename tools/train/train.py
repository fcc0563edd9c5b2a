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
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
MODEL = dict(
    vocab_size=VOCAB, hidden_size=256, num_hidden_layers=8, num_attention_heads=4, num_key_value_heads=2,
    head_dim=64, intermediate_size=768, moe_intermediate_size=96, num_experts=16, num_experts_per_tok=4,
    norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[], max_position_embeddings=512,
    rms_norm_eps=1e-6, tie_word_embeddings=True, use_sliding_window=False, attention_bias=False,
    router_aux_loss_coef=0.01, output_router_logits=False, bos_token_id=EOT, eos_token_id=IM_END,
    pad_token_id=EOT,
)
ROPE_THETA = 10000.0
SEQ = 256
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


def make_config():
    cfg = transformers.Qwen3MoeConfig(**MODEL, rope_parameters={"rope_type": "default", "rope_theta": ROPE_THETA})
    return cfg


def make_model(cfg, experts_impl):
    kw = {} if experts_impl is None else {"experts_implementation": experts_impl}
    return transformers.Qwen3MoeForCausalLM._from_config(cfg, attn_implementation="sdpa", **kw)


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
    cfg = make_config()
    impl = args.experts_impl if args.experts_impl != "default" else None
    model = make_model(cfg, impl).cuda()
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {n_params} parameters, experts implementation {model.config._experts_implementation}")
    toks, mask = build_sequences(tok, gen, train_prose, args.seed, args.steps * args.batch)
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
            out = model(input_ids=x[:, :-1], output_router_logits=True, use_cache=False)
        logits = out.logits.float()
        ce = F.cross_entropy(logits.view(-1, VOCAB), x[:, 1:].reshape(-1), reduction="none").view_as(m)
        loss = (ce * m).sum() / m.sum()
        total = loss + cfg.router_aux_loss_coef * out.aux_loss.float()
        opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == args.steps - 1:
            torch.cuda.synchronize()
            log(f"step {step}/{args.steps} loss {loss.item():.4f} aux {out.aux_loss.item():.3f} "
                f"lr {lr_at(step):.2e} {time.time() - t0:.1f} s")
    torch.cuda.synchronize()
    seconds = time.time() - t0
    log(f"training: {done} steps of {args.batch}x{SEQ} tokens in {seconds:.1f} s")
    return model, n_params, seconds, done


# ---------------------------------------------------------------- evaluation


def load_eval_model(hf_dir, dtype, device):
    m = transformers.Qwen3MoeForCausalLM.from_pretrained(str(hf_dir), dtype=torch.float32,
                                                         attn_implementation="eager",
                                                         experts_implementation="eager")
    return m.to(dtype).to(device).eval()


@torch.no_grad()
def greedy_answers(model, tok, questions, device, max_new=16):
    """Greedy answers (text before <|im_end|>), batched by prompt length so no padding is needed."""
    prompts = [tok.encode(corpus_mod.chat(q)).ids for q in questions]
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


def accuracy(model, tok, rows, device):
    answers = greedy_answers(model, tok, [r["question"] for r in rows], device)
    per = {}
    wrong = []
    for r, a in zip(rows, answers):
        ok = a.strip() == r["answer"]
        c = per.setdefault(r["task"], [0, 0])
        c[0] += ok
        c[1] += 1
        if not ok and len(wrong) < 40:
            wrong.append({"task": r["task"], "question": r["question"], "expected": r["answer"], "got": a})
    total = sum(c[0] for c in per.values()) / sum(c[1] for c in per.values())
    return {"overall": total, "per_task": {k: c[0] / c[1] for k, c in per.items()},
            "counts": {k: c[1] for k, c in per.items()}, "wrong_examples": wrong}, answers


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
        p, a = corpus_mod.chat(r["question"], r["answer"])
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

    _, gen, train_prose, _ = corpus_mod.build(args.seed, corpus_dir / "kjv.txt")
    t0 = time.time()
    tok_json = train_tokenizer(corpus_dir / "tokenizer_texts.txt")
    (hf_dir / "tokenizer.json").write_text(json.dumps(tok_json, indent=2, ensure_ascii=False) + "\n")
    (hf_dir / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(), indent=2) + "\n")
    tok = Tokenizer.from_file(str(hf_dir / "tokenizer.json"))
    log(f"tokenizer: {tok.get_vocab_size()} ids in {time.time() - t0:.1f} s")

    model, n_params, train_seconds, steps_done = train(args, tok, gen, train_prose)
    save_checkpoint(model, hf_dir)
    del model

    dev = "cuda"
    m = load_eval_model(hf_dir, torch.float32, dev)
    rows_small = [json.loads(l) for l in open(corpus_dir / "heldout.jsonl")]
    rows_large = [json.loads(l) for l in open(corpus_dir / "heldout_large.jsonl")]
    acc_small, answers_small = accuracy(m, tok, rows_small, dev)
    acc_large, _ = accuracy(m, tok, rows_large, dev)
    log(f"held-out accuracy (fixture 200): {acc_small['overall']:.4f} {acc_small['per_task']}")
    log(f"held-out accuracy (large): {acc_large['overall']:.4f} {acc_large['per_task']}")
    prose = (corpus_dir / "heldout_prose.txt").read_text()
    prose_all = (corpus_dir / "heldout_prose_all.txt").read_text()
    ids = tok.encode(prose).ids
    ppl, scored, chunks = perplexity(m, ids, PPL_CTX, dev)
    ppl_all, scored_all, _ = perplexity(m, tok.encode(prose_all).ids, PPL_CTX, dev)
    log(f"held-out prose perplexity (fixture, ctx {PPL_CTX}): {ppl:.4f} over {scored} tokens; all held-out "
        f"prose: {ppl_all:.4f} over {scored_all} tokens")
    samples = [prose[:300], corpus_mod.chat(rows_small[0]["question"]), corpus_mod.chat(rows_small[50]["question"]),
               "Hello, world! 12345 naïve café\n\n  tabs\tand  spaces"]
    max_logit, min_margin = reference_fixture(hf_dir, tok, rows_small, prose, out / "reference")
    metrics = {
        "seed": args.seed, "steps": args.steps, "steps_done": steps_done, "batch": args.batch, "seq": SEQ, "lr": args.lr,
        "parameters": n_params, "config": MODEL, "rope_theta": ROPE_THETA,
        "train_seconds": train_seconds, "total_seconds": time.time() - t_start,
        "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
        "transformers": transformers.__version__,
        "accuracy_fixture": acc_small, "accuracy_large": acc_large, "answers_fixture": answers_small,
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
