// C++20 coroutines over the continuation API of farm/api/farm.h: `co_await` an
// operation instead of nesting its continuation.
//
//   Task<absl::Status> Transfer(Context& ctx, FatPtr from, FatPtr to, int64_t amount) {
//     TxHandle tx = txCreate(ctx);
//     absl::StatusOr<ObjBuf*> a = co_await TxRead(*tx, from);
//     if (!a.ok()) co_return a.status();
//     ...
//     co_return co_await TxCommit(*tx);
//   }
//   Spawn(Transfer(ctx, from, to, 10), [](absl::Status s) { ... });
//
// Task<T> is a lazily started coroutine: nothing runs until it is awaited (co_await
// std::move(task), or co_await MakeTask(...)) or spawned. Awaiting a Task runs it and
// resumes the awaiter when it co_returns (symmetric transfer); the co_await's value is
// what it co_returned. Spawn starts a top-level task now, on the calling thread; its
// frame is destroyed when it finishes.
//
// The awaitables (TxRead, TxAlloc, TxCommit, LockFreeRead, LockFreeReadMany, MsgSend,
// MsgSendTo, SleepFor; for one-sided objects RawAlloc, RawFree, RawRead, RawWrite,
// RawCas64, RawFetchAdd64) carry the names of the functions they wrap (txRead → TxRead),
// capitalised because they are types: a class and a function of one name in one
// namespace would hide each other. They call the continuation-style function in await_suspend and resume
// the coroutine from its continuation. Errors are values (absl::Status / StatusOr), as
// in farm.h; nothing throws, and an exception escaping a coroutine terminates the
// process.
//
// Contracts:
//   - Threads: a task runs on one worker thread, the one whose Context its operations
//     use; Spawn it there (in a handler, a continuation, or work posted to the loop).
//     farm.h's continuations run on that thread and never inside the call, so every
//     resumption happens from the event loop.
//   - Lifetimes: whatever an awaited operation uses must outlive the co_await: the Tx
//     (keep the TxHandle in the coroutine, e.g. a local), the LockFreeOp, the payload
//     of MsgSend (RawWrite's bytes only until it suspends: they are copied). An awaitable is meant to be awaited in the expression that creates
//     it. A coroutine's parameters are copied into its frame, but references and a
//     lambda's captures are not: a coroutine lambda must not capture (pass what it
//     needs as parameters) unless the lambda outlives the task.
//   - A suspended coroutine is resumed by its operation's continuation, so its frame
//     must not be destroyed while suspended (the continuation would resume freed
//     memory): do not destroy a Task that is being awaited, and keep the node running
//     until every spawned task has finished. A continuation that is dropped without
//     running (its node stopped) leaves the coroutine suspended forever: its frame
//     leaks.
//   - GCC 12 (Debian 12's compiler) destroys twice a temporary that a co_await's operand
//     materializes only to convert it into a coroutine's parameter: a lambda passed
//     where the coroutine takes a std::function had the shared_ptr it captured released
//     twice (ASan: use after free; kv/key_scan_pages.h). Pass such an argument as a
//     named object, moved in, or take it as its own type (a template parameter).
#ifndef FARM_API_CORO_H_
#define FARM_API_CORO_H_

#include <coroutine>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "farm/api/farm.h"
#include "farm/api/one_sided.h"

namespace farm {

template <typename T>
class Task;

namespace coro_internal {

// At co_return: resume whoever awaited the task (symmetric transfer), if anyone.
struct FinalAwaiter {
  bool await_ready() const noexcept { return false; }
  template <typename Promise>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> h) const noexcept {
    std::coroutine_handle<> awaiter = h.promise().awaiter;
    return awaiter ? awaiter : std::noop_coroutine();
  }
  void await_resume() const noexcept {}
};

struct PromiseBase {
  std::coroutine_handle<> awaiter;  // set when the task is awaited
  std::suspend_always initial_suspend() const noexcept { return {}; }
  FinalAwaiter final_suspend() const noexcept { return {}; }
  void unhandled_exception() const noexcept { std::terminate(); }
};

template <typename T>
struct Promise : PromiseBase {
  std::optional<T> value;
  Task<T> get_return_object();
  void return_value(T v) { value.emplace(std::move(v)); }
  T take() { return std::move(*value); }
};

template <>
struct Promise<void> : PromiseBase {
  Task<void> get_return_object();
  void return_void() const noexcept {}
  void take() const noexcept {}
};

}  // namespace coro_internal

