"""KV-cache sizing for Larder: how big each stored value is and how much fits where.

Used through the `larder-sizing` wrapper beside this file; stdlib only.

Model of what is stored (vLLM + LMCache writing to Larder):
  * per layer and token, a standard attention layer caches K and V for every KV head:
        2 x num_key_value_heads x head_dim x dtype_bytes
    an MLA layer (DeepSeek V2/V3) caches one latent "head" of kv_lora_rank + qk_rope_head_dim:
        (kv_lora_rank + qk_rope_head_dim) x dtype_bytes
  * with tensor parallelism (TP) each rank holds num_key_value_heads / tp heads; when tp exceeds the
    KV heads each rank holds one replicated head; MLA latents are replicated on every rank;
  * every rank stores its own chunks (LMCache keys carry the worker id), so one chunk of
    `chunk_tokens` tokens of one rank is one stored value, and a token costs
    bytes_per_token_per_rank x tp on the node's disk -- except MLA, where LMCache by default
    saves only the first rank's copy (extra_config save_only_first_rank, default on for MLA)
    and broadcasts it to the other ranks on load: one copy per token
    (--mla-save-all-ranks counts tp copies, for save_only_first_rank: false).
Every layer is counted for every token (sliding-window layers included: LMCache stores them all).
"""

import argparse
import json
import math
import os
import re
import sys

PROG = "larder-sizing"

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}

# Accepted spellings (CLI --dtype, config torch_dtype/dtype) -> canonical name.
DTYPE_ALIASES = {
    "bf16": "bf16", "bfloat16": "bf16",
    "fp16": "fp16", "float16": "fp16", "half": "fp16", "f16": "fp16",
    "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8", "float8_e4m3fnuz": "fp8", "float8_e5m2fnuz": "fp8",
    "fp32": "fp32", "float32": "fp32", "float": "fp32", "f32": "fp32",
}

# Built-in presets: the attention geometry of each model's Hugging Face config.json.
#   layers = num_hidden_layers, heads = num_attention_heads, kv_heads = num_key_value_heads,
#   head_dim = head_dim (or hidden_size / num_attention_heads); MLA models give kv_lora_rank and
#   qk_rope_head_dim instead. dtype is the KV-cache dtype these models are served with.
PRESETS = {
    "llama-3-8b":      dict(layers=32, heads=32, kv_heads=8, head_dim=128),
    "llama-3.1-8b":    dict(layers=32, heads=32, kv_heads=8, head_dim=128),
    "llama-3.2-3b":    dict(layers=28, heads=24, kv_heads=8, head_dim=128),
    "llama-3-70b":     dict(layers=80, heads=64, kv_heads=8, head_dim=128),
    "llama-3.1-70b":   dict(layers=80, heads=64, kv_heads=8, head_dim=128),
    "llama-3.1-405b":  dict(layers=126, heads=128, kv_heads=8, head_dim=128),
    "qwen3-8b":        dict(layers=36, heads=32, kv_heads=8, head_dim=128),
    "qwen3-32b":       dict(layers=64, heads=64, kv_heads=8, head_dim=128),
    "qwen3-30b-a3b":   dict(layers=48, heads=32, kv_heads=4, head_dim=128),
    "qwen3-235b-a22b": dict(layers=94, heads=64, kv_heads=4, head_dim=128),
    "mistral-7b":      dict(layers=32, heads=32, kv_heads=8, head_dim=128),
    "mixtral-8x7b":    dict(layers=32, heads=32, kv_heads=8, head_dim=128),
    "gemma-2-9b":      dict(layers=42, heads=16, kv_heads=8, head_dim=256),
    "gemma-2-27b":     dict(layers=46, heads=32, kv_heads=16, head_dim=128),
    "deepseek-v3":     dict(layers=61, heads=128, kv_lora_rank=512, qk_rope_head_dim=64),
    "deepseek-r1":     dict(layers=61, heads=128, kv_lora_rank=512, qk_rope_head_dim=64),
    "deepseek-v2":     dict(layers=60, heads=128, kv_lora_rank=512, qk_rope_head_dim=64),
    "deepseek-v2-lite": dict(layers=27, heads=16, kv_lora_rank=512, qk_rope_head_dim=64),
}

LARDER_MAX_VALUE_BYTES = 512 << 20  # the engine's default max_value_bytes

