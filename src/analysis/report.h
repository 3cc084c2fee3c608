// The report's building blocks: tables (written as CSV under tables/ and as Markdown in report.md),
// plots (drawn by plots.py from plot_data.json), text, and the list of what could not be computed.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace headroom::analysis {

struct Table {
  std::string name;  // tables/<name>.csv
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string note;  // printed under the Markdown table
};

std::string to_csv(const Table& t);
// Empty cells print as "–", non-integer numbers with 4 significant digits (the CSV keeps 10);
// more than max_rows rows are cut (the CSV has them all).
std::string to_markdown(const Table& t, size_t max_rows = 60);

// Numbers as table cells: "" for NaN / empty.
std::string fmt(double v, int precision = 10);
std::string fmt(const std::optional<double>& v, int precision = 10);

struct Block {
  enum Kind { kHeading, kText, kTable, kPlot } kind;
  std::string text;  // heading / paragraph / plot file name (under plots/)
  std::string caption;
  size_t table = 0;  // index into Report::tables
};

struct Report {
  std::vector<Table> tables;
  std::vector<Block> blocks;
  std::vector<std::string> cannot;  // "what: why"
  nlohmann::json plot_data = nlohmann::json::object();

  void heading(const std::string& h) { blocks.push_back({Block::kHeading, h, "", 0}); }
  void text(const std::string& t) { blocks.push_back({Block::kText, t, "", 0}); }
  void table(Table t) {
    tables.push_back(std::move(t));
    blocks.push_back({Block::kTable, "", "", tables.size() - 1});
  }
  void plot(const std::string& file, const std::string& caption) { blocks.push_back({Block::kPlot, file, caption, 0}); }
  void cannot_compute(const std::string& what, const std::string& why) { cannot.push_back(what + ": " + why); }
};

// report.md text; `drawn` says which plot files exist (others are listed as not drawn with
// `plot_problem`).
std::string report_markdown(const Report& r, const std::string& title, const std::vector<std::string>& preamble,
                            const std::filesystem::path& plots_dir, const std::string& plot_problem);

// File-system-safe name fragment.
std::string slug(const std::string& s);

}  // namespace headroom::analysis
