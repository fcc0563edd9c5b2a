#!/usr/bin/env python3
"""Generate Sluice's reference-fidelity fixtures with Hugging Face transformers.

For each architecture Sluice supports, build a tiny seeded model, save it as an HF checkpoint
(config.json + model.safetensors, float32), and record float64 CPU logits for a few fixed token
sequences plus a greedy continuation whose every choice wins by a wide margin. One byte-level BPE
tokenizer shaped like Qwen2's (trained on the Python standard library's sources) is shared by all
fixtures. The C++ test converts each checkpoint to GGUF, runs it and compares against these records.

Usage: python3 tools/reference/make_fixtures.py OUT_DIR    (see tools/reference/README.md)
"""

import argparse
import copy
import json
import math
import os
import shutil
import sys
import sysconfig
from pathlib import Path

import numpy as np
import tokenizers
import torch
import transformers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

SEED = 1234
VOCAB_SIZE = 2048
TOKENIZER_SIZE = 2000
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
REGULAR_TOKENS = TOKENIZER_SIZE - len(SPECIAL_TOKENS)
# Copied verbatim from Qwen2/Qwen3 tokenizer.json (pre_tokenizer.pretokenizers[0].pattern.Regex).
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
SEQUENCE_LENGTHS = [24, 9, 17]
PROMPT_LENGTH = 8
GREEDY_STEPS = 32
MARGIN_FRACTION = 1e-2
PROMPT_BATCH = 256
PROMPT_BATCHES = 8
WANTED_DISTINCT = 16  # prefer continuations that do not collapse into one repeated token
NUM_EXPERTS = 8
# With tied embeddings, N(0, 1) rows make the residual stream so close to the input token's own row that the
# greedy continuation just repeats it; a smaller scale keeps the layers' contribution visible.
TIED_EMBED_STD = 0.25

COMMON = dict(
    vocab_size=VOCAB_SIZE,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=512,
    tie_word_embeddings=False,
    bos_token_id=REGULAR_TOKENS,  # <|endoftext|>, as in Qwen2 configs
    eos_token_id=REGULAR_TOKENS + 2,  # <|im_end|>
    pad_token_id=None,
)
MOE = dict(num_experts_per_tok=2, moe_intermediate_size=32, intermediate_size=128)

# name, HF class, GGUF arch, rope_theta, rms_norm_eps, class-specific config fields.
FIXTURES = [
    ("llama", "LlamaForCausalLM", "llama", 10000.0, 1e-5, dict(intermediate_size=128, head_dim=16, mlp_bias=False)),
    ("mixtral", "MixtralForCausalLM", "llama", 1e6, 1e-5,
     dict(intermediate_size=32, num_local_experts=8, num_experts_per_tok=2, head_dim=16, sliding_window=None,
          router_jitter_noise=0.0)),
    ("qwen2", "Qwen2ForCausalLM", "qwen2", 1e6, 1e-6,
     dict(intermediate_size=128, tie_word_embeddings=True, use_sliding_window=False)),
    ("qwen3", "Qwen3ForCausalLM", "qwen3", 1e6, 1e-6,
     dict(intermediate_size=128, head_dim=16, use_sliding_window=False)),
    ("qwen2moe", "Qwen2MoeForCausalLM", "qwen2moe", 1e6, 1e-6,
     dict(MOE, num_experts=8, shared_expert_intermediate_size=64, norm_topk_prob=False, decoder_sparse_step=1,
          mlp_only_layers=[], use_sliding_window=False)),
    ("qwen3moe", "Qwen3MoeForCausalLM", "qwen3moe", 1e6, 1e-6,
     dict(MOE, num_experts=8, head_dim=16, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
          use_sliding_window=False)),
    ("olmoe", "OlmoeForCausalLM", "olmoe", 10000.0, 1e-5,
     dict(intermediate_size=32, num_experts=8, num_experts_per_tok=2, norm_topk_prob=False, clip_qkv=None)),
]


def log(*args):
    print(*args, flush=True)


# ---------------------------------------------------------------- tokenizer


