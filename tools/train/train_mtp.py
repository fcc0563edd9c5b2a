#!/usr/bin/env python3
"""Train sluice-tiny-glm: a small GLM-4.5-style MoE (checkpoint class Glm4MoeForCausalLM) with one multi-token
prediction (NextN / MTP) layer, on sluice-tiny-moe's corpus and tokenizer, so that `--mtp` drafting runs on
trained weights.

The model is written here in plain PyTorch, parameter for parameter the layout of transformers' Glm4Moe (q/k/v
biases, partial NeoX rotary, leading dense layer, sigmoid routing with a selection bias, routed scaling, one
shared expert) plus the NextN layer: row j of the MTP block gets eh_proj . [enorm(embed(token j + 1));
hnorm(h_j)], h_j the trunk's hidden state at j before the output norm, goes through one more decoder layer at
position j, then shared_head.norm and the model's output head, and is trained on token j + 2. That is the
definition runtime/engine/mtp.cpp computes (docs/DEEPSEEK_GLM.md). `--check-fixture` compares this module with
transformers' logits of tests/fixtures/reference/glm4moe.

Stages (each fits one 10-minute device call; the folder OUT keeps what they share):
  python3 tools/train/train_mtp.py data  --corpus build/train/corpus --tokenizer models/sluice-tiny-moe --out OUT
  python3 tools/train/train_mtp.py train --corpus build/train/corpus --tokenizer models/sluice-tiny-moe --out OUT
  python3 tools/train/train_mtp.py eval  --corpus build/train/corpus --out OUT
  python3 tools/train/train_mtp.py check-fixture tests/fixtures/reference/glm4moe     (CPU is enough)
Writes OUT/data (sequences), OUT/hf (config.json, model.safetensors, tokenizer files), OUT/metrics.json.
"""

import argparse
import json
import math
import struct
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

VOCAB = 4096
EOT, IM_START, IM_END = 4093, 4094, 4095
SEQ = 512
LAYERS = 6  # the trunk; the NextN layer is layer LAYERS in the checkpoint
CONFIG = dict(
    vocab_size=VOCAB, hidden_size=256, num_hidden_layers=LAYERS, num_attention_heads=4, num_key_value_heads=2,
    head_dim=64, intermediate_size=512, moe_intermediate_size=96, n_routed_experts=16, num_experts_per_tok=4,
    n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1, routed_scaling_factor=1.0,
    norm_topk_prob=True, partial_rotary_factor=0.5, attention_bias=True, use_qk_norm=False,
    max_position_embeddings=SEQ, rms_norm_eps=1e-6, tie_word_embeddings=False, hidden_act="silu",
    num_nextn_predict_layers=1, bos_token_id=EOT, eos_token_id=IM_END, pad_token_id=EOT,
    rope_theta=10000.0,
)
BIAS_RATE = 1e-3  # DeepSeek-V3's auxiliary-loss-free balancing: the selection bias follows the load


def log(*a):
    print(*a, flush=True)


# ---------------------------------------------------------------- model


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotary(cfg, positions, device):
    """cos and sin [T, rotary dims] for NeoX rotation of the first head_dim * partial_rotary_factor dims."""
    rd = int(cfg["head_dim"] * cfg["partial_rotary_factor"])
    inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, rd, 2, device=device, dtype=torch.float32) / rd))
    f = positions.float()[:, None] * inv[None, :]
    emb = torch.cat([f, f], dim=-1)
    return emb.cos(), emb.sin()


