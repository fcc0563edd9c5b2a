#!/usr/bin/env python3
"""Reference fixtures for the hybrid Gated DeltaNet families (Qwen3.5 MoE, Qwen3.5 dense, Qwen3-Next).

For each family: a tiny seeded checkpoint saved by transformers (config.json + model.safetensors, float32, plus
random MTP tensors as the published checkpoints carry them), logits of every position of three sequences
(full forward without a cache), the same positions computed through transformers' cache (a prefill, a second
prefill chunk that starts from the cached state, then one token at a time: the recurrent decode path), and a
greedy continuation. Optionally the checkpoint converted by llama.cpp's own convert_hf_to_gguf.py (F16), so the
C++ tests can check that a llama.cpp-converted file loads and computes what Sluice's converter's file computes.
Also writes a qwen35-pattern variant of the shared fixture tokenizer and transformers' reference encodings of
generated strings with it (the pre-tokenizer differential reference).

The shared parts (tokenizer, sequences, greedy search) come from make_fixtures.py beside this file.

Usage: python3 tools/reference/make_qwen35_fixtures.py OUT_DIR [--llamacpp DIR] [--only NAME...]
"""

import argparse
import copy
import dataclasses
import json
import math
import random
import runpy
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

import torch
import transformers
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_fixtures as mf  # noqa: E402

SEED = mf.SEED
mf.PROMPT_BATCHES = 4  # 1024 candidate prompts are plenty for these models, and keep the run short
# The tokenizer.json Split pattern of Qwen3.5 / Qwen3.6 (its only difference from Qwen2's: \p{M} joins letters).
QWEN35_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Sequence 0 through the cache: a prefill of PREFILL tokens, a second chunk of CHUNK tokens from that state,
# then one token at a time.
PREFILL, CHUNK = 10, 6

LINEAR = dict(
    linear_conv_kernel_dim=4,
    linear_key_head_dim=16,
    linear_value_head_dim=16,
    linear_num_key_heads=2,
    linear_num_value_heads=4,  # two value heads per key head: exercises the grouped/tiled head order
)
MOE = dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=64)
COMMON = dict(
    mf.COMMON,
    num_hidden_layers=4,
    head_dim=32,
    hidden_act="silu",
    attention_bias=False,
    rms_norm_eps=1e-6,
    full_attention_interval=2,  # linear, full, linear, full
    **LINEAR,
)
MROPE = {"mrope_section": [2, 1, 1], "mrope_interleaved": True}

# name, HF class, GGUF arch, rope_theta, class-specific fields, extra rope_parameters.
FIXTURES = [
    ("qwen35moe", "Qwen3_5MoeForCausalLM", "qwen35moe", 1e7, dict(MOE), MROPE),
    ("qwen35", "Qwen3_5ForCausalLM", "qwen35", 1e7, dict(intermediate_size=128, tie_word_embeddings=True), MROPE),
    ("qwen3next", "Qwen3NextForCausalLM", "qwen3next", 1e7,
     dict(MOE, intermediate_size=128, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[]), {}),
]


def log(*args):
    print(*args, flush=True)


# ---------------------------------------------------------------- config and weights


def config_field_names(config_cls):
    try:
        return {f.name for f in dataclasses.fields(config_cls)}
    except TypeError:
        return set(vars(config_cls()).keys())


def build_config(cls_name, rope_theta, extra, rope_extra):
    config_cls = getattr(transformers, cls_name).config_class
    names = config_field_names(config_cls)
    fields = dict(COMMON, **extra)
    if "num_experts" in fields and "num_experts" not in names and "num_local_experts" in names:
        fields["num_local_experts"] = fields.pop("num_experts")  # transformers 5 spelling, where it applies
    fields["rope_parameters"] = dict(rope_type="default", rope_theta=rope_theta, partial_rotary_factor=0.25,
                                     **rope_extra)
    config = config_cls(**fields)
    assert config.layer_types == ["linear_attention", "full_attention"] * 2, config.layer_types
    log(f"  config {config_cls.__name__}: fields {sorted(k for k in fields if k not in names)} are not dataclass "
        f"fields; rope {config.rope_parameters}")
    return config


