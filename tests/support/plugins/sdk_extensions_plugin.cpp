// A plugin built with the SDK that asks the host for extensions in its init hook: one no host has
// (it must get nullptr and load all the same) and the test-only probe, which it tells that it ran.
#include <vigil/sdk.hpp>

#include "test_probe_extension.h"

namespace {

class ExtensionUser final : public vigil::sdk::Rule {
 public:
  explicit ExtensionUser(vigil::sdk::RuleContext ctx) : Rule(std::move(ctx)) {}

  static vigil::sdk::Result<void> on_plugin_init(const vigil::sdk::Host& host, std::string_view) {
    if (host.extension<vigil_test_probe_ext>(VIGIL_TEST_MISSING_EXTENSION_ID) != nullptr)
      return vigil::sdk::fail(vigil::sdk::Error::internal("the host offered an extension it cannot have"));
    if (const auto* probe = host.extension<vigil_test_probe_ext>(VIGIL_TEST_PROBE_EXTENSION_ID))
      probe->init_called("vigil.test.sdk-extensions");
    return {};
  }

  vigil::sdk::Result<bool> invoke_at_step(vigil_step) override { return false; }
};

}  // namespace

VIGIL_PLUGIN("vigil.test.sdk-extensions", "1.0",
             VIGIL_RULE(ExtensionUser, "vigil.test.sdk.ExtensionUser", "ExtensionUser",
                        "asks the host for extensions when the plugin is initialised"));
