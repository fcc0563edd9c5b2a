#!/usr/bin/env python3
"""Reference fixtures for the DeepSeek-V3 (MLA) and GLM-4.5 (glm4_moe) families, built with transformers.

The same contract as make_fixtures.py (tiny seeded checkpoints, float64 logits at every position of three
sequences, a decisive greedy continuation), plus, per fixture:
  - decode.bin: float32 logits of the greedy prompt's last position and of 8 cached decode steps, computed by
    transformers with its KV cache (the prefill-then-decode path);
  - for checkpoints that carry one, a multi-token-prediction (NextN) layer after the last decoder layer, named as
    the published checkpoints name it; transformers ignores it, so the logits are those of the trunk alone.
One more fixture holds DeepSeek-V3's FP8 format: the deepseek_v3 weights quantised to float8_e4m3fn in blocks with
float32 `weight_scale_inv` tensors; its logits are those of the dequantised weights.

Optionally (--llamacpp DIR) each float checkpoint is also converted by llama.cpp's convert_hf_to_gguf.py (F16),
so Sluice can check that llama.cpp-converted files load. The tokenizer is the shared test tokenizer, so the
converter's pre-tokenizer detection is told 'qwen2' (it only hashes known vocabularies).

Usage: python3 tools/reference/make_deepseek_glm_fixtures.py OUT_DIR [--llamacpp DIR --gguf-out DIR]
                                                              [--sources-out DIR] [--only NAME...]
"""

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

import torch
import transformers
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_fixtures as mf  # noqa: E402  (the shared tokenizer constants, init rules and greedy search)

SEED = mf.SEED
DECODE_STEPS = 8
FP8_BLOCK = [32, 32]
FP8_MAX = 448.0

COMMON = dict(mf.COMMON, num_hidden_layers=3, rms_norm_eps=1e-6, tie_word_embeddings=False)
COMMON.pop("num_key_value_heads")

DEEPSEEK = dict(
    intermediate_size=128, moe_intermediate_size=32, num_attention_heads=4, num_key_value_heads=4,
    n_routed_experts=8, num_experts_per_tok=2, first_k_dense_replace=1, kv_lora_rank=16,
    qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=12, rope_interleave=True, attention_bias=False,
)
GLM = dict(
    intermediate_size=128, moe_intermediate_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
    n_routed_experts=8, num_experts_per_tok=2, first_k_dense_replace=1, n_shared_experts=1,
    partial_rotary_factor=0.5, attention_bias=True, norm_topk_prob=True,
)

