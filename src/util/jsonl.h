// JSON Lines: one JSON value per line (metrics.jsonl, probe.jsonl, samples.jsonl).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace headroom {

// Appends one line; throws naming the file when the write fails.
void append_jsonl(const std::filesystem::path& path, const nlohmann::json& value);

// The non-blank lines of a JSONL text with their line numbers (from 1); throws naming the first
// line that is not JSON.
std::vector<std::pair<int64_t, nlohmann::json>> jsonl_lines(const std::string& text);

}  // namespace headroom
