#include "io/checkpoint.h"

#include "config/ini_text.h"
#include "io/atomic_file.h"
#include "io/free_space.h"
#include "io/h5.h"
#include "parallel/agree.h"
#include "parallel/comm.h"
#include "parallel/grid.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/version.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <sstream>

namespace headroom::io {
namespace fs = std::filesystem;
namespace {

using model::Shard;

std::string shape_text(const std::vector<hsize_t>& d) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < d.size(); ++i) s << (i ? "," : "") << d[i];
  s << ']';
  return s.str();
}

// The elements [a, b) of a shard's local row-major block, as at most three rectangles of the
// logical tensor: a partial first row, whole middle rows, a partial last row. [0, numel) is the
// shard itself; a ZeRO-1 range is any sub-range.
std::vector<H5Block> blocks_of_range(const model::ParamSpec& spec, const Shard& sh, int64_t a, int64_t b) {
  std::vector<H5Block> out;
  if (a >= b) return out;
  const hsize_t off = static_cast<hsize_t>(sh.axis >= 0 ? sh.offset : 0);
  if (spec.shape.size() == 1) {
    out.push_back({{off + static_cast<hsize_t>(a)}, {static_cast<hsize_t>(b - a)}});
    return out;
  }
  const int64_t C = sh.local_shape[1];
  const hsize_t row0 = sh.axis == 0 ? off : 0, col0 = sh.axis == 1 ? off : 0;
  auto rect = [&](int64_t r, int64_t rows, int64_t c, int64_t cols) {
    out.push_back({{row0 + static_cast<hsize_t>(r), col0 + static_cast<hsize_t>(c)},
                   {static_cast<hsize_t>(rows), static_cast<hsize_t>(cols)}});
  };
  int64_t r = a / C, c = a % C;
  if (c != 0) {  // partial first row
    const int64_t end = std::min(b - r * C, C);
    rect(r, 1, c, end - c);
    a = r * C + end;
    ++r;
  }
  const int64_t full_rows = (b - a) / C;
  if (full_rows > 0) rect(r, full_rows, 0, C), a += full_rows * C, r += full_rows;
  if (a < b) rect(r, 1, 0, b - a);
  return out;
}

std::vector<hsize_t> dims_of(const model::ParamSpec& spec) {
  return std::vector<hsize_t>(spec.shape.begin(), spec.shape.end());
}

// The sum of the bytes read as 32-bit words (a short tail zero-padded). Additive over whole words,
// so slices of a float tensor held by different ranks sum to the whole tensor's value.
uint64_t byte_sum(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t s = 0;
  size_t i = 0;
  for (; i + 4 <= bytes; i += 4) {
    uint32_t w;
    std::memcpy(&w, p + i, 4);
    s += w;
  }
  if (i < bytes) {
    uint32_t w = 0;
    std::memcpy(&w, p + i, bytes - i);
    s += w;
  }
  return s;
}

uint64_t bit_sum(const float* x, int64_t n) { return byte_sum(x, static_cast<size_t>(n) * sizeof(float)); }

// The attributes that say whose run a checkpoint is, as one checksum: a flipped byte in them would
// otherwise pass into every later checkpoint's lineage and configuration.
int64_t identity_checksum(const std::string& config_ini, const std::string& lineage, const std::string& tokenizer_id) {
  const std::string all = config_ini + '\0' + lineage + '\0' + tokenizer_id;
  return static_cast<int64_t>(byte_sum(all.data(), all.size()));
}

template <class T>
void check_small(const H5File& f, const std::string& ds, const std::vector<T>& v) {
  if (!h5_has_attr(f, ds, "checksum")) return;  // written before small datasets carried one
  if (static_cast<int64_t>(byte_sum(v.data(), v.size() * sizeof(T))) != h5_attr_int(f, ds, "checksum"))
    fail("checkpoint ", f.name, ": dataset ", ds, " does not match its checksum (corrupted file)");
}

template <class T>
std::vector<T> read_checked(const H5File& f, const std::string& ds) {
  std::vector<T> v = h5_read<T>(f, ds);
  check_small(f, ds, v);
  return v;
}