def init_rule(name, param, tied):
    """(mean, std) for one parameter, by its role."""
    fan_in = param.shape[-1]
    if name.endswith("A_log"):
        return -1.5, 0.5  # A = exp(A_log) near 0.2: per-token decays near 0.75, so the state carries
    if name.endswith("dt_bias"):
        return 0.0, 0.5
    if param.dim() == 1 and "norm" in name:
        # Zero-centred RMSNorms (weight + 1) everywhere except the gated output norm of the linear attention.
        return (1.0, 0.1) if "linear_attn.norm" in name else (0.0, 0.1)
    if "embed_tokens" in name:
        return 0.0, mf.TIED_EMBED_STD if tied else 1.0
    if "shared_expert_gate" in name:
        return 0.0, 1.0 / math.sqrt(fan_in)
    if name.endswith("mlp.gate.weight") and param.shape[0] == MOE["num_experts"]:
        return 0.0, 2.0 / math.sqrt(fan_in)  # router
    if param.dim() >= 2:
        return 0.0, 1.0 / math.sqrt(fan_in)
    raise ValueError(f"no init rule for {name} {tuple(param.shape)}")


def reinit(named_parameters, tied, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in named_parameters:
            mean, std = init_rule(name, param, tied)
            param.copy_(mean + std * torch.randn(param.shape, generator=gen, dtype=torch.float32))


def build_model(cls_name, config):
    cls = getattr(transformers, cls_name)
    kwargs = {"experts_implementation": "eager"} if "num_experts_per_tok" in config.to_dict() else {}
    model = cls._from_config(config, attn_implementation="eager", **kwargs)
    reinit(list(model.named_parameters()), config.tie_word_embeddings, SEED)
    return model.eval()


def mtp_tensors(model, config):
    """A random MTP block named as published checkpoints name it (mtp.*): a full-attention decoder layer plus the
    fc projection and its three norms. transformers ignores these tensors; GGUF converters map them to nextn."""
    layer_cls = type(model.model.layers[1])  # layer 1 is a full-attention layer
    layer = layer_cls(config, 1)
    named = [(f"mtp.layers.0.{n}", p) for n, p in layer.named_parameters()]
    hidden = config.hidden_size
    extra = {
        "mtp.fc.weight": torch.empty(hidden, 2 * hidden),
        "mtp.pre_fc_norm_embedding.weight": torch.empty(hidden),
        "mtp.pre_fc_norm_hidden.weight": torch.empty(hidden),
        "mtp.norm.weight": torch.empty(hidden),
    }
    named += list(extra.items())
    reinit(named, False, SEED + 7)
    return {n: p.detach().clone().contiguous() for n, p in named}


def save_checkpoint(model, config, out):
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    model.save_pretrained(str(out), safe_serialization=True)
    (out / "generation_config.json").unlink(missing_ok=True)
    path = out / "config.json"
    data = json.loads(path.read_text())
    # Keys published checkpoints carry beside what transformers 5 writes.
    data.setdefault("rope_theta", config.rope_parameters["rope_theta"])
    data.setdefault("full_attention_interval", COMMON["full_attention_interval"])
    data["mtp_num_hidden_layers"] = 1
    mf.write_json(path, data)
    tensors = load_file(str(out / "model.safetensors"))
    tensors.update(mtp_tensors(model, config))
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors"]


# ---------------------------------------------------------------- forward passes


@torch.no_grad()
def cached_logits(model, ids):
    """Logits of every position through transformers' cache: prefill, a chunk from the cached state, then one
    token at a time (the recurrent path of the linear-attention layers)."""
    seq = torch.tensor([ids])
    bounds = [0, PREFILL, PREFILL + CHUNK] + list(range(PREFILL + CHUNK + 1, len(ids) + 1))
    logits, cache = [], None
    for a, b in zip(bounds, bounds[1:]):
        out = model(input_ids=seq[:, a:b], position_ids=torch.arange(a, b)[None], past_key_values=cache,
                    use_cache=True)
        logits.append(out.logits[0])
        cache = out.past_key_values
    return torch.cat(logits)


def check_reload(out, cls_name, model64, sequences, expected):
    cls = getattr(transformers, cls_name)
    kwargs = {"experts_implementation": "eager"} if "num_experts_per_tok" in model64.config.to_dict() else {}
    again = cls.from_pretrained(str(out), dtype=torch.float32, attn_implementation="eager", **kwargs)
    again = again.double().eval()
    diff = max(float((mf.full_logits(again, s) - e).abs().max()) for s, e in zip(sequences, expected))
    assert diff == 0.0, f"reloaded checkpoint differs by {diff}"


def make_fixture(root, name, cls_name, arch, rope_theta, extra, rope_extra):
    log(f"== {name} ({cls_name})")
    config = build_config(cls_name, rope_theta, extra, rope_extra)
    model32 = build_model(cls_name, config)
    model64 = copy.deepcopy(model32).double().eval()
    out = root / name
    save_checkpoint(model32, config, out)

    sequences = mf.random_sequences(SEED)
    logits64 = [mf.full_logits(model64, s) for s in sequences]
    logits32 = [mf.full_logits(model32, s) for s in sequences]
    check_reload(out, cls_name, model64, sequences, logits64)
    all64 = torch.cat(logits64)
    assert torch.isfinite(all64).all()
    max_abs = float(all64.abs().max())
    f32_diff = max(float((a.double() - b).abs().max()) for a, b in zip(logits32, logits64))
    mf.write_logits(out / "logits.bin", logits64)

    cached = cached_logits(model64, sequences[0])
    cached_diff = float((cached - logits64[0]).abs().max())
    mf.write_logits(out / "cached_logits.bin", [cached])

    prompt, cont = mf.choose_prompt(model64, SEED)
    cont_again, min_margin, min_ratio = mf.greedy_single(model64, prompt)
    assert cont_again == cont, (cont, cont_again)

    reference = {
        "name": name, "hf_class": cls_name, "gguf_arch": arch, "seed": SEED,
        "vocab_size": mf.VOCAB_SIZE, "transformers_version": transformers.__version__,
        "torch_version": torch.__version__, "compute_dtype": "float64",
        "sequences": sequences,
        "logits_file": "logits.bin",
        "logits_layout": "float32 little-endian, sequences in order, each [len][vocab_size]",
        "cached": {"sequence": 0, "prefill": PREFILL, "chunk": CHUNK, "logits_file": "cached_logits.bin",
                   "max_abs_diff_to_full_forward": cached_diff},
        "greedy": {"prompt": prompt, "continuation": cont, "min_margin": min_margin},
    }
    mf.write_json(out / "reference.json", reference)
    stats = dict(name=name, logit_std=float(all64.std()), max_abs_logit=max_abs, f32_vs_f64_max_abs_diff=f32_diff,
                 f32_vs_f64_rel=f32_diff / max_abs, cached_vs_full_rel=cached_diff / max_abs,
                 greedy_min_margin=min_margin, greedy_min_margin_over_max_abs=min_ratio,
                 greedy_distinct=len(set(cont)), params=sum(p.numel() for p in model32.parameters()))
    log("  " + json.dumps(stats))
    assert stats["logit_std"] > 0.3, "logits too flat; scale up the init"
    assert stats["f32_vs_f64_rel"] < 1e-4, "float32 and float64 disagree"
    if stats["cached_vs_full_rel"] >= 1e-4:
        log("  WARNING: transformers' cached path disagrees with its full forward")
    return stats


# ---------------------------------------------------------------- llama.cpp's converter


def convert_with_llamacpp(llamacpp, checkpoint, tokenizer_dir, out_file):
    """Runs llama.cpp's convert_hf_to_gguf.py on a copy of the checkpoint with the tokenizer beside it. The
    tokenizer's pre-tokenizer hash is unknown to llama.cpp (it is trained here), so the hash lookup answers qwen35."""
    llamacpp = Path(llamacpp).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / checkpoint.name
        shutil.copytree(checkpoint, work)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(tokenizer_dir / f, work / f)
        sys.path[:0] = [str(llamacpp), str(llamacpp / "gguf-py")]
        import conversion.base as base  # llama.cpp's package, from the folder given
        for cls in (base.TextModel, base.ModelBase):
            if "get_vocab_base_pre" in vars(cls):
                cls.get_vocab_base_pre = lambda self, tokenizer: "qwen35"
        argv = sys.argv
        sys.argv = ["convert_hf_to_gguf.py", str(work), "--outfile", str(out_file), "--outtype", "f16"]
        try:
            runpy.run_path(str(llamacpp / "convert_hf_to_gguf.py"), run_name="__main__")
        except SystemExit as e:
            if e.code not in (0, None):
                raise RuntimeError(f"convert_hf_to_gguf.py exited with {e.code}")
        finally:
            sys.argv = argv
    log(f"  llama.cpp converted {checkpoint.name} -> {out_file} ({out_file.stat().st_size} bytes)")


# ---------------------------------------------------------------- tokenizer


def write_qwen35_tokenizer(shared_dir, out):
    """The shared fixture tokenizer with Qwen3.5's split pattern."""
    data = json.loads((shared_dir / "tokenizer.json").read_text())
    split = data["pre_tokenizer"]["pretokenizers"][0]
    assert split["type"] == "Split" and split["pattern"]["Regex"] == mf.QWEN2_PATTERN
    split["pattern"]["Regex"] = QWEN35_PATTERN
    out.mkdir(parents=True, exist_ok=True)
    mf.write_json(out / "tokenizer.json", data)
    shutil.copy(shared_dir / "tokenizer_config.json", out / "tokenizer_config.json")


def generated_strings(n, seed):
    """Strings built from pieces where Qwen3.5's pattern and Qwen2's differ: combining marks after letters, digits,
    spaces and punctuation, Indic and Thai vowel signs, variation selectors, contractions, line breaks."""
    pieces = [
        "a", "Z", "é", "e\u0301", "\u0301", "\u0308", "\u20dd", "क", "\u093f", "\u094d", "ि", "ก", "\u0e31",
        "\u0e48", "ש", "\u05b8", "ب", "\u064e", "한", "中", "ǅ", "ß", "1", "٣", "৫", "²", " ", "  ", "\t", "\n",
        "\r\n", "\u00a0", "\u3000", "'s", "'T", "'re", "'LL", "'d", "'x", ".", ",", "!", "?", "-", "...", "(",
        "\"", "☃", "\ufe0f", "\u200d", "👍", "🏽", "€", "$", "_", "/", "\u0300\u0301", "ö", "ñ", "Å",
    ]
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        out.append("".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))))
    return out


