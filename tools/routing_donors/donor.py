#!/usr/bin/env python3
"""Trains one routing donor, a small MoE language model with a real model's routing geometry, and records its
routing over held-out text in Sluice's SLROUTE v2 format (docs/ROUTING.md).

A donor keeps what decides the routing statistics of the model it stands for: the layer count, experts per layer,
experts per token, the shared expert, the router's scoring and the load-balancing loss. Everything else is small
(hidden 256, 4 heads, tiny expert FFNs, sequences of 512 tokens) so that three donors train on one GPU in minutes.
All layers use full causal attention (Qwen3.5's linear-attention layers and gpt-oss's sliding-window layers and
attention sinks are left out: the routing is what is studied).

Routers (as in transformers' modeling files of each family):
- qwen3-30b-a3b, qwen3.5-35b-a3b: logits = W x; p = softmax(logits) over all experts; the top-k of p, renormalised to
  sum 1 (norm_topk_prob). Qwen3.5 adds a shared expert whose output is scaled by sigmoid(w_g . x).
- gpt-oss-120b: logits = W x + b; the top-k of the logits, weights = softmax over those k.
Load balancing: the switch-style loss E * sum_e f_e * P_e (f_e: share of the layer's picks on expert e, P_e: mean
router probability, softmax over all experts), per layer, averaged over layers, times the family's
router_aux_loss_coef (read from transformers' config class when it is there).

The recording: per token and layer, the chosen experts in router order (descending score), their combine weights
(rounded to bfloat16 precision, stored as f32), and the predictions one and two layers ahead as Sluice computes
them (runtime/models/moe_block.cpp, predict_ahead): layer L+1's (L+2's) norm and router applied to layer L's
residual stream at the input of its MoE block, then that layer's top-k; where there is no such layer the
prediction is 0xFFFF.

    donor.py --family qwen3-30b-a3b --data data.pt --out DIR [--steps N] [--time-budget SECONDS] [--seed 1]
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

FAMILIES = {
    # layers, experts, top_k, expert FFN width, shared expert width, scoring, router bias, transformers config
    "qwen3-30b-a3b": dict(layers=48, experts=128, top_k=8, expert_ff=96, shared_ff=0, scoring="softmax_renorm",
                          router_bias=False, qk_norm=True, config=("Qwen3MoeConfig",), aux_default=0.001),
    "qwen3.5-35b-a3b": dict(layers=40, experts=256, top_k=8, expert_ff=64, shared_ff=64, scoring="softmax_renorm",
                            router_bias=False, qk_norm=True,
                            config=("Qwen3_5MoeTextConfig", "Qwen3_5MoeConfig", "Qwen3NextConfig"),
                            aux_default=0.001),
    "gpt-oss-120b": dict(layers=36, experts=128, top_k=4, expert_ff=128, shared_ff=0, scoring="topk_softmax",
                         router_bias=True, qk_norm=False, config=("GptOssConfig",), aux_default=0.9),
}

D_MODEL = 256
N_HEADS = 4
SEQ = 512


def family_aux_coef(fam):
    """The family's router_aux_loss_coef from transformers' config class, else the default noted above."""
    try:
        import transformers
    except ImportError:
        return fam["aux_default"], "default (no transformers)"
    for name in fam["config"]:
        cls = getattr(transformers, name, None)
        if cls is not None:
            try:
                cfg = cls()
                coef = getattr(cfg, "router_aux_loss_coef", None)
                if coef is None and hasattr(cfg, "get_text_config"):
                    coef = getattr(cfg.get_text_config(), "router_aux_loss_coef", None)
                if coef is not None:
                    return float(coef), f"transformers {transformers.__version__} {name}"
            except Exception as e:  # a config class that cannot be built bare: use the default
                print(f"{name}(): {e}", file=sys.stderr)
    return fam["aux_default"], "default (config class not found)"


def grouped_mm_available(device):
    """Whether torch's grouped matrix product runs here and agrees with a per-group reference (fwd and bwd)."""
    fn = getattr(torch, "_grouped_mm", None)
    if fn is None or device.type != "cuda":
        return False
    try:
        g = torch.Generator(device="cpu").manual_seed(0)
        a = torch.randn(48, 32, generator=g).to(device, torch.bfloat16).requires_grad_()
        b = torch.randn(3, 32, 16, generator=g).to(device, torch.bfloat16).requires_grad_()
        offs = torch.tensor([16, 16, 48], dtype=torch.int32, device=device)
        y = fn(a, b, offs=offs)
        ref = torch.cat([a[0:16] @ b[0], a[16:16] @ b[1], a[16:48] @ b[2]])
        y.float().sum().backward()
        return bool(torch.allclose(y.float(), ref.float(), atol=1e-1, rtol=2e-2)) and b.grad is not None
    except Exception as e:
        print(f"grouped mm unavailable: {e}", file=sys.stderr)
        return False