// A coroutine returning T (void allowed). Owns its frame; awaited at most once, as an
// rvalue.
template <typename T = void>
class [[nodiscard]] Task {
 public:
  using promise_type = coro_internal::Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Task(Task&& other) noexcept : h_(std::exchange(other.h_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      if (h_) h_.destroy();
      h_ = std::exchange(other.h_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  // Destroys the frame: a task never started, or finished. Never one being awaited.
  ~Task() {
    if (h_) h_.destroy();
  }

  // Starts the task; the awaiter resumes with its result when it co_returns.
  auto operator co_await() && noexcept {
    struct Awaiter {
      Handle h;
      bool await_ready() const noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter) noexcept {
        h.promise().awaiter = awaiter;
        return h;
      }
      T await_resume() { return h.promise().take(); }
    };
    return Awaiter{h_};
  }

 private:
  friend promise_type;
  explicit Task(Handle h) : h_(h) {}
  Handle h_;
};

namespace coro_internal {
template <typename T>
Task<T> Promise<T>::get_return_object() {
  return Task<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}
inline Task<void> Promise<void>::get_return_object() {
  return Task<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}

// A coroutine that starts at once and frees its own frame when it ends: the owner of
// a spawned Task.
struct Detached {
  struct promise_type {
    Detached get_return_object() const noexcept { return {}; }
    std::suspend_never initial_suspend() const noexcept { return {}; }
    std::suspend_never final_suspend() const noexcept { return {}; }
    void return_void() const noexcept {}
    void unhandled_exception() const noexcept { std::terminate(); }
  };
};

inline Detached RunDetached(Task<void> task) { co_await std::move(task); }

template <typename T, typename Done>
Detached RunDetached(Task<T> task, Done done) {
  if constexpr (std::is_void_v<T>) {
    co_await std::move(task);
    done();
  } else {
    done(co_await std::move(task));
  }
}

// Resumes `h` after storing the operation's result: the continuation of every awaiter.
template <typename R>
struct ResultSlot {
  std::optional<R> result;
  auto Resumer(std::coroutine_handle<> h) {
    return [this, h](R r) {
      result.emplace(std::move(r));
      h.resume();
    };
  }
  R Take() { return std::move(*result); }
};

}  // namespace coro_internal

// Starts `task` now, on the calling thread; it runs until its first suspension and
// finishes later on this thread's loop. Its frame is freed when it ends.
inline void Spawn(Task<void> task) { coro_internal::RunDetached(std::move(task)); }
// The same, then `done(result)` (`done()` for Task<void>) on this thread: for calling
// coroutines from continuation-style code.
template <typename T, typename Done>
void Spawn(Task<T> task, Done done) {
  coro_internal::RunDetached(std::move(task), std::move(done));
}

// --- Transactions ---

// co_await TxRead(tx, object) -> absl::StatusOr<ObjBuf*> (txRead).
class [[nodiscard]] TxRead {
 public:
  TxRead(Tx& tx, FatPtr object) : tx_(&tx), object_(object) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) { txRead(*tx_, object_, slot_.Resumer(h)); }
  absl::StatusOr<ObjBuf*> await_resume() { return slot_.Take(); }

 private:
  Tx* tx_;
  FatPtr object_;
  coro_internal::ResultSlot<absl::StatusOr<ObjBuf*>> slot_;
};

// co_await TxAlloc(tx, size, hint) -> absl::StatusOr<ObjBuf*> (txAlloc).
class [[nodiscard]] TxAlloc {
 public:
  TxAlloc(Tx& tx, uint32_t size, Addr hint = Addr()) : tx_(&tx), size_(size), hint_(hint) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) { txAlloc(*tx_, size_, hint_, slot_.Resumer(h)); }
  absl::StatusOr<ObjBuf*> await_resume() { return slot_.Take(); }

 private:
  Tx* tx_;
  uint32_t size_;
  Addr hint_;
  coro_internal::ResultSlot<absl::StatusOr<ObjBuf*>> slot_;
};

// co_await TxCommit(tx) -> absl::Status (txCommit).
class [[nodiscard]] TxCommit {
 public:
  explicit TxCommit(Tx& tx) : tx_(&tx) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) { txCommit(*tx_, slot_.Resumer(h)); }
  absl::Status await_resume() { return slot_.Take(); }

 private:
  Tx* tx_;
  coro_internal::ResultSlot<absl::Status> slot_;
};

// --- Lock-free reads ---

// What LockFreeRead returns: the version and a copy of the bytes (farm.h's span is
// valid only during its continuation).
struct LockFreeCopy {
  uint64_t version = 0;
  std::string data;
};