// Elements [a, b) of tensor i's local block, copied from an arena that starts at element `base`
// of the parameter layout (0 for parameters, the ZeRO-1 range start for optimizer moments).
std::vector<float> to_host(const model::Model<float>& m, const float* arena, int64_t base, size_t i, int64_t a,
                           int64_t b) {
  std::vector<float> h(static_cast<size_t>(std::max<int64_t>(b - a, 0)));
  if (!h.empty()) m.ops->copy_to_host(h.data(), arena + (m.offsets[i] + a - base), h.size() * sizeof(float));
  return h;
}

// Every collective HDF5 call of a write is agreed (parallel/agree.h): HDF5 returns on every rank
// when one rank's share of a collective write fails (a full disk), and a rank that then unwound
// alone would wait in H5Fclose's collective flush for ranks that are in the next collective.
void agreed(const parallel::Grid& grid, const std::function<void()>& step) { parallel::agree(*grid.world, step); }

void write_tensor(const H5File& file, const std::string& name, const model::ParamSpec& spec, const Shard& sh, int64_t a,
                  int64_t b, const std::vector<float>& data, bool writer, const parallel::Grid& grid) {
  writer = writer && a < b;
  agreed(grid,
         [&] { h5_write_blocks(file, name, dims_of(spec), blocks_of_range(spec, sh, a, b), data.data(), writer); });
  int64_t sum = writer ? static_cast<int64_t>(bit_sum(data.data(), b - a)) : 0;
  grid.world->allreduce_sum(&sum, 1);  // wraps like uint64
  agreed(grid, [&] { h5_attr(file, name, "checksum", sum); });
}

// The part [a, b) of tensor i (local block coordinates) whose moments this rank holds.
std::pair<int64_t, int64_t> moment_range(const model::Model<float>& m, const OptimizerMoments& opt, size_t i) {
  const int64_t off = m.offsets[i], n = m.shards[i].numel();
  return {std::clamp(opt.lo - off, int64_t{0}, n), std::clamp(opt.hi - off, int64_t{0}, n)};
}

// Written by one rank, its checksum attribute by all (a collective metadata write needs the same
// value everywhere: the writer's, summed with the others' zeros).
template <class T>
void write_small(const H5File& file, const std::string& name, const std::vector<T>& v, std::vector<hsize_t> dims,
                 bool writer, const parallel::Grid& grid) {
  std::vector<hsize_t> start(dims.size(), 0);
  agreed(grid, [&] { h5_write_slab(file, name, dims, start, dims, v.data(), writer); });
  int64_t sum = writer ? static_cast<int64_t>(byte_sum(v.data(), v.size() * sizeof(T))) : 0;
  grid.world->allreduce_sum(&sum, 1);
  agreed(grid, [&] { h5_attr(file, name, "checksum", sum); });
}

// [model] keys as typed attributes: numbers as numbers, the rest as strings.
void write_config_attrs(const H5File& file, const std::string& ini) {
  for (const auto& [section, key, value] : config::ini_entries(ini)) {
    if (section != "model") continue;
    char* end = nullptr;
    const long long i = std::strtoll(value.c_str(), &end, 10);
    if (!value.empty() && *end == '\0') {
      h5_attr(file, "/config", key, static_cast<int64_t>(i));
      continue;
    }
    const double d = std::strtod(value.c_str(), &end);
    if (!value.empty() && *end == '\0')
      h5_attr(file, "/config", key, d);
    else
      h5_attr(file, "/config", key, value);
  }
}

bool reserved_group(const std::string& name) {
  for (const char* g : {"model", "optimizer", "config", "state", "tokenizer"})
    if (name == g) return true;
  return false;
}

void check_part_name(const std::string& name, const std::string& file) {
  const bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
  });
  if (!ok || reserved_group(name))
    fail("checkpoint ", file, ": cannot store a part named '", name,
         "' (names are [a-z0-9_]+ and not one "
         "of model, optimizer, config, state, tokenizer)");
}

