// prepare's streaming parts: compressed inputs, refusals of bad input naming the file, shards of a
// bounded size read back as one stream, and a rerun after an interrupted one.
#include "data/dataset.h"
#include "data/documents.h"
#include "data/prepare.h"
#include "util/error.h"

#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>

using namespace headroom;
using namespace headroom::data;
namespace fs = std::filesystem;

namespace {

fs::path scratch_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "headroom_test_prepare_stream" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

template <class F>
std::string error_text(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// n distinct documents of about `bytes` each, as JSON lines.
std::string jsonl(int n, int bytes) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    std::string text = "Document " + std::to_string(i) + ".";
    while (static_cast<int>(text.size()) < bytes) text += " the quick brown fox " + std::to_string(i * 7 % 13);
    out += "{\"text\": \"" + text + "\"}\n";
  }
  return out;
}

void write_text(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

void write_gz(const fs::path& p, const std::string& s) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_TRUE(f);
  ASSERT_EQ(gzwrite(f, s.data(), static_cast<unsigned>(s.size())), static_cast<int>(s.size()));
  gzclose(f);
}

void write_zst(const fs::path& p, const std::string& s) {
  std::string out(ZSTD_compressBound(s.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), s.data(), s.size(), 3);
  ASSERT_FALSE(ZSTD_isError(n));
  out.resize(n);
  write_text(p, out);
}

std::vector<int32_t> all_tokens(const ShardReader& r) {
  std::vector<int32_t> t(static_cast<size_t>(r.n_tokens));
  read_tokens(r, 0, r.n_tokens, t.data());
  return t;
}

}  // namespace

TEST(PrepareStream, CompressedInputsReadAsThePlainFile) {
  const auto dir = scratch_dir("compressed");
  const std::string text = jsonl(50, 300);
  write_text(dir / "a.jsonl", text);
  write_gz(dir / "b.jsonl.gz", text);
  write_zst(dir / "c.jsonl.zst", text);
  const auto plain = read_documents({(dir / "a.jsonl").string()});
  EXPECT_EQ(plain.texts.size(), 50u);
  EXPECT_EQ(read_documents({(dir / "b.jsonl.gz").string()}).texts, plain.texts);
  EXPECT_EQ(read_documents({(dir / "c.jsonl.zst").string()}).texts, plain.texts);
}

TEST(PrepareStream, BadInputIsRefusedNamingTheFile) {
  const auto dir = scratch_dir("bad");
  const std::string text = jsonl(200, 300);
  write_gz(dir / "whole.jsonl.gz", text);
  std::string gz;
  {
    std::ifstream f(dir / "whole.jsonl.gz", std::ios::binary);
    gz.assign(std::istreambuf_iterator<char>(f), {});
  }
  write_text(dir / "cut.jsonl.gz", gz.substr(0, gz.size() / 2));
  std::string msg = error_text([&] { read_documents({(dir / "cut.jsonl.gz").string()}); });
  EXPECT_NE(msg.find("cut.jsonl.gz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;

  std::string zst(ZSTD_compressBound(text.size()), '\0');
  zst.resize(ZSTD_compress(zst.data(), zst.size(), text.data(), text.size(), 3));
  write_text(dir / "cut.jsonl.zst", zst.substr(0, zst.size() / 2));
  msg = error_text([&] { read_documents({(dir / "cut.jsonl.zst").string()}); });
  EXPECT_NE(msg.find("cut.jsonl.zst"), std::string::npos) << msg;

  write_text(dir / "latin1.txt", "caf\xe9 au lait\n");
  msg = error_text([&] { read_documents({(dir / "latin1.txt").string()}); });
  EXPECT_NE(msg.find("latin1.txt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not UTF-8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("byte 3"), std::string::npos) << msg;

  write_text(dir / "long.jsonl", "{\"text\": \"short\"}\n" + std::string(3 << 20, 'x'));
  msg = error_text([&] { read_documents({(dir / "long.jsonl").string()}, 1 << 20); });
  EXPECT_NE(msg.find("long.jsonl:2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("without a newline"), std::string::npos) << msg;

  fs::create_directories(dir / "empty");
  msg = error_text([&] { read_documents({(dir / "empty").string()}); });
  EXPECT_NE(msg.find((dir / "empty").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("holds no"), std::string::npos) << msg;

  write_text(dir / "plain.jsonl.gz", text);  // named .gz, not compressed
  msg = error_text([&] { read_documents({(dir / "plain.jsonl.gz").string()}); });
  EXPECT_NE(msg.find("plain.jsonl.gz"), std::string::npos) << msg;
}

// Shards of 1 MiB hold the same stream, document offsets included, as one shard does; one rank
// keeps the input order, so the concatenation is token for token the single shard.
TEST(PrepareStream, BoundedShardsReadAsOneStream) {
  const auto in = scratch_dir("bounded_in");
  for (int f = 0; f < 3; ++f) write_text(in / ("p" + std::to_string(f) + ".jsonl"), jsonl(400, 1500 + f));
  PrepareOptions opt{{in.string()}, scratch_dir("bounded_one").string(), "byte", 0, 0.05, 2};
  opt.batch_mib = 1;
  const auto one = run_prepare(opt, "ini", [](const std::string&) {});
  opt.output = scratch_dir("bounded_many").string();
  opt.shard_mib = 1;
  const auto many = run_prepare(opt, "ini", [](const std::string&) {});
  EXPECT_EQ(one.train_shards, 1);
  EXPECT_GE(many.train_shards, 3);
  EXPECT_EQ(many.train_tokens, one.train_tokens);
  EXPECT_EQ(many.val_docs, one.val_docs);
  const auto a = open_dataset(opt.output, "train"),
             b = open_dataset(fs::path(opt.output).parent_path() / "bounded_one", "train");
  EXPECT_EQ(static_cast<int64_t>(a.parts.size()), many.train_shards);
  for (const auto& p : a.parts) EXPECT_LE(p.n_tokens * 2, (int64_t{1} << 20) + 2 * 1600) << p.path;
  EXPECT_EQ(all_tokens(a), all_tokens(b));
  EXPECT_EQ(read_doc_offsets(a), read_doc_offsets(b));
  // A window that spans two shards reads across them.
  const int64_t edge = a.parts[1].first_token;
  std::vector<int32_t> w(64), ref(64);
  read_tokens(a, edge - 32, 64, w.data());
  read_tokens(b, edge - 32, 64, ref.data());
  EXPECT_EQ(w, ref);
  EXPECT_EQ(read_dataset_index(fs::path(opt.output) / "dataset.json").train.size(), a.parts.size());
}

// A run that stopped leaves partial/ and, after --force, the old shards: a rerun keeps neither.
TEST(PrepareStream, ARerunStartsOverWithoutStaleShards) {
  const auto in = scratch_dir("rerun_in");
  write_text(in / "a.jsonl", jsonl(100, 500));
  const auto out = scratch_dir("rerun_out");
  fs::create_directories(out / "partial");
  write_text(out / "partial" / "train-00003-00000.h5", "half");
  write_text(out / "train-00000-00007.h5", "stale");
  PrepareOptions opt{{in.string()}, out.string(), "byte", 0, 0.05, 2};
  run_prepare(opt, "ini", [](const std::string&) {});
  EXPECT_FALSE(fs::exists(out / "partial"));
  EXPECT_FALSE(fs::exists(out / "train-00000-00007.h5"));
  EXPECT_TRUE(fs::exists(out / "train.h5"));
  EXPECT_EQ(open_dataset(out, "train").n_docs + open_dataset(out, "val").n_docs, 100);
}
