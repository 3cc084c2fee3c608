#include "io/h5.h"

#include "io/h5_superblock.h"

#include "util/error.h"

#include <algorithm>

namespace headroom::io {
namespace {

template <class T>
hid_t native_type();
template <>
hid_t native_type<float>() {
  return H5T_NATIVE_FLOAT;
}
template <>
hid_t native_type<double>() {
  return H5T_NATIVE_DOUBLE;
}
template <>
hid_t native_type<int32_t>() {
  return H5T_NATIVE_INT32;
}
template <>
hid_t native_type<uint8_t>() {
  return H5T_NATIVE_UINT8;
}
template <>
hid_t native_type<uint16_t>() {
  return H5T_NATIVE_UINT16;
}
template <>
hid_t native_type<uint32_t>() {
  return H5T_NATIVE_UINT32;
}
template <>
hid_t native_type<int64_t>() {
  return H5T_NATIVE_INT64;
}
template <>
hid_t native_type<uint64_t>() {
  return H5T_NATIVE_UINT64;
}

std::string at(const std::string& file_name, const std::string& object) { return cat(file_name, ": ", object); }

H5Handle open_attr(const H5File& file, const std::string& object, const std::string& name) {
  if (!h5_has_attr(file, object, name)) fail(file.name, ": attribute '", name, "' missing on ", object);
  return H5Handle(h5_check_id(H5Aopen_by_name(file, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                              at(file.name, object + "@" + name), "H5Aopen"),
                  H5Aclose);
}

template <class T>
void write_scalar_attr(const H5File& file, const std::string& object, const std::string& name, const T& value) {
  const std::string where = at(file.name, object + "@" + name);
  H5Handle space(h5_check_id(H5Screate(H5S_SCALAR), where, "H5Screate"), H5Sclose);
  if (h5_has_attr(file, object, name))
    h5_check(H5Adelete_by_name(file, object.c_str(), name.c_str(), H5P_DEFAULT), where, "H5Adelete");
  H5Handle attr(h5_check_id(H5Acreate_by_name(file, object.c_str(), name.c_str(), native_type<T>(), space, H5P_DEFAULT,
                                              H5P_DEFAULT, H5P_DEFAULT),
                            where, "H5Acreate"),
                H5Aclose);
  h5_check(H5Awrite(attr, native_type<T>(), &value), where, "H5Awrite");
}

}  // namespace

H5Handle& H5Handle::operator=(H5Handle&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = o.id_;
    close_ = o.close_;
    o.id_ = H5I_INVALID_HID;
  }
  return *this;
}

void H5Handle::reset() {
  if (id_ >= 0 && close_) close_(id_);
  id_ = H5I_INVALID_HID;
}

void H5Handle::close(const std::string& what) {
  if (id_ < 0) return;
  const herr_t rc = close_(id_);
  id_ = H5I_INVALID_HID;
  h5_check(rc, what, "close");
}

void h5_quiet() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

namespace {

// The operating system's or MPI's reason on HDF5's error stack ("No space left on device", "Disk
// quota exceeded"), quoted there by the file drivers; "" when the stack has none.
std::string h5_error_cause() {
  std::string cause;
  auto visit = [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
    if (!e->desc) return 0;
    const std::string desc = e->desc;
    for (const char* tag : {"MPI error string is '", "error message = '"}) {
      const size_t at = desc.find(tag);
      if (at == std::string::npos) continue;
      const size_t from = at + std::string(tag).size(), to = desc.find('\'', from);
      *static_cast<std::string*>(data) = desc.substr(from, to == std::string::npos ? to : to - from);
    }
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, visit, &cause);
  H5Eclear2(H5E_DEFAULT);
  return cause.empty() ? "" : " (" + cause + ")";
}

}  // namespace

void h5_check(herr_t rc, const std::string& where, const char* what) {
  if (rc < 0) fail(where, ": HDF5 ", what, " failed", h5_error_cause());
}

hid_t h5_check_id(hid_t id, const std::string& where, const char* what) {
  if (id < 0) fail(where, ": HDF5 ", what, " failed", h5_error_cause());
  return id;
}

H5File h5_create_file(const std::string& path) {
  h5_quiet();
  return H5File{H5Handle(h5_check_id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), path,
                                     "create (is the directory writable?)"),
                         H5Fclose),
                path};
}

