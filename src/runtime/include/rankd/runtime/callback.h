// Callback: a move-only, type-erased `void()` callable that stores small callables inline.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace rankd::rt {

// Thread affinity: none (a value type); ownership: owns the callable it holds.
// Callables up to kInlineSize bytes, pointer-aligned and nothrow-movable, live inline (no allocation);
// larger ones are moved to the heap once at construction.
class Callback {
 public:
  static constexpr std::size_t kInlineSize = 40;

  Callback() noexcept = default;

  template <class F>
    requires(!std::is_same_v<std::decay_t<F>, Callback> && std::is_invocable_r_v<void, std::decay_t<F>&>)
  Callback(F&& f) {  // NOLINT(google-explicit-constructor): implicit from any callable
    using Fn = std::decay_t<F>;
    if constexpr (FitsInline<Fn>()) {
      ::new (static_cast<void*>(storage_)) Fn(std::forward<F>(f));
      ops_ = &kInlineOps<Fn>;
    } else {
      ::new (static_cast<void*>(storage_)) Fn*(new Fn(std::forward<F>(f)));
      ops_ = &kHeapOps<Fn>;
    }
  }

  Callback(Callback&& other) noexcept : ops_(other.ops_) {
    if (ops_ != nullptr) {
      ops_->relocate(storage_, other.storage_);
      other.ops_ = nullptr;
    }
  }

  Callback& operator=(Callback&& other) noexcept {
    if (this != &other) {
      Reset();
      ops_ = other.ops_;
      if (ops_ != nullptr) {
        ops_->relocate(storage_, other.storage_);
        other.ops_ = nullptr;
      }
    }
    return *this;
  }

  Callback(const Callback&) = delete;
  Callback& operator=(const Callback&) = delete;

  ~Callback() { Reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }

  void operator()() { ops_->invoke(storage_); }

  void Reset() noexcept {
    if (ops_ != nullptr) {
      ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

 private:
  struct Ops {
    void (*invoke)(void* storage);
    void (*relocate)(void* to, void* from) noexcept;  // move-construct into `to`, destroy `from`
    void (*destroy)(void* storage) noexcept;
  };

  template <class Fn>
  static constexpr bool FitsInline() {
    return sizeof(Fn) <= kInlineSize && alignof(Fn) <= alignof(void*) &&
           std::is_nothrow_move_constructible_v<Fn>;
  }

  template <class Fn>
  static constexpr Ops kInlineOps = {
      [](void* s) { (*std::launder(static_cast<Fn*>(s)))(); },
      [](void* to, void* from) noexcept {
        Fn* src = std::launder(static_cast<Fn*>(from));
        ::new (to) Fn(std::move(*src));
        src->~Fn();
      },
      [](void* s) noexcept { std::launder(static_cast<Fn*>(s))->~Fn(); },
  };

  template <class Fn>
  static constexpr Ops kHeapOps = {
      [](void* s) { (**std::launder(static_cast<Fn**>(s)))(); },
      [](void* to, void* from) noexcept {
        ::new (to) Fn*(*std::launder(static_cast<Fn**>(from)));
      },
      [](void* s) noexcept { delete *std::launder(static_cast<Fn**>(s)); },
  };

  const Ops* ops_ = nullptr;
  alignas(void*) unsigned char storage_[kInlineSize];
};

}  // namespace rankd::rt
