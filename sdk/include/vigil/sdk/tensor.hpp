// Vigil C++ SDK: TensorView, the move-only owner of a host tensor view (vigil_tensor, DLPack).
//
// The host hands out read-only views; the plugin releases each by calling its deleter exactly once.
// TensorView does that in its destructor. values<T>() gives a zero-copy std::span after checking
// the DLPack dtype against T; as_eigen<T>() (in tensor_eigen.hpp) gives an Eigen::Map.
#pragma once

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "vigil/sdk/error.hpp"
#include "vigil/sdk/half.hpp"

namespace vigil::sdk::inline v1 {

namespace detail {
template <class T>
struct is_std_complex : std::false_type {};
template <class T>
struct is_std_complex<std::complex<T>> : std::true_type {};

template <class T>
constexpr bool is_char_like_v = std::is_same_v<T, char> || std::is_same_v<T, wchar_t> ||
                                std::is_same_v<T, char8_t> || std::is_same_v<T, char16_t> ||
                                std::is_same_v<T, char32_t>;
}  // namespace detail

// True for the C++ element types a tensor can be read as: bool, the fixed-width integers, float,
// double, std::complex<float>, std::complex<double>.
template <class T>
inline constexpr bool is_tensor_element_v = [] {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool> || std::is_same_v<U, float> || std::is_same_v<U, double>) return true;
  else if constexpr (detail::is_std_complex<U>::value)
    return std::is_same_v<U, std::complex<float>> || std::is_same_v<U, std::complex<double>>;
  else return std::is_integral_v<U> && !detail::is_char_like_v<U>;
}();

// The DLPack dtype that holds T elements (lanes = 1).
template <class T>
  requires is_tensor_element_v<T>
constexpr DLDataType dtype_of() noexcept {
  using U = std::remove_cv_t<T>;
  constexpr auto bits = static_cast<uint8_t>(8 * sizeof(U));
  if constexpr (std::is_same_v<U, bool>) return DLDataType{static_cast<uint8_t>(VIGIL_DL_BOOL), 8, 1};
  else if constexpr (std::is_floating_point_v<U>) return DLDataType{static_cast<uint8_t>(kDLFloat), bits, 1};
  else if constexpr (detail::is_std_complex<U>::value) return DLDataType{static_cast<uint8_t>(kDLComplex), bits, 1};
  else if constexpr (std::is_signed_v<U>) return DLDataType{static_cast<uint8_t>(kDLInt), bits, 1};
  else return DLDataType{static_cast<uint8_t>(kDLUInt), bits, 1};
}

