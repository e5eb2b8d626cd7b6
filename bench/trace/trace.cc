#include "trace.h"

#include <xxhash.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <unordered_set>

namespace larder::bench {
namespace {

// Draws 0..n-1 with P(k) proportional to 1/(k+1)^s.
class Zipf {
 public:
  Zipf(uint32_t n, double s) : cdf_(n) {
    double sum = 0;
    for (uint32_t k = 0; k < n; ++k) cdf_[k] = sum += 1.0 / std::pow(k + 1.0, s);
    for (double& c : cdf_) c /= sum;
  }
  uint32_t operator()(std::mt19937_64& rng) const {
    double u = std::uniform_real_distribution<double>(0, 1)(rng);
    return static_cast<uint32_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
  }

 private:
  std::vector<double> cdf_;
};

// One conversation's token stream, kept as its full chunks' hashes plus the partial tail.
struct Conversation {
  uint32_t turns_left = 0;
  uint64_t tokens = 0;
  uint64_t last_hash = 0;
  std::vector<uint32_t> tail;
  std::vector<uint64_t> chunks;

  void Append(uint32_t token, uint32_t chunk_tokens) {
    tail.push_back(token);
    ++tokens;
    if (tail.size() == chunk_tokens) {
      last_hash = XXH3_64bits_withSeed(tail.data(), tail.size() * sizeof(uint32_t), last_hash);
      chunks.push_back(last_hash);
      tail.clear();
    }
  }
};

uint32_t Token(uint64_t a, uint64_t b) {
  uint64_t x[2] = {a, b};
  return static_cast<uint32_t>(XXH3_64bits(x, sizeof x)) % 128256;  // a Llama-3 vocabulary
}

}  // namespace

Trace GenerateTrace(const TraceParams& p) {
  Trace t;
  t.params = p;
  std::mt19937_64 rng(p.seed);
  auto uniform = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  Zipf user_pop(p.users, p.zipf_s), sys_pop(p.system_prompts, 1.0);
  std::vector<Conversation> convs(p.users);
  std::vector<uint64_t> conv_serial(p.users, 0);
  std::vector<bool> active(p.users, false);
  struct Slot {
    uint32_t user;
    uint32_t visit_left;
  };
  auto new_visit = [&]() -> Slot {
    uint32_t u;
    do u = user_pop(rng);
    while (active[u]);
    active[u] = true;
    Conversation& c = convs[u];
    if (c.turns_left == 0) {  // a new conversation with a shared system prompt
      c = Conversation();
      c.turns_left = static_cast<uint32_t>(uniform(p.turns_min, p.turns_max));
      ++conv_serial[u];
      uint32_t sys = sys_pop(rng);
      uint32_t len = p.sys_tokens_min + sys * p.sys_tokens_step;
      for (uint32_t i = 0; i < len; ++i) c.Append(Token(~uint64_t{sys}, i), p.chunk_tokens);
    }
    return {u, static_cast<uint32_t>(uniform(1, 2 * p.visit_turns_mean - 1))};
  };
  uint32_t conc = std::min(p.concurrency, p.users);
  std::vector<Slot> slots;
  for (uint32_t i = 0; i < conc; ++i) slots.push_back(new_visit());

  std::unordered_set<uint64_t> seen;
  uint64_t serial = 0;
  for (uint64_t r = 0; r < p.turns; ++r) {
    Slot& s = slots[uniform(0, slots.size() - 1)];
    Conversation& c = convs[s.user];
    uint64_t input = uniform(p.input_tokens_mean - p.input_tokens_spread,
                             p.input_tokens_mean + p.input_tokens_spread);
    uint64_t stream = (uint64_t{s.user} << 32) ^ (conv_serial[s.user] << 8);
    for (uint64_t i = 0; i < input; ++i) c.Append(Token(stream, ++serial), p.chunk_tokens);
    TraceRequest req;
    req.user = s.user;
    req.arrival_ms = static_cast<int64_t>(r * p.ms_per_request);
    req.prompt_tokens = c.tokens;
    req.chunks = c.chunks;
    for (uint64_t h : req.chunks) seen.insert(h);
    t.requests.push_back(std::move(req));
    uint64_t output = uniform(p.output_tokens_min, p.output_tokens_max);
    for (uint64_t i = 0; i < output; ++i) c.Append(Token(stream, ++serial), p.chunk_tokens);
    --c.turns_left;
    if (--s.visit_left == 0 || c.turns_left == 0) {
      active[s.user] = false;
      s = new_visit();
    }
  }
  t.unique_chunks = seen.size();
  return t;
}

bool LoadMooncakeTrace(const std::string& path, uint32_t block_tokens, Trace* out,
                       std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot open";
    return false;
  }
  Trace t;
  t.params.chunk_tokens = std::max<uint32_t>(1, block_tokens);
  std::unordered_set<uint64_t> seen;
  std::string line;
  for (uint64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n) + ": ";
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      *error = where + "not a JSON object";
      return false;
    }
    const auto ts = j.find("timestamp"), len = j.find("input_length"), ids = j.find("hash_ids");
    if (ts == j.end() || !ts->is_number() || len == j.end() || !len->is_number_unsigned() ||
        ids == j.end() || !ids->is_array()) {
      *error = where + "needs \"timestamp\", \"input_length\" and \"hash_ids\"";
      return false;
    }
    TraceRequest req;
    req.user = static_cast<uint32_t>(t.requests.size());
    req.arrival_ms = static_cast<int64_t>(ts->get<double>());
    req.prompt_tokens = len->get<uint64_t>();
    const size_t full = req.prompt_tokens / t.params.chunk_tokens;
    if (ids->size() < full) {
      *error = where + std::to_string(ids->size()) + " hash_ids for " +
               std::to_string(req.prompt_tokens) + " tokens (needs one per " +
               std::to_string(t.params.chunk_tokens) + "-token block)";
      return false;
    }
    for (size_t i = 0; i < full; ++i) {
      if (!(*ids)[i].is_number_unsigned()) {
        *error = where + "hash_ids[" + std::to_string(i) + "] is not an unsigned integer";
        return false;
      }
      req.chunks.push_back((*ids)[i].get<uint64_t>());
      seen.insert(req.chunks.back());
    }
    t.requests.push_back(std::move(req));
  }
  if (in.bad()) {
    *error = path + ": read error";
    return false;
  }
  t.params.turns = t.requests.size();
  t.unique_chunks = seen.size();
  *out = std::move(t);
  return true;
}

bool WriteMooncakeTrace(const Trace& t, const std::string& path, std::string* error) {
  std::ofstream out(path);
  for (const auto& r : t.requests) {
    const nlohmann::json j = {{"timestamp", r.arrival_ms},
                              {"input_length", r.prompt_tokens},
                              {"output_length", 0},
                              {"hash_ids", r.chunks}};
    out << j.dump() << '\n';
  }
  out.flush();
  if (!out) *error = path + ": cannot write";
  return static_cast<bool>(out);
}

std::string ChunkKey(uint64_t chunk_hash) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "meta-llama/Llama-3.1-8B-Instruct@1@0@%llx@bfloat16kv_bytes",
                static_cast<unsigned long long>(chunk_hash));
  return buf;
}

}  // namespace larder::bench