H5File h5_open_file(const std::string& path) {
  h5_quiet();
#if H5_VERSION_GE(1, 12, 0)
  const htri_t ok = H5Fis_accessible(path.c_str(), H5P_DEFAULT);
#else
  const htri_t ok = H5Fis_hdf5(path.c_str());
#endif
  if (ok <= 0) fail(h5_unreadable(path));
  // HDF5 1.10 checks only the signature above; a truncated file fails here, and HDF5's own
  // message ("open failed") says nothing about why.
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) fail(h5_unreadable(path));
  return H5File{H5Handle(file, H5Fclose), path};
}

H5File h5_create_memory_file(const std::string& name) {
  h5_quiet();
  H5Handle fapl(h5_check_id(H5Pcreate(H5P_FILE_ACCESS), name, "H5Pcreate"), H5Pclose);
  h5_check(H5Pset_fapl_core(fapl, std::size_t{1} << 22, /*backing_store=*/0), name, "H5Pset_fapl_core");
  return H5File{
      H5Handle(h5_check_id(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), name, "create (in memory)"),
               H5Fclose),
      name};
}

H5File h5_create_parallel_file(const std::string& path, MPI_Comm comm) {
  h5_quiet();
  H5Handle fapl(h5_check_id(H5Pcreate(H5P_FILE_ACCESS), path, "H5Pcreate"), H5Pclose);
  h5_check(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL), path, "H5Pset_fapl_mpio");
  return H5File{H5Handle(h5_check_id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), path,
                                     "create (parallel; is the directory writable?)"),
                         H5Fclose),
                path};
}

static hsize_t select_blocks(hid_t space, const std::vector<H5Block>& blocks, const std::string& where) {
  hsize_t n = 0;
  bool first = true;
  for (const auto& blk : blocks) {
    hsize_t size = 1;
    for (hsize_t c : blk.count) size *= c;
    if (size == 0) continue;
    h5_check(H5Sselect_hyperslab(space, first ? H5S_SELECT_SET : H5S_SELECT_OR, blk.start.data(), nullptr,
                                 blk.count.data(), nullptr),
             where, "H5Sselect_hyperslab");
    first = false;
    n += size;
  }
  if (first) h5_check(H5Sselect_none(space), where, "H5Sselect_none");
  return n;
}

template <class T>
void h5_write_blocks(const H5File& file, const std::string& name, const std::vector<hsize_t>& dims,
                     const std::vector<H5Block>& blocks, const T* data, bool participate) {
  const std::string where = at(file.name, name);
  const int rank = static_cast<int>(dims.size());
  H5Handle lcpl(h5_check_id(H5Pcreate(H5P_LINK_CREATE), where, "H5Pcreate"), H5Pclose);
  h5_check(H5Pset_create_intermediate_group(lcpl, 1), where, "H5Pset_create_intermediate_group");
  H5Handle space(h5_check_id(H5Screate_simple(rank, dims.data(), nullptr), where, "H5Screate_simple"), H5Sclose);
  H5Handle ds(h5_check_id(H5Dcreate2(file, name.c_str(), native_type<T>(), space, lcpl, H5P_DEFAULT, H5P_DEFAULT),
                          where, "H5Dcreate"),
              H5Dclose);
  hsize_t total = 1;
  for (hsize_t d : dims) total *= d;
  if (total == 0) return;  // an empty dataset has nothing to write (and MPI-IO rejects the try)
  H5Handle file_space(h5_check_id(H5Dget_space(ds), where, "H5Dget_space"), H5Sclose);
  hsize_t n = participate ? select_blocks(file_space, blocks, where) : 0;
  if (!participate) h5_check(H5Sselect_none(file_space), where, "H5Sselect_none");
  const hsize_t mem_n = std::max<hsize_t>(n, 1);
  H5Handle mem_space(h5_check_id(H5Screate_simple(1, &mem_n, nullptr), where, "H5Screate_simple"), H5Sclose);
  if (n == 0) h5_check(H5Sselect_none(mem_space), where, "H5Sselect_none");
  H5Handle dxpl(h5_check_id(H5Pcreate(H5P_DATASET_XFER), where, "H5Pcreate"), H5Pclose);
  h5_check(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), where, "H5Pset_dxpl_mpio");
  h5_check(H5Dwrite(ds, native_type<T>(), mem_space, file_space, dxpl, data), where,
           "collective H5Dwrite (disk full?)");
}

