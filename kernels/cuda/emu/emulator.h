// A CPU emulator for the CUDA kernels of kernels/cuda, used only by tests (never by the library).
//
// Why: the kernels are written once, in headers that nvcc compiles for the GPU and that g++ compiles
// against this file. Every CUDA thread of a block becomes a fiber (ucontext) on one OS thread; the
// scheduler runs them round-robin and switches only at __syncthreads, __syncwarp, warp shuffles and
// warp-level MMA, so a kernel's index arithmetic, masking, tiling, shared-memory traffic, reductions
// and fragment layouts run exactly as written, and CI (no GPU) can compare them with the CPU backend.
// What it cannot show: timing, real memory-model races (fibers never interleave between sync
// points), hardware limits (registers, shared-memory size) and whether the PTX we emit matches the
// fragment layout we emulate here — that layout is transcribed from the PTX ISA (mma.m16n8k16,
// "Matrix Fragments for mma.m16n8k16 with floating point type") and is checked on a GPU only.
//
// Rules for emulated kernels: every thread of a warp reaches each shuffle/MMA (full masks only),
// blocks are at most 1024 threads, dynamic shared memory comes through HR_DYNAMIC_SMEM and starts
// filled with 0xFF bytes (NaN as float and as bf16), so reading what no thread wrote shows up.
#pragma once

#include <ucontext.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

