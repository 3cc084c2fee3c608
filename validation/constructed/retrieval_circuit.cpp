#include "constructed/retrieval_circuit.h"

#include "config/keys.h"
#include "util/error.h"
#include "util/random.h"
#include "util/text.h"

#include <algorithm>
#include <cmath>

namespace headroom::constructed {
namespace {

// Residual layout: seven slots, then the constant dimension (padded to a multiple of 8).
enum Slot : long { kTok = 0, kP1, kP2, kP3, kP4, kKey, kOut, kSlots };
constexpr long kPrevLayers = 4;          // layers 0-3 fill P1..P4
constexpr long kKeyLayer = kPrevLayers;  // layer 4
constexpr long kRetrievalLayer = kKeyLayer + 1;
constexpr long kLayers = kRetrievalLayer + 1;
constexpr long kParts = 5;  // the retrieval head compares KEY, TOK·P1, P1·P2, P2·P3, P3·P4
constexpr long kConst = kSlots * kSlot;
constexpr long kDModel = kConst + 8;
constexpr double kConstValue = 2.0;  // dominates the RMS so every norm divides by about the same
constexpr long kHeadQk = kParts * kSlot;
constexpr long kRotary = 2 * kSlot;  // sliding layers: 64 rotary pairs, the rest passes through
constexpr double kRopeBase = 10;     // frequencies 1 .. 0.1: the sharpest Δ = 1 peak over 64 keys

// Logits (after the 1/√dqk attention scale): the previous-token heads' a² (margin ≥ 25 over
// every other visible key), the key head's per-pattern-part match, and the retrieval head's unit.
constexpr double kPrevScale = 3.75, kKeyMatch = 10, kMatch = 10;  // 3.75 × 6.8 (min over Δ ≠ 1 of Σ(1 − cos)) ≈ 25
// Retrieval-head logits per matched part, in units of kMatch: the key most (the haystack holds
// many "is a ..." bigrams, none with the needle's key), then the nearest token first, each part
// outweighing all further ones together (2 > 1 + 0.5 + 0.35, 1 > 0.85, 0.5 > 0.35), so a 4-gram
// match wins over every 3-gram one and a match further back never outweighs a nearer one.
constexpr double kPartWeight[kParts] = {2, 2, 1, 0.5, 0.35};

long slot_dim(Slot s, long j) { return s * kSlot + j; }

// Unit vectors for every id; the ids in `named` get exact basis vectors e_0, e_1, ... and every
// other vector is made orthogonal to them, so the circuit's by-name matches have no cross-talk.
std::vector<std::vector<double>> token_vectors(int64_t vocab, const std::vector<int32_t>& named, unsigned long seed) {
  const CounterRng rng{mix64(seed) ^ 0x9e3779b97f4a7c15ull, 0};
  std::vector<std::vector<double>> u(static_cast<size_t>(vocab), std::vector<double>(kSlot, 0.0));
  for (int64_t id = 0; id < vocab; ++id) {
    auto& x = u[static_cast<size_t>(id)];
    for (long j = 0; j < kSlot; ++j) x[j] = rng.normal(static_cast<uint64_t>(id * kSlot + j));
    for (size_t k = 0; k < named.size(); ++k) x[k] = 0;
    double n = 0;
    for (double e : x) n += e * e;
    for (double& e : x) e /= std::sqrt(n);
  }
  for (size_t k = 0; k < named.size(); ++k) {
    auto& x = u[static_cast<size_t>(named[k])];
    std::fill(x.begin(), x.end(), 0.0);
    x[k] = 1;
  }
  return u;
}

// The id a word ends in, refusing words the circuit cannot read by name.
int32_t last_token(data::Encoder& enc, const std::string& word) {
  std::vector<int32_t> ids;
  enc.encode(word, ids);
  if (ids.empty()) fail("constructed circuit: '", word, "' encodes to nothing");
  return ids.back();
}

int32_t single_token(data::Encoder& enc, const std::string& word) {
  std::vector<int32_t> ids;
  enc.encode(word, ids);
  if (ids.size() != 1)
    fail("constructed circuit: '", word, "' is ", ids.size(),
         " tokens in this tokenizer; the circuit reads it by name ",
         "and needs one (use a BPE tokenizer trained on English text)");
  return ids[0];
}

struct Matrix {  // row-major [rows, cols] view into a parameter
  std::vector<float>& w;
  long cols;
  float& at(long r, long c) { return w[static_cast<size_t>(r * cols + c)]; }
};

// Nominal |h|² entering layer l (slots filled so far plus the constant) and the RMSNorm gain it
// implies: normalised h = h · gain.
double norm_gain(long filled_slots) {
  const double sq = static_cast<double>(filled_slots) + kConstValue * kConstValue;
  return std::sqrt(static_cast<double>(kDModel) / sq);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> circuit_model_keys(long vocab_size) {
  return {{"model.vocab_size", std::to_string(vocab_size)},
          {"model.d_model", std::to_string(kDModel)},
          {"model.n_layers", std::to_string(kLayers)},
          {"model.d_ff", "8"},
          {"model.n_heads", "1"},
          {"model.n_kv_heads", "1"},
          {"model.head_dim_qk", std::to_string(kHeadQk)},
          {"model.head_dim_v", std::to_string(kSlot)},
          {"model.qk_norm", "none"},
          {"model.norm_order", "pre"},
          {"model.layer_pattern", std::string(kLayers - 1, 'S') + "F"},
          {"model.window", std::to_string(kWindow)},
          {"model.rope_base_swa", config::format_value(kRopeBase)},
          {"model.rope_dims_swa", std::to_string(kRotary)},
          {"model.rope_dims_full", "0"},
          {"model.tie_embeddings", "false"}};
}

std::map<std::string, std::vector<float>> circuit_weights(const config::ModelConfig& cfg, const data::Tokenizer& tok,
                                                          unsigned long seed) {
  if (cfg.d_model != kDModel || cfg.n_layers != kLayers || cfg.head_dim_qk != kHeadQk || cfg.head_dim_v != kSlot ||
      cfg.n_heads != 1 || cfg.window != kWindow)
    fail("constructed circuit: the model configuration is not circuit_model_keys()'s");
  data::Encoder enc(tok);
  const int32_t t_for = single_token(enc, " for"), t_is = single_token(enc, " is"), t_are = single_token(enc, " are"),
                t_colon = single_token(enc, ":");
  std::vector<int32_t> types;  // the word before "for" in needles and questions
  for (const char* w : {" number", " numbers", " word", " words", " uuid", " uuids"}) {
    const int32_t id = last_token(enc, w);
    if (std::find(types.begin(), types.end(), id) == types.end()) types.push_back(id);
  }
  std::vector<int32_t> named{t_for, t_is, t_are, t_colon};
  for (int32_t id : types)
    if (std::find(named.begin(), named.end(), id) == named.end()) named.push_back(id);
  const auto u = token_vectors(cfg.vocab_size, named, seed);  // one unit vector per id, kSlot wide

  std::map<std::string, std::vector<float>> w;
  auto tensor = [&](const std::string& name, long rows, long cols) {
    auto& t = w[name];
    t.assign(static_cast<size_t>(rows * cols), 0.0f);
    return Matrix{t, cols};
  };
  const long d = kDModel, dv = kSlot;
  const double scale = std::sqrt(static_cast<double>(kHeadQk));

  Matrix embed = tensor("embed.weight", cfg.vocab_size, d);
  for (long id = 0; id < cfg.vocab_size; ++id) {
    for (long j = 0; j < kSlot; ++j) embed.at(id, slot_dim(kTok, j)) = static_cast<float>(u[id][j]);
    embed.at(id, kConst) = static_cast<float>(kConstValue);
  }

  // Layers 0-3: previous-token heads, TOK→P1, P1→P2, P2→P3, P3→P4. Scores q·k/√dqk with q, k from
  // the constant dimension: pair i holds (a, 0) in the query and a·(cos θᵢ, sin θᵢ) in the key,
  // so the score at distance Δ is a²/√dqk · Σᵢ cos(θᵢ(Δ − 1)).
  for (long l = 0; l < kPrevLayers; ++l) {
    const Slot src = static_cast<Slot>(kTok + l), dst = static_cast<Slot>(kP1 + l);
    const double g = norm_gain(l + 1);
    const std::string p = cat("layers.", l, ".");
    Matrix wq = tensor(p + "attn.wq", kHeadQk, d), wk = tensor(p + "attn.wk", kHeadQk, d);
    Matrix wv = tensor(p + "attn.wv", dv, d), wo = tensor(p + "attn.wo", d, dv);
    const double a = std::sqrt(kPrevScale * scale);
    for (long i = 0; i < kRotary / 2; ++i) {
      const double theta = std::pow(kRopeBase, -2.0 * static_cast<double>(i) / static_cast<double>(kRotary));
      wq.at(i, kConst) = static_cast<float>(a / (g * kConstValue));
      wk.at(i, kConst) = static_cast<float>(a * std::cos(theta) / (g * kConstValue));
      wk.at(i + kRotary / 2, kConst) = static_cast<float>(a * std::sin(theta) / (g * kConstValue));
    }
    for (long j = 0; j < kSlot; ++j) {
      wv.at(j, slot_dim(src, j)) = static_cast<float>(1 / g);
      wo.at(slot_dim(dst, j), j) = 1.0f;
    }
  }

  // Layer 4: the key head. Query: the constant, pointing at u(" for") in the P1 part and at the
  // sum of the type words' vectors in the P2 part (NoPE dims 128..255); keys: P1 and P2. Value:
  // TOK, written to KEY.
  {
    const double g = norm_gain(kKeyLayer + 1);
    const std::string p = cat("layers.", kKeyLayer, ".");
    Matrix wq = tensor(p + "attn.wq", kHeadQk, d), wk = tensor(p + "attn.wk", kHeadQk, d);
    Matrix wv = tensor(p + "attn.wv", dv, d), wo = tensor(p + "attn.wo", d, dv);
    const double e = kKeyMatch * static_cast<double>(scale);
    for (long j = 0; j < kSlot; ++j) {
      double type_sum = 0;
      for (int32_t id : types) type_sum += u[id][j];
      wq.at(kRotary + j, kConst) = static_cast<float>(e * u[t_for][j] / (g * g * kConstValue));
      wq.at(kRotary + kSlot + j, kConst) = static_cast<float>(e * type_sum / (g * g * kConstValue));
      wk.at(kRotary + j, slot_dim(kP1, j)) = 1.0f;
      wk.at(kRotary + kSlot + j, slot_dim(kP2, j)) = 1.0f;
      wv.at(j, slot_dim(kTok, j)) = static_cast<float>(1 / g);
      wo.at(slot_dim(kKey, j), j) = 1.0f;
    }
  }

  // Layer 5: the retrieval head (see the header for the score). Both sides see h · g, so the
  // query carries the 1/g² and the match logit × √dqk.
  {
    const double g = norm_gain(kRetrievalLayer + 1);
    const std::string p = cat("layers.", kRetrievalLayer, ".");
    const double m = kMatch * static_cast<double>(scale) / (g * g), f = 2 * m;  // F = 2A per match
    Matrix wq = tensor(p + "attn.wq", kHeadQk, d), wk = tensor(p + "attn.wk", kHeadQk, d);
    Matrix wv = tensor(p + "attn.wv", dv, d), wo = tensor(p + "attn.wo", d, dv);
    const Slot q_side[kParts] = {kKey, kTok, kP1, kP2, kP3}, k_side[kParts] = {kKey, kP1, kP2, kP3, kP4};
    for (long part = 0; part < kParts; ++part)
      for (long j = 0; j < kSlot; ++j) {
        wq.at(part * kSlot + j, slot_dim(q_side[part], j)) = static_cast<float>(m * kPartWeight[part]);
        wk.at(part * kSlot + j, slot_dim(k_side[part], j)) = 1.0f;
      }
    // After " is"/" are" in TOK: query u(":") against P1 and u(" is") against P2.
    for (int32_t trigger : {t_is, t_are})
      for (long j = 0; j < kSlot; ++j)
        for (long i = 0; i < kSlot; ++i) {
          wq.at(1 * kSlot + i, slot_dim(kTok, j)) += static_cast<float>(f * u[t_colon][i] * u[trigger][j]);
          wq.at(2 * kSlot + i, slot_dim(kTok, j)) += static_cast<float>(f * u[t_is][i] * u[trigger][j]);
        }
    // Once the answer has begun, the answer prefix's " is"/" are" stands where the needle has ":"
    // (P1 of the second answer token, P2 of the third, P3 of the fourth): the parts after TOK·P1
    // read them as ":", so the needle's own value outscores every "is ..." of the haystack. (u of the named tokens are
    // basis vectors, so this moves exactly one coordinate.)
    for (long part : {2L, 3L, 4L})
      for (int32_t trigger : {t_is, t_are}) {
        const long from =
            slot_dim(q_side[part], static_cast<long>(std::find(named.begin(), named.end(), trigger) - named.begin()));
        const float w_part = static_cast<float>(m * kPartWeight[part]);
        for (long i = 0; i < kSlot; ++i) wq.at(part * kSlot + i, from) = static_cast<float>(w_part * u[t_colon][i]);
      }
    for (long j = 0; j < kSlot; ++j) {
      wv.at(j, slot_dim(kTok, j)) = static_cast<float>(1 / g);
      wo.at(slot_dim(kOut, j), j) = 1.0f;
    }
  }

  // Norm weights one, MLPs zero (present because every layer has one).
  for (long l = 0; l < kLayers; ++l) {
    const std::string p = cat("layers.", l, ".");
    w[p + "attn_norm.weight"].assign(static_cast<size_t>(d), 1.0f);
    w[p + "mlp_norm.weight"].assign(static_cast<size_t>(d), 1.0f);
    tensor(p + "mlp.w_gate", cfg.d_ff, d);
    tensor(p + "mlp.w_up", cfg.d_ff, d);
    tensor(p + "mlp.w_down", d, cfg.d_ff);
  }
  w["final_norm.weight"].assign(static_cast<size_t>(d), 1.0f);
  // lm_head reads OUT: logit(v) = ⟨u(v), OUT⟩ · gain · 2 (a copied token scores about 12).
  Matrix head = tensor("lm_head.weight", cfg.vocab_size, d);
  for (long id = 0; id < cfg.vocab_size; ++id)
    for (long j = 0; j < kSlot; ++j) head.at(id, slot_dim(kOut, j)) = static_cast<float>(2 * u[id][j]);
  return w;
}

}  // namespace headroom::constructed