# Sizes take larder.conf's units (Redis's), case-insensitive: b, k = 1000, kb = 1024, m = 1000^2,
# mb = 1024^2, g = 1000^3, gb = 1024^3. The server's parser (common/units.h) reads the same
# dialect; tests/common/byte_sizes.tsv holds the cases both are tested against.
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1 << 10, "m": 1000 ** 2, "mb": 1 << 20,
          "g": 1000 ** 3, "gb": 1 << 30}
_SIZE_RE = re.compile(r"([0-9]+)([a-zA-Z]*)")
_MAX_BYTES = (1 << 64) - 1


class InputError(Exception):
    """Bad input: reported as one line on stderr, exit status 2."""


def parse_bytes(text):
    """'512gb' -> 549755813888, '2000g' -> 2000000000000, '4096' -> 4096 (larder.conf's units).

    A whole number of bytes below 2^64, with an optional unit (see _UNITS); nothing else: no
    sign, blanks, fraction or other unit."""
    m = _SIZE_RE.fullmatch(str(text))
    unit = m and _UNITS.get(m.group(2).lower())
    if unit is None or int(m.group(1)) * unit > _MAX_BYTES:
        raise InputError(f"bad size '{text}' (use e.g. 512gb, 2000g, 64mb or plain bytes)")
    return int(m.group(1)) * unit


def parse_positive_int(text, what):
    try:
        value = int(str(text).replace("_", "").replace(",", ""))
    except ValueError:
        raise InputError(f"bad {what} '{text}': expected a positive integer") from None
    if value <= 0:
        raise InputError(f"bad {what} '{text}': expected a positive integer")
    return value


def parse_positive_float(text, what):
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"bad {what} '{text}': expected a positive number") from None
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"bad {what} '{text}': expected a positive number")
    return value


def canonical_dtype(name):
    return DTYPE_ALIASES.get(str(name).strip().lower().replace("torch.", ""))


def normalize_model_name(name):
    """'Qwen/Qwen3-32B' -> 'qwen3-32b'; 'meta-llama/Meta-Llama-3-8B-Instruct' -> 'llama-3-8b'."""
    key = name.strip().lower().rsplit("/", 1)[-1].replace("_", "-")
    if key.startswith("meta-"):
        key = key[len("meta-"):]
    key = re.sub(r"-(instruct|chat|it|base)(-v?[0-9.]+)?$", "", key)
    key = re.sub(r"-v0\.[0-9]+$", "", key)  # mistral-7b-v0.3 -> mistral-7b
    return key


def preset_model(name):
    key = normalize_model_name(name)
    if key not in PRESETS:
        raise InputError(f"unknown model '{name}'; presets: {', '.join(sorted(PRESETS))}"
                         " (or pass --config path/to/config.json)")
    arch = dict(PRESETS[key])
    arch.update(name=key, source="preset", dtype="bf16")
    return arch


def _get_int(cfg, field, path):
    value = cfg.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(f"config {path}: '{field}' must be a positive integer, got {value!r}")
    return value