namespace headroom::kernels::emu {

struct uint3_t {
  unsigned x = 0, y = 0, z = 0;
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  Dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

// Context switch: on x86-64 a hand-written swap of the callee-saved registers (~10 ns; glibc's
// swapcontext also makes a signal-mask system call, ~1 µs); elsewhere ucontext.
#if defined(__x86_64__) && defined(__GNUC__)
#define HEADROOM_EMU_FAST_SWITCH 1
extern "C" void headroom_emu_switch(void** save_sp, void* load_sp);
asm(R"(
  .pushsection .text
  .weak headroom_emu_switch
  .type headroom_emu_switch, @function
headroom_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size headroom_emu_switch, .-headroom_emu_switch
  .popsection
)");
#endif

struct Fiber {
#ifndef HEADROOM_EMU_FAST_SWITCH
  ucontext_t ctx;  // a kilobyte: kept out of the fast path's fibers, which the scheduler scans
#endif
  void* sp = nullptr;
  uint3_t tid;
  unsigned linear = 0, warp = 0, lane = 0;
  enum State { Runnable, BlockWait, WarpWait, Done } state = Runnable;
  uint64_t slot[4] = {};     // warp-exchange mailbox (shuffles, MMA fragments)
  uint64_t collectives = 0;  // the warp-wide operations (mma, ldmatrix) this thread has entered
  // cp.async: this thread's copies in flight (their source read at issue), and where each committed
  // group ends among them. They land in shared memory only at the wait that retires their group.
  struct AsyncCopy {
    unsigned char* dst;
    unsigned char bytes[16];
  };
  std::vector<AsyncCopy> in_flight;
  std::vector<std::size_t> group_ends;
};

// The result of a warp-wide operation (mma, ldmatrix) for all 32 lanes, computed once by the
// warp's first lane to resume after the exchange (instead of by every lane, with a second exchange
// to keep the inputs until all had read them): the fibers of a block run one at a time, so every
// lane's inputs are in place then, and the next operation's result, which overwrites this one, is
// computed only once every lane has arrived at it, its share taken. `seq` is the operation's
// number (Fiber::collectives).
struct WarpResult {
  uint64_t seq = 0;
  float d[32][4];     // mma: each lane's four accumulator terms
  uint32_t r[32][4];  // ldmatrix: each lane's registers
};

struct Block {
  uint3_t block_idx, block_dim, grid_dim;
  std::vector<Fiber> fibers;
  const std::function<void()>* body = nullptr;
  ucontext_t sched;
  void* sched_sp = nullptr;
  Fiber* cur = nullptr;
  unsigned live = 0, block_waiting = 0;
  std::vector<unsigned> warp_live, warp_waiting;
  std::vector<WarpResult> warp_results;
  unsigned char* smem = nullptr;
  std::size_t smem_bytes = 0;
};

inline Block*& current_block() {
  static Block* b = nullptr;
  return b;
}

[[noreturn]] inline void die(const char* what) {
  std::fprintf(stderr, "CUDA emulator: %s\n", what);
  std::abort();
}

inline void yield() {
  Block* b = current_block();
#ifdef HEADROOM_EMU_FAST_SWITCH
  headroom_emu_switch(&b->cur->sp, b->sched_sp);
#else
  if (swapcontext(&b->cur->ctx, &b->sched) != 0) die("swapcontext failed");
#endif
}

inline void release_block_if_complete(Block* b) {
  if (b->block_waiting == 0 || b->block_waiting < b->live) return;
  for (auto& f : b->fibers)
    if (f.state == Fiber::BlockWait) f.state = Fiber::Runnable;
  b->block_waiting = 0;
}

inline void release_warp_if_complete(Block* b, unsigned w) {
  if (b->warp_waiting[w] == 0 || b->warp_waiting[w] < b->warp_live[w]) return;
  const std::size_t first = std::size_t{w} * 32, last = std::min(b->fibers.size(), first + 32);
  for (std::size_t i = first; i < last; ++i)
    if (b->fibers[i].state == Fiber::WarpWait) b->fibers[i].state = Fiber::Runnable;
  b->warp_waiting[w] = 0;
}

inline void sync_block() {
  Block* b = current_block();
  b->cur->state = Fiber::BlockWait;
  ++b->block_waiting;
  release_block_if_complete(b);
  yield();
}

inline void sync_warp() {
  Block* b = current_block();
  const unsigned w = b->cur->warp;
  b->cur->state = Fiber::WarpWait;
  ++b->warp_waiting[w];
  release_warp_if_complete(b, w);
  yield();
}

inline void fiber_main() {
  Block* b = current_block();
  (*b->body)();
  Fiber* f = b->cur;
  if (!f->in_flight.empty()) die("a thread ended with cp.async copies it never waited for");
  f->state = Fiber::Done;
  --b->live;
  --b->warp_live[f->warp];
  // A thread that exits counts as arrived (as on current GPUs).
  release_block_if_complete(b);
  release_warp_if_complete(b, f->warp);
#ifdef HEADROOM_EMU_FAST_SWITCH
  yield();  // never resumed: the scheduler skips finished fibers
  die("a finished fiber was resumed");
#endif
  // (ucontext) returning switches to uc_link, the scheduler.
}

// Stacks are reused across blocks and launches: 128 KiB per thread, allocated on first need.
inline std::vector<std::unique_ptr<char[]>>& stacks() {
  static std::vector<std::unique_ptr<char[]>> s;
  return s;
}
inline constexpr std::size_t kStackBytes = 128 * 1024;

inline void run_block(Block& b) {
  const unsigned n = b.block_dim.x * b.block_dim.y * b.block_dim.z;
  auto& st = stacks();
  while (st.size() < n) st.emplace_back(new char[kStackBytes]);
  b.fibers.assign(n, Fiber{});
  const unsigned warps = (n + 31) / 32;
  b.warp_live.assign(warps, 0);
  b.warp_waiting.assign(warps, 0);
  b.warp_results.assign(warps, WarpResult{});
  b.live = n;
  b.block_waiting = 0;
  for (unsigned i = 0; i < n; ++i) {
    Fiber& f = b.fibers[i];
    f.linear = i;
    f.warp = i / 32;
    f.lane = i % 32;
    f.tid = {i % b.block_dim.x, (i / b.block_dim.x) % b.block_dim.y, i / (b.block_dim.x * b.block_dim.y)};
    ++b.warp_live[f.warp];
#ifdef HEADROOM_EMU_FAST_SWITCH
    // A fresh stack as headroom_emu_switch leaves it: six saved registers, then the return address
    // (the fiber's entry) above a dummy slot, so the entry starts with the ABI's call alignment.
    auto top = (reinterpret_cast<std::uintptr_t>(st[i].get()) + kStackBytes) & ~std::uintptr_t{15};
    auto* p = reinterpret_cast<void**>(top);
    *--p = nullptr;
    *--p = reinterpret_cast<void*>(&fiber_main);
    for (int r = 0; r < 6; ++r) *--p = nullptr;
    f.sp = p;
#else
    if (getcontext(&f.ctx) != 0) die("getcontext failed");
    f.ctx.uc_stack.ss_sp = st[i].get();
    f.ctx.uc_stack.ss_size = kStackBytes;
    f.ctx.uc_link = &b.sched;
    makecontext(&f.ctx, fiber_main, 0);
#endif
  }
  while (b.live > 0) {
    bool ran = false;
    for (auto& f : b.fibers) {
      if (f.state != Fiber::Runnable) continue;
      b.cur = &f;
#ifdef HEADROOM_EMU_FAST_SWITCH
      headroom_emu_switch(&b.sched_sp, f.sp);
#else
      if (swapcontext(&b.sched, &f.ctx) != 0) die("swapcontext failed");
#endif
      ran = true;
    }
    if (!ran) die("deadlock: threads wait at different barriers (divergent __syncthreads/shuffle)");
  }
}

inline void run_grid(Dim3 grid, Dim3 block, std::size_t smem_bytes, const std::function<void()>& body) {
  const unsigned n = block.x * block.y * block.z;
  if (n == 0 || n > 1024) die("block size must be 1..1024 threads");
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) die("empty grid");
  std::vector<unsigned char> smem(smem_bytes + 256);
  auto* aligned =
      reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem.data()) + 127) & ~std::uintptr_t{127});
  Block b;
  b.body = &body;
  b.block_dim = {block.x, block.y, block.z};
  b.grid_dim = {grid.x, grid.y, grid.z};
  b.smem = aligned;
  b.smem_bytes = smem_bytes;
  Block* saved = current_block();
  current_block() = &b;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        b.block_idx = {x, y, z};
        std::memset(aligned, 0xFF, smem_bytes);
        run_block(b);
      }
  current_block() = saved;
}

