// FuzzBytes: a libFuzzer input's bytes as a uniform random bit generator, so the tests' random
// case generators (tests/engine/vm_cases.h, plan_cases.h) can draw from it: two bytes a draw,
// read forwards or backwards from one end; zeros once the bytes are used up (generators then
// bottom out in leaves, nulls and small cases).
//
// Plain value; no thread affinity. Borrows the bytes, which outlive it (the fuzzer's call).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rankd::fuzz {

class FuzzBytes {
 public:
  using result_type = std::uint64_t;
  FuzzBytes(const std::uint8_t* data, std::size_t size, bool backwards)
      : data_(data), size_(size), backwards_(backwards) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return 0xffff; }
  result_type operator()() {
    result_type v = 0;
    for (int i = 0; i < 2; ++i) v = (v << 8) | Next();
    return v;
  }

 private:
  std::uint8_t Next() {
    if (used_ == size_) return 0;
    const std::size_t at = backwards_ ? size_ - 1 - used_ : used_;
    ++used_;
    return data_[at];
  }

  const std::uint8_t* data_;
  std::size_t size_;
  bool backwards_;
  std::size_t used_ = 0;
};

}  // namespace rankd::fuzz
