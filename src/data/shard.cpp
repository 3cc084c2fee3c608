#include "data/shard.h"

#include "data/hf_tokenizer_files.h"
#include "io/atomic_file.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/version.h"

#include <algorithm>

namespace headroom::data {
namespace fs = std::filesystem;

namespace {

std::string shard_image(const std::string& path, const ShardContents& c, const Tokenizer& tok, const ShardMeta& meta) {
  io::H5File file = io::h5_create_memory_file(path);
  const hsize_t n = c.tokens.size();
  if (vocab_size(tok) <= 65536) {
    std::vector<uint16_t> narrow(c.tokens.begin(), c.tokens.end());
    io::h5_write(file, "/tokens", narrow.data(), {n});
  } else {
    io::h5_write(file, "/tokens", c.tokens.data(), {n});
  }
  io::h5_write(file, "/doc_offsets", c.doc_offsets.data(), {c.doc_offsets.size()});
  write_shard_header(file, tok, meta, static_cast<int64_t>(n), static_cast<int64_t>(c.doc_offsets.size() - 1),
                     c.n_bytes);
  return io::h5_file_image(file);
}

}  // namespace

void write_shard_header(const io::H5File& file, const Tokenizer& tok, const ShardMeta& meta, int64_t n_tokens,
                        int64_t n_docs, int64_t n_bytes) {
  std::vector<int32_t> merges;
  for (const auto& [a, b] : tok.merges) merges.insert(merges.end(), {a, b});
  io::h5_write(file, "/tokenizer/merges", merges.data(), {tok.merges.size(), 2});
  if (tok.hf) {
    const std::string record = tokenizer_record(tok);
    const std::vector<uint8_t> bytes(record.begin(), record.end());
    io::h5_write(file, "/tokenizer/hf", bytes.data(), {bytes.size()});
  }
  io::h5_attr(file, "/", "format", std::string(kShardFormat));
  io::h5_attr(file, "/", "format_version", kShardVersion);
  io::h5_attr(file, "/", "tokenizer_id", tokenizer_id(tok));
  io::h5_attr(file, "/", "vocab_size", int64_t{vocab_size(tok)});
  io::h5_attr(file, "/", "n_tokens", n_tokens);
  io::h5_attr(file, "/", "n_docs", n_docs);
  io::h5_attr(file, "/", "n_bytes", n_bytes);
  io::h5_attr(file, "/", "split", meta.split);
  io::h5_attr(file, "/", "created_utc", utc_timestamp());
  io::h5_attr(file, "/", "code_version", std::string(kCodeVersion));
  io::h5_attr(file, "/", "prepare_config", meta.prepare_config);
}

void write_shard(const fs::path& path, const ShardContents& contents, const Tokenizer& tokenizer,
                 const ShardMeta& meta) {
  if (contents.doc_offsets.empty() || contents.doc_offsets.front() != 0 ||
      contents.doc_offsets.back() != contents.tokens.size())
    fail("internal: doc_offsets do not describe the tokens of ", path.string());
  // Built in memory, written by write_file_atomic: complete under its final name, or absent.
  io::write_file_atomic(path, shard_image(path.string(), contents, tokenizer, meta));
}

namespace {

ShardPart open_part(const fs::path& path, const std::string& expected_tokenizer_id, std::string& tokenizer,
                    int64_t& vocab) {
  ShardPart s;
  s.path = path.string();
  s.file = io::h5_open_file(s.path);
  const std::string format = io::h5_has_attr(s.file, "/", "format") ? io::h5_attr_string(s.file, "/", "format") : "";
  if (format != kShardFormat)
    fail(s.path, ": not a Headroom token shard (attribute format = '", format, "', expected '", kShardFormat,
         "'); make shards with `prepare`");
  const int64_t version = io::h5_attr_int(s.file, "/", "format_version");
  if (version != kShardVersion) fail(s.path, ": shard format_version ", version, ", this build reads ", kShardVersion);
  tokenizer = io::h5_attr_string(s.file, "/", "tokenizer_id");
  vocab = io::h5_attr_int(s.file, "/", "vocab_size");
  s.n_docs = io::h5_attr_int(s.file, "/", "n_docs");
  if (!expected_tokenizer_id.empty() && tokenizer != expected_tokenizer_id)
    fail(s.path, ": shard was made with tokenizer '", tokenizer, "' but '", expected_tokenizer_id,
         "' was asked for; re-run prepare with that tokenizer");
  const auto dims = io::h5_shape(s.file, "/tokens");
  if (dims.size() != 1) fail(s.path, ": /tokens must be 1-D, has rank ", dims.size());
  s.n_tokens = static_cast<int64_t>(dims[0]);
  if (s.n_tokens != io::h5_attr_int(s.file, "/", "n_tokens"))
    fail(s.path, ": /tokens has ", s.n_tokens, " elements but attribute n_tokens says ",
         io::h5_attr_int(s.file, "/", "n_tokens"), " (truncated or corrupted file)");
  s.tokens = io::H5Handle(io::h5_check_id(H5Dopen2(s.file, "/tokens", H5P_DEFAULT), s.path + ": /tokens", "H5Dopen"),
                          H5Dclose);
  return s;
}

}  // namespace

ShardReader open_shard(const fs::path& path, const std::string& expected_tokenizer_id) {
  ShardReader s;
  s.path = path.string();
  s.parts.push_back(open_part(path, expected_tokenizer_id, s.tokenizer_id, s.vocab_size));
  s.n_tokens = s.parts[0].n_tokens;
  s.n_docs = s.parts[0].n_docs;
  return s;
}

ShardReader open_shards(const std::string& name, const std::vector<fs::path>& paths) {
  if (paths.empty()) fail(name, ": names no shard");
  ShardReader s;
  s.path = name;
  for (const auto& p : paths) {
    std::string tokenizer;
    int64_t vocab = 0;
    s.parts.push_back(open_part(p, s.tokenizer_id, tokenizer, vocab));
    s.tokenizer_id = tokenizer;
    s.vocab_size = vocab;
    s.parts.back().first_token = s.n_tokens;
    s.n_tokens += s.parts.back().n_tokens;
    s.n_docs += s.parts.back().n_docs;
  }
  return s;
}

Tokenizer read_shard_tokenizer(const ShardReader& shard) {
  const ShardPart& s = shard.parts.at(0);
  const auto dims = io::h5_shape(s.file, "/tokenizer/merges");
  if (dims.size() != 2 || dims[1] != 2) fail(s.path, ": /tokenizer/merges must have shape [n, 2]");
  const auto flat = io::h5_read<int32_t>(s.file, "/tokenizer/merges");
  Tokenizer tok;
  for (size_t i = 0; i + 1 < flat.size(); i += 2) tok.merges.emplace_back(flat[i], flat[i + 1]);
  if (io::h5_exists(s.file, "/tokenizer/hf")) {
    const auto bytes = io::h5_read<uint8_t>(s.file, "/tokenizer/hf");
    tok = tokenizer_from_record(std::string(bytes.begin(), bytes.end()), s.path + ": /tokenizer/hf");
  }
  if (tokenizer_id(tok) != shard.tokenizer_id)
    fail(s.path, ": /tokenizer/merges (or /tokenizer/hf) does not match attribute tokenizer_id '", shard.tokenizer_id,
         "' (corrupted file)");
  return tok;
}

std::vector<uint64_t> read_doc_offsets(const ShardReader& shard) {
  std::vector<uint64_t> all{0};
  all.reserve(static_cast<size_t>(shard.n_docs + 1));
  for (const ShardPart& s : shard.parts) {
    const auto offsets = io::h5_read<uint64_t>(s.file, "/doc_offsets");
    if (offsets.size() != static_cast<size_t>(s.n_docs + 1) || offsets.front() != 0 ||
        offsets.back() != static_cast<uint64_t>(s.n_tokens))
      fail(s.path, ": /doc_offsets is inconsistent with n_docs/n_tokens (corrupted file)");
    for (size_t d = 1; d < offsets.size(); ++d) all.push_back(static_cast<uint64_t>(s.first_token) + offsets[d]);
  }
  return all;
}

void read_tokens(const ShardReader& shard, int64_t offset, int64_t count, int32_t* out) {
  if (offset < 0 || count < 0 || offset + count > shard.n_tokens)
    fail(shard.path, ": token range [", offset, ", ", offset + count, ") outside [0, ", shard.n_tokens, ")");
  static_assert(sizeof(int32_t) == sizeof(uint32_t));
  // The first part that holds `offset`, then on through the parts the range spans.
  auto it = std::upper_bound(shard.parts.begin(), shard.parts.end(), offset,
                             [](int64_t o, const ShardPart& p) { return o < p.first_token; });
  size_t i = static_cast<size_t>(it - shard.parts.begin()) - 1;
  while (count > 0) {
    const ShardPart& s = shard.parts[i++];
    const int64_t local = offset - s.first_token;
    const int64_t take = std::min(count, s.n_tokens - local);
    if (take <= 0) continue;
    // HDF5 converts uint16/uint32 on disk to uint32 in memory; ids < 2^31 so int32 is the same bits.
    io::h5_read_range(s.tokens.get(), s.path + ": /tokens", static_cast<hsize_t>(local), static_cast<hsize_t>(take),
                      reinterpret_cast<uint32_t*>(out));
    out += take;
    offset += take;
    count -= take;
  }
}

}  // namespace headroom::data