inline const uint3_t& thread_idx() { return current_block()->cur->tid; }
inline const uint3_t& block_idx() { return current_block()->block_idx; }
inline const uint3_t& block_dim() { return current_block()->block_dim; }
inline const uint3_t& grid_dim() { return current_block()->grid_dim; }
inline unsigned char* dynamic_smem() { return current_block()->smem; }

template <class T>
T shuffle(T v, int src_lane) {
  static_assert(sizeof(T) <= 8);
  Block* b = current_block();
  Fiber* f = b->cur;
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  f->slot[0] = bits;
  sync_warp();
  const unsigned src = f->warp * 32 + static_cast<unsigned>(src_lane & 31);
  if (src >= b->fibers.size() || b->fibers[src].state == Fiber::Done) die("shuffle from a lane that is not running");
  const uint64_t got = b->fibers[src].slot[0];
  sync_warp();
  T r;
  std::memcpy(&r, &got, sizeof(T));
  return r;
}

// Round-to-nearest-even fp32 → bf16 (NaN stays NaN), as cvt.rn.bf16.f32 does.
inline uint16_t bf16_bits(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_value(uint32_t bits16) { return std::bit_cast<float>(bits16 << 16); }

// cp.async emulated strictly: a copy reaches shared memory only when the thread waits for its group,
// and other threads see it only after that thread has passed the wait (fibers switch at barriers),
// so a missing wait or barrier shows up as the 0xFF filling or stale data in a test.
inline void copy16(void* smem, const void* gmem) {
  if (reinterpret_cast<std::uintptr_t>(smem) % 16 != 0 || reinterpret_cast<std::uintptr_t>(gmem) % 16 != 0)
    die("cp.async of 16 bytes with an address not 16-byte aligned");
  Fiber::AsyncCopy c{static_cast<unsigned char*>(smem), {}};
  std::memcpy(c.bytes, gmem, 16);
  current_block()->cur->in_flight.push_back(c);
}
inline void commit_async() {
  Fiber* f = current_block()->cur;
  f->group_ends.push_back(f->in_flight.size());
}
// Lands every committed group but the newest `pending`.
inline void wait_async(std::size_t pending) {
  Fiber* f = current_block()->cur;
  if (f->group_ends.size() <= pending) return;
  const std::size_t groups = f->group_ends.size() - pending, end = f->group_ends[groups - 1];
  for (std::size_t i = 0; i < end; ++i) std::memcpy(f->in_flight[i].dst, f->in_flight[i].bytes, 16);
  f->in_flight.erase(f->in_flight.begin(), f->in_flight.begin() + static_cast<std::ptrdiff_t>(end));
  f->group_ends.erase(f->group_ends.begin(), f->group_ends.begin() + static_cast<std::ptrdiff_t>(groups));
  for (std::size_t& e : f->group_ends) e -= end;
}

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, D = A·B + D, with the fragment layout of the
// PTX ISA: groupID g = lane/4, t = lane%4;
//   A (16×16): a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..)
//   B (16×8):  b0 = (k = 2t..2t+1, n = g), b1 = (k = 2t+8..2t+9, n = g)
//   C/D (16×8): d0,d1 = (g, 2t..2t+1), d2,d3 = (g+8, 2t..2t+1)
// In every 32-bit register the element with the smaller index sits in the low 16 bits.
inline void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  Block* blk = current_block();
  Fiber* f = blk->cur;
  f->slot[0] = a[0] | (uint64_t{a[1]} << 32);
  f->slot[1] = a[2] | (uint64_t{a[3]} << 32);
  f->slot[2] = b[0] | (uint64_t{b[1]} << 32);
  sync_warp();
  WarpResult& w = blk->warp_results[f->warp];
  if (w.seq != ++f->collectives) {  // the first lane back computes the warp's product
    float A[16][16], B[16][8];
    for (unsigned L = 0; L < 32; ++L) {
      const unsigned src = f->warp * 32 + L;
      if (src >= blk->fibers.size() || blk->fibers[src].state == Fiber::Done)
        die("mma with a lane that is not running");
      const Fiber& o = blk->fibers[src];
      const unsigned g = L / 4, t = L % 4;
      const uint32_t ra[4] = {static_cast<uint32_t>(o.slot[0]), static_cast<uint32_t>(o.slot[0] >> 32),
                              static_cast<uint32_t>(o.slot[1]), static_cast<uint32_t>(o.slot[1] >> 32)};
      const uint32_t rb[2] = {static_cast<uint32_t>(o.slot[2]), static_cast<uint32_t>(o.slot[2] >> 32)};
      for (unsigned e = 0; e < 2; ++e) {
        A[g][2 * t + e] = bf16_value((ra[0] >> (16 * e)) & 0xffffu);
        A[g + 8][2 * t + e] = bf16_value((ra[1] >> (16 * e)) & 0xffffu);
        A[g][2 * t + 8 + e] = bf16_value((ra[2] >> (16 * e)) & 0xffffu);
        A[g + 8][2 * t + 8 + e] = bf16_value((ra[3] >> (16 * e)) & 0xffffu);
        B[2 * t + e][g] = bf16_value((rb[0] >> (16 * e)) & 0xffffu);
        B[2 * t + 8 + e][g] = bf16_value((rb[1] >> (16 * e)) & 0xffffu);
      }
    }
    for (unsigned L = 0; L < 32; ++L)
      for (unsigned e = 0; e < 4; ++e) {
        const unsigned row = L / 4 + (e >= 2 ? 8 : 0), col = 2 * (L % 4) + (e & 1);
        float acc = 0.f;
        for (unsigned k = 0; k < 16; ++k) acc += A[row][k] * B[k][col];
        w.d[L][e] = acc;
      }
    w.seq = f->collectives;
  }
  for (unsigned e = 0; e < 4; ++e) d[e] += w.d[f->lane][e];
}

// ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16, with the layout of the PTX ISA ("Warp-level
// matrix load instruction: ldmatrix"): lane 8i + r supplies the shared-memory address of row r of the
// 8×8 matrix i (8 elements, 16-byte aligned); lane L receives in r[i] the 32-bit word of matrix i at
// row L/4, columns 2(L%4) and 2(L%4)+1 — with .trans the elements (2(L%4), L/4) and (2(L%4)+1, L/4),
// the column read as a row. The smaller column (row) sits in the low 16 bits. An address outside the
// block's dynamic shared memory or not 16-byte aligned stops the run (ldmatrix reads shared memory
// only, in 16-byte rows).
template <int N>
inline void ldmatrix(uint32_t (&r)[N], const void* row, bool trans) {
  static_assert(N == 1 || N == 2 || N == 4);
  Block* blk = current_block();
  Fiber* f = blk->cur;
  const auto* p = static_cast<const unsigned char*>(row);
  if (f->lane < 8 * N) {
    if (p < blk->smem || p + 16 > blk->smem + blk->smem_bytes) die("ldmatrix row outside dynamic shared memory");
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) die("ldmatrix row not 16-byte aligned");
  }
  f->slot[0] = reinterpret_cast<std::uintptr_t>(row);
  sync_warp();
  WarpResult& w = blk->warp_results[f->warp];
  if (w.seq != ++f->collectives) {  // the first lane back loads every lane's registers
    const unsigned base = f->warp * 32;
    for (unsigned i = 0; i < static_cast<unsigned>(N); ++i)
      for (unsigned row_in = 0; row_in < 8; ++row_in) {
        const unsigned src = base + 8 * i + row_in;
        if (src >= blk->fibers.size() || blk->fibers[src].state == Fiber::Done)
          die("ldmatrix with a lane that is not running");
      }
    const auto element = [&](unsigned matrix, unsigned row_in, unsigned col) {
      uint16_t e;
      std::memcpy(&e, reinterpret_cast<const unsigned char*>(blk->fibers[base + 8 * matrix + row_in].slot[0]) + 2 * col,
                  2);
      return uint32_t{e};
    };
    for (unsigned L = 0; L < 32; ++L) {
      const unsigned g = L / 4, t = L % 4;
      for (unsigned i = 0; i < static_cast<unsigned>(N); ++i)
        w.r[L][i] = trans ? element(i, 2 * t, g) | (element(i, 2 * t + 1, g) << 16)
                          : element(i, g, 2 * t) | (element(i, g, 2 * t + 1) << 16);
    }
    w.seq = f->collectives;
  }
  for (unsigned i = 0; i < static_cast<unsigned>(N); ++i) r[i] = w.r[f->lane][i];
}

}  // namespace headroom::kernels::emu