template <class T>
void h5_write_slab(const H5File& file, const std::string& name, const std::vector<hsize_t>& dims,
                   const std::vector<hsize_t>& start, const std::vector<hsize_t>& count, const T* data,
                   bool participate) {
  h5_write_blocks(file, name, dims, {H5Block{start, count}}, data, participate);
}

template <class T>
void h5_read_blocks(const H5File& file, const std::string& name, const std::vector<H5Block>& blocks, T* out) {
  const std::string where = at(file.name, name);
  if (!h5_exists(file, name)) fail(where, " does not exist");
  H5Handle ds(h5_check_id(H5Dopen2(file, name.c_str(), H5P_DEFAULT), where, "H5Dopen"), H5Dclose);
  H5Handle file_space(h5_check_id(H5Dget_space(ds), where, "H5Dget_space"), H5Sclose);
  const hsize_t n = select_blocks(file_space, blocks, where);
  if (n == 0) return;
  H5Handle mem(h5_check_id(H5Screate_simple(1, &n, nullptr), where, "H5Screate_simple"), H5Sclose);
  h5_check(H5Dread(ds, native_type<T>(), mem, file_space, H5P_DEFAULT, out), where,
           "H5Dread (truncated or corrupted file?)");
}

template <class T>
void h5_read_slab(const H5File& file, const std::string& name, const std::vector<hsize_t>& start,
                  const std::vector<hsize_t>& count, T* out) {
  h5_read_blocks(file, name, {H5Block{start, count}}, out);
}

std::string h5_file_image(const H5File& file) {
  h5_check(H5Fflush(file, H5F_SCOPE_GLOBAL), file.name, "H5Fflush");
  const ssize_t size = H5Fget_file_image(file, nullptr, 0);
  if (size < 0) fail(file.name, ": HDF5 H5Fget_file_image failed");
  std::string image(static_cast<size_t>(size), '\0');
  if (H5Fget_file_image(file, image.data(), image.size()) != size)
    fail(file.name, ": HDF5 H5Fget_file_image returned a different size");
  return image;
}

bool h5_exists(hid_t file, const std::string& path) {
  if (path == "/") return true;
  // H5Lexists needs every parent to exist, so walk the path one link at a time.
  std::string prefix;
  size_t pos = 0;
  while (pos < path.size()) {
    size_t next = path.find('/', pos + 1);
    if (next == std::string::npos) next = path.size();
    prefix = path.substr(0, next);
    if (!prefix.empty() && prefix != "/" && H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    pos = next;
  }
  return true;
}

std::vector<std::string> h5_children(const H5File& file, const std::string& group) {
  const std::string where = at(file.name, group);
  H5Handle g(h5_check_id(H5Gopen2(file, group.c_str(), H5P_DEFAULT), where, "H5Gopen"), H5Gclose);
  std::vector<std::string> out;
  auto collect = [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
  };
  h5_check(H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &out), where, "H5Literate");
  return out;
}

template <class T>
void h5_write(const H5File& file, const std::string& name, const T* data, const std::vector<hsize_t>& dims) {
  const std::string where = at(file.name, name);
  H5Handle lcpl(h5_check_id(H5Pcreate(H5P_LINK_CREATE), where, "H5Pcreate"), H5Pclose);
  h5_check(H5Pset_create_intermediate_group(lcpl, 1), where, "H5Pset_create_intermediate_group");
  H5Handle space(
      h5_check_id(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), where, "H5Screate_simple"),
      H5Sclose);
  H5Handle ds(h5_check_id(H5Dcreate2(file, name.c_str(), native_type<T>(), space, lcpl, H5P_DEFAULT, H5P_DEFAULT),
                          where, "H5Dcreate"),
              H5Dclose);
  h5_check(H5Dwrite(ds, native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data), where, "H5Dwrite (disk full?)");
}