constexpr bool same_dtype(const DLDataType& a, const DLDataType& b) noexcept {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

// numpy-style dtype names: "float32", "int64", "bool", "bfloat16", "complex64"; lanes as "x4".
inline std::string dtype_name(DLDataType t) {
  std::string base;
  switch (t.code) {
    case kDLInt: base = fmt::format("int{}", t.bits); break;
    case kDLUInt: base = fmt::format("uint{}", t.bits); break;
    case kDLFloat: base = fmt::format("float{}", t.bits); break;
    case kDLBfloat: base = fmt::format("bfloat{}", t.bits); break;
    case VIGIL_DL_FLOAT8_E4M3FN: base = "float8_e4m3fn"; break;
    case VIGIL_DL_FLOAT8_E5M2: base = "float8_e5m2"; break;
    case kDLComplex: base = fmt::format("complex{}", t.bits); break;
    case kDLOpaqueHandle: base = "opaque"; break;
    case VIGIL_DL_BOOL: base = t.bits == 8 ? std::string("bool") : fmt::format("bool{}", t.bits); break;
    default: base = fmt::format("dtype(code={}, bits={})", t.code, t.bits); break;
  }
  if (t.lanes != 1) base += fmt::format("x{}", t.lanes);
  return base;
}

class TensorView;

namespace detail {
// Defined in tensor_eigen.hpp; the primary template only explains what is missing.
template <class T, class Enable = void>
struct EigenAdapter {
  static_assert(always_false<T>, "include <vigil/sdk/tensor_eigen.hpp> to use TensorView::as_eigen()");
};

}  // namespace detail

// Owns one vigil_tensor*: calls its deleter exactly once (destructor, reset() or assignment).
// Move-only. Safe to destroy on any thread, but before the plugin's deinit.
class TensorView {
 public:
  TensorView() noexcept = default;
  explicit TensorView(vigil_tensor* view) noexcept : view_(view) {}
  TensorView(const TensorView&) = delete;
  TensorView& operator=(const TensorView&) = delete;
  TensorView(TensorView&& other) noexcept : view_(std::exchange(other.view_, nullptr)) {}
  TensorView& operator=(TensorView&& other) noexcept {
    if (this != &other) reset(std::exchange(other.view_, nullptr));
    return *this;
  }
  ~TensorView() { reset(); }

  // Releases the current view (if any) and takes `view`.
  void reset(vigil_tensor* view = nullptr) noexcept {
    vigil_tensor* old = std::exchange(view_, view);
    if (old && old->deleter) old->deleter(old);
  }
  // Gives up ownership without calling the deleter; the caller must call it.
  [[nodiscard]] vigil_tensor* release() noexcept { return std::exchange(view_, nullptr); }

  vigil_tensor* get() const noexcept { return view_; }
  explicit operator bool() const noexcept { return view_ != nullptr; }

  // ---- metadata (an empty view reports a 0-d, zero-element tensor) ----
  const DLTensor* dl_tensor() const noexcept { return view_ ? &view_->dl_tensor : nullptr; }
  DLDataType dtype() const noexcept { return view_ ? view_->dl_tensor.dtype : DLDataType{0, 0, 0}; }
  int ndim() const noexcept { return view_ && view_->dl_tensor.shape ? view_->dl_tensor.ndim : 0; }
  std::span<const int64_t> shape() const noexcept {
    if (!view_ || !view_->dl_tensor.shape || view_->dl_tensor.ndim <= 0) return {};
    return {view_->dl_tensor.shape, static_cast<size_t>(view_->dl_tensor.ndim)};
  }
  // The number of elements: the product of the shape (1 for a 0-d scalar, 0 for an empty view).
  int64_t size() const noexcept {
    if (!view_) return 0;
    int64_t n = 1;
    for (int64_t d : shape()) n *= d < 0 ? 0 : d;
    return n;
  }
  uint64_t flags() const noexcept { return view_ ? view_->flags : 0; }
  bool is_read_only() const noexcept { return (flags() & VIGIL_TENSOR_FLAG_READ_ONLY) != 0; }
  // True when the elements are dense and in C order (strides NULL, or equal to the C-order strides;
  // dimensions of extent 1 may carry any stride).
  bool is_compact() const noexcept {
    if (!view_ || !view_->dl_tensor.strides) return true;
    const auto dims = shape();
    int64_t expected = 1;
    for (size_t i = dims.size(); i-- > 0;) {
      if (dims[i] != 1 && view_->dl_tensor.strides[i] != expected) return false;
      expected *= dims[i];
    }
    return true;
  }
  // The first element (data + byte_offset); may be NULL for a zero-element tensor.
  const void* data() const noexcept {
    if (!view_ || !view_->dl_tensor.data) return nullptr;
    return static_cast<const char*>(view_->dl_tensor.data) + view_->dl_tensor.byte_offset;
  }
  // The element bytes of a compact tensor.
  std::span<const std::byte> bytes() const noexcept {
    const auto t = dtype();
    const size_t element = (static_cast<size_t>(t.bits) * t.lanes + 7) / 8;
    if (!data()) return {};
    return {static_cast<const std::byte*>(data()), static_cast<size_t>(size()) * element};
  }

  // ---- typed access ----

  // The elements as T, without a copy. Errors: VIGIL_E_TYPE_ERROR when the dtype is not T's,
  // VIGIL_E_NOT_SUPPORTED for non-CPU, non-compact or misaligned data, VIGIL_E_INVALID_ARGUMENT for
  // an empty view.
  template <class T>
  [[nodiscard]] Result<std::span<const T>> try_values() const {
    static_assert(is_tensor_element_v<T>,
                  "values<T>(): T must be bool, a fixed-width integer, float, double or std::complex<float|double>");
    if (!view_) return fail(Error::invalid_argument("TensorView is empty"));
    const DLTensor& t = view_->dl_tensor;
    if (t.device.device_type != kDLCPU)
      return fail(Error::not_supported(fmt::format("tensor is on device type {}, not the CPU",
                                                   static_cast<int>(t.device.device_type))));
    constexpr DLDataType want = dtype_of<T>();
    if (!same_dtype(t.dtype, want))
      return fail(Error::type_error(
          fmt::format("tensor has dtype {}, it cannot be read as {}", dtype_name(t.dtype), dtype_name(want))));
    if (!is_compact()) return fail(Error::not_supported("tensor is not compact (non C-order strides)"));
    const int64_t n = size();
    if (n == 0) return std::span<const T>{};
    const void* p = data();
    if (!p) return fail(Error::internal("tensor has elements but no data pointer"));
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) != 0)
      return fail(Error::not_supported(fmt::format("tensor data is not aligned for {}", dtype_name(want))));
    return std::span<const T>(static_cast<const T*>(p), static_cast<size_t>(n));
  }

  // Every element converted to double (real dtypes only, float16, bfloat16 and float8 included): a copy.
  [[nodiscard]] Result<std::vector<double>> to_doubles() const {
    if (!view_) return fail(Error::invalid_argument("TensorView is empty"));
    const DLDataType t = dtype();
    std::vector<double> out;
    const auto convert = [&]<class T>(std::type_identity<T>) -> Result<void> {
      auto v = try_values<T>();
      if (!v) return fail(std::move(v).error());
      out.assign(v->begin(), v->end());
      return {};
    };
    Result<void> r;
    if (t.lanes != 1) return fail(Error::type_error(fmt::format("cannot convert {} to double", dtype_name(t))));
    switch (t.code) {
      case kDLFloat:
        if (t.bits == 32) r = convert(std::type_identity<float>{});
        else if (t.bits == 64) r = convert(std::type_identity<double>{});
        else if (t.bits == 16) r = half_bits(out, false);
        else r = fail(Error::type_error(fmt::format("cannot convert {} to double", dtype_name(t))));
        break;
      case kDLBfloat:
        if (t.bits == 16) r = half_bits(out, true);
        else r = fail(Error::type_error(fmt::format("cannot convert {} to double", dtype_name(t))));
        break;
      case VIGIL_DL_FLOAT8_E4M3FN:
      case VIGIL_DL_FLOAT8_E5M2:
        if (t.bits == 8) r = float8_bits(out, t.code == VIGIL_DL_FLOAT8_E4M3FN);
        else r = fail(Error::type_error(fmt::format("cannot convert {} to double", dtype_name(t))));
        break;
      case kDLInt:
        if (t.bits == 8) r = convert(std::type_identity<int8_t>{});
        else if (t.bits == 16) r = convert(std::type_identity<int16_t>{});
        else if (t.bits == 32) r = convert(std::type_identity<int32_t>{});
        else if (t.bits == 64) r = convert(std::type_identity<int64_t>{});
        else r = fail(Error::type_error(fmt::format("cannot convert {} to double", dtype_name(t))));
        break;
      case kDLUInt:
        if (t.bits == 8) r = convert(std::type_identity<uint8_t>{});
        else if (t.bits == 16) r = convert(std::type_identity<uint16_t>{});
        else if (t.bits == 32) r = convert(std::type_identity<uint32_t>{});
        else if (t.bits == 64) r = convert(std::type_identity<uint64_t>{});
        else r = fail(Error::type_error(fmt::format("cannot convert {} to double", dtype_name(t))));
        break;
      case VIGIL_DL_BOOL: r = convert(std::type_identity<bool>{}); break;
      default: r = fail(Error::type_error(fmt::format("cannot convert {} to double", dtype_name(t))));
    }
    if (!r) return fail(std::move(r).error());
    return out;
  }

  // The view as an Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> (no copy); needs
  // <vigil/sdk/tensor_eigen.hpp>. try_as_eigen returns Result, as_eigen throws on a mismatch.
  template <class T>
  auto try_as_eigen() const {
    return detail::EigenAdapter<T>::map(*this);
  }

