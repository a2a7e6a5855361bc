// bfloat16 and float8 values through the host's ABI table (host_api()->tensor_value), as a rule
// plugin reads them: their DLPack codes, their exact values through the SDK's TensorView, and the
// float32 a plugin built before ABI 1.3 (which knows no float8 code) gets instead.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include <vigil/sdk/half.hpp>
#include <vigil/sdk/tensor.hpp>
#include <vigil/vigil.h>

#include "plugin_host/host_services.h"
#include "test_support.h"
#include "trial/trial.h"
#include "writer/trial_writer.h"

namespace vigil {
namespace {

using format::ElementType;

// One step holding every bit pattern of both float8 formats and a few bfloat16 values.
class LowPrecisionViews : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int b = 0; b < 256; ++b) all_bytes.push_back(std::byte(b));
    for (float f : {1.5f, -0.0078125f, 3.0e38f, 1.0e-40f}) bf16_bits.push_back(uint16_t(std::bit_cast<uint32_t>(f) >> 16));
    auto writer = writer::TrialWriter::create(dir.path());
    ASSERT_VIGIL_OK(writer);
    ASSERT_VIGIL_OK((*writer)->begin_step());
    for (auto [name, type] : {std::pair{"e4m3fn", ElementType::Float8E4M3FN}, std::pair{"e5m2", ElementType::Float8E5M2}})
      ASSERT_VIGIL_OK((*writer)->write_tensor(name, writer::TensorData{type, {16, 16}, all_bytes, {}}));
    ASSERT_VIGIL_OK((*writer)->write_tensor(
        "bf16", writer::TensorData{ElementType::BFloat16, {4}, std::as_bytes(std::span(bf16_bits)), {}}));
    ASSERT_VIGIL_OK((*writer)->close());
    auto trial = Trial::open(dir.path());
    ASSERT_VIGIL_OK(trial);
    handle.trial = *trial;
    handle.session = &session;
  }

  sdk::TensorView view(const char* name) {
    vigil_tensor_key key{sizeof(vigil_tensor_key), name, 0, VIGIL_MODE_GLOBAL, nullptr};
    vigil_tensor* out = nullptr;
    vigil_error err{};
    err.struct_size = sizeof err;
    EXPECT_EQ(plugin_host::host_api()->tensor_value(&handle, &key, &out, &err), VIGIL_OK) << err.message;
    return sdk::TensorView(out);
  }

  test::ScratchDir dir;
  std::vector<std::byte> all_bytes;
  std::vector<uint16_t> bf16_bits;
  vigil_session session;
  vigil_trial handle;
};

TEST_F(LowPrecisionViews, Float8ReachesAnAbi13PluginAsItsOwnDLPackCodeWithExactValues) {
  session.plugin_abi_minor = 3;
  for (auto [name, code] : {std::pair{"e4m3fn", VIGIL_DL_FLOAT8_E4M3FN}, std::pair{"e5m2", VIGIL_DL_FLOAT8_E5M2}}) {
    sdk::TensorView v = view(name);
    EXPECT_EQ(v.dtype().code, code) << name;
    EXPECT_EQ(v.dtype().bits, 8) << name;
    ASSERT_EQ(v.bytes().size(), 256u);
    EXPECT_EQ(std::memcmp(v.bytes().data(), all_bytes.data(), 256), 0) << name;  // the bits as written
    auto values = v.to_doubles();
    ASSERT_TRUE(values) << name;
    // e4m3fn: 0x7e is 448, its largest; 0x7f and 0xff its only NaNs; 0x01 its smallest subnormal 2^-9.
    // e5m2: 0x7b is 57344, its largest; 0x7c infinity; 0x7d-0x7f and 0xfd-0xff NaN; 0x01 2^-16.
    const bool fn = code == VIGIL_DL_FLOAT8_E4M3FN;
    if (fn) EXPECT_EQ((*values)[0x7e], 448.0);
    else EXPECT_EQ((*values)[0x7b], 57344.0);
    EXPECT_EQ((*values)[0x01], fn ? std::ldexp(1.0, -9) : std::ldexp(1.0, -16)) << name;
    EXPECT_EQ((*values)[0x38], fn ? 1.0 : std::ldexp(1.0, -1)) << name;
    EXPECT_TRUE(std::isnan((*values)[0xff])) << name;
    if (fn) EXPECT_TRUE(std::isnan((*values)[0x7f]));
    else EXPECT_EQ((*values)[0x7c], INFINITY);
    size_t nans = 0;
    for (double x : *values) nans += std::isnan(x);
    EXPECT_EQ(nans, fn ? 2u : 6u) << name;
  }
}

TEST_F(LowPrecisionViews, AnOlderPluginGetsFloat8AsFloat32HoldingTheSameValues) {
  session.plugin_abi_minor = 3;
  const std::vector<double> exact = view("e4m3fn").to_doubles().value();
  session.plugin_abi_minor = 2;  // built against ABI 1.2
  sdk::TensorView old = view("e4m3fn");
  EXPECT_EQ(old.dtype().code, kDLFloat);
  EXPECT_EQ(old.dtype().bits, 32);
  const std::vector<double> widened = old.to_doubles().value();
  ASSERT_EQ(widened.size(), exact.size());
  for (size_t i = 0; i < exact.size(); ++i)
    EXPECT_TRUE(widened[i] == exact[i] || (std::isnan(widened[i]) && std::isnan(exact[i]))) << i;
}

TEST_F(LowPrecisionViews, Bfloat16IsDLPacksBfloatWithExactValues) {
  session.plugin_abi_minor = 2;  // bfloat16 has been in every minor
  sdk::TensorView v = view("bf16");
  EXPECT_EQ(v.dtype().code, kDLBfloat);
  EXPECT_EQ(sdk::dtype_name(v.dtype()), "bfloat16");
  const std::vector<double> values = v.to_doubles().value();
  ASSERT_EQ(values.size(), bf16_bits.size());
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(values[i], double(sdk::bfloat16_to_float(bf16_bits[i]))) << i;
  EXPECT_EQ(values[0], 1.5);
  EXPECT_EQ(values[1], -0.0078125);
}

}  // namespace
}  // namespace vigil
