#!/usr/bin/env python3
"""An independent numpy forward pass of deepseek2 and glm4moe GGUF files (F32/F16 tensors), checked against the
transformers logits of a reference fixture.

It reads the file as llama.cpp's converter writes it (key names, tensor names and layouts: MLA's split and
transposed attn_k_b / attn_v_b, the one-KV-head key and value lengths, exp_probs_b, leading dense layers, NextN
layers past the trunk, YaRN keys with the 0.1 on yarn_log_multiplier) and computes every position's logits for the
fixture's sequences in float64, written from docs/DEEPSEEK_GLM.md. Agreement with logits.bin shows the layouts
and the math Sluice implements are those transformers computes; it needs only numpy.

Usage: python3 tools/reference/numpy_forward.py FILE.gguf FIXTURE_DIR
"""

import json
import math
import struct
import sys
from pathlib import Path

import numpy as np

# ---------------------------------------------------------------- GGUF


def read_gguf(path):
    """(metadata dict, {tensor name: numpy array in ggml's reversed-dims order}) for F32/F16 tensors."""
    data = Path(path).read_bytes()
    pos = 0

    def take(fmt):
        nonlocal pos
        vals = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return vals[0] if len(vals) == 1 else vals

    def string():
        n = take("Q")
        nonlocal pos
        s = data[pos:pos + n].decode("utf-8")
        pos += n
        return s

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t in scalar:
            return take(scalar[t])
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        raise ValueError(f"metadata type {t}")

    assert data[:4] == b"GGUF", "not a GGUF file"
    pos = 4
    version, n_tensors, n_kv = take("I"), take("Q"), take("Q")
    assert version >= 2
    kv = {}
    for _ in range(n_kv):
        key = string()
        kv[key] = value(take("I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("Q") for _ in range(take("I"))]
        infos.append((name, dims, take("I"), take("Q")))
    align = kv.get("general.alignment", 32)
    base = (pos + align - 1) // align * align
    tensors = {}
    for name, dims, ttype, offset in infos:
        count = int(np.prod(dims))
        dtype = {0: np.float32, 1: np.float16}.get(ttype)
        if dtype is None:
            raise ValueError(f"{name}: tensor type {ttype} (this tool reads F32 and F16)")
        arr = np.frombuffer(data, dtype=dtype, count=count, offset=base + offset)
        tensors[name] = arr.astype(np.float64).reshape(list(reversed(dims)))
    return kv, tensors


# ---------------------------------------------------------------- pieces


def rms(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def silu(x):
    return x / (1 + np.exp(-x))


def yarn_frequencies(n_rot, base, scale, ext, beta_fast, beta_slow, orig_ctx):
    freqs = base ** (-np.arange(0, n_rot, 2) / n_rot)
    if not ext:
        return freqs * scale

    def corr(rot):
        return n_rot * math.log(orig_ctx / (rot * 2 * math.pi)) / (2 * math.log(base))

    lo = max(math.floor(corr(beta_fast)), 0)
    hi = min(math.ceil(corr(beta_slow)), n_rot - 1)
    ramp = np.clip((np.arange(n_rot // 2) - lo) / max(hi - lo, 0.001), 0, 1)
    keep = 1 - ramp
    return freqs * (scale * (1 - keep) + keep)


def rope(x, positions, freqs, neox, factor=1.0):
    """Rotates the first 2 * len(freqs) values of the last axis; x is [T, ..., d]."""
    n = 2 * len(freqs)
    ang = positions[:, None] * freqs[None, :]  # [T, n/2]
    shape = (len(positions),) + (1,) * (x.ndim - 2) + (n // 2,)
    cos, sin = (np.cos(ang) * factor).reshape(shape), (np.sin(ang) * factor).reshape(shape)
    out = x.copy()
    if neox:
        a, b = x[..., : n // 2], x[..., n // 2: n]
        out[..., : n // 2], out[..., n // 2: n] = a * cos - b * sin, a * sin + b * cos
    else:
        a, b = x[..., 0:n:2], x[..., 1:n:2]
        out[..., 0:n:2], out[..., 1:n:2] = a * cos - b * sin, a * sin + b * cos
    return out


def causal_softmax(scores):
    t = scores.shape[-1]
    scores = scores + np.triu(np.full((t, t), -np.inf), 1)
    scores = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(scores)
    return e / e.sum(axis=-1, keepdims=True)


def route(logits, bias, gating, n_groups, groups_used, k, norm, scale):
    """Ids and weights of each token's experts (DeepSeek-V3's grouped choice with -inf outside chosen groups)."""
    probs = 1 / (1 + np.exp(-logits)) if gating == 2 else np.exp(logits - logits.max(-1, keepdims=True))
    if gating != 2:
        probs = probs / probs.sum(-1, keepdims=True)
    choice = probs + (bias if bias is not None else 0)
    if n_groups > 1:
        g = choice.reshape(len(choice), n_groups, -1)
        top2 = np.sort(g, axis=-1)[..., -2:].sum(-1)
        best = np.argsort(-top2, axis=-1, kind="stable")[:, :groups_used]
        mask = np.full_like(g, -np.inf)
        for t in range(len(choice)):
            mask[t, best[t]] = 0
        choice = (g + mask).reshape(len(choice), -1)
    ids = np.argsort(-choice, axis=-1, kind="stable")[:, :k]
    w = np.take_along_axis(probs, ids, -1)
    if norm:
        w = w / w.sum(-1, keepdims=True)
    return ids, w * scale


def ffn(u, gate, up, down):
    return (silu(u @ gate.T) * (u @ up.T)) @ down.T


def moe(u, tensors, p, hp, arch):
    logits = u @ tensors[p + "ffn_gate_inp.weight"].T
    ids, w = route(logits, tensors.get(p + "exp_probs_b.bias"), hp["gating"], hp["n_groups"], hp["groups_used"],
                   hp["k"], hp["norm"], hp["scale"])
    gate, up, down = (tensors[p + f"ffn_{n}_exps.weight"] for n in ("gate", "up", "down"))
    out = np.zeros_like(u)
    for t in range(len(u)):
        for e, wt in zip(ids[t], w[t]):
            out[t] += wt * ffn(u[t:t + 1], gate[e], up[e], down[e])[0]
    if p + "ffn_gate_shexp.weight" in tensors:
        out += ffn(u, tensors[p + "ffn_gate_shexp.weight"], tensors[p + "ffn_up_shexp.weight"],
                   tensors[p + "ffn_down_shexp.weight"])
    return out


# ---------------------------------------------------------------- architectures


def hparams(kv):
    a = kv["general.architecture"]
    g = lambda key, default=None: kv.get(f"{a}.{key}", default)  # noqa: E731
    scaling = g("rope.scaling.type", "none")
    factor = g("rope.scaling.factor", 1.0)
    return dict(
        arch=a, n_layer=g("block_count") - g("nextn_predict_layers", 0), n_head=g("attention.head_count"),
        n_head_kv=g("attention.head_count_kv"), eps=g("attention.layer_norm_rms_epsilon"), n_rot=g("rope.dimension_count"),
        base=g("rope.freq_base", 10000.0), yarn=scaling == "yarn", factor=factor,
        scale=1 / factor if scaling in ("yarn", "linear") else 1.0, orig_ctx=g("rope.scaling.original_context_length", 0),
        beta_fast=g("rope.scaling.yarn_beta_fast", 32.0), beta_slow=g("rope.scaling.yarn_beta_slow", 1.0),
        log_mul=g("rope.scaling.yarn_log_multiplier", 0.0) / 0.1, n_dense=g("leading_dense_block_count", 0),
        k=g("expert_used_count"), gating=g("expert_gating_func", 1), n_groups=g("expert_group_count", 1),
        groups_used=g("expert_group_used_count", 1), norm=g("expert_weights_norm", False),
        scale_w=g("expert_weights_scale", 1.0), key_length=g("attention.key_length"),
        key_length_mla=g("attention.key_length_mla"), value_length_mla=g("attention.value_length_mla"),
        kv_lora=g("attention.kv_lora_rank"), head_dim=g("attention.key_length"),
    )


def mla_attention(x_norm, tensors, p, hp, positions):
    H, r, dr = hp["n_head"], hp["kv_lora"], hp["n_rot"]
    dk = hp["key_length_mla"]
    dn = dk - dr
    if p + "attn_q_a.weight" in tensors:
        qa = rms(x_norm @ tensors[p + "attn_q_a.weight"].T, tensors[p + "attn_q_a_norm.weight"], hp["eps"])
        q = qa @ tensors[p + "attn_q_b.weight"].T
    else:
        q = x_norm @ tensors[p + "attn_q.weight"].T
    T = len(x_norm)
    q = q.reshape(T, H, dk)
    kv = x_norm @ tensors[p + "attn_kv_a_mqa.weight"].T
    c = rms(kv[:, :r], tensors[p + "attn_kv_a_norm.weight"], hp["eps"])
    freqs = yarn_frequencies(dr, hp["base"], hp["scale"], hp["yarn"], hp["beta_fast"], hp["beta_slow"], hp["orig_ctx"])
    # cos/sin factor: get_mscale(f, mscale) / get_mscale(f, mscale_all_dim), 1 when mscale = mscale_all_dim.
    q_r = rope(q[:, :, dn:], positions, freqs, neox=False)
    k_r = rope(kv[:, None, r:], positions, freqs, neox=False)[:, 0]
    k_b = tensors[p + "attn_k_b.weight"]  # [H][r][dn]
    v_b = tensors[p + "attn_v_b.weight"]  # [H][dv][r]
    k_n = np.einsum("hrd,tr->thd", k_b, c)
    v = np.einsum("hvr,tr->thv", v_b, c)
    mscale = 0.1 * hp["log_mul"] * math.log(hp["factor"]) + 1 if hp["yarn"] and hp["factor"] > 1 else 1.0
    s = mscale * mscale / math.sqrt(dk)
    scores = s * (np.einsum("ihd,jhd->hij", q[:, :, :dn], k_n) + np.einsum("ihd,jd->hij", q_r, k_r))
    o = np.einsum("hij,jhv->ihv", causal_softmax(scores), v).reshape(T, -1)
    return o @ tensors[p + "attn_output.weight"].T


def gqa_attention(x_norm, tensors, p, hp, positions):
    H, G, d = hp["n_head"], hp["n_head_kv"], hp["head_dim"]
    T = len(x_norm)
    q = x_norm @ tensors[p + "attn_q.weight"].T + tensors[p + "attn_q.bias"]
    k = x_norm @ tensors[p + "attn_k.weight"].T + tensors[p + "attn_k.bias"]
    v = x_norm @ tensors[p + "attn_v.weight"].T + tensors[p + "attn_v.bias"]
    q, k, v = q.reshape(T, H, d), k.reshape(T, G, d), v.reshape(T, G, d)
    if p + "attn_q_norm.weight" in tensors:
        q = rms(q, tensors[p + "attn_q_norm.weight"], hp["eps"])
        k = rms(k, tensors[p + "attn_k_norm.weight"], hp["eps"])
    freqs = yarn_frequencies(hp["n_rot"], hp["base"], hp["scale"], hp["yarn"], hp["beta_fast"], hp["beta_slow"],
                             hp["orig_ctx"])
    q, k = rope(q, positions, freqs, neox=True), rope(k, positions, freqs, neox=True)
    k, v = np.repeat(k, H // G, axis=1), np.repeat(v, H // G, axis=1)
    scores = np.einsum("ihd,jhd->hij", q, k) / math.sqrt(d)
    o = np.einsum("hij,jhd->ihd", causal_softmax(scores), v).reshape(T, -1)
    return o @ tensors[p + "attn_output.weight"].T


def forward(kv, tensors, ids):
    hp = hparams(kv)
    hp["scale"] = hp["scale"]
    route_hp = dict(gating=hp["gating"], n_groups=hp["n_groups"], groups_used=hp["groups_used"], k=hp["k"],
                    norm=hp["norm"], scale=hp["scale_w"])
    x = tensors["token_embd.weight"][ids]
    positions = np.arange(len(ids), dtype=np.float64)
    for il in range(hp["n_layer"]):
        p = f"blk.{il}."
        u = rms(x, tensors[p + "attn_norm.weight"], hp["eps"])
        attend = mla_attention if hp["arch"] == "deepseek2" else gqa_attention
        x = x + attend(u, tensors, p, hp, positions)
        norm = "ffn_norm" if hp["arch"] == "deepseek2" else "post_attention_norm"
        u = rms(x, tensors[p + norm + ".weight"], hp["eps"])
        if il < hp["n_dense"]:
            x = x + ffn(u, tensors[p + "ffn_gate.weight"], tensors[p + "ffn_up.weight"], tensors[p + "ffn_down.weight"])
        else:
            x = x + moe(u, tensors, p, route_hp, hp["arch"])
    x = rms(x, tensors["output_norm.weight"], hp["eps"])
    out = tensors.get("output.weight", tensors["token_embd.weight"])
    return x @ out.T


def main():
    gguf_path, fixture = Path(sys.argv[1]), Path(sys.argv[2])
    kv, tensors = read_gguf(gguf_path)
    ref = json.loads((fixture / "reference.json").read_text())
    vocab = ref["vocab_size"]
    expected = np.fromfile(fixture / "logits.bin", dtype="<f4").astype(np.float64)
    offset, worst = 0, 0.0
    max_abs = np.abs(expected).max()
    for seq in ref["sequences"]:
        got = forward(kv, tensors, np.array(seq))
        want = expected[offset:offset + len(seq) * vocab].reshape(len(seq), vocab)
        offset += len(seq) * vocab
        worst = max(worst, float(np.abs(got - want).max()))
        agree = float(np.mean(got.argmax(-1) == want.argmax(-1)))
        print(f"sequence of {len(seq)}: max |diff| {np.abs(got - want).max():.3e}, top-1 agreement {agree:.3f}")
    print(f"{gguf_path.name}: max |diff| / max |logit| = {worst / max_abs:.3e}")


if __name__ == "__main__":
    main()
