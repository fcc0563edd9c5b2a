#!/usr/bin/env python3
"""Generate Sluice's gpt-oss reference fixture with Hugging Face transformers.

A tiny seeded GptOssForCausalLM (2 layers: one sliding-window, one full; attention sinks; biases; YaRN; 8
experts top-4 with the clamped SwiGLU) whose every weight is exactly representable in bfloat16 and whose
experts are exactly representable in MXFP4. It is written twice:

- `gpt_oss/`: as the published checkpoints ship it (config.json in the transformers 4.x spelling with
  `rope_scaling` and `quantization_config: mxfp4`; experts as `*_blocks`/`*_scales` uint8 tensors, the rest
  bfloat16), written by this script;
- `gpt_oss_bf16/`: the same model after transformers itself loaded the MXFP4 checkpoint (dequantising it) and
  saved it with `save_pretrained` in bfloat16 (config.json in the transformers 5.x spelling).

Both hold the same numbers, so one set of float64 logits (transformers' eager forward of the loaded MXFP4
checkpoint) serves both. The C++ fidelity test converts them and compares. The script shares the tokenizer
and the greedy-prompt search of make_fixtures.py. See tools/reference/README.md.

Usage: python3 tools/reference/make_gpt_oss_fixture.py OUT_DIR [--debug DEBUG_DIR]
"""

import argparse
import copy
import inspect
import json
import math
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, "tools/reference")
import make_fixtures as mf  # noqa: E402  (the shared tokenizer, greedy search and file helpers)

SEED = 1234
WINDOW = 12  # not a power of two, so a ring buffer that assumes one is caught
SEQUENCE_LENGTHS = [40, 24, 9]
DECODE_PREFILL = 10  # the C++ test prefills this much of sequence 0 and decodes the rest token by token
N_EXPERTS = 8
TOP_K = 4
FF = 96  # hidden 64: no expert matrix is square, so a transposed layout cannot pass unnoticed
ROPE = {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
        "original_max_position_embeddings": 4096}
ROPE_THETA = 150000.0
FP4_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
NOT_CONVERTED = ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]


FAILURES = []


def log(*args):
    print(*args, flush=True)


def check(ok, what):
    """Records a failed check and goes on, so one run reports every problem; main() exits non-zero at the end."""
    if not ok:
        log(f"CHECK FAILED: {what}")
        FAILURES.append(what)


# ---------------------------------------------------------------- MXFP4 (the hub's layout)