def training_texts(limit_bytes=4 << 20):
    """Top-level .py files of this Python's standard library, sorted by name, up to limit_bytes."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts, total = [], 0
    for path in sorted(stdlib.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        texts.append(text)
        total += len(text.encode("utf-8"))
        if total >= limit_bytes:
            break
    log(f"tokenizer: {len(texts)} files, {total} bytes from {stdlib}")
    return texts


def train_tokenizer(texts):
    """Byte-level BPE in the exact shape of Qwen2's tokenizer.json, specials appended after the merges."""
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=REGULAR_TOKENS, min_frequency=2, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(texts, trainer=trainer)
    assert tok.get_vocab_size() == REGULAR_TOKENS, tok.get_vocab_size()
    tok.add_special_tokens([
        AddedToken(t, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
        for t in SPECIAL_TOKENS
    ])
    for i, t in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(t) == REGULAR_TOKENS + i, (t, tok.token_to_id(t))
    return tok


def normalize_tokenizer_json(tok):
    """Pin the serialized fields Qwen2's file spells out (ByteLevel post-processor and decoder flags)."""
    data = json.loads(tok.to_str())
    for part in (data["post_processor"], data["decoder"], data["pre_tokenizer"]["pretokenizers"][1]):
        part.update(add_prefix_space=False, trim_offsets=False, use_regex=False)
    return data


def tokenizer_config():
    decoder = {
        str(REGULAR_TOKENS + i): dict(content=t, lstrip=False, normalized=False, rstrip=False, single_word=False,
                                       special=True)
        for i, t in enumerate(SPECIAL_TOKENS)
    }
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": decoder,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "bos_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 512,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }


def write_tokenizer(out):
    texts = training_texts()
    tok = train_tokenizer(texts)
    again = train_tokenizer(texts)
    if tok.to_str() != again.to_str():
        sys.exit("tokenizer training is not deterministic")
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "tokenizer.json", normalize_tokenizer_json(tok))
    write_json(out / "tokenizer_config.json", tokenizer_config())
    check_tokenizer(out)


def check_tokenizer(out):
    """Load the files through transformers and round-trip text and a chat prompt."""
    try:
        hf = transformers.AutoTokenizer.from_pretrained(str(out))
    except Exception as err:  # report and fall back, so one run shows every problem
        log(f"tokenizer: AutoTokenizer failed ({err!r}); checking with PreTrainedTokenizerFast")
        hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(out / "tokenizer.json"), **{
            k: v for k, v in tokenizer_config().items() if k in ("eos_token", "pad_token", "chat_template")})
    plain = Tokenizer.from_file(str(out / "tokenizer.json"))
    text = "def f(x):\n    return x  # héllo 123, naïve 'quote' \t end\n"
    ids = hf.encode(text)
    assert hf.decode(ids) == text, hf.decode(ids)
    assert plain.encode(text).ids == ids, (plain.encode(text).ids, ids)
    chat = hf.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert chat == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", chat
    chat_ids = hf.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=True)
    if isinstance(chat_ids, dict) or hasattr(chat_ids, "keys"):
        chat_ids = chat_ids["input_ids"]
    assert chat_ids[0] == REGULAR_TOKENS + 1, chat_ids
    log(f"tokenizer: {type(hf).__name__}, len {len(hf)}, eos {hf.eos_token_id}, pad {hf.pad_token_id}, "
        f"sample {len(text)} chars -> {len(ids)} ids")


# ---------------------------------------------------------------- models


def build_config(cls_name, rope_theta, eps, extra):
    config_cls = getattr(transformers, cls_name).config_class
    fields = dict(COMMON, rms_norm_eps=eps, **extra)
    if hasattr(config_cls(), "attention_bias"):
        fields["attention_bias"] = False
    fields["rope_parameters"] = {"rope_type": "default", "rope_theta": rope_theta}
    config = config_cls(**fields)
    assert config.rope_parameters["rope_theta"] == rope_theta, config.rope_parameters
    for key, value in fields.items():
        if key != "rope_parameters":
            assert getattr(config, key) == value, (cls_name, key, getattr(config, key), value)
    return config


def init_std(name, param, tied):
    """The contract's init: returns (mean, std) for one parameter, by its role."""
    fan_in = param.shape[-1]
    if param.dim() == 1 and "norm" in name:
        return 1.0, 0.1
    if name.endswith(".bias"):
        return 0.0, 0.1
    if "embed_tokens" in name:
        return 0.0, TIED_EMBED_STD if tied else 1.0
    if "shared_expert_gate" in name:
        return 0.0, 1.0 / math.sqrt(fan_in)
    if name.endswith(".gate.weight") and param.shape[0] == NUM_EXPERTS:
        return 0.0, 2.0 / math.sqrt(fan_in)  # router
    if param.dim() >= 2:
        return 0.0, 1.0 / math.sqrt(fan_in)
    raise ValueError(f"no init rule for {name} {tuple(param.shape)}")