std::vector<std::string> split_list(const std::string& csv) {
  std::vector<std::string> out;
  std::stringstream in(csv);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// Version 1 kept the logged history and the spike monitor's state under /metrics; they read as the
// parts that version 2 writes for them.
std::vector<CheckpointPart> read_v1_parts(const H5File& f) {
  CheckpointPart metrics{"metrics", {}};
  for (const char* name : {"step", "loss", "grad_norm", "lr", "tokens_per_s"})
    metrics.arrays.emplace_back(name, read_checked<double>(f, std::string("/metrics/") + name));
  CheckpointPart monitor{"spike_monitor", {{"state", read_checked<double>(f, "/metrics/spike_monitor")}}};
  return {std::move(metrics), std::move(monitor)};
}

std::vector<CheckpointPart> read_parts(const H5File& f) {
  std::vector<CheckpointPart> out;
  for (const std::string& name : split_list(h5_attr_string(f, "/", "parts"))) {
    CheckpointPart part{name, {}};
    for (const std::string& array : h5_children(f, "/" + name))
      part.arrays.emplace_back(array, read_checked<double>(f, "/" + name + "/" + array));
    out.push_back(std::move(part));
  }
  return out;
}

// The same on every rank: collective attribute writes need identical values.
std::string shared_timestamp(const parallel::Grid& grid) {
  char buf[32] = {};
  const std::string now = utc_timestamp();
  std::strncpy(buf, now.c_str(), sizeof buf - 1);
  grid.world->broadcast(buf, sizeof buf, 0);
  return buf;
}

// Groups for attributes are created collectively; every rank writes the same values.
void write_attributes(const H5File& file, const CheckpointInfo& info, const OptimizerMoments* opt,
                      const std::string& part_names, const std::string& created) {
  for (const char* g : {"/config", "/state"}) {
    H5Handle grp(
        h5_check_id(H5Gcreate2(file, g, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), cat(file.name, ": ", g), "H5Gcreate"),
        H5Gclose);
  }
  write_config_attrs(file, info.config_ini);
  h5_attr(file, "/config", "config_ini", info.config_ini);
  h5_attr(file, "/config", "tokenizer_id", info.tokenizer_id);
  h5_attr(file, "/state", "samples_consumed", info.samples_consumed);
  h5_attr(file, "/state", "data_seed", static_cast<int64_t>(info.data_seed));
  h5_attr(file, "/state", "optimizer_step", opt ? opt->step : int64_t{0});
  h5_attr(file, "/", "format", std::string(kCheckpointFormat));
  h5_attr(file, "/", "format_version", kCheckpointVersion);
  h5_attr(file, "/", "stage", info.stage);
  h5_attr(file, "/", "step", info.step);
  h5_attr(file, "/", "tokens_seen", info.tokens_seen);
  h5_attr(file, "/", "created_utc", created);
  h5_attr(file, "/", "code_version", std::string(kCodeVersion));
  h5_attr(file, "/", "seed", static_cast<int64_t>(info.seed));
  h5_attr(file, "/", "lineage", info.lineage);
  h5_attr(file, "/", "parts", part_names);
  h5_attr(file, "/", "identity_checksum", identity_checksum(info.config_ini, info.lineage, info.tokenizer_id));
}

void write_file(const std::string& tmp, const parallel::Grid& grid, const model::Model<float>& m,
                const OptimizerMoments* opt, const CheckpointInfo& info) {
  H5File file;
  agreed(grid, [&] { file = h5_create_parallel_file(tmp, grid.world->handle()); });
  const bool replica_writer = grid.replica_root();
  for (size_t i = 0; i < m.specs.size(); ++i) {
    const auto& spec = m.specs[i];
    const auto& sh = m.shards[i];
    const int64_t n = sh.numel();
    write_tensor(file, "/model/" + spec.name, spec, sh, 0, n, to_host(m, m.params.get(), 0, i, 0, n),
                 replica_writer && sh.owner, grid);
    if (!opt) continue;
    // Without ZeRO-1 every DP replica holds all moments and replica 0 writes them; with it each
    // DP rank writes the slices it holds.
    const auto [a, b] = moment_range(m, *opt, i);
    const bool writer = sh.owner && (opt->zero || replica_writer);
    write_tensor(file, "/optimizer/m/" + spec.name, spec, sh, a, b, to_host(m, opt->m, opt->lo, i, a, b), writer, grid);
    write_tensor(file, "/optimizer/v/" + spec.name, spec, sh, a, b, to_host(m, opt->v, opt->lo, i, a, b), writer, grid);
  }
  const bool root = grid.is_root();
  std::string part_names;
  for (const auto& part : info.parts) {
    check_part_name(part.name, tmp);
    part_names += (part_names.empty() ? "" : ",") + part.name;
    for (const auto& [array, values] : part.arrays)
      write_small(file, "/" + part.name + "/" + array, values, {values.size()}, root, grid);
  }
  std::vector<int32_t> merges;
  for (const auto& [a, b] : info.merges) merges.insert(merges.end(), {a, b});
  write_small(file, "/tokenizer/merges", merges, {info.merges.size(), 2}, root, grid);
  if (!info.tokenizer_hf.empty()) {
    const std::vector<uint8_t> record(info.tokenizer_hf.begin(), info.tokenizer_hf.end());
    write_small(file, "/tokenizer/hf", record, {record.size()}, root, grid);
  }
  const std::string created = shared_timestamp(grid);
  // Metadata only (cached by HDF5 until the close writes it): one agreed step.
  agreed(grid, [&] { write_attributes(file, info, opt, part_names, created); });
  agreed(grid, [&] { file.close(); });
}

}  // namespace

