#include "analysis/report.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace headroom::analysis {
namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string md_cell(const std::string& s) {
  if (s.empty()) return "–";
  if (s.find_first_of(".eE") != std::string::npos && s.find_first_not_of("0123456789+-.eE") == std::string::npos) {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end && *end == '\0') {
      char b[32];
      std::snprintf(b, sizeof b, "%.4g", v);
      return b;
    }
  }
  std::string o;
  for (char c : s) {
    if (c == '|')
      o += "\\|";
    else if (c == '\n')
      o += "<br>";
    else
      o += c;
  }
  return o;
}

}  // namespace

std::string fmt(double v, int precision) {
  if (!std::isfinite(v)) return std::isnan(v) ? "" : (v > 0 ? "inf" : "-inf");
  char b[64];
  std::snprintf(b, sizeof b, "%.*g", precision, v);
  return b;
}

std::string fmt(const std::optional<double>& v, int precision) { return v ? fmt(*v, precision) : ""; }

std::string to_csv(const Table& t) {
  std::string out;
  for (size_t i = 0; i < t.header.size(); ++i) out.append(i ? "," : "").append(csv_field(t.header[i]));
  out += "\n";
  for (const auto& row : t.rows) {
    for (size_t i = 0; i < row.size(); ++i) out.append(i ? "," : "").append(csv_field(row[i]));
    out += "\n";
  }
  return out;
}

std::string to_markdown(const Table& t, size_t max_rows) {
  std::ostringstream s;
  s << "| ";
  for (const auto& h : t.header) s << md_cell(h) << " | ";
  s << "\n|";
  for (size_t i = 0; i < t.header.size(); ++i) s << "---|";
  s << "\n";
  for (size_t r = 0; r < t.rows.size() && r < max_rows; ++r) {
    s << "| ";
    for (const auto& c : t.rows[r]) s << md_cell(c) << " | ";
    s << "\n";
  }
  if (t.rows.empty()) s << "| (no rows) |" << std::string(t.header.size() > 1 ? t.header.size() - 1 : 0, '|') << "\n";
  if (t.rows.size() > max_rows)
    s << "\n(" << t.rows.size() - max_rows << " more rows in tables/" << t.name << ".csv)\n";
  return s.str();
}

std::string slug(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return o.empty() ? "_" : o;
}

std::string report_markdown(const Report& r, const std::string& title, const std::vector<std::string>& preamble,
                            const std::filesystem::path& plots_dir, const std::string& plot_problem) {
  std::ostringstream s;
  s << "# " << title << "\n\n";
  for (const auto& p : preamble) s << p << "\n\n";
  s << "## Not computed\n\n";
  if (r.cannot.empty()) s << "Everything asked for was computed.\n\n";
  for (const auto& c : r.cannot) s << "- " << c << "\n";
  if (!r.cannot.empty()) s << "\n";
  for (const auto& b : r.blocks) {
    switch (b.kind) {
      case Block::kHeading:
        s << "## " << b.text << "\n\n";
        break;
      case Block::kText:
        s << b.text << "\n\n";
        break;
      case Block::kTable: {
        const Table& t = r.tables[b.table];
        if (!t.title.empty()) s << "**" << t.title << "** (tables/" << t.name << ".csv)\n\n";
        s << to_markdown(t) << "\n";
        if (!t.note.empty()) s << t.note << "\n\n";
        break;
      }
      case Block::kPlot: {
        std::error_code ec;
        if (std::filesystem::exists(plots_dir / b.text, ec))
          s << "![" << b.caption << "](plots/" << b.text << ")\n\n*" << b.caption << "*\n\n";
        else
          s << "(plot " << b.text
            << " not drawn: " << (plot_problem.empty() ? "plots.py did not write it" : plot_problem) << ")\n\n";
        break;
      }
    }
  }
  return s.str();
}

}  // namespace headroom::analysis
