// The prepare stage as a library: documents from files and JSONL, the document-level split, and
// the shards it writes.
#include "data/documents.h"
#include "data/prepare.h"
#include "data/tokenizer_file.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace headroom;
using namespace headroom::data;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "headroom_test_prepare" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string source_dir() {
  const char* s = std::getenv("HEADROOM_SOURCE_DIR");
  return s ? s : ".";
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

TEST(Documents, TextFilesAndJsonlLines) {
  const auto dir = scratch("docs");
  std::ofstream(dir / "a.txt") << "first document";
  std::ofstream(dir / "b.jsonl") << "{\"text\": \"second\"}\n\n{\"text\": \"third\", \"source\": \"x\"}\n";
  std::ofstream(dir / "ignored.bin") << "binary";
  fs::create_directories(dir / ".hidden");
  std::ofstream(dir / ".hidden" / "c.txt") << "hidden";
  const auto d = read_documents({dir.string()});
  ASSERT_EQ(d.texts.size(), 3u);
  EXPECT_EQ(d.texts[0], "first document");
  EXPECT_EQ(d.texts[1], "second");
  EXPECT_EQ(d.texts[2], "third");
  EXPECT_EQ(d.bytes, 14 + 6 + 5);
}

TEST(Documents, BadInputsNameTheFile) {
  const auto dir = scratch("bad");
  EXPECT_NE(error_of([&] { read_documents({(dir / "nope.txt").string()}); }).find("nope.txt"), std::string::npos);
  EXPECT_NE(error_of([&] { read_documents({}); }).find("--input"), std::string::npos);
  std::ofstream(dir / "bad.jsonl") << "{\"text\": \"ok\"}\n{\"text\": 3}\n";
  const std::string msg = error_of([&] { read_documents({(dir / "bad.jsonl").string()}); });
  EXPECT_NE(msg.find("bad.jsonl:2"), std::string::npos) << msg;
  std::ofstream(dir / "broken.jsonl") << "{\"text\": \"unterminated\n";
  EXPECT_NE(error_of([&] { read_documents({(dir / "broken.jsonl").string()}); }).find("broken.jsonl:1"),
            std::string::npos);
  std::ofstream(dir / "empty.txt") << "";
  EXPECT_NE(error_of([&] { read_documents({(dir / "empty.txt").string()}); }).find("no non-empty"), std::string::npos);
  const auto empty_dir = scratch("empty_dir");
  EXPECT_NE(error_of([&] { read_documents({empty_dir.string()}); }).find(empty_dir.string()), std::string::npos);
}

// Pieces of a JSON-lines file read every document once, in order, wherever the cuts fall: on a
// line's first byte, inside a line, on its newline, in a piece holding no line start at all.
TEST(Documents, PiecesOfAJsonlFileReadEachLineOnce) {
  const auto dir = scratch("pieces");
  std::string text;
  std::vector<std::string> want;
  for (int i = 0; i < 40; ++i) {
    const std::string doc = "doc " + std::to_string(i) + std::string(static_cast<size_t>(i * 7 % 23), 'x');
    text += "{\"text\": \"" + doc + "\"}\n";
    if (i % 9 == 4) text += "\n";  // blank lines are no documents
    want.push_back(doc);
  }
  text += "{\"text\": \"last, no newline\"}";
  want.push_back("last, no newline");
  std::ofstream(dir / "a.jsonl") << text;
  const std::vector<InputFile> whole = list_input_files({(dir / "a.jsonl").string()});
  for (int64_t piece : std::vector<int64_t>{1, 2, 3, 7, 13, 64, 1000, static_cast<int64_t>(text.size())}) {
    const std::vector<InputFile> pieces = split_into_pieces(whole, piece);
    EXPECT_EQ(static_cast<int64_t>(pieces.size()), (static_cast<int64_t>(text.size()) + piece - 1) / piece);
    std::vector<std::string> got;
    int64_t covered = 0;
    for (const InputFile& f : pieces) {
      covered += f.bytes;
      DocumentReader reader(f, 1 << 20);
      for (std::string doc; reader.next(doc);) got.push_back(doc);
    }
    EXPECT_EQ(covered, static_cast<int64_t>(text.size())) << piece;
    EXPECT_EQ(got, want) << "pieces of " << piece << " bytes";
  }
  // Compressed files and plain text stay whole.
  std::ofstream(dir / "b.txt") << std::string(100, 'y');
  const std::vector<InputFile> files = list_input_files({(dir / "b.txt").string()});
  EXPECT_EQ(split_into_pieces(files, 10).size(), 1u);
  EXPECT_EQ(split_into_pieces({{dir / "c.jsonl.gz", 100}}, 10).size(), 1u);
}

TEST(Documents, AnErrorInAPieceNamesWhereThePieceBegins) {
  const auto dir = scratch("piece_error");
  std::ofstream(dir / "a.jsonl") << "{\"text\": \"one\"}\n{\"text\": \"two\"}\n{\"text\": 3}\n";
  const std::vector<InputFile> pieces = split_into_pieces(list_input_files({(dir / "a.jsonl").string()}), 20);
  ASSERT_EQ(pieces.size(), 3u);
  const std::string msg = error_of([&] {
    DocumentReader reader(pieces[2], 1 << 20);  // bytes [29, 44): the third line, 32 onwards
    for (std::string doc; reader.next(doc);) {}
  });
  EXPECT_NE(msg.find("a.jsonl: line 1 of those that begin at byte 29 or later"), std::string::npos) << msg;
}

TEST(Prepare, SplitIsByWholeDocumentAndIndependentOfOrder) {
  std::vector<std::string> texts;
  for (int i = 0; i < 2000; ++i) texts.push_back("document number " + std::to_string(i));
  const auto split = split_validation(texts, 0.05, 9);
  const auto n_val = std::count(split.begin(), split.end(), true);
  EXPECT_GT(n_val, 60);
  EXPECT_LT(n_val, 140);
  std::vector<std::string> reversed(texts.rbegin(), texts.rend());
  const auto split_r = split_validation(reversed, 0.05, 9);
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(split[i], split_r[texts.size() - 1 - i]);
  const auto two = split_validation({"a", "b"}, 0.01, 1);
  EXPECT_NE(two[0], two[1]);
}

TEST(Prepare, ByteLevelShardsHoldEveryDocument) {
  const auto out = scratch("byte_out");
  PrepareOptions opt{{source_dir() + "/validation/data/sample_corpus/train"}, out.string(), "byte", 0, 0.1, 3};
  std::vector<std::string> lines;
  const auto sum = run_prepare(opt, "ini", [&](const std::string& l) { lines.push_back(l); });
  const auto docs = read_documents(opt.inputs);
  EXPECT_EQ(sum.train_docs + sum.val_docs, static_cast<int64_t>(docs.texts.size()));
  // Byte-level: one token per byte plus one BOS per document.
  EXPECT_EQ(sum.train_tokens + sum.val_tokens, docs.bytes + static_cast<int64_t>(docs.texts.size()));
  const auto train = open_shard(out / "train.h5", "byte");
  const auto val = open_shard(out / "val.h5", "byte");
  EXPECT_EQ(train.n_tokens, sum.train_tokens);
  EXPECT_EQ(val.n_docs, sum.val_docs);
  std::vector<int32_t> first(2);
  read_tokens(train, 0, 2, first.data());
  EXPECT_EQ(first[0], kBos);
  EXPECT_TRUE(load_tokenizer(out / "tokenizer.txt").merges.empty());
  for (const auto& e : fs::directory_iterator(out)) EXPECT_NE(e.path().extension(), ".tmp") << e.path();
}

TEST(Prepare, BpeShardsDecodeBackToTheText) {
  const auto out = scratch("bpe_out");
  PrepareOptions opt{{source_dir() + "/validation/data/sample_corpus/train"}, out.string(), "bpe", 400, 0.1, 3};
  const auto sum = run_prepare(opt, "ini", [](const std::string&) {});
  const Tokenizer tok = load_tokenizer(out / "tokenizer.txt");
  EXPECT_EQ(tokenizer_id(tok), sum.tokenizer_id);
  const auto shard = open_shard(out / "train.h5", sum.tokenizer_id);
  EXPECT_EQ(read_shard_tokenizer(shard).merges, tok.merges);
  const auto offsets = read_doc_offsets(shard);
  std::vector<int32_t> doc(offsets[1] - offsets[0]);
  read_tokens(shard, 0, static_cast<int64_t>(doc.size()), doc.data());
  const std::string text = decode(tok, doc);
  const auto docs = read_documents(opt.inputs);
  EXPECT_NE(std::find(docs.texts.begin(), docs.texts.end(), text), docs.texts.end());
  EXPECT_LT(sum.train_tokens + sum.val_tokens, docs.bytes * 3 / 4);  // BPE compresses
  // Re-encoding with the stored tokenizer file reproduces the shard exactly.
  const auto again = scratch("bpe_again");
  PrepareOptions reuse = opt;
  reuse.output = again.string();
  reuse.tokenizer = (out / "tokenizer.txt").string();
  const auto sum2 = run_prepare(reuse, "ini", [](const std::string&) {});
  EXPECT_EQ(sum2.tokenizer_id, sum.tokenizer_id);
  EXPECT_EQ(sum2.train_tokens, sum.train_tokens);
}

// Refused after the pass that counts the documents: no shard and no index are kept.
bool holds_no_shard(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".h5" || e.path().filename() == "dataset.json" || e.path().extension() == ".tmp")
      return false;
  return true;
}

TEST(Prepare, AnEmptySplitIsRefusedAndLeavesNoShard) {
  const auto in = scratch("one_doc_in"), out = scratch("one_doc_out");
  std::ofstream(in / "one.txt") << "A single short document.";
  PrepareOptions opt{{(in / "one.txt").string()}, out.string(), "bpe", 300, 0.01, 1};
  const std::string msg = error_of([&] { run_prepare(opt, "ini", [](const std::string&) {}); });
  EXPECT_NE(msg.find("needs at least 2 documents"), std::string::npos) << msg;
  EXPECT_NE(msg.find((in / "one.txt").string()), std::string::npos) << msg;
  EXPECT_TRUE(holds_no_shard(out)) << "a shard kept for a refused input";

  PrepareOptions none{{source_dir() + "/validation/data/sample_corpus/train"}, out.string(), "byte", 0, 0.0, 1};
  const std::string msg0 = error_of([&] { run_prepare(none, "ini", [](const std::string&) {}); });
  EXPECT_NE(msg0.find("--val-fraction = 0"), std::string::npos) << msg0;
  EXPECT_TRUE(holds_no_shard(out)) << "a shard kept for a refused input";
}