#if VIGIL_SDK_EXCEPTIONS
  // values<T>() / as_eigen<T>(): the same, throwing the matching smdebug exception on failure
  // (SMDebugTypeError for a dtype mismatch).
  template <class T>
  std::span<const T> values() const {
    return value_or_throw(try_values<T>());
  }
  template <class T>
  auto as_eigen() const {
    return value_or_throw(try_as_eigen<T>());
  }
#endif

 private:
  [[nodiscard]] Result<void> half_bits(std::vector<double>& out, bool bfloat) const {
    if (!is_compact()) return fail(Error::not_supported("tensor is not compact (non C-order strides)"));
    const auto raw = bytes();
    out.resize(raw.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, raw.data() + 2 * i, 2);
      out[i] = bfloat ? bfloat16_to_float(h) : half_to_float(h);
    }
    return {};
  }
  [[nodiscard]] Result<void> float8_bits(std::vector<double>& out, bool e4m3fn) const {
    if (!is_compact()) return fail(Error::not_supported("tensor is not compact (non C-order strides)"));
    const auto raw = bytes();
    out.resize(raw.size());
    for (size_t i = 0; i < out.size(); ++i) {
      const auto b = static_cast<uint8_t>(raw[i]);
      out[i] = e4m3fn ? float8_e4m3fn_to_float(b) : float8_e5m2_to_float(b);
    }
    return {};
  }

  vigil_tensor* view_ = nullptr;
};

}  // namespace vigil::sdk::inline v1