def tokenizer_reference(tokenizer_dir, shared_dir):
    from tokenizers import Tokenizer
    strings = generated_strings(3000, SEED)
    cases = []
    for path in (tokenizer_dir, shared_dir):
        tok = Tokenizer.from_file(str(path / "tokenizer.json"))
        cases.append([
            {"ids": tok.encode(s, add_special_tokens=False).ids,
             "pieces": [list(off) for _, off in tok.pre_tokenizer.pre_tokenize_str(s)]}
            for s in strings
        ])
    differ = sum(a["pieces"] != b["pieces"] for a, b in zip(*cases))
    log(f"tokenizer: {len(strings)} strings, {differ} split differently by the qwen35 and qwen2 patterns")
    return {"strings": strings, "qwen35": cases[0], "qwen2": cases[1], "note": "pieces are character offsets"}


# ---------------------------------------------------------------- driver


def log_saved_configs():
    """What transformers writes for the multimodal classes the published checkpoints use (for the config reader)."""
    text = dict(vocab_size=2048, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                head_dim=32, **LINEAR)
    for name, extra in (("Qwen3_5MoeConfig", MOE), ("Qwen3_5Config", dict(intermediate_size=128)),
                        ("Qwen3MoeConfig", None)):
        try:
            cls = getattr(transformers, name)
            if extra is None:
                cfg = cls(vocab_size=2048, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32)
            else:
                cfg = cls(text_config=dict(text, **extra), vision_config=dict(depth=1, hidden_size=32, num_heads=2,
                                                                             intermediate_size=64, out_hidden_size=64))
            log(f"saved {name}: {cfg.to_json_string(use_diff=True)}")
        except Exception:
            traceback.print_exc()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--llamacpp", type=Path, help="folder with llama.cpp's convert_hf_to_gguf.py, conversion/, "
                        "gguf-py/ (the converted files are written as llamacpp-f16.gguf beside each fixture)")
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    torch.manual_seed(SEED)
    torch.set_num_threads(max(1, min(16, torch.get_num_threads())))
    log("classes: " + ", ".join(n for n in dir(transformers) if n.startswith(("Qwen3_5", "Qwen3Next"))))
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, python {sys.version.split()[0]}")
    log_saved_configs()
    shared_tok = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "reference" / "tokenizer"
    tok_dir = args.out / "qwen35_tokenizer"
    write_qwen35_tokenizer(shared_tok, tok_dir)
    failures = []
    try:
        mf.write_json(args.out / "qwen35_tokenizer" / "reference_encodings.json",
                      tokenizer_reference(tok_dir, shared_tok), indent=None)
    except Exception:
        failures.append("tokenizer")
        traceback.print_exc()
    stats = []
    for row in FIXTURES:
        if args.only and row[0] not in args.only:
            continue
        try:
            stats.append(make_fixture(args.out, *row))
        except Exception:
            failures.append(row[0])
            traceback.print_exc()
            continue
        if args.llamacpp:
            try:
                convert_with_llamacpp(args.llamacpp, args.out / row[0], shared_tok,
                                      args.out / row[0] / "llamacpp-f16.gguf")
            except Exception:
                failures.append(row[0] + " (llama.cpp)")
                traceback.print_exc()
    mf.write_json(args.out / "qwen35_stats.json", stats)
    if failures:
        sys.exit(f"failed: {failures}")


if __name__ == "__main__":
    main()
