// The configuration keys of every section, their defaults and meaning, and the checks that relate
// keys to each other (n_heads vs n_kv_heads, window vs sequence length, ...).
#pragma once

#include "config/config.h"
#include "config/load.h"
#include "config/schema.h"

namespace headroom::config {

// Declares the keys of the sections in `sections` (a SectionMask), bound to the fields of `cfg`.
// `cfg` must outlive the schema.
Schema make_schema(Config& cfg, unsigned sections);

// Every per-key check plus the cross-key rules of the sections in `sections`; throws one Error that
// lists every problem with the key names and where each value came from.
void validate(const Config& cfg, unsigned sections, const Schema& schema, const Parsed& parsed);

// A validated configuration made in code, not from a command line: the defaults of `sections`,
// then `bases` (lowest first, as parse_config takes them), then `keys` ("section.key" -> value),
// through the same parse and the same checks an app applies. For benchmarks, tests and the stored
// configuration of a checkpoint (bases = {{"checkpoint X", its config_ini}}). `ini`, when given,
// receives the resolved configuration as a checkpoint stores it (to_ini without help comments).
Config make_config(unsigned sections, const std::vector<std::pair<std::string, std::string>>& keys = {},
                   const std::vector<IniText>& bases = {}, std::string* ini = nullptr);

// Effective RoPE width of a layer kind (rope_dims_* = -1 means the whole head).
long rope_dims(const ModelConfig& m, bool sliding);

}  // namespace headroom::config