// co_await LockFreeRead(op, object) -> absl::StatusOr<LockFreeCopy> (lockFreeRead).
class [[nodiscard]] LockFreeRead {
 public:
  LockFreeRead(LockFreeOp& op, FatPtr object) : op_(&op), object_(object) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    lockFreeRead(*op_, object_, [this, h](absl::StatusOr<LockFreeObject> r) {
      if (r.ok()) {
        result_ = LockFreeCopy{r->version, std::string(r->data.data(), r->data.size())};
      } else {
        result_ = r.status();
      }
      h.resume();
    });
  }
  absl::StatusOr<LockFreeCopy> await_resume() { return std::move(result_); }

 private:
  LockFreeOp* op_;
  FatPtr object_;
  absl::StatusOr<LockFreeCopy> result_ = absl::UnknownError("not completed");
};

// co_await LockFreeReadMany(op, objects) -> absl::StatusOr<std::vector<LockFreeCopy>>,
// one per object in order (lockFreeReadMany: one READ of neighbouring objects).
// `objects` is read in await_suspend: it must be valid until then.
class [[nodiscard]] LockFreeReadMany {
 public:
  LockFreeReadMany(LockFreeOp& op, std::span<const FatPtr> objects) : op_(&op), objects_(objects) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    lockFreeReadMany(*op_, objects_, [this, h](absl::StatusOr<std::span<const LockFreeObject>> r) {
      if (r.ok()) {
        std::vector<LockFreeCopy> copies;
        copies.reserve(r->size());
        for (const LockFreeObject& o : *r) {
          copies.push_back(LockFreeCopy{o.version, std::string(o.data.data(), o.data.size())});
        }
        result_ = std::move(copies);
      } else {
        result_ = r.status();
      }
      h.resume();
    });
  }
  absl::StatusOr<std::vector<LockFreeCopy>> await_resume() { return std::move(result_); }

 private:
  LockFreeOp* op_;
  std::span<const FatPtr> objects_;
  absl::StatusOr<std::vector<LockFreeCopy>> result_ = absl::UnknownError("not completed");
};

// --- Messages ---

// co_await MsgSend(ctx, address, id, payload) -> absl::StatusOr<std::string>, the
// handler's reply (msgSend). `payload` is sent in await_suspend: it must be valid
// until then.
class [[nodiscard]] MsgSend {
 public:
  MsgSend(Context& ctx, Addr address, MsgId id, absl::string_view payload)
      : ctx_(&ctx), address_(address), id_(id), payload_(payload) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    msgSend(*ctx_, address_, id_, payload_, slot_.Resumer(h));
  }
  absl::StatusOr<std::string> await_resume() { return slot_.Take(); }

 private:
  Context* ctx_;
  Addr address_;
  MsgId id_;
  absl::string_view payload_;
  coro_internal::ResultSlot<absl::StatusOr<std::string>> slot_;
};

// co_await MsgSendTo(ctx, machine, id, payload) -> absl::StatusOr<std::string>: as
// MsgSend, to a machine rather than an address's primary (msgSendTo).
class [[nodiscard]] MsgSendTo {
 public:
  MsgSendTo(Context& ctx, NodeId machine, MsgId id, absl::string_view payload)
      : ctx_(&ctx), machine_(machine), id_(id), payload_(payload) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    msgSendTo(*ctx_, machine_, id_, payload_, slot_.Resumer(h));
  }
  absl::StatusOr<std::string> await_resume() { return slot_.Take(); }

 private:
  Context* ctx_;
  NodeId machine_;
  MsgId id_;
  absl::string_view payload_;
  coro_internal::ResultSlot<absl::StatusOr<std::string>> slot_;
};

// --- One-sided objects (farm/api/one_sided.h) ---

// co_await RawAlloc(ctx, size, hint) -> absl::StatusOr<RawPtr> (rawAlloc).
class [[nodiscard]] RawAlloc {
 public:
  RawAlloc(Context& ctx, uint32_t size, Addr hint = Addr()) : ctx_(&ctx), size_(size), hint_(hint) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) { rawAlloc(*ctx_, size_, hint_, slot_.Resumer(h)); }
  absl::StatusOr<RawPtr> await_resume() { return slot_.Take(); }

 private:
  Context* ctx_;
  uint32_t size_;
  Addr hint_;
  coro_internal::ResultSlot<absl::StatusOr<RawPtr>> slot_;
};

