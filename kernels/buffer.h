// Backend memory owned RAII-style: allocated through an Ops table, freed through the same table.
#pragma once

#include "ops.h"

#include <cstdint>
#include <utility>

namespace headroom::kernels {

template <class T, class Ops>
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Ops& ops, int64_t n) : ops_(&ops), n_(n) {
    if (n > 0) p_ = static_cast<T*>(ops.alloc(static_cast<std::size_t>(n) * sizeof(T)));
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      release();
      ops_ = o.ops_, p_ = o.p_, n_ = o.n_;
      o.p_ = nullptr, o.n_ = 0;
    }
    return *this;
  }
  ~Buffer() { release(); }

  T* get() const { return p_; }
  int64_t size() const { return n_; }

 private:
  void release() {
    if (p_) ops_->free(p_);
    p_ = nullptr;
  }
  const Ops* ops_ = nullptr;
  T* p_ = nullptr;
  int64_t n_ = 0;
};

}  // namespace headroom::kernels
