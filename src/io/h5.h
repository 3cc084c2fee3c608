// Thin, checked wrappers over the HDF5 C API. Every call is checked; a failure throws headroom::Error
// naming the file and the object. HDF5's own error-stack printing is switched off (h5_quiet) so the
// user sees one message that says what went wrong, not a page of library internals.
#pragma once

#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::io {

// Owns one hid_t and closes it with the right H5*close.
class H5Handle {
 public:
  H5Handle() = default;
  H5Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  H5Handle(H5Handle&& o) noexcept { *this = std::move(o); }
  H5Handle& operator=(H5Handle&& o) noexcept;
  ~H5Handle() { reset(); }
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  void reset();
  // Closes now and reports a failure (flushing a file can fail; a destructor cannot say so).
  void close(const std::string& what);

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

// An open file with the name every error about it gives, so that a writer's message names the
// file as well as the dataset or attribute.
struct H5File {
  H5Handle handle;
  std::string name;
  operator hid_t() const { return handle.get(); }
  void close() { handle.close(name); }  // as H5Handle::close, naming the file
};

void h5_quiet();

// Throws "<where>: <what> failed" if rc < 0.
void h5_check(herr_t rc, const std::string& where, const char* what);
hid_t h5_check_id(hid_t id, const std::string& where, const char* what);

H5File h5_create_file(const std::string& path);  // truncates; serial driver
H5File h5_open_file(const std::string& path);    // read-only, serial driver
// A file that lives in memory (HDF5's core driver, no backing store): nothing touches the disk
// until the caller writes h5_file_image() itself, atomically. A full disk then fails in our own
// write, cleanly, instead of inside HDF5's close (where HDF5 1.10 can crash at exit).
H5File h5_create_memory_file(const std::string& name);
std::string h5_file_image(const H5File& file);
bool h5_exists(hid_t file, const std::string& path);  // does /a/b/c exist (every link on the way)
// The names of the links in group `group`, in name order.
std::vector<std::string> h5_children(const H5File& file, const std::string& group);

// Datasets of native element type T (float, double, int32_t, uint8_t, uint16_t, uint32_t, int64_t, uint64_t),
// with `dims` the full shape. Intermediate groups are created.
template <class T>
void h5_write(const H5File& file, const std::string& name, const T* data, const std::vector<hsize_t>& dims);
std::vector<hsize_t> h5_shape(const H5File& file, const std::string& name);
// A 1-D contiguous dataset of `n` elements of `file_type` (e.g. H5T_STD_U16LE) whose storage is
// allocated now and never filled: returns its byte offset in the file, where the caller writes the
// data itself (pwrite, after closing the file), so that large data never passes through HDF5.
int64_t h5_reserve_contiguous(const H5File& file, const std::string& name, hid_t file_type, hsize_t n);
// Reads a whole dataset, converting to T.
template <class T>
std::vector<T> h5_read(const H5File& file, const std::string& name);
// Reads elements [offset, offset + count) of a 1-D dataset, converting to T.
template <class T>
void h5_read_range(hid_t dataset, const std::string& where, hsize_t offset, hsize_t count, T* out);

// Parallel HDF5: a file created collectively by every rank of `comm` (MPI-IO driver). Dataset
// creation, attribute writes and h5_write_slab are collective: every rank calls them in the same
// order with the same names, shapes and attribute values.
H5File h5_create_parallel_file(const std::string& path, MPI_Comm comm);

// Collective write of one rank's block [start, start + count) of a dataset of shape `dims`
// (created here). A rank with `participate` false selects nothing but still takes part.
template <class T>
void h5_write_slab(const H5File& file, const std::string& name, const std::vector<hsize_t>& dims,
                   const std::vector<hsize_t>& start, const std::vector<hsize_t>& count, const T* data,
                   bool participate);

// A union of rectangular blocks of a dataset, in row-major order; the data of a selection is the
// blocks' elements in that order (HDF5 iterates a selection in row-major order).
struct H5Block {
  std::vector<hsize_t> start, count;
};

// Collective write of a selection (see h5_write_slab); the dataset is created here.
template <class T>
void h5_write_blocks(const H5File& file, const std::string& name, const std::vector<hsize_t>& dims,
                     const std::vector<H5Block>& blocks, const T* data, bool participate);

// Reads a selection (any rank, serial file handle).
template <class T>
void h5_read_blocks(const H5File& file, const std::string& name, const std::vector<H5Block>& blocks, T* out);

// Reads the block [start, start + count) of a dataset (any rank, serial file handle).
template <class T>
void h5_read_slab(const H5File& file, const std::string& name, const std::vector<hsize_t>& start,
                  const std::vector<hsize_t>& count, T* out);

// Attributes on an object (a group or dataset path, "/" for the root). Strings are variable-length
// UTF-8, which h5py returns as str.
void h5_attr(const H5File& file, const std::string& object, const std::string& name, const std::string& value);
void h5_attr(const H5File& file, const std::string& object, const std::string& name, int64_t value);
void h5_attr(const H5File& file, const std::string& object, const std::string& name, double value);
std::string h5_attr_string(const H5File& file, const std::string& object, const std::string& name);
int64_t h5_attr_int(const H5File& file, const std::string& object, const std::string& name);
double h5_attr_double(const H5File& file, const std::string& object, const std::string& name);
bool h5_has_attr(hid_t file, const std::string& object, const std::string& name);

}  // namespace headroom::io