// co_await RawFree(ctx, object) -> absl::Status (rawFree). Not while the coroutine holds
// a transaction or a LockFreeOp on this thread.
class [[nodiscard]] RawFree {
 public:
  RawFree(Context& ctx, RawPtr object) : ctx_(&ctx), object_(object) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) { rawFree(*ctx_, object_, slot_.Resumer(h)); }
  absl::Status await_resume() { return slot_.Take(); }

 private:
  Context* ctx_;
  RawPtr object_;
  coro_internal::ResultSlot<absl::Status> slot_;
};

// What RawRead returns: a copy of the bytes (rawRead's span is valid only during its
// continuation) and the torn hint (one_sided.h, "Atomicity").
struct RawCopy {
  std::string data;
  bool torn = false;
};

// co_await RawRead(ctx, object, offset, length) -> absl::StatusOr<RawCopy> (rawRead).
class [[nodiscard]] RawRead {
 public:
  RawRead(Context& ctx, RawPtr object, uint32_t offset, uint32_t length)
      : ctx_(&ctx), object_(object), offset_(offset), length_(length) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    rawRead(*ctx_, object_, offset_, length_, [this, h](absl::StatusOr<RawBytes> r) {
      if (r.ok()) {
        result_ = RawCopy{std::string(r->data.data(), r->data.size()), r->torn};
      } else {
        result_ = r.status();
      }
      h.resume();
    });
  }
  absl::StatusOr<RawCopy> await_resume() { return std::move(result_); }

 private:
  Context* ctx_;
  RawPtr object_;
  uint32_t offset_;
  uint32_t length_;
  absl::StatusOr<RawCopy> result_ = absl::UnknownError("not completed");
};

// co_await RawWrite(ctx, object, offset, bytes) -> absl::Status (rawWrite). `bytes` is
// copied in await_suspend: it must be valid until then.
class [[nodiscard]] RawWrite {
 public:
  RawWrite(Context& ctx, RawPtr object, uint32_t offset, std::span<const char> bytes)
      : ctx_(&ctx), object_(object), offset_(offset), bytes_(bytes) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) { rawWrite(*ctx_, object_, offset_, bytes_, slot_.Resumer(h)); }
  absl::Status await_resume() { return slot_.Take(); }

 private:
  Context* ctx_;
  RawPtr object_;
  uint32_t offset_;
  std::span<const char> bytes_;
  coro_internal::ResultSlot<absl::Status> slot_;
};

// co_await RawCas64(ctx, object, offset, expected, desired) -> absl::StatusOr<uint64_t>,
// the word's old value: swapped iff it equals `expected` (rawCas64).
class [[nodiscard]] RawCas64 {
 public:
  RawCas64(Context& ctx, RawPtr object, uint32_t offset, uint64_t expected, uint64_t desired)
      : ctx_(&ctx), object_(object), offset_(offset), expected_(expected), desired_(desired) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    rawCas64(*ctx_, object_, offset_, expected_, desired_, slot_.Resumer(h));
  }
  absl::StatusOr<uint64_t> await_resume() { return slot_.Take(); }

 private:
  Context* ctx_;
  RawPtr object_;
  uint32_t offset_;
  uint64_t expected_;
  uint64_t desired_;
  coro_internal::ResultSlot<absl::StatusOr<uint64_t>> slot_;
};

// co_await RawFetchAdd64(ctx, object, offset, delta) -> absl::StatusOr<uint64_t>, the
// word's old value (rawFetchAdd64).
class [[nodiscard]] RawFetchAdd64 {
 public:
  RawFetchAdd64(Context& ctx, RawPtr object, uint32_t offset, uint64_t delta)
      : ctx_(&ctx), object_(object), offset_(offset), delta_(delta) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) { rawFetchAdd64(*ctx_, object_, offset_, delta_, slot_.Resumer(h)); }
  absl::StatusOr<uint64_t> await_resume() { return slot_.Take(); }

 private:
  Context* ctx_;
  RawPtr object_;
  uint32_t offset_;
  uint64_t delta_;
  coro_internal::ResultSlot<absl::StatusOr<uint64_t>> slot_;
};

// --- Time ---

// co_await SleepFor(ctx, d): resumes after `d` on ctx's loop (e.g. a backoff before
// retrying an aborted transaction). A transaction or LockFreeOp still open while
// sleeping holds the thread's epoch open as long (alloc/epoch.h): end it first.
class [[nodiscard]] SleepFor {
 public:
  SleepFor(Context& ctx, absl::Duration d) : ctx_(&ctx), d_(d) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    ctx_->RunAfter(d_, [h] { h.resume(); });
  }
  void await_resume() const noexcept {}

 private:
  Context* ctx_;
  absl::Duration d_;
};

}  // namespace farm

#endif  // FARM_API_CORO_H_