void save_checkpoint(const fs::path& path, const parallel::Grid& grid, const model::Model<float>& model,
                     const OptimizerMoments* opt, const CheckpointInfo& info) {
  // Its params lack the GEMMs' weights (only their rounded copy exists): nothing whole to write.
  if (!model.master) fail("checkpoint ", path.string(), " not written: the model holds no master weights");
  const fs::path tmp = temp_path_for(path);
  try {
    agreed(grid, [&] {
      if (!grid.is_root()) return;
      std::error_code ec;
      fs::create_directories(path.parent_path(), ec);
      if (ec) fail(path.parent_path().string(), ": cannot create (", ec.message(), ")");
    });
    write_file(tmp.string(), grid, model, opt, info);
    agreed(grid, [&] {
      if (grid.is_root()) commit_file(tmp, path);
    });
  } catch (const parallel::CollectiveError& e) {
    // Every rank is here, the file closed by all of them: the partial file can go (after the
    // free space is read: removing it frees what it took).
    const std::string space = free_space_note(path.parent_path());
    if (grid.is_root()) discard_file(tmp);
    throw parallel::CollectiveError(
        cat("checkpoint ", path.string(), " not written: ", e.what(), space, "; the previous checkpoints are intact"));
  }
}

CheckpointInfo read_checkpoint_info(const fs::path& path) {
  CheckpointInfo c;
  c.path = path.string();
  H5File f = h5_open_file(c.path);
  const std::string format = h5_has_attr(f, "/", "format") ? h5_attr_string(f, "/", "format") : "";
  if (format != kCheckpointFormat)
    fail("checkpoint ", c.path, ": not a Headroom checkpoint (attribute format = '", format, "')");
  const int64_t version = h5_attr_int(f, "/", "format_version");
  if (version != 1 && version != kCheckpointVersion)
    fail("checkpoint ", c.path, ": format_version ", version, ", this build reads 1 and ", kCheckpointVersion);
  c.stage = h5_attr_string(f, "/", "stage");
  c.step = h5_attr_int(f, "/", "step");
  c.tokens_seen = h5_attr_int(f, "/", "tokens_seen");
  c.seed = static_cast<uint64_t>(h5_attr_int(f, "/", "seed"));
  c.lineage = h5_attr_string(f, "/", "lineage");
  c.config_ini = h5_attr_string(f, "/config", "config_ini");
  c.tokenizer_id = h5_attr_string(f, "/config", "tokenizer_id");
  c.samples_consumed = h5_attr_int(f, "/state", "samples_consumed");
  c.data_seed = static_cast<uint64_t>(h5_attr_int(f, "/state", "data_seed"));
  c.optimizer_step = h5_attr_int(f, "/state", "optimizer_step");
  if (h5_has_attr(f, "/", "identity_checksum") &&
      h5_attr_int(f, "/", "identity_checksum") != identity_checksum(c.config_ini, c.lineage, c.tokenizer_id))
    fail("checkpoint ", c.path,
         ": the attributes config_ini, lineage and tokenizer_id do not match their checksum (corrupted file)");
  const auto merges = read_checked<int32_t>(f, "/tokenizer/merges");
  for (size_t i = 0; i + 1 < merges.size(); i += 2) c.merges.emplace_back(merges[i], merges[i + 1]);
  if (h5_exists(f, "/tokenizer/hf")) {
    const auto record = read_checked<uint8_t>(f, "/tokenizer/hf");
    c.tokenizer_hf.assign(record.begin(), record.end());
  }
  c.parts = version == 1 ? read_v1_parts(f) : read_parts(f);
  return c;
}

void load_checkpoint_tensors(const fs::path& path, model::Model<float>& m, OptimizerMoments* opt) {
  const std::string p = path.string();
  H5File f = h5_open_file(p);
  std::vector<float> host;
  // Reads elements [a, b) of tensor i into `host` and checks the tensor's checksum over the ranks
  // in `comms`.
  auto read = [&](const std::string& group, size_t i, int64_t a, int64_t b,
                  std::initializer_list<parallel::Comm*> comms) {
    const auto& spec = m.specs[i];
    const std::string ds = group + spec.name;
    if (!h5_exists(f, ds))
      fail("checkpoint ", p, ": dataset ", ds, " is missing (the configuration needs it: ", "another architecture?)");
    const auto have = h5_shape(f, ds);
    if (have != dims_of(spec))
      fail("checkpoint ", p, ": dataset ", ds, " has shape ", shape_text(have), ", config needs ",
           shape_text(dims_of(spec)));
    host.resize(static_cast<size_t>(std::max<int64_t>(b - a, 0)));
    h5_read_blocks(f, ds, blocks_of_range(spec, m.shards[i], a, b), host.data());
    // The owners of each slice together hold every element once, whatever the layout.
    int64_t sum = m.shards[i].owner ? static_cast<int64_t>(bit_sum(host.data(), b - a)) : 0;
    for (parallel::Comm* c : comms)
      if (c) c->allreduce_sum(&sum, 1);
    if (sum != h5_attr_int(f, ds, "checksum"))
      fail("checkpoint ", p, ": dataset ", ds, " does not match its checksum (corrupted file)");
  };
  // Elements [a, b) of tensor i into a moment arena whose first element is element `base` of the
  // parameter layout.
  auto to_arena = [&](float* arena, int64_t base, size_t i, int64_t a) {
    if (!host.empty())
      m.ops->copy_from_host(arena + (m.offsets[i] + a - base), host.data(), host.size() * sizeof(float));
  };
  for (size_t i = 0; i < m.specs.size(); ++i) {
    const int64_t n = m.shards[i].numel();
    read("/model/", i, 0, n, {m.tp.comm});
    model::write_weights(m, i, host.data(), 0, n);
    if (!opt) continue;
    const auto [a, b] = moment_range(m, *opt, i);
    read("/optimizer/m/", i, a, b, {m.tp.comm, opt->zero});
    to_arena(opt->m, opt->lo, i, a);
    read("/optimizer/v/", i, a, b, {m.tp.comm, opt->zero});
    to_arena(opt->v, opt->lo, i, a);
  }
  if (opt) opt->step = h5_attr_int(f, "/state", "optimizer_step");
  model::weights_changed(m);
}

const std::vector<double>& CheckpointPart::at(const std::string& array) const {
  for (const auto& [n, values] : arrays)
    if (n == array) return values;
  fail("checkpoint part '", name, "' has no array '", array, "'");
}

const CheckpointPart* CheckpointInfo::part(const std::string& name) const {
  for (const auto& p : parts)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace headroom::io
