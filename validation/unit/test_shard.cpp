// Token shards: written atomically, read back exactly, refused when made by another tokenizer or
// damaged; HDF5 errors, writers' included, name the file and the object.
#include "data/shard.h"
#include "io/h5.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace headroom;
using namespace headroom::data;
namespace fs = std::filesystem;

namespace {

fs::path tmp(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "headroom_test_shard";
  fs::create_directories(dir);
  return dir / name;
}

ShardContents sample(uint32_t max_id) {
  ShardContents c;
  for (uint32_t i = 0; i < 1000; ++i) c.tokens.push_back((i * 7919u) % max_id);
  c.doc_offsets = {0, 10, 500, 1000};
  c.n_bytes = 1234;
  return c;
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Shard, ByteShardRoundTrip) {
  const auto path = tmp("byte.h5");
  const auto c = sample(259);
  write_shard(path, c, Tokenizer{}, ShardMeta{"train", "[x]\na = 1\n"});
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
  const auto s = open_shard(path, "byte");
  EXPECT_EQ(s.n_tokens, 1000);
  EXPECT_EQ(s.n_docs, 3);
  EXPECT_EQ(s.vocab_size, 259);
  EXPECT_EQ(read_doc_offsets(s), c.doc_offsets);
  std::vector<int32_t> all(1000);
  read_tokens(s, 0, 1000, all.data());
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(static_cast<uint32_t>(all[i]), c.tokens[i]);
  std::vector<int32_t> part(5);
  read_tokens(s, 995, 5, part.data());
  EXPECT_EQ(static_cast<uint32_t>(part[4]), c.tokens[999]);
  EXPECT_TRUE(read_shard_tokenizer(s).merges.empty());
  EXPECT_NE(error_of([&] { read_tokens(s, 996, 5, part.data()); }).find("outside"), std::string::npos);
}

TEST(Shard, LargeVocabularyUsesUint32AndKeepsMerges) {
  // 70000 ids do not fit uint16; the stored tokenizer must come back identical.
  Tokenizer tok;
  for (int32_t i = 0; i < 70000 - kFirstMerge; ++i) tok.merges.emplace_back(65 + i % 3, 66);
  ShardContents c = sample(70000);
  c.tokens[3] = 69999;
  const auto path = tmp("bpe.h5");
  write_shard(path, c, tok, ShardMeta{"val", ""});
  const auto s = open_shard(path, tokenizer_id(tok));
  std::vector<int32_t> t(4);
  read_tokens(s, 0, 4, t.data());
  EXPECT_EQ(t[3], 69999);
  EXPECT_EQ(read_shard_tokenizer(s).merges, tok.merges);
}

TEST(Shard, WrongTokenizerIsRefusedNamingBoth) {
  const auto path = tmp("byte2.h5");
  write_shard(path, sample(259), Tokenizer{}, ShardMeta{"train", ""});
  const std::string msg = error_of([&] { open_shard(path, "bpe512-0123456789abcdef"); });
  EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("'byte'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bpe512-0123456789abcdef"), std::string::npos) << msg;
}

TEST(Shard, TruncatedOrForeignFilesGiveClearErrors) {
  const auto path = tmp("trunc.h5");
  write_shard(path, sample(259), Tokenizer{}, ShardMeta{"train", ""});
  const auto full = fs::file_size(path);
  fs::resize_file(path, full / 2);
  const std::string cut = error_of([&] { open_shard(path); });
  EXPECT_NE(cut.find(path.string()), std::string::npos) << cut;
  EXPECT_NE(cut.find(cat("truncated: ", full / 2, " bytes of the ", full, " its superblock records")),
            std::string::npos)
      << cut;
  fs::resize_file(path, 20);  // inside the superblock itself
  EXPECT_NE(error_of([&] { open_shard(path); }).find("truncated or corrupted: 20 bytes"), std::string::npos);
  fs::resize_file(path, 0);
  EXPECT_NE(error_of([&] { open_shard(path); }).find("empty"), std::string::npos);

  const auto text = tmp("not_h5.h5");
  std::ofstream(text) << "hello";
  const std::string msg = error_of([&] { open_shard(text); });
  EXPECT_NE(msg.find("not a readable HDF5 file"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { open_shard(tmp("missing.h5")); }).find("missing.h5"), std::string::npos);
}

TEST(Shard, FailedWriteLeavesNoFile) {
  const fs::path path = fs::path("/proc/headroom_no_such_dir") / "x.h5";
  EXPECT_THROW(write_shard(path, sample(259), Tokenizer{}, ShardMeta{"train", ""}), Error);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST(H5, WriterErrorsNameTheFileAndTheObject) {
  const io::H5File f = io::h5_create_memory_file("writer_errors.h5");
  const int64_t one = 1;
  io::h5_write(f, "/a", &one, {1});
  const std::string twice = error_of([&] { io::h5_write(f, "/a", &one, {1}); });
  EXPECT_NE(twice.find("writer_errors.h5: /a"), std::string::npos) << twice;
  const std::string attr = error_of([&] { io::h5_attr(f, "/no_such_group", "x", one); });
  EXPECT_NE(attr.find("writer_errors.h5: /no_such_group@x"), std::string::npos) << attr;
}