USE_GROUPED = False


def group_matmul(x, w, counts, offs):
    """Rows of x grouped by expert (counts[e] rows for expert e, in order) times w[e]: [rows, in] x [E, in, out]."""
    if USE_GROUPED:
        return torch._grouped_mm(x, w, offs=offs)
    # Padded batched product: each expert's rows into a [E, cap, in] block.
    E = w.shape[0]
    cap = int(counts.max().item())
    starts = offs - counts
    row = torch.arange(x.shape[0], device=x.device)
    expert = torch.repeat_interleave(torch.arange(E, device=x.device), counts, output_size=x.shape[0])
    slot = row - starts[expert]
    padded = x.new_zeros(E, max(cap, 1), x.shape[1])
    padded[expert, slot] = x
    y = torch.bmm(padded, w)
    return y[expert, slot]


def rope_tables(seq, dim, device):
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2, device=device).float() / dim))
    ang = torch.outer(torch.arange(seq, device=device).float(), inv)
    return torch.cos(ang), torch.sin(ang)


def apply_rope(x, cos, sin):
    """x: [B, T, heads, head_dim]; cos, sin: [T, head_dim / 2]."""
    cos, sin = cos[:, None, :], sin[:, None, :]
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return out.flatten(-2)


class Attention(nn.Module):
    def __init__(self, qk_norm):
        super().__init__()
        self.hd = D_MODEL // N_HEADS
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL, bias=False)
        self.o = nn.Linear(D_MODEL, D_MODEL, bias=False)
        self.q_norm = nn.RMSNorm(self.hd, eps=1e-6) if qk_norm else None
        self.k_norm = nn.RMSNorm(self.hd, eps=1e-6) if qk_norm else None

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, N_HEADS, self.hd).unbind(2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q = apply_rope(q, cos, sin).to(v.dtype).transpose(1, 2)
        k = apply_rope(k, cos, sin).to(v.dtype).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v.transpose(1, 2), is_causal=True)
        return self.o(y.transpose(1, 2).reshape(B, T, D_MODEL))


class MoE(nn.Module):
    def __init__(self, fam):
        super().__init__()
        E, f = fam["experts"], fam["expert_ff"]
        self.E, self.k, self.scoring = E, fam["top_k"], fam["scoring"]
        self.norm = nn.RMSNorm(D_MODEL, eps=1e-6)
        self.router = nn.Linear(D_MODEL, E, bias=fam["router_bias"])
        self.gate_up = nn.Parameter(torch.randn(E, D_MODEL, 2 * f) * D_MODEL**-0.5)
        self.down = nn.Parameter(torch.randn(E, f, D_MODEL) * f**-0.5 / math.sqrt(2 * fam["layers"]))
        self.shared = None
        if fam["shared_ff"]:
            s = fam["shared_ff"]
            self.shared = nn.ModuleDict(dict(gate_up=nn.Linear(D_MODEL, 2 * s, bias=False),
                                             down=nn.Linear(s, D_MODEL, bias=False),
                                             gate=nn.Linear(D_MODEL, 1, bias=False)))

    def route(self, xn):
        """Router logits (f32), the top-k experts in descending score, their combine weights."""
        logits = F.linear(xn.float(), self.router.weight.float(),
                          None if self.router.bias is None else self.router.bias.float())
        if self.scoring == "softmax_renorm":
            probs = torch.softmax(logits, dim=-1)
            w, ids = torch.topk(probs, self.k, dim=-1, sorted=True)
            w = w / w.sum(dim=-1, keepdim=True)
        else:  # topk_softmax (gpt-oss)
            top, ids = torch.topk(logits, self.k, dim=-1, sorted=True)
            w = torch.softmax(top, dim=-1)
        return logits, ids, w

    def forward(self, x):
        """Output, the layer's balancing loss, and (ids, weights) of the choice."""
        B, T, D = x.shape
        xn = self.norm(x).reshape(-1, D)
        logits, ids, w = self.route(xn)
        N = xn.shape[0]
        flat = ids.reshape(-1)
        order = torch.argsort(flat, stable=True)
        tok = order // self.k
        counts = torch.bincount(flat, minlength=self.E)
        offs = torch.cumsum(counts, 0).to(torch.int32)
        xs = xn[tok].to(torch.bfloat16)
        h = group_matmul(xs, self.gate_up.to(torch.bfloat16), counts, offs)
        g, u = h.chunk(2, dim=-1)
        y = group_matmul(F.silu(g) * u, self.down.to(torch.bfloat16), counts, offs)
        y = y.float() * w.reshape(-1)[order].unsqueeze(-1)
        out = torch.zeros(N, D, device=x.device, dtype=torch.float32).index_add_(0, tok, y)
        if self.shared is not None:
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=x.is_cuda):
                sg, su = self.shared["gate_up"](xn).chunk(2, dim=-1)
                sh = self.shared["down"](F.silu(sg) * su)
                out = out + torch.sigmoid(self.shared["gate"](xn).float()) * sh.float()
        # Switch-style balance: E * sum_e f_e * P_e, f over the k picks of every token.
        probs = torch.softmax(logits, dim=-1)
        f = counts.float() / N
        aux = self.E * (f * probs.mean(dim=0)).sum()
        return out.view(B, T, D), aux, ids.view(B, T, self.k), w.view(B, T, self.k)