def model_from_config(path):
    """The attention geometry of a Hugging Face config.json (nested text_config supported)."""
    try:
        with open(path, encoding="utf-8") as f:
            top = json.load(f)
    except FileNotFoundError:
        raise InputError(f"config file not found: {path}") from None
    except OSError as e:
        raise InputError(f"cannot read config {path}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"config {path} is not valid JSON: {e}") from None
    if not isinstance(top, dict):
        raise InputError(f"config {path}: expected a JSON object")
    cfg = top
    # Multimodal configs keep the language model's fields in a nested object.
    for nested in ("text_config", "llm_config", "language_config"):
        sub = top.get(nested)
        if "num_hidden_layers" not in top and isinstance(sub, dict):
            cfg = sub
            break

    arch = {"name": top.get("_name_or_path") or cfg.get("model_type") or top.get("model_type")
            or os.path.basename(path), "source": "config", "config_path": path}
    dtype_field = (cfg.get("torch_dtype") or cfg.get("dtype")
                   or top.get("torch_dtype") or top.get("dtype"))
    arch["dtype"] = canonical_dtype(dtype_field) if dtype_field else None
    if dtype_field and arch["dtype"] is None:
        arch["dtype_note"] = f"config dtype {dtype_field!r} not a KV dtype here; using bf16"

    layers = _get_int(cfg, "num_hidden_layers", path)
    if layers is None:
        raise InputError(f"config {path}: missing 'num_hidden_layers'")
    arch["layers"] = layers
    heads = _get_int(cfg, "num_attention_heads", path)
    arch["heads"] = heads

    if cfg.get("kv_lora_rank") is not None:  # MLA
        arch["kv_lora_rank"] = _get_int(cfg, "kv_lora_rank", path)
        rope = _get_int(cfg, "qk_rope_head_dim", path)
        if rope is None:
            raise InputError(f"config {path}: MLA config (kv_lora_rank) without "
                             "'qk_rope_head_dim'")
        arch["qk_rope_head_dim"] = rope
        return arch

    kv_heads = _get_int(cfg, "num_key_value_heads", path) or heads
    if kv_heads is None:
        raise InputError(f"config {path}: missing 'num_key_value_heads' and "
                         "'num_attention_heads'")
    head_dim = _get_int(cfg, "head_dim", path)
    if head_dim is None:
        hidden = _get_int(cfg, "hidden_size", path)
        if hidden is None or heads is None:
            raise InputError(f"config {path}: missing 'head_dim' (and 'hidden_size'/"
                             "'num_attention_heads' to derive it)")
        if hidden % heads:
            raise InputError(f"config {path}: hidden_size {hidden} is not a multiple of "
                             f"num_attention_heads {heads}; give 'head_dim'")
        head_dim = hidden // heads
    arch["kv_heads"] = kv_heads
    arch["head_dim"] = head_dim
    return arch


def compute(arch, dtype=None, tp=1, chunk_tokens=256, context_tokens=32768, disk_bytes=None,
            dram_bytes=None, hbm_free_bytes=None, load_gbps=5.0, prefill_tokens_per_s=10000.0,
            mla_save_all_ranks=False):
    """Every figure the tool prints, as a dict with stable snake_case keys."""
    notes = [arch["dtype_note"]] if "dtype_note" in arch and not dtype else []
    dtype = dtype or arch.get("dtype") or "bf16"
    dtype_bytes = DTYPE_BYTES[dtype]
    heads = arch.get("heads")
    if heads is not None and heads % tp:
        raise InputError(f"--tp {tp} does not divide the model's {heads} attention heads")
    mla = "kv_lora_rank" in arch
    if mla:
        latent = arch["kv_lora_rank"] + arch["qk_rope_head_dim"]
        kv_heads, head_dim, kv_factor = 1, latent, 1  # one latent head, no separate V
        kv_heads_per_rank = 1
        replicated = tp > 1
    else:
        kv_heads, head_dim, kv_factor = arch["kv_heads"], arch["head_dim"], 2  # K and V
        if tp <= kv_heads:
            if kv_heads % tp:
                raise InputError(f"--tp {tp} does not divide the model's {kv_heads} KV heads")
            kv_heads_per_rank = kv_heads // tp
            replicated = False
        else:
            if tp % kv_heads:
                raise InputError(f"--tp {tp} is neither a divisor nor a multiple of the "
                                 f"model's {kv_heads} KV heads")
            kv_heads_per_rank = 1
            replicated = True
    per_layer_token = kv_factor * head_dim * dtype_bytes
    bytes_per_token = arch["layers"] * kv_heads * per_layer_token
    per_rank = arch["layers"] * kv_heads_per_rank * per_layer_token
    stored_copies = 1 if (mla and not mla_save_all_ranks) else tp
    stored_per_token = per_rank * stored_copies
    chunk_bytes = per_rank * chunk_tokens
    if replicated and mla:
        notes.append("MLA latents are replicated on every TP rank; "
                     + (f"all {tp} ranks store their copy (--mla-save-all-ranks)"
                        if mla_save_all_ranks else
                        "LMCache stores only the first rank's copy (save_only_first_rank)"))
    elif replicated:
        notes.append(f"tp {tp} > {kv_heads} KV heads: each rank holds (and stores) one "
                     "replicated head")
    if chunk_bytes > LARDER_MAX_VALUE_BYTES:
        notes.append(f"a chunk ({chunk_bytes} bytes) exceeds Larder's default max value size "
                     f"({LARDER_MAX_VALUE_BYTES} bytes): lower --chunk-tokens")

    context_bytes = stored_per_token * context_tokens
    load_seconds = context_bytes / (load_gbps * 1e9)
    recompute_seconds = context_tokens / prefill_tokens_per_s
    r = {
        "model": arch["name"],
        "source": arch["source"],
        "attention": "mla" if mla else "mha",
        "layers": arch["layers"],
        "attention_heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "kv_lora_rank": arch.get("kv_lora_rank"),
        "qk_rope_head_dim": arch.get("qk_rope_head_dim"),
        "dtype": dtype,
        "dtype_bytes": dtype_bytes,
        "tp": tp,
        "kv_heads_per_rank": kv_heads_per_rank,
        "replicated_across_ranks": replicated,
        "bytes_per_token": bytes_per_token,
        "bytes_per_token_per_rank": per_rank,
        "stored_copies": stored_copies,
        "stored_bytes_per_token": stored_per_token,
        "chunk_tokens": chunk_tokens,
        "bytes_per_chunk": chunk_bytes,
        "context_tokens": context_tokens,
        "context_bytes": context_bytes,
        "context_bytes_per_rank": per_rank * context_tokens,
        "values_per_context": math.ceil(context_tokens / chunk_tokens) * stored_copies,
    }
    for label, budget in (("disk", disk_bytes), ("dram", dram_bytes)):
        r[f"{label}_bytes"] = budget
        r[f"{label}_tokens"] = None if budget is None else budget // stored_per_token
        r[f"{label}_chunks"] = None if budget is None else budget // chunk_bytes
        r[f"{label}_contexts"] = None if budget is None else budget // context_bytes
    r["hbm_free_bytes"] = hbm_free_bytes
    r["hbm_tokens"] = None if hbm_free_bytes is None else hbm_free_bytes // per_rank
    r["hbm_sequences"] = (None if hbm_free_bytes is None
                          else hbm_free_bytes // (per_rank * context_tokens))
    if hbm_free_bytes is not None and r["hbm_sequences"] == 0:
        notes.append(f"not one {context_tokens}-token sequence fits in the free HBM per GPU")
    r.update(load_gbps=load_gbps, load_seconds=load_seconds,
             prefill_tokens_per_s=prefill_tokens_per_s, recompute_seconds=recompute_seconds,
             speedup=recompute_seconds / load_seconds, notes=notes)
    return r


def _scaled(n, base, units):
    value, unit = float(n), units[0]
    for unit in units:
        value /= base
        if value < base:
            break
    return f"{value:.2f} {unit}"


def fmt_bytes(n):
    """'34,303,967,232 B (31.95 GiB, 34.30 GB)'."""
    if n is None:
        return "-"
    text = f"{n:,} B"
    if n >= 1024:
        text += " (" + _scaled(n, 1024, ["KiB", "MiB", "GiB", "TiB", "PiB"])
        if n >= 10 ** 6:
            text += ", " + _scaled(n, 1000, ["kB", "MB", "GB", "TB", "PB"])
        text += ")"
    return text


def fmt_count(n):
    return "-" if n is None else f"{n:,}"


def render_table(r):
    if r["attention"] == "mla":
        geometry = (f"MLA, {r['layers']} layers x ({r['kv_lora_rank']} kv_lora_rank + "
                    f"{r['qk_rope_head_dim']} qk_rope_head_dim)")
    else:
        geometry = (f"{r['layers']} layers x {r['kv_heads']} KV heads x {r['head_dim']} head_dim"
                    " x 2 (K,V)")
    rows = [
        ("model", f"{r['model']} ({r['source']})"),
        ("geometry", f"{geometry}, {r['dtype']} ({r['dtype_bytes']} B)"),
        ("tensor parallel", f"tp {r['tp']}, {r['kv_heads_per_rank']} KV head(s) per rank"
         + (" (replicated)" if r["replicated_across_ranks"] else "")),
        ("bytes per token (model)", fmt_bytes(r["bytes_per_token"])),
        ("bytes per token (per rank)", fmt_bytes(r["bytes_per_token_per_rank"])),
        ("bytes per token (stored, %d %s)"
         % (r["stored_copies"], "copy" if r["stored_copies"] == 1 else "copies"),
         fmt_bytes(r["stored_bytes_per_token"])),
        (f"bytes per chunk ({r['chunk_tokens']} tok, per rank = value size)",
         fmt_bytes(r["bytes_per_chunk"])),
        (f"context of {r['context_tokens']:,} tokens (stored)", fmt_bytes(r["context_bytes"])),
        ("values per context", fmt_count(r["values_per_context"])),
    ]
    for label in ("disk", "dram"):
        if r[f"{label}_bytes"] is not None:
            rows += [
                (f"{label} budget", fmt_bytes(r[f"{label}_bytes"])),
                (f"  tokens / chunks / contexts in {label}",
                 f"{fmt_count(r[label + '_tokens'])} / {fmt_count(r[label + '_chunks'])} / "
                 f"{fmt_count(r[label + '_contexts'])}"),
            ]
    if r["hbm_free_bytes"] is not None:
        rows += [
            ("free HBM per GPU", fmt_bytes(r["hbm_free_bytes"])),
            ("  tokens / concurrent sequences in HBM",
             f"{fmt_count(r['hbm_tokens'])} / {fmt_count(r['hbm_sequences'])}"),
        ]
    rows += [
        (f"load from Larder at {r['load_gbps']:g} GB/s", f"{r['load_seconds']:.3f} s"),
        (f"recompute at {r['prefill_tokens_per_s']:,.0f} tok/s", f"{r['recompute_seconds']:.3f} s"),
        ("speedup (recompute / load)", f"{r['speedup']:.2f}x"),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    lines += [f"note: {n}" for n in r["notes"]]
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line on stderr, exit 2 (argparse would print the usage too)
        raise InputError(message)


def build_parser():
    p = _Parser(prog=PROG, description="KV-cache sizing for Larder (bytes per token and per "
                "chunk, what fits on disk, in DRAM and in HBM, load vs recompute time).",
                epilog="Sizes take larder.conf's units: 512gb (2^30), 2000g (10^9), 64mb, 64m "
                "or plain bytes. Presets: " + ", ".join(sorted(PRESETS)) + ".")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", metavar="NAME", help="a built-in preset (see below)")
    src.add_argument("--config", metavar="PATH", help="a Hugging Face config.json")
    p.add_argument("--dtype", help="KV dtype: bf16|fp16|fp8|fp32 (default: the config's "
                   "torch_dtype, else bf16)")
    p.add_argument("--tp", default="1", help="tensor-parallel size (default 1)")
    p.add_argument("--chunk-tokens", default="256", help="tokens per stored chunk (default 256)")
    p.add_argument("--context-tokens", default="32768", help="context length (default 32768)")
    p.add_argument("--disk-bytes", help="Larder disk budget (max-disk-bytes)")
    p.add_argument("--dram-bytes", help="host memory for hot chunks (page cache, LMCache "
                   "local_cpu, blob-cache-bytes)")
    p.add_argument("--hbm-free-bytes", help="free GPU memory for KV, per GPU")
    p.add_argument("--load-gbps", default="5", help="Larder read bandwidth in GB/s (default 5)")
    p.add_argument("--prefill-tokens-per-s", default="10000",
                   help="prefill (recompute) rate in tokens/s (default 10000)")
    p.add_argument("--mla-save-all-ranks", action="store_true",
                   help="MLA: every TP rank stores its copy (LMCache save_only_first_rank: "
                   "false); default: one copy")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def run(argv):
    a = build_parser().parse_args(argv)
    dtype = None
    if a.dtype is not None:
        dtype = canonical_dtype(a.dtype)
        if dtype is None:
            raise InputError(f"bad --dtype '{a.dtype}' (use bf16, fp16, fp8 or fp32)")
    arch = preset_model(a.model) if a.model is not None else model_from_config(a.config)
    result = compute(
        arch, dtype=dtype, tp=parse_positive_int(a.tp, "--tp"),
        chunk_tokens=parse_positive_int(a.chunk_tokens, "--chunk-tokens"),
        context_tokens=parse_positive_int(a.context_tokens, "--context-tokens"),
        disk_bytes=None if a.disk_bytes is None else parse_bytes(a.disk_bytes),
        dram_bytes=None if a.dram_bytes is None else parse_bytes(a.dram_bytes),
        hbm_free_bytes=None if a.hbm_free_bytes is None else parse_bytes(a.hbm_free_bytes),
        load_gbps=parse_positive_float(a.load_gbps, "--load-gbps"),
        prefill_tokens_per_s=parse_positive_float(a.prefill_tokens_per_s,
                                                  "--prefill-tokens-per-s"),
        mla_save_all_ranks=a.mla_save_all_ranks)
    if a.json:
        return json.dumps(result, indent=2)
    return render_table(result)


def main(argv=None):
    try:
        out = run(sys.argv[1:] if argv is None else argv)
    except InputError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0