def rotate(x, cos, sin):
    rd = cos.shape[-1]
    xr, xp = x[..., :rd], x[..., rd:]
    half = rd // 2
    rot = torch.cat([-xr[..., half:], xr[..., :half]], dim=-1)
    return torch.cat([xr * cos + rot * sin, xp], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, nh, nkv, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        self.nh, self.nkv, self.hd = nh, nkv, hd
        self.q_proj = nn.Linear(h, nh * hd, bias=True)
        self.k_proj = nn.Linear(h, nkv * hd, bias=True)
        self.v_proj = nn.Linear(h, nkv * hd, bias=True)
        self.o_proj = nn.Linear(nh * hd, h, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.nkv, self.hd).transpose(1, 2)
        q, k = rotate(q, cos.to(q.dtype), sin.to(q.dtype)), rotate(k, cos.to(k.dtype), sin.to(k.dtype))
        rep = self.nh // self.nkv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        if hasattr(F, "scaled_dot_product_attention"):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # torch 1.x (the CPU check)
            s = (q @ k.transpose(-1, -2)) * self.hd ** -0.5
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            o = s.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return self.o_proj(o.transpose(1, 2).reshape(b, t, -1))


class MLP(nn.Module):
    def __init__(self, h, inter):
        super().__init__()
        self.gate_proj = nn.Linear(h, inter, bias=False)
        self.up_proj = nn.Linear(h, inter, bias=False)
        self.down_proj = nn.Linear(inter, h, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MoE(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, e, i = cfg["hidden_size"], cfg["n_routed_experts"], cfg["moe_intermediate_size"]
        self.e, self.k = e, cfg["num_experts_per_tok"]
        self.scale, self.norm = cfg["routed_scaling_factor"], cfg["norm_topk_prob"]
        self.gate = nn.Parameter(torch.empty(e, h))
        self.register_buffer("bias", torch.zeros(e, dtype=torch.float32))
        self.w_gate = nn.Parameter(torch.empty(e, i, h))
        self.w_up = nn.Parameter(torch.empty(e, i, h))
        self.w_down = nn.Parameter(torch.empty(e, h, i))
        self.shared = MLP(h, i * cfg["n_shared_experts"])
        self.load = None  # tokens per expert in the last forward pass (for the bias update)

    def forward(self, x):
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        scores = F.linear(flat.float(), self.gate.float()).sigmoid()
        idx = torch.topk(scores + self.bias, self.k, dim=-1, sorted=False)[1]
        w = scores.gather(1, idx)
        if self.norm:
            w = w / (w.sum(-1, keepdim=True) + 1e-20)
        w = w * self.scale
        out = torch.zeros_like(flat)
        with torch.no_grad():
            self.load = torch.bincount(idx.reshape(-1), minlength=self.e)
        for ex in range(self.e):
            tok, slot = torch.where(idx == ex)
            if tok.numel() == 0:
                continue
            xi = flat[tok]
            y = F.linear(F.silu(F.linear(xi, self.w_gate[ex])) * F.linear(xi, self.w_up[ex]), self.w_down[ex])
            out.index_add_(0, tok, (y * w[tok, slot, None]).to(out.dtype))
        return out.view(shape) + self.shared(x)


class Layer(nn.Module):
    def __init__(self, cfg, index):
        super().__init__()
        h, eps = cfg["hidden_size"], cfg["rms_norm_eps"]
        self.input_layernorm = RMSNorm(h, eps)
        self.post_attention_layernorm = RMSNorm(h, eps)
        self.self_attn = Attention(cfg)
        self.mlp = MoE(cfg) if index >= cfg["first_k_dense_replace"] else MLP(h, cfg["intermediate_size"])

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class GlmMtp(nn.Module):
    """The trunk (layers 0 .. L-1), the output norm and head, and the NextN layer L with its projections."""

    def __init__(self, cfg, nextn=True):
        super().__init__()
        self.cfg = cfg
        h, eps, n = cfg["hidden_size"], cfg["rms_norm_eps"], cfg["num_hidden_layers"]
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], h)
        self.layers = nn.ModuleList([Layer(cfg, i) for i in range(n + (1 if nextn else 0))])
        self.norm = RMSNorm(h, eps)
        self.lm_head = nn.Linear(h, cfg["vocab_size"], bias=False)
        self.nextn = nextn
        if nextn:
            self.enorm, self.hnorm, self.shared_head_norm = RMSNorm(h, eps), RMSNorm(h, eps), RMSNorm(h, eps)
            self.eh_proj = nn.Linear(2 * h, h, bias=False)

    def init_weights(self, gen_seed):
        torch.manual_seed(gen_seed)
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith("norm.weight") or name.endswith("layernorm.weight"):
                nn.init.ones_(p)
            else:
                nn.init.zeros_(p)

    def trunk(self, ids):
        t = ids.shape[1]
        cos, sin = rotary(self.cfg, torch.arange(t, device=ids.device), ids.device)
        emb = self.embed_tokens(ids)
        h = emb
        for layer in self.layers[:self.cfg["num_hidden_layers"]]:
            h = layer(h, cos, sin)
        return emb, h, cos, sin

    def forward(self, ids, mtp=True):
        """Logits of the next token at every position, and (with mtp) the MTP block's logits of the token after
        it at rows 0 .. T-2 (row j reads h_j and token j + 1)."""
        emb, h, cos, sin = self.trunk(ids)
        logits = self.lm_head(self.norm(h))
        if not (mtp and self.nextn):
            return logits, None, h
        z = self.eh_proj(torch.cat([self.enorm(emb[:, 1:]), self.hnorm(h[:, :-1])], dim=-1))
        z = self.layers[-1](z, cos[:-1], sin[:-1])
        return logits, self.lm_head(self.shared_head_norm(z)), h


# ---------------------------------------------------------------- checkpoint (safetensors written by hand)

DTYPES = {torch.float32: ("F32", 4), torch.bfloat16: ("BF16", 2)}


def write_safetensors(path, tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        code, size = DTYPES[t.dtype]
        raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    data = Path(path).read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        b, e = meta["data_offsets"]
        raw = data[8 + n + b:8 + n + e]
        if meta["dtype"] == "F32":
            t = torch.from_numpy(np.frombuffer(raw, dtype=np.float32).copy())
        elif meta["dtype"] == "BF16":
            t = torch.from_numpy(np.frombuffer(raw, dtype=np.int16).copy()).view(torch.bfloat16).float()
        else:
            raise ValueError(f"{name}: dtype {meta['dtype']} not handled")
        out[name] = t.view(meta["shape"])
    return out


def hf_tensors(model):
    """The checkpoint's tensors by their Glm4Moe names (experts one by one, as the published GLM-4.5 files)."""
    out = {"model.embed_tokens.weight": model.embed_tokens.weight, "model.norm.weight": model.norm.weight,
           "lm_head.weight": model.lm_head.weight}
    for i, layer in enumerate(model.layers):
        p = f"model.layers.{i}."
        for n in ("input_layernorm", "post_attention_layernorm"):
            out[p + n + ".weight"] = getattr(layer, n).weight
        for n in ("q_proj", "k_proj", "v_proj"):
            out[p + f"self_attn.{n}.weight"] = getattr(layer.self_attn, n).weight
            out[p + f"self_attn.{n}.bias"] = getattr(layer.self_attn, n).bias
        out[p + "self_attn.o_proj.weight"] = layer.self_attn.o_proj.weight
        m = layer.mlp
        if isinstance(m, MoE):
            out[p + "mlp.gate.weight"] = m.gate
            out[p + "mlp.gate.e_score_correction_bias"] = m.bias
            for e in range(m.e):
                out[p + f"mlp.experts.{e}.gate_proj.weight"] = m.w_gate[e]
                out[p + f"mlp.experts.{e}.up_proj.weight"] = m.w_up[e]
                out[p + f"mlp.experts.{e}.down_proj.weight"] = m.w_down[e]
            m = m.shared
            p += "mlp.shared_experts."
        else:
            p += "mlp."
        for n in ("gate_proj", "up_proj", "down_proj"):
            out[p + n + ".weight"] = getattr(m, n).weight
    if model.nextn:
        p = f"model.layers.{len(model.layers) - 1}."
        out[p + "eh_proj.weight"] = model.eh_proj.weight
        out[p + "enorm.weight"] = model.enorm.weight
        out[p + "hnorm.weight"] = model.hnorm.weight
        out[p + "shared_head.norm.weight"] = model.shared_head_norm.weight
    return out


def load_hf(model, tensors):
    own = hf_tensors(model)
    missing = [n for n in own if n not in tensors]
    if missing:
        raise ValueError(f"checkpoint lacks {missing[:4]}")
    with torch.no_grad():
        for name, dst in own.items():
            dst.copy_(tensors[name].to(dst.dtype).view(dst.shape))


def config_json(cfg):
    data = {"architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "dtype": "bfloat16",
            "attention_dropout": 0.0, "initializer_range": 0.02, "use_cache": True}
    data.update(cfg)
    data["rope_parameters"] = {"rope_type": "default", "rope_theta": cfg["rope_theta"],
                               "partial_rotary_factor": cfg["partial_rotary_factor"]}
    return data


def save_checkpoint(model, out, tokenizer_dir):
    out.mkdir(parents=True, exist_ok=True)
    tensors = {n: (t.float() if n.endswith("e_score_correction_bias") else t.to(torch.bfloat16))
               for n, t in hf_tensors(model).items()}
    write_safetensors(out / "model.safetensors", tensors)
    (out / "config.json").write_text(json.dumps(config_json(model.cfg), indent=2) + "\n")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (out / name).write_bytes((Path(tokenizer_dir) / name).read_bytes())


def load_checkpoint(hf_dir, device):
    cfg = json.loads((Path(hf_dir) / "config.json").read_text())
    cfg = {k: cfg[k] for k in CONFIG if k in cfg}
    model = GlmMtp(cfg, nextn=cfg.get("num_nextn_predict_layers", 0) > 0)
    load_hf(model, read_safetensors(Path(hf_dir) / "model.safetensors"))
    return model.to(device).eval()


# ---------------------------------------------------------------- stages


def stage_data(args):
    import train as base  # needs tokenizers (the GPU machine has it)
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(Path(args.tokenizer) / "tokenizer.json"))
    _, gen, train_prose, _ = base.corpus_mod.build(args.seed, Path(args.corpus) / "kjv.txt")
    toks, mask = base.build_sequences(tok, gen, train_prose, args.seed, args.steps * args.batch)
    data = Path(args.out) / "data"
    data.mkdir(parents=True, exist_ok=True)
    np.save(data / "toks.npy", toks.numpy().astype(np.int32))
    np.save(data / "mask.npy", mask.numpy())
    (data / "done").touch()


def stage_train(args):
    out = Path(args.out)
    toks = torch.from_numpy(np.load(out / "data" / "toks.npy")[:args.steps * args.batch]).long()
    mask = torch.from_numpy(np.load(out / "data" / "mask.npy")[:args.steps * args.batch]).bool()
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    model = GlmMtp(dict(CONFIG))
    model.init_weights(args.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU only for a smoke test
    model = model.to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {n_params} parameters ({LAYERS} layers + NextN), data {len(toks)} sequences")
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n]
    rest = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8,
                            **({"fused": True} if dev == "cuda" else {}))
    warm = max(1, args.steps // 25)

    def lr_at(step, elapsed=0.0):
        """Warm-up, then a cosine decay to 5% over the steps or over --time-budget, whichever ends first."""
        if step < warm:
            return args.lr * (step + 1) / warm
        p = (step - warm) / max(1, args.steps - warm)
        if args.time_budget:
            p = max(p, elapsed / args.time_budget)
        return args.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))

    moes = [layer.mlp for layer in model.layers if isinstance(layer.mlp, MoE)]
    model.train()
    t0 = time.time()
    done = args.steps
    for step in range(args.steps):
        elapsed = time.time() - t0
        if args.time_budget and elapsed > args.time_budget:
            done = step
            log(f"stopping at step {step}: --time-budget {args.time_budget} s reached")
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(step, elapsed)
        sl = slice(step * args.batch, (step + 1) * args.batch)
        x = toks[sl].to(dev, non_blocking=True)
        m = mask[sl].to(dev, non_blocking=True)
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
            logits, mlog, _ = model(x[:, :-1])
        ce = F.cross_entropy(logits.float().reshape(-1, VOCAB), x[:, 1:].reshape(-1), reduction="none")
        m1 = m[:, 1:].reshape(-1).float()
        loss = (ce * m1).sum() / m1.sum()
        ce2 = F.cross_entropy(mlog.float().reshape(-1, VOCAB), x[:, 2:].reshape(-1), reduction="none")
        m2 = m[:, 2:].reshape(-1).float()
        mloss = (ce2 * m2).sum() / m2.sum()
        opt.zero_grad(set_to_none=True)
        (loss + args.mtp_weight * mloss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        with torch.no_grad():
            for moe in moes:  # the selection bias moves against the load (no auxiliary loss)
                load = moe.load.float()
                moe.bias += BIAS_RATE * torch.sign(load.mean() - load)
        if step % 100 == 0 or step == args.steps - 1:
            imb = max(float(moe.load.max()) / max(1.0, float(moe.load.float().mean())) for moe in moes)
            log(f"step {step}/{args.steps} loss {loss.item():.4f} mtp {mloss.item():.4f} max-load/mean {imb:.2f} "
                f"lr {lr_at(step, elapsed):.2e} {time.time() - t0:.1f} s")
    if dev == "cuda":
        torch.cuda.synchronize()
    seconds = time.time() - t0
    log(f"training: {done} steps of {args.batch}x{SEQ} tokens in {seconds:.1f} s")
    save_checkpoint(model, out / "hf", args.tokenizer)
    (out / "train.json").write_text(json.dumps({"steps": args.steps, "steps_done": done, "batch": args.batch,
                                                "lr": args.lr, "mtp_weight": args.mtp_weight, "seed": args.seed,
                                                "time_budget": args.time_budget,
                                                "parameters": n_params, "train_seconds": seconds,
                                                "device": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu",
                                                "torch": torch.__version__}, indent=1) + "\n")


@torch.no_grad()
def greedy(model, prompts, device, max_new):
    """Greedy continuations (up to <|im_end|>), recomputing the whole sequence each step (the model is tiny)."""
    outs = []
    for p in prompts:
        seq = list(p)
        for _ in range(max_new):
            logits, _, _ = model(torch.tensor([seq], device=device), mtp=False)
            t = int(logits[0, -1].argmax())
            seq.append(t)
            if t == IM_END:
                break
        outs.append(seq)
    return outs


@torch.no_grad()
def mtp_agreement(model, seqs, prompt_lens, device):
    """How often the MTP block's argmax at row j equals token j + 2 of the model's own greedy continuation, over
    the rows whose token j + 2 is generated: a one-token draft's acceptance rate."""
    hit = total = 0
    for seq, n in zip(seqs, prompt_lens):
        if len(seq) < n + 2:
            continue
        _, mlog, _ = model(torch.tensor([seq], device=device))
        pred = mlog[0].argmax(-1).tolist()  # row j predicts token j + 2
        for j in range(n - 1, len(seq) - 2):  # the first draft comes after the first generated token
            hit += int(pred[j] == seq[j + 2])
            total += 1
    return hit / max(1, total), total


def stage_eval(args):
    import corpus as corpus_mod
    from tokenizers import Tokenizer
    out = Path(args.out)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = load_checkpoint(out / "hf", dev).float()
    tok = Tokenizer.from_file(str(out / "hf" / "tokenizer.json"))
    rows = [json.loads(l) for l in open(Path(args.corpus) / "heldout.jsonl")]
    res = {}
    for thinking in (True, False):
        prompts = [tok.encode(corpus_mod.render([{"role": "user", "content": r["question"]}],
                                                enable_thinking=thinking)).ids for r in rows]
        seqs = greedy(model, prompts, dev, 64 if thinking else 16)
        right = 0
        for r, s, p in zip(rows, seqs, prompts):
            text = tok.decode([t for t in s[len(p):] if t != IM_END], skip_special_tokens=False)
            right += int(text.split("</think>")[-1].strip() == r["answer"])
        rate, n = mtp_agreement(model, seqs, [len(p) for p in prompts], dev)
        key = "thinking" if thinking else "nothink"
        res[key] = {"accuracy": right / len(rows), "mtp_agreement": rate, "mtp_rows": n}
        log(f"held-out {key}: accuracy {right}/{len(rows)}, MTP agreement {rate:.4f} over {n} rows")
    prose = (Path(args.corpus) / "heldout_prose.txt").read_text()
    ids = tok.encode(prose).ids
    nll = cnt = 0
    for b in range(0, len(ids) - 255, 256):
        w = torch.tensor([ids[b:b + 256]], device=dev)
        logits, _, _ = model(w, mtp=False)
        lp = F.log_softmax(logits[0, 127:255].float(), -1)
        nll -= lp.gather(1, w[0, 128:256, None]).sum().item()
        cnt += 128
    res["perplexity_ctx256"] = math.exp(nll / cnt)
    log(f"held-out prose perplexity (ctx 256): {res['perplexity_ctx256']:.3f} over {cnt} tokens")
    train_info = json.loads((out / "train.json").read_text()) if (out / "train.json").exists() else {}
    (out / "metrics.json").write_text(json.dumps({"config": CONFIG, "train": train_info, "eval": res},
                                                 indent=1) + "\n")


def check_fixture(path):
    """This module against transformers' float64 logits of the glm4moe reference fixture."""
    path = Path(path)
    ref = json.loads((path / "reference.json").read_text())
    model = load_checkpoint(path, "cpu").double()
    logits_all = np.fromfile(path / ref["logits_file"], dtype="<f4")
    off, worst = 0, 0.0
    for seq in ref["sequences"]:
        n = len(seq) * ref["vocab_size"]
        want = torch.from_numpy(logits_all[off:off + n].astype(np.float64)).view(len(seq), -1)
        off += n
        got, mlog, _ = model(torch.tensor([seq]))
        worst = max(worst, float((got[0] - want).abs().max() / want.abs().max()))
    log(f"check-fixture {path.name}: max |diff| / max |logit| = {worst:.2e} over {len(ref['sequences'])} sequences")
    if worst > 1e-5:
        sys.exit(f"check-fixture: this module disagrees with transformers ({worst:.2e})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stage", choices=["data", "train", "eval", "check-fixture"])
    ap.add_argument("fixture", nargs="?", help="check-fixture: the reference fixture folder")
    ap.add_argument("--corpus", default="build/train/corpus")
    ap.add_argument("--tokenizer", default="models/sluice-tiny-moe")
    ap.add_argument("--out", default="build/train/mtp")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--mtp-weight", type=float, default=0.3)
    ap.add_argument("--time-budget", type=float, default=0,
                    help="train: end the cosine schedule and stop after this many seconds (0: by --steps)")
    args = ap.parse_args()
    if args.stage == "check-fixture":
        check_fixture(args.fixture or "tests/fixtures/reference/glm4moe")
    elif args.stage == "data":
        stage_data(args)
    elif args.stage == "train":
        stage_train(args)
    else:
        stage_eval(args)


if __name__ == "__main__":
    main()