class Block(nn.Module):
    def __init__(self, fam):
        super().__init__()
        self.attn_norm = nn.RMSNorm(D_MODEL, eps=1e-6)
        self.attn = Attention(fam["qk_norm"])
        self.moe = MoE(fam)


class Donor(nn.Module):
    def __init__(self, fam, vocab):
        super().__init__()
        self.fam = fam
        self.embed = nn.Embedding(vocab, D_MODEL)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.blocks = nn.ModuleList(Block(fam) for _ in range(fam["layers"]))
        for b in self.blocks:
            nn.init.normal_(b.moe.router.weight, std=0.02)
            if b.moe.router.bias is not None:
                nn.init.zeros_(b.moe.router.bias)
        self.norm = nn.RMSNorm(D_MODEL, eps=1e-6)

    def forward(self, tokens, record=False):
        """Mean next-token loss and mean balancing loss; with record, also the per-layer choice and prediction."""
        B, T = tokens.shape
        cos, sin = rope_tables(T, D_MODEL // N_HEADS, tokens.device)
        x = self.embed(tokens).float()
        aux_total = 0.0
        trace = []
        for i, b in enumerate(self.blocks):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=tokens.is_cuda):
                x = x + self.attn_out(b, x, cos, sin)
            preds = [None, None]
            for ahead in (1, 2):
                if record and i + ahead < len(self.blocks):
                    nxt = self.blocks[i + ahead].moe
                    _, pred, _ = nxt.route(nxt.norm(x).reshape(-1, D_MODEL))
                    preds[ahead - 1] = pred.view(B, T, -1)
            y, aux, ids, w = b.moe(x)
            x = x + y
            aux_total = aux_total + aux
            if record:
                trace.append((ids, w, preds[0], preds[1]))
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=tokens.is_cuda):
            logits = F.linear(self.norm(x), self.embed.weight)
        return logits, aux_total / len(self.blocks), trace

    @staticmethod
    def attn_out(b, x, cos, sin):
        return b.attn(b.attn_norm(x), cos, sin)


def lm_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))