int64_t h5_reserve_contiguous(const H5File& file, const std::string& name, hid_t file_type, hsize_t n) {
  const std::string where = at(file.name, name);
  H5Handle dcpl(h5_check_id(H5Pcreate(H5P_DATASET_CREATE), where, "H5Pcreate"), H5Pclose);
  h5_check(H5Pset_layout(dcpl, H5D_CONTIGUOUS), where, "H5Pset_layout");
  h5_check(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY), where, "H5Pset_alloc_time");
  h5_check(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), where, "H5Pset_fill_time");
  H5Handle space(h5_check_id(H5Screate_simple(1, &n, nullptr), where, "H5Screate_simple"), H5Sclose);
  H5Handle ds(
      h5_check_id(H5Dcreate2(file, name.c_str(), file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), where, "H5Dcreate"),
      H5Dclose);
  if (n == 0) return 0;
  const haddr_t offset = H5Dget_offset(ds);
  if (offset == HADDR_UNDEF) fail(where, ": H5Dget_offset found no storage");
  return static_cast<int64_t>(offset);
}

std::vector<hsize_t> h5_shape(const H5File& file, const std::string& name) {
  const std::string where = at(file.name, name);
  if (!h5_exists(file, name)) fail(where, " does not exist");
  H5Handle ds(h5_check_id(H5Dopen2(file, name.c_str(), H5P_DEFAULT), where, "H5Dopen"), H5Dclose);
  H5Handle space(h5_check_id(H5Dget_space(ds), where, "H5Dget_space"), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) fail(where, ": cannot read its rank");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  h5_check(H5Sget_simple_extent_dims(space, dims.data(), nullptr), where, "H5Sget_simple_extent_dims");
  return dims;
}

template <class T>
std::vector<T> h5_read(const H5File& file, const std::string& name) {
  const std::string where = at(file.name, name);
  hsize_t n = 1;
  for (hsize_t d : h5_shape(file, name)) n *= d;
  H5Handle ds(h5_check_id(H5Dopen2(file, name.c_str(), H5P_DEFAULT), where, "H5Dopen"), H5Dclose);
  std::vector<T> out(n);
  if (n > 0) h5_check(H5Dread(ds, native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), where, "H5Dread");
  return out;
}

template <class T>
void h5_read_range(hid_t dataset, const std::string& where, hsize_t offset, hsize_t count, T* out) {
  H5Handle file_space(h5_check_id(H5Dget_space(dataset), where, "H5Dget_space"), H5Sclose);
  h5_check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &offset, nullptr, &count, nullptr), where,
           "H5Sselect_hyperslab");
  H5Handle mem_space(h5_check_id(H5Screate_simple(1, &count, nullptr), where, "H5Screate_simple"), H5Sclose);
  h5_check(H5Dread(dataset, native_type<T>(), mem_space, file_space, H5P_DEFAULT, out), where, "H5Dread");
}

void h5_attr(const H5File& file, const std::string& object, const std::string& name, const std::string& value) {
  const std::string where = at(file.name, object + "@" + name);
  H5Handle type(h5_check_id(H5Tcopy(H5T_C_S1), where, "H5Tcopy"), H5Tclose);
  h5_check(H5Tset_size(type, H5T_VARIABLE), where, "H5Tset_size");
  h5_check(H5Tset_cset(type, H5T_CSET_UTF8), where, "H5Tset_cset");
  H5Handle space(h5_check_id(H5Screate(H5S_SCALAR), where, "H5Screate"), H5Sclose);
  if (h5_has_attr(file, object, name))
    h5_check(H5Adelete_by_name(file, object.c_str(), name.c_str(), H5P_DEFAULT), where, "H5Adelete");
  H5Handle attr(h5_check_id(H5Acreate_by_name(file, object.c_str(), name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT,
                                              H5P_DEFAULT),
                            where, "H5Acreate"),
                H5Aclose);
  const char* text = value.c_str();
  h5_check(H5Awrite(attr, type, &text), where, "H5Awrite");
}