def mxfp4_quantize(w):
    """Rows of `w` (float64 [..., n], n % 32 == 0) to the hub's MXFP4: blocks [..., n/32, 16] uint8 (value 2i in
    the low nibble of byte i, 2i+1 in the high nibble) and scales [..., n/32] uint8 (E8M0, bias 127). The scale
    is 2^(floor(log2(max|x|)) - 2), so the largest value lands in [4, 8) and rounds to at most 6."""
    lut = np.array(FP4_VALUES[:8])
    g = w.reshape(*w.shape[:-1], w.shape[-1] // 32, 32)
    amax = np.abs(g).max(axis=-1)
    exp = np.floor(np.log2(np.maximum(amax, 1e-30))) - 2
    scaled = g / np.exp2(exp)[..., None]
    idx = np.abs(np.abs(scaled)[..., None] - lut).argmin(axis=-1)  # nearest magnitude (ties: the smaller)
    idx = np.where(scaled < 0, idx + 8, idx).astype(np.uint8)
    blocks = (idx[..., 0::2] | (idx[..., 1::2] << 4)).astype(np.uint8)
    scales = (exp + 127).astype(np.uint8)
    return blocks, scales


def mxfp4_dequantize(blocks, scales):
    """The inverse, as transformers' convert_moe_packed_tensors does it (before its final transpose)."""
    lut = np.array(FP4_VALUES)
    lo, hi = lut[blocks & 0x0F], lut[blocks >> 4]
    vals = np.stack([lo, hi], axis=-1).reshape(*blocks.shape[:-1], 32)
    vals = vals * np.exp2(scales.astype(np.float64) - 127)[..., None]
    return vals.reshape(*blocks.shape[:-2], blocks.shape[-2] * 32)


# ---------------------------------------------------------------- the model


def hub_config():
    """config.json as the published gpt-oss checkpoints spell it (transformers 4.55), at the tiny geometry."""
    return {
        "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
        "attention_bias": True, "attention_dropout": 0.0, "eos_token_id": mf.REGULAR_TOKENS + 2,
        "pad_token_id": mf.REGULAR_TOKENS, "experts_per_token": TOP_K, "head_dim": 16, "hidden_act": "silu",
        "hidden_size": 64, "initial_context_length": 4096, "initializer_range": 0.02, "intermediate_size": FF,
        "layer_types": ["sliding_attention", "full_attention"], "max_position_embeddings": 131072,
        "num_attention_heads": 4, "num_experts_per_tok": TOP_K, "num_hidden_layers": 2, "num_key_value_heads": 2,
        "num_local_experts": N_EXPERTS, "output_router_logits": False, "rms_norm_eps": 1e-05,
        "rope_scaling": dict(ROPE), "rope_theta": ROPE_THETA, "router_aux_loss_coef": 0.9,
        "sliding_window": WINDOW, "swiglu_limit": 7.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "transformers_version": "4.55.0.dev0", "use_cache": True, "vocab_size": mf.VOCAB_SIZE,
        "quantization_config": {"modules_to_not_convert": NOT_CONVERTED, "quant_method": "mxfp4"},
    }


def bf16_exact(t):
    return t.to(torch.bfloat16).to(torch.float64)


def random_weights(gen):
    """name -> float64 tensor in the hub's names and shapes (experts as dense [E, out, in] for now)."""
    c = hub_config()
    H, Q, KV, V = c["hidden_size"], 4 * 16, 2 * 16, c["vocab_size"]

    def normal(shape, std, mean=0.0):
        return bf16_exact(mean + std * torch.randn(shape, generator=gen, dtype=torch.float64))

    w = {"model.embed_tokens.weight": normal((V, H), 1.0)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = normal((H,), 0.1, 1.0)
        for name, rows in (("q_proj", Q), ("k_proj", KV), ("v_proj", KV)):
            w[p + f"self_attn.{name}.weight"] = normal((rows, H), 1 / math.sqrt(H))
            w[p + f"self_attn.{name}.bias"] = normal((rows,), 0.1)
        w[p + "self_attn.o_proj.weight"] = normal((H, Q), 1 / math.sqrt(Q))
        w[p + "self_attn.o_proj.bias"] = normal((H,), 0.1)
        w[p + "self_attn.sinks"] = normal((4,), 1.0)
        w[p + "post_attention_layernorm.weight"] = normal((H,), 0.1, 1.0)
        w[p + "mlp.router.weight"] = normal((N_EXPERTS, H), 2 / math.sqrt(H))
        w[p + "mlp.router.bias"] = normal((N_EXPERTS,), 0.1)
        # Gate/up rows interleaved (gate 2j, up 2j+1), scaled up so the clamp at 7 is reached.
        w[p + "mlp.experts.gate_up_proj"] = torch.randn((N_EXPERTS, 2 * FF, H), generator=gen, dtype=torch.float64) * (
            3 / math.sqrt(H))
        w[p + "mlp.experts.gate_up_proj_bias"] = normal((N_EXPERTS, 2 * FF), 0.1)
        w[p + "mlp.experts.down_proj"] = torch.randn((N_EXPERTS, H, FF), generator=gen, dtype=torch.float64) / (
            math.sqrt(FF))
        w[p + "mlp.experts.down_proj_bias"] = normal((N_EXPERTS, H), 0.1)
    w["model.norm.weight"] = normal((H,), 0.1, 1.0)
    w["lm_head.weight"] = normal((V, H), 1 / math.sqrt(H))
    return w


def write_hub_checkpoint(out, weights):
    """The MXFP4 checkpoint: experts as blocks/scales, everything else bfloat16. Returns the dequantised experts."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    tensors, dense = {}, {}
    for name, t in weights.items():
        if name.endswith("gate_up_proj") or name.endswith("down_proj"):
            blocks, scales = mxfp4_quantize(t.numpy())
            tensors[name + "_blocks"] = torch.from_numpy(blocks)
            tensors[name + "_scales"] = torch.from_numpy(scales)
            dense[name] = torch.from_numpy(mxfp4_dequantize(blocks, scales))
        else:
            tensors[name] = t.to(torch.bfloat16).contiguous()
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    mf.write_json(out / "config.json", hub_config())
    return dense


def load_transformers(path, quantized):
    cls = transformers.GptOssForCausalLM
    kwargs = dict(dtype=torch.float32, attn_implementation="eager")
    if quantized:
        kwargs["quantization_config"] = transformers.Mxfp4Config(dequantize=True)
    # The dequantised experts arrive in bfloat16; .float() makes the whole model float32.
    try:
        return cls.from_pretrained(str(path), experts_implementation="eager", **kwargs).float().eval()
    except (TypeError, ValueError) as err:
        log(f"  from_pretrained without experts_implementation ({err})")
        return cls.from_pretrained(str(path), **kwargs).float().eval()


def check_experts(model, dense):
    """transformers' dequantised experts equal this script's reading of the blocks (in some orientation)."""
    report = {}
    for i, layer in enumerate(model.model.layers):
        for proj in ("gate_up_proj", "down_proj"):
            got = getattr(layer.mlp.experts, proj).detach().to(torch.float64).cpu()
            want = dense[f"model.layers.{i}.mlp.experts.{proj}"]  # [E, out, in]
            if got.shape == want.transpose(1, 2).shape and torch.equal(got, want.transpose(1, 2)):
                report[proj] = "[E, in, out] (transposed)"
            elif got.shape == want.shape and torch.equal(got, want):
                report[proj] = "[E, out, in]"
            else:  # recorded, not fatal: the listing shows how transformers reads the hub layout
                report[proj] = f"MISMATCH: transformers {tuple(got.shape)}, script {tuple(want.shape)}"
    log(f"  experts as transformers holds them: {report}")
    check(not any(v.startswith("MISMATCH") for v in report.values()), f"expert layout {report}")
    return report


def clamp_fraction(model64, sequences):
    """Fraction of expert gate/up pre-activations beyond the SwiGLU limit (7) over the fixture's tokens."""
    seen = []
    hooks = [layer.mlp.register_forward_hook(lambda m, args, out: seen.append(args[0].detach()))
             for layer in model64.model.layers]
    for s in sequences:
        mf.full_logits(model64, s)
    for h in hooks:
        h.remove()
    beyond, total = 0, 0
    for li, x in enumerate(seen):
        layer = model64.model.layers[li % len(model64.model.layers)]
        gu = layer.mlp.experts.gate_up_proj.detach()
        b = layer.mlp.experts.gate_up_proj_bias.detach()
        x = x.reshape(-1, x.shape[-1])
        w = gu if gu.shape[1] == x.shape[-1] else gu.transpose(1, 2)  # [E, hidden, 2*ff] either way
        y = torch.einsum("th,ehf->etf", x, w) + b[:, None, :]
        beyond += int((y[..., 0::2] > 7).sum() + (y[..., 1::2].abs() > 7).sum())
        total += y.numel()
    return beyond / total


@torch.no_grad()
def decode_logits(model, ids, prefill):
    """Prefill `prefill` tokens with a cache, then one token at a time: logits of every position."""
    out = model(input_ids=torch.tensor([ids[:prefill]]), use_cache=True)
    logits, cache = [out.logits[0]], out.past_key_values
    for t in ids[prefill:]:
        out = model(input_ids=torch.tensor([[t]]), past_key_values=cache, use_cache=True)
        logits.append(out.logits[0])
        cache = out.past_key_values
    return torch.cat(logits)


def save_dequantized(model32, out):
    """transformers' own save of the dequantised model, in bfloat16 (lossless: every weight is bf16-exact)."""
    shutil.rmtree(out, ignore_errors=True)
    config = copy.deepcopy(model32.config)
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    model = transformers.GptOssForCausalLM._from_config(config, attn_implementation="eager", dtype=torch.float32)
    model.load_state_dict({k: v.to(torch.float32) for k, v in model32.state_dict().items()})
    model.to(torch.bfloat16).save_pretrained(str(out), safe_serialization=True)
    (out / "generation_config.json").unlink(missing_ok=True)
    back = load_file(str(out / "model.safetensors"))
    for k, v in model.state_dict().items():
        if k in back:
            check(torch.equal(back[k].to(torch.float64), v.to(torch.float64)), f"saved {k} differs")
    return {k: [str(v.dtype), list(v.shape)] for k, v in back.items()}


# ---------------------------------------------------------------- driver


def dump_sources(folder):
    """The transformers sources this fixture depends on, for reading where a version differs."""
    folder.mkdir(parents=True, exist_ok=True)
    for mod in ("models.gpt_oss.modeling_gpt_oss", "models.gpt_oss.configuration_gpt_oss", "integrations.mxfp4",
                "modeling_rope_utils", "masking_utils", "conversion_mapping", "quantizers.quantizer_mxfp4"):
        try:
            src = inspect.getsource(__import__("transformers." + mod, fromlist=["_"]))
            (folder / (mod.replace(".", "_") + ".py")).write_text(src)
        except Exception as err:  # a module a version lacks: note it and go on
            log(f"  source of {mod}: {err!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the fixtures folder (tests/fixtures/reference)")
    parser.add_argument("--debug", type=Path, help="also write sources and listings here")
    args = parser.parse_args()
    torch.manual_seed(SEED)
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, numpy {np.__version__}")
    if args.debug:
        dump_sources(args.debug)
    gen = torch.Generator().manual_seed(SEED)
    weights = random_weights(gen)

    hub = args.out / "gpt_oss"
    dense = write_hub_checkpoint(hub, weights)
    model32 = load_transformers(hub, quantized=True)
    try:
        layout = check_experts(model32, dense)
    except Exception as err:  # noqa: BLE001  (reported, and the run goes on)
        check(False, f"check_experts: {err!r}")
        layout = {"error": repr(err)}
    model64 = load_transformers(hub, quantized=True).double().eval()
    c = model64.config
    log(f"  config: layer_types {c.layer_types}, sliding_window {c.sliding_window}, "
        f"rope {getattr(c, 'rope_parameters', None) or getattr(c, 'rope_scaling', None)}")

    seq_gen = torch.Generator().manual_seed(SEED + 1)
    sequences = [torch.randint(0, mf.REGULAR_TOKENS, (n,), generator=seq_gen).tolist() for n in SEQUENCE_LENGTHS]
    logits64 = [mf.full_logits(model64, s) for s in sequences]
    logits32 = [mf.full_logits(model32, s) for s in sequences]
    all64 = torch.cat(logits64)
    assert torch.isfinite(all64).all()
    max_abs = float(all64.abs().max())
    f32_diff = max(float((a.double() - b).abs().max()) for a, b in zip(logits32, logits64))
    decoded = decode_logits(model64, sequences[0], DECODE_PREFILL)
    decode_diff = float((decoded - logits64[0]).abs().max())
    log(f"  cached decode vs full forward: max diff {decode_diff:.3g} of max|logit| {max_abs:.3g}")
    check(decode_diff <= 1e-6 * max_abs, "transformers' cached decode disagrees with its full forward")
    try:
        clamped = clamp_fraction(model64, sequences)
    except Exception as err:  # noqa: BLE001
        check(False, f"clamp_fraction: {err!r}")
        clamped = -1.0
    log(f"  SwiGLU pre-activations beyond the limit: {clamped:.4f}")
    mf.write_logits(hub / "logits.bin", logits64)

    try:
        prompt, cont = mf.choose_prompt(model64, SEED)
    except SystemExit as err:
        check(False, f"greedy prompt search: {err}")
        prompt, cont = [], []
    cont_again, min_margin, min_ratio = mf.greedy_single(model64, prompt) if prompt else ([], 0.0, 0.0)
    check(cont_again == cont, f"greedy continuation recomputed one prompt at a time differs: {cont} {cont_again}")

    bf16_dir = args.out / "gpt_oss_bf16"
    saved = save_dequantized(model32, bf16_dir)
    again = load_transformers(bf16_dir, quantized=False).double().eval()
    reload_diff = max(float((mf.full_logits(again, s) - e).abs().max()) for s, e in zip(sequences, logits64))
    log(f"  transformers' bf16 save reloaded: max diff {reload_diff:.3g}")
    check(reload_diff <= 1e-9 * max_abs, f"bf16 save reloads with other logits ({reload_diff})")

    reference = {
        "name": "gpt_oss", "hf_class": "GptOssForCausalLM", "gguf_arch": "gpt-oss", "seed": SEED,
        "vocab_size": mf.VOCAB_SIZE, "transformers_version": transformers.__version__,
        "torch_version": torch.__version__, "compute_dtype": "float64",
        "sequences": sequences, "logits_file": "logits.bin",
        "logits_layout": "float32 little-endian, sequences in order, each [len][vocab_size]",
        "decode": {"sequence": 0, "prefill": DECODE_PREFILL},
        "greedy": {"prompt": prompt, "continuation": cont, "min_margin": min_margin},
    }
    mf.write_json(hub / "reference.json", reference)
    mf.write_json(bf16_dir / "reference.json", dict(reference, name="gpt_oss_bf16", logits_file="../gpt_oss/logits.bin"))
    stats = dict(lengths=SEQUENCE_LENGTHS, logit_std=float(all64.std()), max_abs_logit=max_abs,
                 f32_vs_f64_max_abs_diff=f32_diff, decode_vs_full=decode_diff, clamped_fraction=clamped,
                 greedy_min_margin=min_margin, greedy_min_margin_over_max_abs=min_ratio,
                 greedy_distinct=len(set(cont)), expert_layout=layout, bf16_save=saved,
                 params=sum(p.numel() for p in model32.parameters()))
    log("  " + json.dumps({k: v for k, v in stats.items() if k != "bf16_save"}))
    if args.debug:
        mf.write_json(args.debug / "stats.json", stats)
        mf.write_json(args.debug / "saved_config.json", json.loads((bf16_dir / "config.json").read_text()))
    check(stats["logit_std"] > 0.3, "logits too flat")
    check(f32_diff / max_abs < 1e-4, "float32 and float64 disagree")
    check(min_ratio >= mf.MARGIN_FRACTION, "greedy margin")
    check(clamped > 0.005, "the SwiGLU clamp is hardly reached")
    if FAILURES:
        sys.exit(f"{len(FAILURES)} checks failed: {FAILURES}")


if __name__ == "__main__":
    main()
