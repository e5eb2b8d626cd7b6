#!/usr/bin/python3
"""Tests of tools/sizing/larder-sizing (KV-cache sizing).

Run: /usr/bin/python3 -m unittest -v test_sizing   (from tests/tools; CTest does this with
LARDER_SOURCE_DIR set to the repo root; without it the root is found relative to this file).

Every expected figure is computed by hand in the comments:
bytes per token = layers x kv_heads x head_dim x 2 (K,V) x dtype bytes (MLA: layers x
(kv_lora_rank + qk_rope_head_dim) x dtype bytes), per rank = with kv_heads / tp heads,
bytes per chunk = per-rank bytes per token x chunk tokens.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.environ.get("LARDER_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SIZING_DIR = os.path.join(ROOT, "tools", "sizing")
SCRIPT = os.path.join(SIZING_DIR, "larder-sizing")

sys.dont_write_bytecode = True
sys.path.insert(0, SIZING_DIR)
import larder_sizing as ls  # noqa: E402

KiB, MiB, GiB, TiB = 1 << 10, 1 << 20, 1 << 30, 1 << 40


def run_tool(*args):
    """Runs the script as a subprocess: (exit code, stdout, stderr)."""
    p = subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def run_json(*args):
    code, out, err = run_tool(*args, "--json")
    if code != 0:
        raise AssertionError(f"exit {code}: {err}")
    return json.loads(out)


class RequiredFigures(unittest.TestCase):
    """The figures the brief says the tool must reproduce."""

    def test_qwen3_32b_bf16_per_token(self):
        # 64 layers x 8 KV heads x 128 head_dim x 2 (K,V) x 2 bytes = 262,144 B = 256 KiB
        r = run_json("--model", "qwen3-32b")
        self.assertEqual(r["bytes_per_token"], 64 * 8 * 128 * 2 * 2)
        self.assertEqual(r["bytes_per_token"], 256 * KiB)
        self.assertEqual(r["bytes_per_token_per_rank"], 256 * KiB)
        self.assertEqual(r["dtype"], "bf16")

    def test_qwen3_32b_130858_token_context_is_about_32_gb(self):
        # 130,858 tokens x 262,144 B = 34,303,639,552 B = 31.95 GiB (34.30 GB)
        r = run_json("--model", "qwen3-32b", "--context-tokens", "130858")
        self.assertEqual(r["context_bytes"], 130858 * 262144)
        self.assertEqual(r["context_bytes"], 34_303_639_552)
        self.assertAlmostEqual(r["context_bytes"] / GiB, 31.95, places=2)
        # load: 34.30 GB / 5 GB/s = 6.861 s; recompute: 130,858 / 10,000 tok/s = 13.086 s
        self.assertAlmostEqual(r["load_seconds"], 34_303_639_552 / 5e9, places=6)
        self.assertAlmostEqual(r["recompute_seconds"], 13.0858, places=6)
        self.assertAlmostEqual(r["speedup"], 13.0858 / (34_303_639_552 / 5e9), places=6)

    def test_llama_3_8b_bf16(self):
        # 32 layers x 8 KV heads x 128 head_dim x 2 x 2 B = 131,072 B = 128 KiB per token;
        # 256-token chunk: 131,072 x 256 = 33,554,432 B = 32 MiB
        r = run_json("--model", "llama-3-8b")
        self.assertEqual(r["bytes_per_token"], 128 * KiB)
        self.assertEqual(r["chunk_tokens"], 256)
        self.assertEqual(r["bytes_per_chunk"], 32 * MiB)

    def test_human_table_shows_the_figures(self):
        code, out, err = run_tool("--model", "qwen3-32b", "--context-tokens", "130858")
        self.assertEqual(code, 0, err)
        self.assertEqual(err, "")
        self.assertIn("262,144 B (256.00 KiB)", out)
        self.assertIn("67,108,864 B (64.00 MiB", out)  # 256 KiB x 256 tokens
        self.assertIn("34,303,639,552 B (31.95 GiB, 34.30 GB)", out)
        self.assertIn("speedup", out)


class MoreModels(unittest.TestCase):
    def test_llama_3_1_70b_bf16(self):
        # 80 layers x 8 KV heads x 128 x 2 x 2 B = 327,680 B = 320 KiB per token
        # chunk: 327,680 x 256 = 83,886,080 B = 80 MiB
        r = run_json("--model", "llama-3.1-70b")
        self.assertEqual(r["bytes_per_token"], 327_680)
        self.assertEqual(r["bytes_per_chunk"], 80 * MiB)

    def test_gemma_2_9b_bf16(self):
        # 42 layers x 8 KV heads x 256 head_dim x 2 x 2 B = 344,064 B = 336 KiB per token
        # chunk: 344,064 x 256 = 88,080,384 B = 84 MiB
        r = run_json("--model", "gemma-2-9b")
        self.assertEqual(r["bytes_per_token"], 344_064)
        self.assertEqual(r["bytes_per_chunk"], 84 * MiB)

    def test_llama_3_1_405b_fp8_tp8(self):
        # whole model: 126 layers x 8 KV heads x 128 x 2 x 1 B (fp8) = 258,048 B per token
        # tp 8: 8 heads / 8 ranks = 1 head per rank: 126 x 1 x 128 x 2 x 1 = 32,256 B
        # chunk (per rank): 32,256 x 256 = 8,257,536 B; stored on the node: 8 copies x 32,256
        r = run_json("--model", "llama-3.1-405b", "--dtype", "fp8", "--tp", "8")
        self.assertEqual(r["bytes_per_token"], 258_048)
        self.assertEqual(r["bytes_per_token_per_rank"], 32_256)
        self.assertEqual(r["bytes_per_chunk"], 8_257_536)
        self.assertEqual(r["stored_bytes_per_token"], 8 * 32_256)

    def test_qwen3_8b_and_mixtral(self):
        # qwen3-8b: 36 x 8 x 128 x 2 x 2 = 147,456 B (144 KiB)
        self.assertEqual(run_json("--model", "qwen3-8b")["bytes_per_token"], 147_456)
        # mixtral-8x7b and mistral-7b: 32 x 8 x 128 x 2 x 2 = 131,072 B (experts share attention)
        self.assertEqual(run_json("--model", "mixtral-8x7b")["bytes_per_token"], 131_072)
        self.assertEqual(run_json("--model", "mistral-7b")["bytes_per_token"], 131_072)

    def test_hf_style_names_resolve(self):
        self.assertEqual(run_json("--model", "Qwen/Qwen3-32B")["model"], "qwen3-32b")
        self.assertEqual(run_json("--model", "meta-llama/Meta-Llama-3-8B-Instruct")["model"],
                         "llama-3-8b")


class MLA(unittest.TestCase):
    def test_deepseek_v3_bf16(self):
        # 61 layers x (512 kv_lora_rank + 64 qk_rope_head_dim) x 2 B = 70,272 B per token
        r = run_json("--model", "deepseek-v3")
        self.assertEqual(r["attention"], "mla")
        self.assertEqual(r["bytes_per_token"], 61 * (512 + 64) * 2)
        self.assertEqual(r["bytes_per_token"], 70_272)
        # chunk: 70,272 x 256 = 17,989,632 B
        self.assertEqual(r["bytes_per_chunk"], 17_989_632)

    def test_deepseek_v3_latent_not_split_across_tp(self):
        # one latent "head", replicated on every rank: per rank = whole model = 70,272 B
        r = run_json("--model", "deepseek-v3", "--tp", "8")
        self.assertEqual(r["bytes_per_token_per_rank"], 70_272)
        self.assertEqual(r["bytes_per_chunk"], 17_989_632)
        self.assertTrue(r["replicated_across_ranks"])
        # LMCache saves only the first rank's copy for MLA by default: one copy stored
        self.assertEqual(r["stored_copies"], 1)
        self.assertEqual(r["stored_bytes_per_token"], 70_272)
        # unless every rank saves: 8 x 70,272 = 562,176 B
        r = run_json("--model", "deepseek-v3", "--tp", "8", "--mla-save-all-ranks")
        self.assertEqual(r["stored_bytes_per_token"], 562_176)

    def test_deepseek_v2_lite(self):
        # 27 layers x (512 + 64) x 2 B = 31,104 B per token
        self.assertEqual(run_json("--model", "deepseek-v2-lite")["bytes_per_token"], 31_104)


class TensorParallel(unittest.TestCase):
    def test_heads_split_across_ranks(self):
        # llama-3.1-70b tp 4: 8 / 4 = 2 KV heads per rank: 80 x 2 x 128 x 2 x 2 = 81,920 B
        # chunk: 81,920 x 256 = 20,971,520 B = 20 MiB; stored: 4 ranks x 81,920 = 327,680 B
        r = run_json("--model", "llama-3.1-70b", "--tp", "4")
        self.assertEqual(r["kv_heads_per_rank"], 2)
        self.assertEqual(r["bytes_per_token"], 327_680)
        self.assertEqual(r["bytes_per_token_per_rank"], 81_920)
        self.assertEqual(r["bytes_per_chunk"], 20 * MiB)
        self.assertEqual(r["stored_bytes_per_token"], 327_680)
        self.assertFalse(r["replicated_across_ranks"])
        # 32,768 tokens / 256 = 128 chunks per rank x 4 ranks = 512 values
        self.assertEqual(r["values_per_context"], 512)

    def test_tp_above_kv_heads_replicates_one_head(self):
        # llama-3-8b tp 16 (> 8 KV heads): one head per rank: 32 x 1 x 128 x 2 x 2 = 16,384 B;
        # every rank stores it: 16 x 16,384 = 262,144 B on the node (2x the model's 131,072)
        # (llama-3-8b has 32 attention heads, so tp 16 is valid)
        r = run_json("--model", "llama-3-8b", "--tp", "16")
        self.assertEqual(r["kv_heads_per_rank"], 1)
        self.assertTrue(r["replicated_across_ranks"])
        self.assertEqual(r["bytes_per_token_per_rank"], 16_384)
        self.assertEqual(r["stored_bytes_per_token"], 262_144)

    def test_incompatible_tp_is_rejected(self):
        code, out, err = run_tool("--model", "llama-3-8b", "--tp", "3")
        self.assertEqual(code, 2)
        self.assertEqual(out, "")
        self.assertIn("--tp 3", err)


class Budgets(unittest.TestCase):
    def test_disk_and_dram(self):
        # llama-3-8b: 1 TiB / 128 KiB = 2^40 / 2^17 = 8,388,608 tokens; / 32 MiB = 32,768 chunks;
        # contexts of 32,768 tokens (4 GiB): 1 TiB / 4 GiB = 256
        # DRAM 64 GiB: 2^36 / 2^17 = 524,288 tokens, 2^36 / 2^25 = 2,048 chunks, 16 contexts
        r = run_json("--model", "llama-3-8b", "--disk-bytes", "1024gb", "--dram-bytes", "64gb")
        self.assertEqual(r["disk_bytes"], TiB)
        self.assertEqual(r["disk_tokens"], 8_388_608)
        self.assertEqual(r["disk_chunks"], 32_768)
        self.assertEqual(r["disk_contexts"], 256)
        self.assertEqual(r["dram_tokens"], 524_288)
        self.assertEqual(r["dram_chunks"], 2_048)
        self.assertEqual(r["dram_contexts"], 16)

    def test_budgets_absent_are_null(self):
        r = run_json("--model", "llama-3-8b")
        for k in ("disk_bytes", "disk_tokens", "disk_chunks", "dram_tokens", "hbm_sequences"):
            self.assertIsNone(r[k], k)

    def test_hbm_sequences(self):
        # llama-3-8b, 32,768 tokens x 128 KiB = 4 GiB per sequence per GPU:
        # 16 GiB -> 4 sequences; 16,000 MiB (15.6 GiB) -> 3
        r = run_json("--model", "llama-3-8b", "--hbm-free-bytes", "16gb")
        self.assertEqual(r["hbm_sequences"], 4)
        self.assertEqual(r["hbm_tokens"], 16 * GiB // (128 * KiB))
        self.assertEqual(run_json("--model", "llama-3-8b", "--hbm-free-bytes",
                                  "16000mb")["hbm_sequences"], 3)
        # tp 2 halves the per-GPU footprint: 2 GiB per sequence per GPU -> 8
        self.assertEqual(run_json("--model", "llama-3-8b", "--tp", "2", "--hbm-free-bytes",
                                  "16gb")["hbm_sequences"], 8)

    def test_load_vs_recompute(self):
        # llama-3-8b, 32,768 tokens: 4 GiB = 4,294,967,296 B / 10 GB/s = 0.4295 s;
        # recompute 32,768 / 20,000 tok/s = 1.6384 s; speedup 3.815
        r = run_json("--model", "llama-3-8b", "--load-gbps", "10",
                     "--prefill-tokens-per-s", "20000")
        self.assertAlmostEqual(r["load_seconds"], 0.4294967296, places=9)
        self.assertAlmostEqual(r["recompute_seconds"], 1.6384, places=9)
        self.assertAlmostEqual(r["speedup"], 1.6384 / 0.4294967296, places=9)

    def test_chunk_tokens(self):
        # qwen3-32b, 512-token chunks: 256 KiB x 512 = 128 MiB
        self.assertEqual(run_json("--model", "qwen3-32b", "--chunk-tokens", "512")
                         ["bytes_per_chunk"], 128 * MiB)


class Units(unittest.TestCase):
    def test_the_servers_byte_size_cases(self):
        """tests/common/byte_sizes.tsv: the cases common::ParseBytes (larder.conf, larder-admin,
        the bench tools) is tested against, so the two dialects cannot drift."""
        path = os.path.join(ROOT, "tests", "common", "byte_sizes.tsv")
        with open(path) as f:
            cases = [line.rstrip("\n").rsplit("\t", 1) for line in f
                     if not line.startswith("#") and "\t" in line]
        self.assertGreater(len(cases), 30)
        for text, want in cases:
            with self.subTest(text=text):
                if want == "error":
                    with self.assertRaises(ls.InputError):
                        ls.parse_bytes(text)
                else:
                    self.assertEqual(ls.parse_bytes(text), int(want))

    def test_bad_unit_on_the_command_line(self):
        code, out, err = run_tool("--model", "llama-3-8b", "--disk-bytes", "5XB")
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err.count("\n"), 1)
        self.assertIn("5XB", err)


class ConfigInput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, obj, name="config.json"):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(obj if isinstance(obj, str) else json.dumps(obj))
        return path

    def test_llama_style_head_dim_from_hidden_size(self):
        # head_dim = 4096 / 32 = 128; 32 x 8 x 128 x 2 x 2 = 131,072
        path = self.write({"num_hidden_layers": 32, "num_attention_heads": 32,
                           "num_key_value_heads": 8, "hidden_size": 4096,
                           "torch_dtype": "bfloat16", "model_type": "llama"})
        r = run_json("--config", path)
        self.assertEqual((r["head_dim"], r["dtype"], r["source"]), (128, "bf16", "config"))
        self.assertEqual(r["bytes_per_token"], 131_072)

    def test_explicit_head_dim_wins(self):
        # Qwen3-32B: hidden 5120 / 64 heads would be 80, but head_dim is 128 -> 262,144
        path = self.write({"num_hidden_layers": 64, "num_attention_heads": 64,
                           "num_key_value_heads": 8, "hidden_size": 5120, "head_dim": 128,
                           "torch_dtype": "bfloat16"})
        self.assertEqual(run_json("--config", path)["bytes_per_token"], 262_144)

    def test_kv_heads_default_to_attention_heads(self):
        # MHA: 2 layers x 4 heads x (256 / 4 = 64) x 2 x 2 B = 2,048 B
        path = self.write({"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256})
        r = run_json("--config", path)
        self.assertEqual((r["kv_heads"], r["head_dim"]), (4, 64))
        self.assertEqual(r["bytes_per_token"], 2048)

    def test_dtype_from_config_and_override(self):
        # float32 in the config: 2 x 4 x 64 x 2 x 4 B = 4,096; --dtype fp8: 1,024
        cfg = {"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256,
               "torch_dtype": "float32"}
        path = self.write(cfg)
        self.assertEqual(run_json("--config", path)["bytes_per_token"], 4096)
        self.assertEqual(run_json("--config", path, "--dtype", "fp8")["bytes_per_token"], 1024)
        # newer transformers write "dtype" instead of "torch_dtype"
        del cfg["torch_dtype"]
        cfg["dtype"] = "float16"
        r = run_json("--config", self.write(cfg, "new.json"))
        self.assertEqual((r["dtype"], r["bytes_per_token"]), ("fp16", 2048))
        # no dtype at all: bf16
        del cfg["dtype"]
        self.assertEqual(run_json("--config", self.write(cfg, "none.json"))["dtype"], "bf16")

    def test_nested_text_config(self):
        # multimodal config: text_config carries the LM: 34 x 4 x 256 x 2 x 2 = 139,264
        path = self.write({"model_type": "gemma3", "torch_dtype": "bfloat16",
                           "vision_config": {"hidden_size": 1152},
                           "text_config": {"num_hidden_layers": 34, "num_attention_heads": 8,
                                           "num_key_value_heads": 4, "head_dim": 256,
                                           "hidden_size": 2560}})
        r = run_json("--config", path)
        self.assertEqual((r["layers"], r["dtype"]), (34, "bf16"))
        self.assertEqual(r["bytes_per_token"], 139_264)

    def test_mla_config(self):
        # DeepSeek-V3 style: 61 x (512 + 64) x 2 B = 70,272 (num_key_value_heads is ignored)
        path = self.write({"num_hidden_layers": 61, "num_attention_heads": 128,
                           "num_key_value_heads": 128, "hidden_size": 7168,
                           "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                           "qk_nope_head_dim": 128, "v_head_dim": 128, "q_lora_rank": 1536,
                           "torch_dtype": "bfloat16"})
        r = run_json("--config", path, "--tp", "8")
        self.assertEqual(r["attention"], "mla")
        self.assertEqual(r["bytes_per_token"], 70_272)
        self.assertEqual(r["bytes_per_token_per_rank"], 70_272)

    def test_bad_configs(self):
        cases = [
            ({"num_attention_heads": 4, "hidden_size": 256}, "num_hidden_layers"),
            ({"num_hidden_layers": 2, "num_key_value_heads": 4}, "head_dim"),
            ({"num_hidden_layers": 2, "kv_lora_rank": 512}, "qk_rope_head_dim"),
            ({"num_hidden_layers": "two", "num_attention_heads": 4, "hidden_size": 256},
             "num_hidden_layers"),
            ("{not json", "not valid JSON"),
            ("[1, 2]", "JSON object"),
        ]
        for i, (cfg, needle) in enumerate(cases):
            with self.subTest(needle=needle):
                code, out, err = run_tool("--config", self.write(cfg, f"bad{i}.json"))
                self.assertEqual((code, out), (2, ""), err)
                self.assertEqual(err.count("\n"), 1, err)
                self.assertIn(needle, err)

    def test_missing_file(self):
        code, out, err = run_tool("--config", os.path.join(self.tmp.name, "nope.json"))
        self.assertEqual((code, out), (2, ""))
        self.assertIn("not found", err)
        self.assertIn("nope.json", err)


JSON_KEYS = {
    "model", "source", "attention", "layers", "attention_heads", "kv_heads", "head_dim",
    "kv_lora_rank", "qk_rope_head_dim", "dtype", "dtype_bytes", "tp", "kv_heads_per_rank",
    "replicated_across_ranks", "bytes_per_token", "bytes_per_token_per_rank", "stored_copies",
    "stored_bytes_per_token", "chunk_tokens", "bytes_per_chunk", "context_tokens",
    "context_bytes", "context_bytes_per_rank", "values_per_context",
    "disk_bytes", "disk_tokens", "disk_chunks", "disk_contexts",
    "dram_bytes", "dram_tokens", "dram_chunks", "dram_contexts",
    "hbm_free_bytes", "hbm_tokens", "hbm_sequences",
    "load_gbps", "load_seconds", "prefill_tokens_per_s", "recompute_seconds", "speedup", "notes",
}


class JsonOutput(unittest.TestCase):
    def test_keys_are_stable_snake_case(self):
        for model in ("qwen3-32b", "deepseek-v3"):
            with self.subTest(model=model):
                code, out, err = run_tool("--model", model, "--json", "--disk-bytes", "2000g")
                self.assertEqual(code, 0, err)
                r = json.loads(out)  # exactly one JSON object, nothing else on stdout
                self.assertIsInstance(r, dict)
                self.assertEqual(set(r), JSON_KEYS)
                for k in r:
                    self.assertRegex(k, r"^[a-z][a-z0-9_]*$")
                self.assertIsInstance(r["notes"], list)


class BadInput(unittest.TestCase):
    def assert_bad(self, args, *needles):
        code, out, err = run_tool(*args)
        self.assertEqual(code, 2, (args, err))
        self.assertEqual(out, "", args)
        self.assertEqual(err.count("\n"), 1, err)  # one line
        self.assertTrue(err.startswith("larder-sizing: error: "), err)
        for n in needles:
            self.assertIn(n, err)

    def test_unknown_model_lists_presets(self):
        self.assert_bad(["--model", "gpt-5"], "gpt-5", "qwen3-32b", "deepseek-v3", "llama-3-8b")

    def test_other_bad_input(self):
        self.assert_bad([], "--model")
        self.assert_bad(["--model", "llama-3-8b", "--config", "x.json"], "--config")
        self.assert_bad(["--model", "llama-3-8b", "--dtype", "int4"], "int4")
        self.assert_bad(["--model", "llama-3-8b", "--tp", "0"], "--tp")
        self.assert_bad(["--model", "llama-3-8b", "--tp", "x"], "--tp")
        self.assert_bad(["--model", "llama-3-8b", "--context-tokens", "-1"], "--context-tokens")
        self.assert_bad(["--model", "llama-3-8b", "--load-gbps", "0"], "--load-gbps")
        self.assert_bad(["--model", "llama-3-8b", "--hbm-free-bytes", "lots"], "lots")
        self.assert_bad(["--model", "llama-3-8b", "--frobnicate"], "--frobnicate")

    def test_script_is_executable_with_debian_python(self):
        self.assertTrue(os.access(SCRIPT, os.X_OK))
        with open(SCRIPT, encoding="utf-8") as f:
            self.assertEqual(f.readline().strip(), "#!/usr/bin/python3")

    def test_help(self):
        code, out, _ = run_tool("--help")
        self.assertEqual(code, 0)
        self.assertIn("--disk-bytes", out)


if __name__ == "__main__":
    unittest.main()