// ---- the CUDA vocabulary the kernels use, mapped onto the emulator ----------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define threadIdx (::headroom::kernels::emu::thread_idx())
#define blockIdx (::headroom::kernels::emu::block_idx())
#define blockDim (::headroom::kernels::emu::block_dim())
#define gridDim (::headroom::kernels::emu::grid_dim())

using dim3 = ::headroom::kernels::emu::Dim3;

inline void __syncthreads() { ::headroom::kernels::emu::sync_block(); }
inline void __syncwarp(unsigned = 0xffffffffu) { ::headroom::kernels::emu::sync_warp(); }
template <class T>
T __shfl_xor_sync(unsigned, T v, int lane_mask) {
  return ::headroom::kernels::emu::shuffle(
      v, static_cast<int>(::headroom::kernels::emu::current_block()->cur->lane) ^ lane_mask);
}
template <class T>
T __shfl_sync(unsigned, T v, int src_lane) {
  return ::headroom::kernels::emu::shuffle(v, src_lane);
}
template <class T>
T __ldg(const T* p) {
  return *p;
}
// Fibers switch only at synchronisation points, so read-modify-write is atomic by construction.
inline float atomicAdd(float* p, float v) {
  const float old = *p;
  *p = old + v;
  return old;
}
inline double atomicAdd(double* p, double v) {
  const double old = *p;
  *p = old + v;
  return old;
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  const unsigned long long old = *p;
  *p = old + v;
  return old;
}
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
  const unsigned long long old = *p;
  *p = std::min(old, v);
  return old;
}
inline float rsqrtf(float x) { return 1.f / std::sqrt(x); }
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }
