// TensorView: RAII (the deleter runs exactly once), dtype checks, spans, Eigen maps.
#include <gtest/gtest.h>
#include <vigil/sdk/tensor.hpp>
#include <vigil/sdk/tensor_eigen.hpp>

#include <complex>
#include <cstring>
#include <utility>
#include <vector>

#include "fake_host.hpp"

namespace sdk = vigil::sdk;

namespace {

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kF64{kDLFloat, 64, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};
constexpr DLDataType kBool{VIGIL_DL_BOOL, 8, 1};

// Counts deleter calls during one test.
struct DeleterCount {
  int start = fake::deleter_calls.load();
  int alive_start = fake::views_alive.load();
  int calls() const { return fake::deleter_calls.load() - start; }
  int alive() const { return fake::views_alive.load() - alive_start; }
};

}  // namespace

TEST(TensorView, DestructorCallsTheDeleterOnce) {
  DeleterCount c;
  {
    sdk::TensorView v(fake::make_typed_view<float>({1, 2, 3}, {3}, kF32));
    EXPECT_TRUE(v);
    EXPECT_EQ(c.alive(), 1);
  }
  EXPECT_EQ(c.calls(), 1);
  EXPECT_EQ(c.alive(), 0);
}

TEST(TensorView, MovesTransferOwnershipWithoutExtraCalls) {
  DeleterCount c;
  {
    sdk::TensorView a(fake::make_typed_view<float>({1}, {1}, kF32));
    sdk::TensorView b(std::move(a));  // move construction
    EXPECT_FALSE(a);                  // NOLINT(bugprone-use-after-move): checking the moved-from state
    EXPECT_TRUE(b);
    EXPECT_EQ(c.calls(), 0);
    sdk::TensorView d(fake::make_typed_view<float>({2}, {1}, kF32));
    d = std::move(b);  // move assignment releases d's old view now
    EXPECT_EQ(c.calls(), 1);
    auto& self = d;
    d = std::move(self);  // self-move keeps the view
    EXPECT_TRUE(d);
    EXPECT_EQ(c.calls(), 1);
    sdk::TensorView empty;
    empty = sdk::TensorView();  // empty to empty
  }
  EXPECT_EQ(c.calls(), 2);
  EXPECT_EQ(c.alive(), 0);
}

TEST(TensorView, ResetAndRelease) {
  DeleterCount c;
  sdk::TensorView v(fake::make_typed_view<float>({1}, {1}, kF32));
  v.reset(fake::make_typed_view<float>({2}, {1}, kF32));
  EXPECT_EQ(c.calls(), 1);
  vigil_tensor* raw = v.release();
  EXPECT_FALSE(v);
  v.reset();
  EXPECT_EQ(c.calls(), 1);  // release() gave ownership away
  raw->deleter(raw);
  EXPECT_EQ(c.calls(), 2);
  EXPECT_EQ(c.alive(), 0);
  static_assert(!std::is_copy_constructible_v<sdk::TensorView>);
  static_assert(!std::is_copy_assignable_v<sdk::TensorView>);
  static_assert(std::is_nothrow_move_constructible_v<sdk::TensorView>);
}

TEST(TensorView, Metadata) {
  sdk::TensorView v(fake::make_typed_view<float>({1, 2, 3, 4, 5, 6}, {2, 3}, kF32));
  EXPECT_EQ(v.ndim(), 2);
  ASSERT_EQ(v.shape().size(), 2u);
  EXPECT_EQ(v.shape()[0], 2);
  EXPECT_EQ(v.shape()[1], 3);
  EXPECT_EQ(v.size(), 6);
  EXPECT_TRUE(v.is_read_only());
  EXPECT_TRUE(v.is_compact());
  EXPECT_EQ(v.bytes().size(), 24u);
  EXPECT_EQ(sdk::dtype_name(v.dtype()), "float32");
  EXPECT_EQ(sdk::dtype_name(DLDataType{kDLBfloat, 16, 1}), "bfloat16");
  EXPECT_EQ(sdk::dtype_name(kBool), "bool");

  sdk::TensorView scalar(fake::make_typed_view<double>({2.5}, {}, kF64));
  EXPECT_EQ(scalar.ndim(), 0);
  EXPECT_EQ(scalar.size(), 1);
  EXPECT_EQ(scalar.values<double>()[0], 2.5);

  const sdk::TensorView empty;
  EXPECT_EQ(empty.size(), 0);
  EXPECT_EQ(empty.try_values<float>().error().code, VIGIL_E_INVALID_ARGUMENT);
}

TEST(TensorView, ValuesCheckTheDtype) {
  sdk::TensorView f(fake::make_typed_view<float>({1.5f, -2.0f}, {2}, kF32));
  auto ok = f.try_values<float>();
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ((*ok)[0], 1.5f);
  EXPECT_EQ((*ok)[1], -2.0f);

  auto wrong = f.try_values<double>();
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code, VIGIL_E_TYPE_ERROR);
  EXPECT_NE(wrong.error().message.find("float32"), std::string::npos);
  EXPECT_NE(wrong.error().message.find("float64"), std::string::npos);
  EXPECT_EQ(f.try_values<int32_t>().error().code, VIGIL_E_TYPE_ERROR);   // same size, other code
  EXPECT_EQ(f.try_values<uint32_t>().error().code, VIGIL_E_TYPE_ERROR);
  EXPECT_THROW((void)f.values<int64_t>(), sdk::SMDebugTypeError);

  sdk::TensorView i(fake::make_typed_view<int64_t>({-3, 4}, {2}, kI64));
  EXPECT_EQ(i.values<int64_t>()[0], -3);
  EXPECT_EQ(i.try_values<uint64_t>().error().code, VIGIL_E_TYPE_ERROR);

  sdk::TensorView b(fake::make_view({1, 0, 1}, {3}, kBool));  // (std::vector<bool> has no data())
  EXPECT_EQ(b.values<bool>().size(), 3u);
  EXPECT_TRUE(b.values<bool>()[2]);
  EXPECT_EQ(b.try_values<uint8_t>().error().code, VIGIL_E_TYPE_ERROR);  // bool is not uint8

  sdk::TensorView c(fake::make_typed_view<std::complex<float>>({{1, 2}}, {1}, DLDataType{kDLComplex, 64, 1}));
  EXPECT_EQ(c.values<std::complex<float>>()[0], std::complex<float>(1, 2));

  // Vector lanes never match a scalar T.
  sdk::TensorView lanes(fake::make_typed_view<float>({1, 2, 3, 4}, {1}, DLDataType{kDLFloat, 32, 4}));
  EXPECT_EQ(lanes.try_values<float>().error().code, VIGIL_E_TYPE_ERROR);

  static_assert(sdk::dtype_of<int8_t>().code == kDLInt && sdk::dtype_of<int8_t>().bits == 8);
  static_assert(sdk::dtype_of<uint16_t>().code == kDLUInt && sdk::dtype_of<uint16_t>().bits == 16);
  static_assert(sdk::dtype_of<double>().code == kDLFloat && sdk::dtype_of<double>().bits == 64);
  static_assert(sdk::dtype_of<bool>().code == VIGIL_DL_BOOL && sdk::dtype_of<bool>().bits == 8);
  static_assert(!sdk::is_tensor_element_v<char>);
  static_assert(!sdk::is_tensor_element_v<std::string>);
}

TEST(TensorView, ZeroElementsAndStrides) {
  sdk::TensorView z(fake::make_typed_view<float>({}, {0, 3}, kF32));
  EXPECT_EQ(z.size(), 0);
  auto v = z.try_values<float>();
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(v->empty());

  // Explicit C-order strides are fine; transposed ones are not compact.
  std::vector<unsigned char> bytes(6 * sizeof(float));
  sdk::TensorView c(fake::make_view(bytes, {2, 3}, kF32, {3, 1}));
  EXPECT_TRUE(c.is_compact());
  EXPECT_TRUE(c.try_values<float>().has_value());
  sdk::TensorView t(fake::make_view(bytes, {2, 3}, kF32, {1, 2}));
  EXPECT_FALSE(t.is_compact());
  EXPECT_EQ(t.try_values<float>().error().code, VIGIL_E_NOT_SUPPORTED);
}

TEST(TensorView, ToDoublesHandlesHalfAndBfloat) {
  // float16: 1.0 = 0x3C00, -2.0 = 0xC000, 0.5 = 0x3800, 2^-24 (smallest subnormal) = 0x0001.
  sdk::TensorView h(fake::make_typed_view<uint16_t>({0x3C00, 0xC000, 0x3800, 0x0001}, {4}, DLDataType{kDLFloat, 16, 1}));
  auto d = h.to_doubles();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ((*d)[0], 1.0);
  EXPECT_EQ((*d)[1], -2.0);
  EXPECT_EQ((*d)[2], 0.5);
  EXPECT_EQ((*d)[3], std::ldexp(1.0, -24));
  // bfloat16: 1.0 = 0x3F80, -3.0 = 0xC040.
  sdk::TensorView b(fake::make_typed_view<uint16_t>({0x3F80, 0xC040}, {2}, DLDataType{kDLBfloat, 16, 1}));
  EXPECT_EQ(b.to_doubles().value(), (std::vector<double>{1.0, -3.0}));
  sdk::TensorView i(fake::make_typed_view<int32_t>({-1, 7}, {2}, DLDataType{kDLInt, 32, 1}));
  EXPECT_EQ(i.to_doubles().value(), (std::vector<double>{-1.0, 7.0}));
  sdk::TensorView c(fake::make_typed_view<std::complex<float>>({{1, 2}}, {1}, DLDataType{kDLComplex, 64, 1}));
  EXPECT_EQ(c.to_doubles().error().code, VIGIL_E_TYPE_ERROR);
}

TEST(TensorView, AsEigenMapsWithoutCopy) {
  sdk::TensorView v(fake::make_typed_view<float>({1, 2, 3, 4, 5, 6}, {2, 3}, kF32));
  auto m = v.as_eigen<float>();
  EXPECT_EQ(m.size(), 6);
  EXPECT_FLOAT_EQ(m.sum(), 21.0f);
  EXPECT_FLOAT_EQ(m.abs().maxCoeff(), 6.0f);
  EXPECT_EQ(static_cast<const void*>(m.data()), v.data());  // no copy

  sdk::TensorView g(fake::make_typed_view<double>({-1.5, 0.5}, {2}, kF64));
  const sdk::EigenArrayMap<double> gm = g.as_eigen<double>();
  EXPECT_DOUBLE_EQ(gm.abs().mean(), 1.0);

  auto wrong = v.try_as_eigen<double>();
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code, VIGIL_E_TYPE_ERROR);
  EXPECT_THROW((void)v.as_eigen<int32_t>(), sdk::SMDebugTypeError);
}