def reinit(model, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            mean, std = init_std(name, param, model.config.tie_word_embeddings)
            param.copy_(mean + std * torch.randn(param.shape, generator=gen, dtype=torch.float32))


def implementations(config):
    """Plain PyTorch paths: eager attention, and for MoE models the per-expert loop (grouped_mm has no float64)."""
    experts = {"experts_implementation": "eager"} if hasattr(config, "num_experts_per_tok") else {}
    return {"attn_implementation": "eager"}, experts


def build_model(cls_name, config, seed):
    cls = getattr(transformers, cls_name)
    model = cls._from_config(config, attn_implementation="eager", **implementations(config)[1])
    assert next(model.parameters()).dtype == torch.float32
    reinit(model, seed)
    if config.tie_word_embeddings:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert model.config._attn_implementation == "eager"
    assert not implementations(config)[1] or model.config._experts_implementation == "eager"
    attn = model.model.layers[0].self_attn
    assert attn.head_dim == 16 and attn.q_proj.out_features == 64 and attn.k_proj.out_features == 32
    return model.eval()


# ---------------------------------------------------------------- forward passes


@torch.no_grad()
def full_logits(model, ids):
    """Logits at every position of one sequence, full forward without a cache."""
    return model(input_ids=torch.tensor([ids]), use_cache=False).logits[0]


@torch.no_grad()
def last_logits(model, batch):
    return model(input_ids=batch, use_cache=False, logits_to_keep=1).logits[:, -1]


@torch.no_grad()
def greedy_batch(model, prompts):
    """Greedy-extend a batch of prompts; returns continuations, per prompt the smallest top-1/top-2 gap over
    max|logit| across the steps, and whether every chosen token is a regular (non-special) tokenizer token."""
    seq = prompts.clone()
    ratio = torch.full((len(prompts),), math.inf, dtype=torch.float64)
    regular = torch.ones(len(prompts), dtype=torch.bool)
    for _ in range(GREEDY_STEPS):
        logits = last_logits(model, seq)
        top = logits.topk(2, dim=-1).values
        ratio = torch.minimum(ratio, (top[:, 0] - top[:, 1]) / logits.abs().amax(dim=-1))
        nxt = logits.argmax(dim=-1)
        regular &= nxt < REGULAR_TOKENS
        seq = torch.cat([seq, nxt[:, None]], dim=1)
    return seq[:, prompts.shape[1]:], ratio, regular


def greedy_single(model, prompt):
    """Unbatched greedy loop with full forwards; returns continuation, min margin, min margin/max|logit|."""
    seq, margins, ratios = list(prompt), [], []
    for _ in range(GREEDY_STEPS):
        logits = full_logits(model, seq)[-1]
        top = logits.topk(2).values
        margins.append(float(top[0] - top[1]))
        ratios.append(margins[-1] / float(logits.abs().max()))
        seq.append(int(logits.argmax()))
    return seq[len(prompt):], min(margins), min(ratios)


def choose_prompt(model64, seed):
    """Among seeded random prompts whose every greedy step is decisive, take the one with the most varied
    continuation (up to WANTED_DISTINCT distinct tokens), then the widest margin."""
    gen = torch.Generator().manual_seed(seed + 2)
    best, best_key, passing = None, None, 0
    for _ in range(PROMPT_BATCHES):
        prompts = torch.randint(0, REGULAR_TOKENS, (PROMPT_BATCH, PROMPT_LENGTH), generator=gen)
        conts, ratio, regular = greedy_batch(model64, prompts)
        for i in (regular & (ratio >= MARGIN_FRACTION)).nonzero().flatten().tolist():
            passing += 1
            key = (min(len(set(conts[i].tolist())), WANTED_DISTINCT), float(ratio[i]))
            if best_key is None or key > best_key:
                best, best_key = (prompts[i].tolist(), conts[i].tolist()), key
    log(f"  greedy search: {passing}/{PROMPT_BATCH * PROMPT_BATCHES} prompts decisive, chose distinct/ratio {best_key}")
    if best is None:
        sys.exit("no decisive greedy prompt found; raise PROMPT_BATCHES or the init scales")
    return best


def random_sequences(seed):
    gen = torch.Generator().manual_seed(seed + 1)
    return [torch.randint(0, REGULAR_TOKENS, (n,), generator=gen).tolist() for n in SEQUENCE_LENGTHS]


# ---------------------------------------------------------------- files


def write_json(path, data, indent=2):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=indent, ensure_ascii=False)
        f.write("\n")