# name, HF class, GGUF arch, config fields, rope parameters, MTP layers to append.
FIXTURES = [
    ("deepseek_v3", "DeepseekV3ForCausalLM", "deepseek2",
     dict(DEEPSEEK, q_lora_rank=32, n_group=4, topk_group=2, n_shared_experts=1, routed_scaling_factor=2.5,
          norm_topk_prob=True, scoring_func="sigmoid", topk_method="noaux_tc"),
     {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 128,
      "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0}, 1),
    ("deepseek_v3_lite", "DeepseekV3ForCausalLM", "deepseek2",
     dict(DEEPSEEK, q_lora_rank=None, n_group=1, topk_group=1, n_shared_experts=2, routed_scaling_factor=1.0,
          norm_topk_prob=False, scoring_func="sigmoid", topk_method="noaux_tc"),
     {"rope_type": "default", "rope_theta": 10000.0}, 0),
    ("glm4moe", "Glm4MoeForCausalLM", "glm4moe",
     dict(GLM, n_group=1, topk_group=1, routed_scaling_factor=2.5, use_qk_norm=False, num_nextn_predict_layers=1),
     {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}, 1),
    ("glm4moe_qknorm", "Glm4MoeForCausalLM", "glm4moe",
     dict(GLM, n_group=2, topk_group=1, routed_scaling_factor=1.5, use_qk_norm=True, num_nextn_predict_layers=0),
     {"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.5}, 0),
]
# Legacy and published-checkpoint keys the config gets besides what save_pretrained writes.
EXTRA_KEYS = ("scoring_func", "topk_method")


def log(*args):
    print(*args, flush=True)


# ---------------------------------------------------------------- models


def build_config(cls_name, extra, rope):
    config_cls = getattr(transformers, cls_name).config_class
    fields = dict(COMMON, **{k: v for k, v in extra.items() if k not in EXTRA_KEYS})
    if rope.get("rope_type") == "yarn":
        # transformers derives YaRN's factor from max_position_embeddings / original_max_position_embeddings
        fields["max_position_embeddings"] = int(rope["factor"] * rope["original_max_position_embeddings"])
    fields["rope_parameters"] = dict(rope)
    config = config_cls(**fields)
    for key, value in fields.items():
        if key != "rope_parameters" and getattr(config, key, value) != value:
            log(f"  config: {key} is {getattr(config, key)!r}, asked {value!r}")
    log(f"  config: rope_parameters {getattr(config, 'rope_parameters', None)}")
    return config


def init_std(name, param, tied, n_experts):
    fan_in = param.shape[-1]
    if name.endswith("e_score_correction_bias"):
        return 0.0, 0.1
    if param.dim() == 1 and ("norm" in name or name.endswith("layernorm.weight")):
        return 1.0, 0.1
    if name.endswith(".bias"):
        return 0.0, 0.1
    if "embed_tokens" in name:
        return 0.0, 1.0
    if name.endswith(".gate.weight") and param.shape[0] == n_experts:
        return 0.0, 2.0 / fan_in ** 0.5  # router
    if param.dim() >= 2:
        return 0.0, 1.0 / fan_in ** 0.5
    raise ValueError(f"no init rule for {name} {tuple(param.shape)}")


def reinit(model, seed, n_experts):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            mean, std = init_std(name, param, False, n_experts)
            param.copy_(mean + std * torch.randn(param.shape, generator=gen, dtype=torch.float32))
        # The selection bias is a buffer; make it matter (same order of size as the sigmoid scores' spread).
        for name, buf in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                buf.copy_(0.1 * torch.randn(buf.shape, generator=gen, dtype=torch.float32))


def build_model(cls_name, config, seed):
    cls = getattr(transformers, cls_name)
    model = cls._from_config(config, attn_implementation="eager", experts_implementation="eager")
    reinit(model, seed, config.n_routed_experts)
    return model.eval()


def describe(model):
    for name, p in model.named_parameters():
        log(f"    param {name} {tuple(p.shape)}")
    for name, b in model.named_buffers():
        if "bias" in name:
            log(f"    buffer {name} {tuple(b.shape)}")


# ---------------------------------------------------------------- files


def save_checkpoint(model, out, extra):
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    model.save_pretrained(str(out), safe_serialization=True)
    (out / "generation_config.json").unlink(missing_ok=True)
    path = out / "config.json"
    data = json.loads(path.read_text())
    rope = data.get("rope_parameters") or {}
    data.setdefault("rope_theta", rope.get("rope_theta", 10000.0))
    for key in EXTRA_KEYS:
        if key in extra:
            data[key] = extra[key]
    mf.write_json(path, data)
    files = sorted(os.listdir(out))
    assert files == ["config.json", "model.safetensors"], files


def append_mtp_layer(out, cls_name, config, n_layers, seed):
    """Adds layer n_layers (a whole decoder layer plus the NextN projections) to model.safetensors."""
    big_config = copy.deepcopy(config)
    big_config.num_hidden_layers = n_layers + 1
    big = build_model(cls_name, big_config, seed + 7)
    tmp = out.parent / (out.name + ".mtp_tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    big.save_pretrained(str(tmp), safe_serialization=True)
    extra = {k: v for k, v in load_file(str(tmp / "model.safetensors")).items()
             if k.startswith(f"model.layers.{n_layers}.")}
    shutil.rmtree(tmp)
    gen = torch.Generator().manual_seed(seed + 8)
    h = config.hidden_size
    p = f"model.layers.{n_layers}."
    extra[p + "eh_proj.weight"] = torch.randn(h, 2 * h, generator=gen) / (2 * h) ** 0.5
    for norm in ("enorm", "hnorm", "shared_head.norm"):
        extra[p + norm + ".weight"] = 1.0 + 0.1 * torch.randn(h, generator=gen)
    # (DeepSeek-V3's published MTP block also repeats embed_tokens and shared_head.head; left out to keep the
    # fixture small: converters drop or skip the whole block by its layer index.)
    tensors = load_file(str(out / "model.safetensors"))
    tensors.update({k: v.contiguous() for k, v in extra.items()})
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    path = out / "config.json"
    data = json.loads(path.read_text())
    data["num_nextn_predict_layers"] = 1
    mf.write_json(path, data)
    log(f"  mtp: appended {len(extra)} tensors of layer {n_layers}")


def check_reload(out, cls_name, model64, sequences, expected):
    cls = getattr(transformers, cls_name)
    again = cls.from_pretrained(str(out), dtype=torch.float32, attn_implementation="eager",
                                experts_implementation="eager").double().eval()
    diff = max(float((mf.full_logits(again, s) - e).abs().max()) for s, e in zip(sequences, expected))
    assert diff == 0.0, f"reloaded checkpoint differs by {diff}"


@torch.no_grad()
def decode_logits(model32, prompt, tokens):
    """Last-position logits of the prompt, then of each token fed one at a time through the KV cache."""
    out = model32(input_ids=torch.tensor([prompt]), use_cache=True)
    rows = [out.logits[0, -1]]
    past = out.past_key_values
    for t in tokens:
        out = model32(input_ids=torch.tensor([[t]]), past_key_values=past, use_cache=True)
        past = out.past_key_values
        rows.append(out.logits[0, -1])
    return torch.stack(rows)


# ---------------------------------------------------------------- FP8


def quantize_fp8(w):
    """Blockwise float8_e4m3fn with float32 dequantisation multipliers (DeepSeek-V3's weight_scale_inv)."""
    rows, cols = w.shape
    br, bc = FP8_BLOCK
    nr, nc = -(-rows // br), -(-cols // bc)
    scale = torch.zeros(nr, nc, dtype=torch.float32)
    q = torch.zeros(rows, cols, dtype=torch.float8_e4m3fn)
    deq = torch.zeros(rows, cols, dtype=torch.float32)
    for i in range(nr):
        for j in range(nc):
            blk = w[i * br:(i + 1) * br, j * bc:(j + 1) * bc].float()
            s = max(float(blk.abs().max()) / FP8_MAX, 1e-12)
            scale[i, j] = s
            qb = (blk / s).to(torch.float8_e4m3fn)
            q[i * br:(i + 1) * br, j * bc:(j + 1) * bc] = qb
            deq[i * br:(i + 1) * br, j * bc:(j + 1) * bc] = qb.float() * s
    return q, scale, deq


def is_fp8_weight(name, t):
    """The matrices DeepSeek-V3 ships in FP8: every projection; not embeddings, router, norms or the head."""
    return t.dim() == 2 and name.endswith(("_proj.weight", "_proj_with_mqa.weight"))


def make_fp8(root, src_name, cls_name, sequences, prompt, cont):
    name = src_name + "_fp8"
    log(f"== {name}")
    src = root / src_name
    out = root / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    tensors = load_file(str(src / "model.safetensors"))
    data = json.loads((src / "config.json").read_text())
    n_layers = data["num_hidden_layers"]
    stored, dequant = {}, {}
    for k, t in tensors.items():
        if k.startswith(f"model.layers.{n_layers}."):
            continue  # no MTP layer in this one
        if is_fp8_weight(k, t):
            q, s, d = quantize_fp8(t)
            stored[k] = q
            stored[k[: -len("weight")] + "weight_scale_inv"] = s
            dequant[k] = d
        else:
            stored[k] = t
            dequant[k] = t
    save_file(stored, str(out / "model.safetensors"), metadata={"format": "pt"})
    data.pop("num_nextn_predict_layers", None)
    data["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                   "weight_block_size": FP8_BLOCK}
    mf.write_json(out / "config.json", data)
    # Reference: the float model with the dequantised weights, loaded through from_pretrained (which maps the
    # per-expert names of the file onto the model's own layout).
    tmp = root / (name + ".deq_tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    save_file(dequant, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    plain = dict(data)
    plain.pop("quantization_config")
    mf.write_json(tmp / "config.json", plain)
    model = getattr(transformers, cls_name).from_pretrained(str(tmp), dtype=torch.float32, attn_implementation="eager",
                                                            experts_implementation="eager")
    shutil.rmtree(tmp)
    log(f"  fp8: {sum(k.endswith('_scale_inv') for k in stored)} tensors quantised")
    model64 = copy.deepcopy(model).double().eval()
    logits64 = [mf.full_logits(model64, s) for s in sequences]
    mf.write_logits(out / "logits.bin", logits64)
    cont_again, min_margin, min_ratio = mf.greedy_single(model64, prompt)
    reference = base_reference(name, cls_name, "deepseek2", sequences, prompt, cont_again, min_margin)
    reference["fp8"] = {"weight_block_size": FP8_BLOCK, "source": src_name,
                        "note": "logits of the dequantised weights (float8 value times weight_scale_inv)"}
    mf.write_json(out / "reference.json", reference)
    log(f"  fp8: greedy continuation equal to the float model's: {cont_again == cont}, min_margin {min_margin:.4f}, "
        f"ratio {min_ratio:.4f}")


# ---------------------------------------------------------------- driver


def base_reference(name, cls_name, arch, sequences, prompt, cont, min_margin):
    return {
        "name": name, "hf_class": cls_name, "gguf_arch": arch, "seed": SEED,
        "vocab_size": mf.VOCAB_SIZE, "transformers_version": transformers.__version__,
        "torch_version": torch.__version__, "compute_dtype": "float64",
        "sequences": sequences,
        "logits_file": "logits.bin",
        "logits_layout": "float32 little-endian, sequences in order, each [len][vocab_size]",
        "greedy": {"prompt": prompt, "continuation": cont, "min_margin": min_margin},
    }


def make_fixture(root, name, cls_name, arch, extra, rope, mtp_layers):
    log(f"== {name} ({cls_name})")
    config = build_config(cls_name, extra, rope)
    model32 = build_model(cls_name, config, SEED)
    describe(model32)
    model64 = copy.deepcopy(model32).double().eval()
    out = root / name
    save_checkpoint(model32, out, extra)

    sequences = mf.random_sequences(SEED)
    logits64 = [mf.full_logits(model64, s) for s in sequences]
    logits32 = [mf.full_logits(model32, s) for s in sequences]
    if mtp_layers:
        append_mtp_layer(out, cls_name, config, config.num_hidden_layers, SEED)
    check_reload(out, cls_name, model64, sequences, logits64)
    all64 = torch.cat(logits64)
    assert torch.isfinite(all64).all()
    max_abs = float(all64.abs().max())
    f32_diff = max(float((a.double() - b).abs().max()) for a, b in zip(logits32, logits64))
    mf.write_logits(out / "logits.bin", logits64)

    prompt, cont = mf.choose_prompt(model64, SEED)
    cont_again, min_margin, min_ratio = mf.greedy_single(model64, prompt)
    assert cont_again == cont, (cont, cont_again)

    dec = decode_logits(model32, prompt, cont[:DECODE_STEPS])
    full = mf.full_logits(model64, prompt + cont[:DECODE_STEPS])[len(prompt) - 1:]
    dec_diff = float((dec.double() - full).abs().max())
    mf.write_logits(out / "decode.bin", [dec])

    reference = base_reference(name, cls_name, arch, sequences, prompt, cont, min_margin)
    reference["decode"] = {
        "prompt": prompt, "tokens": cont[:DECODE_STEPS], "logits_file": "decode.bin", "compute_dtype": "float32",
        "logits_layout": "float32 little-endian, [1 + len(tokens)][vocab_size]: the prompt's last position, then "
                         "each decode step, computed with transformers' KV cache",
    }
    if mtp_layers:
        reference["nextn_layers"] = mtp_layers
    mf.write_json(out / "reference.json", reference)
    stats = dict(name=name, logit_std=float(all64.std()), max_abs_logit=max_abs, f32_vs_f64_rel=f32_diff / max_abs,
                 decode_f32_vs_f64_rel=dec_diff / max_abs, greedy_min_margin=min_margin,
                 greedy_min_margin_over_max_abs=min_ratio, greedy_distinct=len(set(cont)),
                 params=sum(p.numel() for p in model32.parameters()))
    log("  " + json.dumps(stats))
    return stats, sequences, prompt, cont


def convert_with_llamacpp(llamacpp, ckpt, tokenizer_dir, out_file, log_dir):
    """Runs llama.cpp's converter on a copy of the checkpoint with the shared tokenizer, F16 output."""
    work = out_file.parent / (out_file.stem + "_hf")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(ckpt, work)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_dir / f, work / f)
    wrapper = (
        "import sys, runpy\n"
        f"sys.path.insert(0, {str(llamacpp)!r}); sys.path.insert(1, {str(llamacpp / 'gguf-py')!r})\n"
        "import conversion.base as base, conversion.deepseek, conversion.glm\n"
        "base.TextModel.get_vocab_base_pre = lambda self, tokenizer: 'qwen2'\n"
        "conversion.glm.Glm4MoeModel.set_vocab = lambda self: self._set_vocab_gpt2()\n"
        f"sys.argv = ['convert_hf_to_gguf.py', {str(work)!r}, '--outfile', {str(out_file)!r}, '--outtype', 'f16']\n"
        f"runpy.run_path({str(llamacpp / 'convert_hf_to_gguf.py')!r}, run_name='__main__')\n"
    )
    r = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True)
    (log_dir / (out_file.stem + ".log")).write_text(r.stdout + r.stderr)
    shutil.rmtree(work, ignore_errors=True)
    log(f"  llama.cpp convert {out_file.name}: exit {r.returncode}, {out_file.stat().st_size if out_file.exists() else 0} bytes")


def dump_sources(dest):
    """The transformers sources these fixtures rely on, for reading the exact math of this version."""
    dest.mkdir(parents=True, exist_ok=True)
    pkg = Path(transformers.__file__).parent
    wanted = ["modeling_rope_utils.py", "integrations/finegrained_fp8.py", "conversion_mapping.py",
              "core_model_loading.py", "integrations/moe.py"]
    for sub in ("deepseek_v3", "deepseek_v2", "glm4_moe", "glm4_moe_lite", "kimi_k25", "kimi_k2", "glm4v_moe"):
        d = pkg / "models" / sub
        if d.is_dir():
            wanted += [str(p.relative_to(pkg)) for p in d.glob("*.py")]
    for rel in wanted:
        src = pkg / rel
        if src.exists():
            (dest / rel.replace("/", "__")).write_text(src.read_text())
    log(f"sources: {len(list(dest.iterdir()))} files")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="fixture folder (tests/fixtures/reference)")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--llamacpp", type=Path, help="folder with convert_hf_to_gguf.py, conversion/ and gguf-py/")
    parser.add_argument("--gguf-out", type=Path, help="where llama.cpp-converted files go")
    parser.add_argument("--sources-out", type=Path, help="copy the relevant transformers sources here")
    parser.add_argument("--tokenizer", type=Path, help="the shared tokenizer folder (default OUT/tokenizer)")
    args = parser.parse_args()
    torch.manual_seed(SEED)
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, python {sys.version.split()[0]}")
    if args.sources_out:
        dump_sources(args.sources_out)
    tokenizer_dir = args.tokenizer or (args.out / "tokenizer")
    all_stats = []
    for row in FIXTURES:
        if args.only and row[0] not in args.only:
            continue
        try:
            stats, sequences, prompt, cont = make_fixture(args.out, *row)
            all_stats.append(stats)
            if row[0] == "deepseek_v3":
                make_fp8(args.out, row[0], row[1], sequences, prompt, cont)
            if args.llamacpp and args.gguf_out:
                args.gguf_out.mkdir(parents=True, exist_ok=True)
                convert_with_llamacpp(args.llamacpp, args.out / row[0], tokenizer_dir,
                                      args.gguf_out / f"{row[0]}.llamacpp-f16.gguf", args.gguf_out)
        except (Exception, SystemExit):  # report and go on, so one run shows every problem
            log(f"!! {row[0]} failed:\n{traceback.format_exc()}")
    mf.write_json(args.out / "dsglm_stats.json", all_stats)


if __name__ == "__main__":
    main()