def write_recording(path, name, fam, trace_per_seq):
    """SLROUTE v2: header, then one record per token (docs/ROUTING.md)."""
    L, E, k = fam["layers"], fam["experts"], fam["top_k"]
    rec = np.dtype([("seq", "<u4"), ("pos", "<u4"),
                    ("layers", [("ids", "<u2", (k,)), ("w", "<f4", (k,)), ("pred", "<u2", (k,)),
                                ("pred2", "<u2", (k,))], (L,))])
    assert rec.itemsize == 8 + L * k * 10
    records = []
    for seq, trace in enumerate(trace_per_seq):
        T = trace[0][0].shape[0]
        r = np.zeros(T, dtype=rec)
        r["seq"] = seq
        r["pos"] = np.arange(T)
        for l, (ids, w, pred, pred2) in enumerate(trace):
            r["layers"]["ids"][:, l] = ids
            # bfloat16 precision (round to nearest even), kept as f32: compresses, and bf16 is what inference uses
            bits = w.astype("<f4").view("<u4").astype(np.uint64)
            bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype("<u4")
            r["layers"]["w"][:, l] = bits.view("<f4")
            r["layers"]["pred"][:, l] = 0xFFFF if pred is None else pred
            r["layers"]["pred2"][:, l] = 0xFFFF if pred2 is None else pred2
        records.append(r)
    data = np.concatenate(records)
    nb = name.encode("utf-8")
    header = (b"SLROUTE\0" + np.array([2, 40 + len(nb), L, E, k, len(nb)], dtype="<u4").tobytes()
              + np.array([len(data)], dtype="<u8").tobytes() + nb)
    with open(path, "wb") as f:
        f.write(header)
        f.write(data.tobytes())
    return len(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", required=True, choices=sorted(FAMILIES))
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--time-budget", type=float, default=0, help="stop training after this many seconds (0: none)")
    ap.add_argument("--batch", type=int, default=16, help="sequences of 512 tokens per step")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    global USE_GROUPED
    fam = FAMILIES[args.family]
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    USE_GROUPED = grouped_mm_available(dev)
    aux_coef, aux_from = family_aux_coef(fam)
    data = torch.load(args.data)
    vocab = len(data["vocab"])
    model = Donor(fam, vocab).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    log = open(os.path.join(args.out, f"{args.family}.log"), "w")

    def say(msg):
        print(f"[{args.family}] {msg}", flush=True)
        log.write(msg + "\n")
        log.flush()

    say(f"{fam['layers']} layers x {fam['experts']} experts, top-{fam['top_k']}, expert FFN {fam['expert_ff']}, "
        f"shared {fam['shared_ff']}, scoring {fam['scoring']}, router bias {fam['router_bias']}; "
        f"{n_params / 1e6:.1f} M parameters, vocabulary {vocab}; aux coef {aux_coef} ({aux_from}); "
        f"grouped mm {USE_GROUPED}; device {torch.cuda.get_device_name() if dev.type == 'cuda' else 'cpu'}")

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n]
    other = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), fused=dev.type == "cuda")
    train = data["train"].to(dev).long()
    gen = torch.Generator(device="cpu").manual_seed(args.seed)
    start = time.time()
    step = 0
    last_t, last_step = start, 0
    model.train()
    while step < args.steps:
        if args.time_budget and time.time() - start > args.time_budget:
            break
        # Linear warm-up, then cosine decay to 10% over the planned steps.
        frac = step / max(1, args.steps)
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        starts = torch.randint(0, len(train) - SEQ - 1, (args.batch,), generator=gen).to(dev)
        idx = starts[:, None] + torch.arange(SEQ + 1, device=dev)[None, :]
        window = train[idx]
        logits, aux, _ = model(window[:, :-1])
        lm = lm_loss(logits, window[:, 1:])
        loss = lm + aux_coef * aux
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 50 == 0 or step in (1, 10, 20, 30):
            now = time.time()
            say(f"step {step} loss {lm.item():.3f} balance {aux.item():.3f} lr {lr:.2e} "
                f"{(now - start) / step:.3f} s/step ({(now - last_t) / (step - last_step):.3f} since step {last_step})")
            last_t, last_step = now, step
    train_s = time.time() - start
    say(f"trained {step} steps of {args.batch}x{SEQ} tokens ({step * args.batch * SEQ / 1e6:.1f} M tokens) "
        f"in {train_s:.0f} s")

    model.eval()
    with torch.no_grad():
        held = data["heldout"].to(dev).long()
        n = min(16, (len(held) - 1) // (SEQ + 1))
        windows = held[: n * (SEQ + 1)].view(n, SEQ + 1)
        logits, aux, _ = model(windows[:, :-1])
        say(f"held-out loss {lm_loss(logits, windows[:, 1:]).item():.3f} over {n}x{SEQ} tokens, "
            f"balance {aux.item():.3f} (1 per top-k pick when balanced: {fam['top_k']})")
        traces = []
        for seq in data["record"]:
            _, _, trace = model(seq.to(dev).long()[None, :], record=True)
            traces.append([(ids[0].cpu().numpy(), w[0].float().cpu().numpy(),
                            None if p is None else p[0].cpu().numpy(),
                            None if p2 is None else p2[0].cpu().numpy()) for ids, w, p, p2 in trace])
    name = (f"routing donor {args.family} ({fam['layers']} layers x {fam['experts']} experts, top-{fam['top_k']}"
            f"{', shared expert' if fam['shared_ff'] else ''}; hidden {D_MODEL}; {step} steps, seed {args.seed})")
    path = os.path.join(args.out, f"{args.family}.routing")
    tokens = write_recording(path, name, fam, traces)
    say(f"recorded {tokens} tokens of {len(data['record'])} held-out documents ({', '.join(data['record_docs'])}) "
        f"into {path}")
    say("summary " + json.dumps({"family": args.family, "steps": step, "train_seconds": round(train_s, 1),
                                 "params": n_params, "aux_coef": aux_coef, "aux_from": aux_from,
                                 "grouped_mm": USE_GROUPED,
                                 "peak_gpu_gib": round(torch.cuda.max_memory_allocated() / 2**30, 1)
                                 if dev.type == "cuda" else 0}))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