def save_checkpoint(model, out, config):
    """save_pretrained in float32, then add the legacy config keys that published checkpoints carry."""
    shutil.rmtree(out, ignore_errors=True)  # a generated folder: start clean so no stale file survives
    out.mkdir(parents=True)
    model.save_pretrained(str(out), safe_serialization=True)
    (out / "generation_config.json").unlink(missing_ok=True)
    path = out / "config.json"
    data = json.loads(path.read_text())
    data.setdefault("rope_theta", config.rope_parameters["rope_theta"])
    if config.model_type != "mixtral" and "num_local_experts" in data and "num_experts" not in data:
        data["num_experts"] = data["num_local_experts"]
    write_json(path, data)
    assert sorted(os.listdir(out)) == ["config.json", "model.safetensors"], os.listdir(out)


def check_reload(out, cls_name, model64, sequences, expected):
    """Reload the saved checkpoint through from_pretrained and require identical float64 logits."""
    cls = getattr(transformers, cls_name)
    attn, experts = implementations(model64.config)
    again = cls.from_pretrained(str(out), dtype=torch.float32, **attn, **experts).double().eval()
    reloaded = again.config.to_dict()
    for key, value in model64.config.to_dict().items():
        if key not in ("_name_or_path", "transformers_version", "dtype", "torch_dtype") and reloaded.get(key) != value:
            log(f"  reload: config field {key} was {value!r}, now {reloaded.get(key)!r}")
    diff = max(float((full_logits(again, s) - e).abs().max()) for s, e in zip(sequences, expected))
    assert diff == 0.0, f"reloaded checkpoint differs by {diff}"


def write_logits(path, logits):
    with open(path, "wb") as f:
        for block in logits:
            f.write(block.to(torch.float32).numpy().astype("<f4").tobytes())


# ---------------------------------------------------------------- driver


def make_fixture(root, name, cls_name, arch, rope_theta, eps, extra):
    log(f"== {name} ({cls_name})")
    config = build_config(cls_name, rope_theta, eps, extra)
    model32 = build_model(cls_name, config, SEED)
    model64 = copy.deepcopy(model32).double().eval()
    out = root / name
    save_checkpoint(model32, out, config)

    sequences = random_sequences(SEED)
    logits64 = [full_logits(model64, s) for s in sequences]
    logits32 = [full_logits(model32, s) for s in sequences]
    check_reload(out, cls_name, model64, sequences, logits64)
    all64 = torch.cat(logits64)
    assert torch.isfinite(all64).all()
    max_abs = float(all64.abs().max())
    f32_diff = max(float((a.double() - b).abs().max()) for a, b in zip(logits32, logits64))
    write_logits(out / "logits.bin", logits64)

    prompt, cont = choose_prompt(model64, SEED)
    cont_again, min_margin, min_ratio = greedy_single(model64, prompt)
    assert cont_again == cont, (cont, cont_again)
    assert min_ratio >= MARGIN_FRACTION, min_ratio

    reference = {
        "name": name, "hf_class": cls_name, "gguf_arch": arch, "seed": SEED,
        "vocab_size": VOCAB_SIZE, "transformers_version": transformers.__version__,
        "torch_version": torch.__version__, "compute_dtype": "float64",
        "sequences": sequences,
        "logits_file": "logits.bin",
        "logits_layout": "float32 little-endian, sequences in order, each [len][vocab_size]",
        "greedy": {"prompt": prompt, "continuation": cont, "min_margin": min_margin},
    }
    write_json(out / "reference.json", reference)
    stats = dict(name=name, lengths=[len(s) for s in sequences], logit_std=float(all64.std()),
                 max_abs_logit=max_abs, f32_vs_f64_max_abs_diff=f32_diff, f32_vs_f64_rel=f32_diff / max_abs,
                 greedy_min_margin=min_margin, greedy_min_margin_over_max_abs=min_ratio,
                 greedy_distinct=len(set(cont)),
                 params=sum(p.numel() for p in model32.parameters()))
    log("  " + json.dumps(stats))
    assert stats["logit_std"] > 0.3, "logits too flat; scale up the init"
    assert stats["f32_vs_f64_rel"] < 1e-4, "float32 and float64 disagree"
    return stats


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="output folder (becomes tests/fixtures/reference)")
    parser.add_argument("--only", nargs="*", help="fixture names to build (default: all)")
    parser.add_argument("--stats", type=Path, help="also write per-fixture statistics to this JSON file")
    args = parser.parse_args()
    torch.manual_seed(SEED)
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, tokenizers {tokenizers.__version__}, "
        f"numpy {np.__version__}, python {sys.version.split()[0]}")
    write_tokenizer(args.out / "tokenizer")
    stats = [make_fixture(args.out, *row) for row in FIXTURES if not args.only or row[0] in args.only]
    if args.stats:
        write_json(args.stats, stats)


if __name__ == "__main__":
    main()
