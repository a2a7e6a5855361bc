// ParamSpec builder -> vigil_param_spec, the compile-time table, and the Params accessor.
#include <gtest/gtest.h>
#include <vigil/sdk/params.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace sdk = vigil::sdk;

namespace {

struct Specs {
  static constexpr const char* kModes[] = {"fast", "exact", nullptr};
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_double("threshold", "0.0000001", "Mean absolute gradient below which the rule is met").min(0),
      sdk::param_int("count", "3", "How many").range(0, 10),
      sdk::param_bool("flag", "True", "A switch"),
      sdk::param_string("label", nullptr, "A label"),
      sdk::param_string_list("collection_names", "gradients,weights", "Collections"),
      sdk::param_regex("pattern", ".*relu.*", "Tensors"),
      sdk::param_enum("mode", kModes, "fast", "How"),
      sdk::param_double("ratio", nullptr, "Required ratio").required().max(1),
  };
};

struct NoParams {};

using Table = sdk::detail::ParamTable<Specs>;

}  // namespace

// Everything below is usable in constant expressions.
static_assert(Table::size == 8);
static_assert(Table::table[0].struct_size == sizeof(vigil_param_spec));
static_assert(Table::table[0].type == VIGIL_PARAM_DOUBLE);
static_assert(Table::table[0].min_value == 0);
static_assert(Table::table[1].max_value == 10);
static_assert(Table::table[7].flags == VIGIL_PARAMF_REQUIRED);
static_assert(Specs::kParams[0].has_min() && !Specs::kParams[0].has_max());
static_assert(sdk::detail::ParamTable<NoParams>::size == 0);
static_assert(sdk::detail::ParamTable<NoParams>::data() == nullptr);

TEST(ParamSpec, BuilderProducesTheCFields) {
  const vigil_param_spec* p = Table::data();
  ASSERT_NE(p, nullptr);

  EXPECT_STREQ(p[0].name, "threshold");
  EXPECT_EQ(p[0].type, VIGIL_PARAM_DOUBLE);
  EXPECT_EQ(p[0].flags, 0u);
  EXPECT_STREQ(p[0].default_text, "0.0000001");
  EXPECT_EQ(p[0].min_value, 0.0);
  EXPECT_TRUE(std::isnan(p[0].max_value));  // unbounded
  EXPECT_EQ(p[0].choices, nullptr);
  EXPECT_STREQ(p[0].description, "Mean absolute gradient below which the rule is met");

  EXPECT_EQ(p[1].type, VIGIL_PARAM_INT64);
  EXPECT_EQ(p[1].min_value, 0.0);
  EXPECT_EQ(p[1].max_value, 10.0);

  EXPECT_EQ(p[2].type, VIGIL_PARAM_BOOL);
  EXPECT_TRUE(std::isnan(p[2].min_value));
  EXPECT_EQ(p[3].type, VIGIL_PARAM_STRING);
  EXPECT_EQ(p[3].default_text, nullptr);
  EXPECT_EQ(p[4].type, VIGIL_PARAM_STRING_LIST);
  EXPECT_EQ(p[5].type, VIGIL_PARAM_REGEX);

  EXPECT_EQ(p[6].type, VIGIL_PARAM_ENUM);
  ASSERT_NE(p[6].choices, nullptr);
  EXPECT_STREQ(p[6].choices[0], "fast");
  EXPECT_STREQ(p[6].choices[1], "exact");
  EXPECT_EQ(p[6].choices[2], nullptr);

  EXPECT_EQ(p[7].flags, uint32_t{VIGIL_PARAMF_REQUIRED});
  EXPECT_EQ(p[7].default_text, nullptr);
  EXPECT_TRUE(std::isnan(p[7].min_value));
  EXPECT_EQ(p[7].max_value, 1.0);

  // The table has static storage: the same address every time.
  EXPECT_EQ(Table::data(), sdk::detail::ParamTable<Specs>::data());
  // A ParamSpec converts to the C struct.
  const vigil_param_spec& c = Specs::kParams[1];
  EXPECT_STREQ(c.name, "count");
  EXPECT_FALSE(Specs::kParams[1].required(true).required(false).is_required());
}

namespace {

// What a host would pass for Specs: values in spec order.
struct HostValues {
  std::vector<const char*> list{"gradients", "weights"};
  std::vector<vigil_param_value> values;
  HostValues() {
    vigil_param_value v{};
    v = {VIGIL_PARAM_DOUBLE, true, "1e-7", {}, nullptr, 0};
    v.v.d = 1e-7;
    values.push_back(v);
    v = {VIGIL_PARAM_INT64, true, "3", {}, nullptr, 0};
    v.v.i = 3;
    values.push_back(v);
    v = {VIGIL_PARAM_BOOL, true, "True", {}, nullptr, 0};
    v.v.b = true;
    values.push_back(v);
    v = {VIGIL_PARAM_STRING, false, nullptr, {}, nullptr, 0};  // optional, left out
    values.push_back(v);
    v = {VIGIL_PARAM_STRING_LIST, true, "gradients,weights", {}, list.data(), list.size()};
    values.push_back(v);
    v = {VIGIL_PARAM_REGEX, true, ".*relu.*", {}, nullptr, 0};
    v.v.s = ".*relu.*";
    values.push_back(v);
    v = {VIGIL_PARAM_ENUM, true, "exact", {}, nullptr, 0};
    v.v.s = "exact";
    values.push_back(v);
    v = {VIGIL_PARAM_DOUBLE, true, "0.25", {}, nullptr, 0};
    v.v.d = 0.25;
    values.push_back(v);
  }
};

}  // namespace

TEST(Params, GettersReadTheHostValues) {
  HostValues hv;
  auto params = sdk::Params::from_abi(Specs::kParams, hv.values.data(), static_cast<uint32_t>(hv.values.size()));
  ASSERT_TRUE(params.has_value()) << params.error().message;
  const sdk::Params& p = *params;
  hv = HostValues();  // the host's array is gone after create: Params holds copies

  EXPECT_EQ(p.size(), 8u);
  EXPECT_DOUBLE_EQ(p.get_double("threshold"), 1e-7);
  EXPECT_EQ(p.get_int("count"), 3);
  EXPECT_DOUBLE_EQ(p.get_double("count"), 3.0);  // an INT64 reads as double too
  EXPECT_TRUE(p.get_bool("flag"));
  EXPECT_EQ(p.get_string("flag"), "True");  // the text of any scalar
  EXPECT_FALSE(p.is_set("label"));
  EXPECT_EQ(p.get_string_or("label", "none"), "none");
  EXPECT_EQ(p.get_list("collection_names"), (std::vector<std::string>{"gradients", "weights"}));
  EXPECT_EQ(p.get_string("pattern"), ".*relu.*");
  EXPECT_EQ(p.get_string("mode"), "exact");
  EXPECT_EQ(p.get<std::string_view>("mode").value(), "exact");
  EXPECT_DOUBLE_EQ(p.get_double("ratio"), 0.25);
  EXPECT_TRUE(p.is_set("ratio"));
  EXPECT_FALSE(p.is_set("nope"));
  EXPECT_TRUE(p.contains("label"));

  // Errors.
  EXPECT_EQ(p.get<double>("nope").error().code, VIGIL_E_INVALID_ARGUMENT);
  EXPECT_EQ(p.get<std::string>("label").error().code, VIGIL_E_INVALID_ARGUMENT);  // not set
  EXPECT_EQ(p.get<int64_t>("threshold").error().code, VIGIL_E_TYPE_ERROR);
  EXPECT_EQ(p.get<bool>("count").error().code, VIGIL_E_TYPE_ERROR);
  EXPECT_EQ(p.get<std::vector<std::string>>("label").error().code, VIGIL_E_INVALID_ARGUMENT);
  EXPECT_EQ(p.get<std::vector<std::string>>("mode").error().code, VIGIL_E_TYPE_ERROR);
  EXPECT_EQ(p.get<std::string>("collection_names").error().code, VIGIL_E_TYPE_ERROR);
  EXPECT_THROW((void)p.get_int("threshold"), sdk::SMDebugTypeError);
  EXPECT_THROW((void)p.get_double("nope"), sdk::SMDebugValueError);
  EXPECT_THROW((void)p.get_int_or("threshold", 1), sdk::SMDebugTypeError);  // a type error is not "unset"
}

TEST(Params, FewerHostValuesMeanNotSet) {
  HostValues hv;
  auto params = sdk::Params::from_abi(Specs::kParams, hv.values.data(), 2);
  ASSERT_TRUE(params.has_value());
  EXPECT_TRUE(params->is_set("count"));
  EXPECT_FALSE(params->is_set("flag"));
  EXPECT_TRUE(params->get_bool_or("flag", false) == false);
}

TEST(Params, AHostTypeMismatchIsAnError) {
  HostValues hv;
  hv.values[1].type = VIGIL_PARAM_DOUBLE;
  auto params = sdk::Params::from_abi(Specs::kParams, hv.values.data(), static_cast<uint32_t>(hv.values.size()));
  ASSERT_FALSE(params.has_value());
  EXPECT_EQ(params.error().code, VIGIL_E_INVALID_ARGUMENT);
  EXPECT_NE(params.error().message.find("count"), std::string::npos);

  auto none = sdk::Params::from_abi(Specs::kParams, nullptr, 3);
  EXPECT_FALSE(none.has_value());
  auto empty = sdk::Params::from_abi(std::span<const sdk::ParamSpec>(), nullptr, 0);
  EXPECT_TRUE(empty.has_value());
}
