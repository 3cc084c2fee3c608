// A model that retrieves by construction: hand-set weights of a 6-layer, one-head Headroom model
// that answers RULER's needle-in-a-haystack prompts ("One of the special magic numbers for KEY is:
// VALUE." ... "What is the special magic number for KEY mentioned in the provided text? The special
// magic number for KEY mentioned in the provided text is") by copying VALUE, in the tokenizer of
// a shard. It is the positive control of the measurement chain: evaluate must score it high at
// every length, and analyze must find exactly its retrieval head.
//
// The residual stream is a set of 64-wide slots, each holding one token's vector u(token) (random
// unit vectors; the few tokens the circuit reads by name are basis vectors, exactly orthogonal to
// every other token), plus one constant dimension that gives queries and keys a content-free part:
//
//   TOK          the current token (the embedding)
//   P1 .. P4     the tokens 1 .. 4 back (layers 0-3: each copies the previous slot one back)
//   KEY          the first token after the nearest "{number|numbers|uuid|...} for" in the last
//                `window` tokens: the needle's key at a needle, the queried key in the question
//                and the answer (layer 4)
//   OUT          what layer 5 copies: the lm_head reads only this slot
//
// Layers 0-3 (sliding, window 64): previous-token heads made of RoPE alone (the constant dimension
// in every rotary pair, keys rotated by one position, so the scores are Σ cos(θᵢ(Δ−1)), peaked at
// Δ = 1 by ≥ 25 logits over every other visible position).
// Layer 4 (sliding, NoPE dims): the key head, attending where P1 = " for" and P2 is a type word.
// Layer 5 (full attention, NoPE): the retrieval head. Its score of key position s for query t is
//   2A·⟨KEY(t), KEY(s)⟩ + 2A·⟨TOK(t), P1(s)⟩ + A·⟨P1(t), P2(s)⟩ + A/2·⟨P2(t), P3(s)⟩ + 0.35A·⟨P3(t), P4(s)⟩
//   + F·[TOK(t) ∈ {" is", " are"}]·(⟨u(":"), P1(s)⟩ + ⟨u(" is"), P2(s)⟩),
// with " is"/" are" read as ":" in P1..P3 of the query: "same key, and the tokens before s are the
// tokens up to t" (an induction head over 4-grams keyed by the needle's key, the nearest token
// weighed most), plus "after the answer's ' is', the token after the needle's 'is:'". Its value is
// TOK(s), written to OUT. MLPs are zero.
//
// What the construction implies: niah tasks with one queried key and one value (niah_single_1..3,
// niah_multikey_1) are answered exactly, except values with a run of five equal tokens (a 4-gram
// cannot count further); with four values or four queried keys (niah_multivalue,
// niah_multiquery) one value is copied (25); a haystack of needles (niah_multikey_2/3) puts
// several keys into one KEY window, so those are not designed for. Every " is" it generates starts
// a new copy of the value. The retrieval head is layer 5 head 0 and no other; the last prompt
// token puts its layer-5 attention on the needle's first value token.
#pragma once

#include "config/config.h"
#include "data/tokenizer.h"

#include <map>
#include <string>
#include <vector>

namespace headroom::constructed {

inline constexpr long kSlot = 64;    // width of one residual slot
inline constexpr long kWindow = 64;  // sliding-window layers 0-4

// The [model] keys of the construction for a vocabulary of `vocab_size` ids.
std::vector<std::pair<std::string, std::string>> circuit_model_keys(long vocab_size);

// Every parameter of `cfg` (made from circuit_model_keys) by name, full logical shape, row-major.
// Throws naming the word when one the circuit reads by name (" for", " is", " are", ":", the
// needle-type words) does not end in a token of its own.
std::map<std::string, std::vector<float>> circuit_weights(const config::ModelConfig& cfg, const data::Tokenizer& tok,
                                                          unsigned long seed);

}  // namespace headroom::constructed