void h5_attr(const H5File& file, const std::string& object, const std::string& name, int64_t value) {
  write_scalar_attr(file, object, name, value);
}

void h5_attr(const H5File& file, const std::string& object, const std::string& name, double value) {
  write_scalar_attr(file, object, name, value);
}

bool h5_has_attr(hid_t file, const std::string& object, const std::string& name) {
  return h5_exists(file, object) && H5Aexists_by_name(file, object.c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

std::string h5_attr_string(const H5File& file, const std::string& object, const std::string& name) {
  H5Handle attr = open_attr(file, object, name);
  const std::string where = at(file.name, object + "@" + name);
  H5Handle type(h5_check_id(H5Aget_type(attr), where, "H5Aget_type"), H5Tclose);
  if (H5Tget_class(type) != H5T_STRING) fail(where, " is not a string");
  if (H5Tis_variable_str(type) > 0) {
    // Written by h5py: variable-length string.
    char* value = nullptr;
    H5Handle mem(h5_check_id(H5Tget_native_type(type, H5T_DIR_ASCEND), where, "type"), H5Tclose);
    h5_check(H5Aread(attr, mem, &value), where, "H5Aread");
    std::string out = value ? value : "";
    H5free_memory(value);
    return out;
  }
  const size_t size = H5Tget_size(type);
  std::string out(size, '\0');
  h5_check(H5Aread(attr, type, out.data()), where, "H5Aread");
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

int64_t h5_attr_int(const H5File& file, const std::string& object, const std::string& name) {
  H5Handle attr = open_attr(file, object, name);
  int64_t v = 0;
  h5_check(H5Aread(attr, H5T_NATIVE_INT64, &v), at(file.name, object + "@" + name), "H5Aread");
  return v;
}

double h5_attr_double(const H5File& file, const std::string& object, const std::string& name) {
  H5Handle attr = open_attr(file, object, name);
  double v = 0;
  h5_check(H5Aread(attr, H5T_NATIVE_DOUBLE, &v), at(file.name, object + "@" + name), "H5Aread");
  return v;
}

#define HEADROOM_H5_INSTANTIATE(T)                                                                          \
  template void h5_write<T>(const H5File&, const std::string&, const T*, const std::vector<hsize_t>&);      \
  template std::vector<T> h5_read<T>(const H5File&, const std::string&);                                    \
  template void h5_read_range<T>(hid_t, const std::string&, hsize_t, hsize_t, T*);                          \
  template void h5_write_slab<T>(const H5File&, const std::string&, const std::vector<hsize_t>&,            \
                                 const std::vector<hsize_t>&, const std::vector<hsize_t>&, const T*, bool); \
  template void h5_read_slab<T>(const H5File&, const std::string&, const std::vector<hsize_t>&,             \
                                const std::vector<hsize_t>&, T*);                                           \
  template void h5_write_blocks<T>(const H5File&, const std::string&, const std::vector<hsize_t>&,          \
                                   const std::vector<H5Block>&, const T*, bool);                            \
  template void h5_read_blocks<T>(const H5File&, const std::string&, const std::vector<H5Block>&, T*);
HEADROOM_H5_INSTANTIATE(float)
HEADROOM_H5_INSTANTIATE(double)
HEADROOM_H5_INSTANTIATE(int32_t)
HEADROOM_H5_INSTANTIATE(uint8_t)
HEADROOM_H5_INSTANTIATE(uint16_t)
HEADROOM_H5_INSTANTIATE(uint32_t)
HEADROOM_H5_INSTANTIATE(int64_t)
HEADROOM_H5_INSTANTIATE(uint64_t)
#undef HEADROOM_H5_INSTANTIATE

}  // namespace headroom::io
