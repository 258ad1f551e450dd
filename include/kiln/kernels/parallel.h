// A small fixed thread pool shared by all kernels. parallel_for runs fn over disjoint
// contiguous chunks of [0, n) on at most `threads` threads at once, the calling thread among
// them. Thread t of T owns [n * t / T, n * (t + 1) / T) and runs it first, so kernels that
// split the same dimension the same way keep each thread on the data it wrote itself (cache lines the
// other core wrote are 2-4x slower to reach here); a thread that finishes early steals chunks
// of the others, so per-chunk state must be indexed by the chunk, never by the thread.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>

#include "kiln/kernels/function_ref.h"

namespace kiln::kernels {

// Number of hardware threads (at least 1).
int hardware_threads();
// Sets the default thread count used when a caller passes threads <= 0.
void set_default_threads(int n);
int default_threads();

// Waking the pool costs tens of microseconds, so a parallel region must carry enough work to
// pay for it. threads_for_work returns `threads` when `work` (in multiply-adds or elements
// touched) is at least kMinParallelWork, else 1.
constexpr double kMinParallelWork = 1 << 18;
inline int threads_for_work(double work, int threads) { return work < kMinParallelWork ? 1 : threads; }

// A pass of a few operations per element over a tensor the kernel before wrote on every thread
// (efficientnet_b0's excitation products, a global average pool) is cut from kMinParallelPass
// elements: on one thread it reads the other threads' shares from their caches, which on the
// 2-vCPU hosts measured takes twice as long as reading its own (bench/cache_affinity_bench.cpp),
// while cut in order each thread mostly reads what it wrote (the producers cut channel blocks
// or rows in the same order). Xeon 5th gen, two threads, in-process pairs: efficientnet_b0's
// products (47-188 K elements) 0.35-0.77, its average pool 0.555 and mobilenet_v2's 0.526;
// the models 0.982-0.985. (kMinParallelWork for them: slower on two threads than on one.)
constexpr double kMinParallelPass = 1 << 15;
inline int threads_for_pass(double elements, int threads) { return elements < kMinParallelPass ? 1 : threads; }

// While at least one SpinningScope is alive, idle pool workers keep spinning between parallel
// regions instead of going to sleep after ~50 µs: a model run opens one so that the serial
// work between two kernels never costs a wake-up (on a virtual machine waking an idle vCPU
// can take longer than a small kernel). After the last one closes they spin on for the idle
// spin (below). A worker that loses its core still goes to sleep.
class SpinningScope {
 public:
  SpinningScope();
  ~SpinningScope();
  SpinningScope(const SpinningScope&) = delete;
  SpinningScope& operator=(const SpinningScope&) = delete;
};

// The idle spin: how long workers keep spinning after a model run ends (the last SpinningScope
// closes, on a thread that ran a parallel region inside it: a one-thread run starts none), so
// that a run arriving within it finds them awake. A worker that slept through a
// gap between runs comes back slowly on the virtual machines measured (mobilenet_v2 at two
// threads on Zen 5: 2.8 ms back to back, 5.8 ms with runs 5 ms apart and the workers asleep,
// 2.9 with them spinning; docs/runtime.md). The cost is a core spinning for up to this long
// after each run; 0 sends them to sleep ~50 µs after a run, as between unrelated regions.
// ONNX Runtime's workers spin ~40 ms after a run by default.
constexpr int64_t kDefaultIdleSpinUs = 50'000;
constexpr std::chrono::microseconds kMaxIdleSpin{10'000'000};
// kMaxIdleSpin in the whole milliseconds KILN_IDLE_SPIN_MS and --idle-spin-ms take.
constexpr int64_t kMaxIdleSpinMs = std::chrono::duration_cast<std::chrono::milliseconds>(kMaxIdleSpin).count();
// Throws kiln::Error outside [0, kMaxIdleSpin]. Applies to every pool user in the process.
void set_idle_spin(std::chrono::microseconds spin);
// KILN_IDLE_SPIN_MS: the idle spin a process starts with, in whole milliseconds (0 to
// kMaxIdleSpin), for programs that link kiln and for test runs (two test processes on two
// cores, each with a spinning worker). idle_spin_from_env() is its value: nullopt when unset;
// kiln::Error when set to anything else than such a number. The pool reads it once, at
// start-up, and keeps kDefaultIdleSpinUs for a value it cannot use; the CLI checks it before
// any verb runs, so that a typo fails there with a one-line error. set_idle_spin overrides it.
inline constexpr const char* kIdleSpinEnv = "KILN_IDLE_SPIN_MS";
std::optional<std::chrono::microseconds> idle_spin_from_env();
std::chrono::microseconds idle_spin();
// How much longer the workers may spin after the last run (0 while a run is in progress or
// once the idle spin is over): `kiln bench` waits this out before another backend's turn.
std::chrono::microseconds idle_spin_left();
// How many times a pool worker has gone to sleep (on a condition variable) so far.
int64_t worker_sleeps();

// Pieces per thread parallel_for cuts a region into when there are more indices than threads
// (more pieces than threads: a thread that finishes early, or a worker that was asleep or
// descheduled and comes late, leaves the rest to the others instead of making them wait).
// Kernels that cut their own work in parts size them by it, so that each part is one piece.
constexpr int64_t kPiecesPerThread = 4;

// Calls fn(begin, end) over chunks of [0, n): one index per chunk up to kPiecesPerThread
// indices a thread, else kPiecesPerThread chunks per thread, each 1/kPiecesPerThread of its
// share. Runs inline when threads == 1 or n == 1. fn is referenced, not copied (no allocation per region, whatever the lambda captures); it returns
// after every chunk has run.
void parallel_for(int64_t n, int threads, FunctionRef<void(int64_t, int64_t)> fn);

// Calls fn(begin, end) once per thread on that thread's share of [0, n) (min(threads, n, 16)
// threads, the caller's share first), for kernels whose region is one piece a thread: a band of
// rows each, whose split into smaller pieces would cost more (each piece reading the same
// weights again) than it balances. The shares follow how fast the pool measured the threads
// running earlier such regions (thread_speed): the two vCPUs of a virtual machine are often
// not equally fast (one shares its core with another guest), and an even cut then waits for the
// slower one. Each share is at least one index, and fn must cost about the same per index for
// the measurement to mean anything. A thread that comes late still has its share taken by
// another; such a region teaches nothing. With speed shares off (KILN_SPEED_SHARES=0, or
// set_speed_shares(false)) the cut is even, rounded to the nearest index. `key` (a layer's
// weights, say: anything that names the same region run after run) gives the region speeds of
// its own, learnt from its own runs only: the cost of an index on each thread depends on the
// kernel too (whose cache its input is in, how its rows round to tiles).
void parallel_shares(int64_t n, int threads, FunctionRef<void(int64_t, int64_t)> fn, const void* key = nullptr);
// Pool thread t's speed in parallel_shares regions relative to the caller's (thread 0: 1), a
// moving average over the last ~10 regions of any key, kept whether or not the shares follow it.
double thread_speed(int t);
// Forgets the measured speeds (all 1, every key's too), for tests and A/B harnesses; never from
// inside a parallel region (it waits for the region to end).
void reset_thread_speeds();
bool speed_shares_on();
void set_speed_shares(bool on);

// What the pool's threads did inside parallel regions, for the profiler (`kiln profile
// --balance`): while collection is on, every top-level parallel_for (one that runs inline on one
// thread too) adds its pieces' time inside fn per thread, so that a kernel's wall time at T
// threads splits into the work each thread did and the rest (waiting at the join for the
// slowest thread, waking the workers, the kernel's serial code between its regions). Off by
// default: then a region pays one relaxed load. Nested regions count inside the piece that ran
// them.
struct PoolStats {
  static constexpr int kThreads = 16;  // threads from the 16th on are added to the last slot
  int64_t regions = 0;                 // parallel_for calls
  int64_t region_ns = 0;               // their wall time, from the call to the last piece seen done
  int64_t pieces = 0;                  // pieces run (an inline region is one)
  int64_t stolen = 0;                  // pieces a thread took from another thread's share
  int threads = 0;                     // most threads a region was cut for
  int64_t busy_ns[kThreads] = {};      // per thread (0: the caller), time inside fn
};
void set_pool_stats(bool on);
bool pool_stats_on();
// The stats since the last call (or since collection was turned on), and starts them again.
// Call it between regions, from the thread that runs them.
PoolStats take_pool_stats();

// The thread that runs index i of parallel_for(n, threads, ...) as its own (0 when the region
// runs inline): kernels that fetch the next index's data ahead ask whether the same thread runs
// it. A thread that finishes early may still steal the piece; that only wastes the fetch.
int parallel_owner(int64_t n, int threads, int64_t i);

// Where part p of `parts` begins in [0, n), for a kernel that cuts n units of work (tiles,
// chunks) into parts and runs them as parallel_for(parts, threads, ...) with parts <= threads *
// kPiecesPerThread (each part a piece): each thread's parts cover the share of [0, n) an even
// cut gives it (n * its first part / parts onward), but shrink toward that share's end, in the
// ratio m : m-1 : .. : 1 for its m parts, when tapered_parts_on(). The pool runs a thread's own
// parts front to back and steals from the back of another's, so the last piece run on each
// thread, which decides how long the other waits at the join, is its smallest. Part p covers
// [tapered_start(.., p), tapered_start(.., p + 1)); tapered_start(.., parts) is n. With tapering
// off, or one thread, the even cut n * p / parts.
int64_t tapered_start(int64_t n, int64_t parts, int threads, int64_t p);
// Whether tapered_start tapers: on unless KILN_TAPERED_PARTS=0 at start-up; set_tapered_parts
// for A/B harnesses (between calls).
bool tapered_parts_on();
void set_tapered_parts(bool on);

// How long a cache line takes to go from the calling thread to pool worker 1 and back, in ns:
// the mean of 8 round trips through one atomic, the better of two tries. Negative when it was
// not measured: called inside a parallel region, no second thread, or the worker not there
// within 50 µs (descheduled, or busy). On the Zen 5 host: ~110 ns when the two vCPUs share a
// core complex, ~450-550 ns when the hypervisor puts them apart (it moves them every few
// minutes).
double core_round_trip_ns();

}  // namespace kiln::kernels
