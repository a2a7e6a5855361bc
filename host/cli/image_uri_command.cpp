// `vigil image-uri`: the registry URI of SageMaker's rule evaluator images (sagemaker-api §6).
#include <cstdio>
#include <string>
#include <string_view>

#include "cli/commands.h"

namespace vigil::cli {
namespace {

struct RegionImages {
  std::string_view region;
  std::string_view builtin_account;  // sagemaker-debugger-rules
  std::string_view custom_account;   // sagemaker-debugger-rule-evaluator; empty = not published
};

constexpr RegionImages kRegions[] = {
    {"af-south-1", "314341159256", "515950693465"},     {"ap-east-1", "199566480951", "645844755771"},
    {"ap-northeast-1", "430734990657", "670969264625"}, {"ap-northeast-2", "578805364391", "326368420253"},
    {"ap-northeast-3", "479947661362", ""},             {"ap-south-1", "904829902805", "552407032007"},
    {"ap-southeast-1", "972752614525", "631532610101"}, {"ap-southeast-2", "184798709955", "445670767460"},
    {"ca-central-1", "519511493484", "105842248657"},   {"cn-north-1", "618459771430", "617202126805"},
    {"cn-northwest-1", "658757709296", "658559488188"}, {"eu-central-1", "482524230118", "691764027602"},
    {"eu-north-1", "314864569078", "091235270104"},     {"eu-south-1", "563282790590", "335033873580"},
    {"eu-west-1", "929884845733", "606966180310"},      {"eu-west-2", "250201462417", "074613877050"},
    {"eu-west-3", "447278800020", "224335253976"},      {"me-south-1", "986000313247", "050406412588"},
    {"sa-east-1", "818342061345", "466516958431"},      {"us-east-1", "503895931360", "864354269164"},
    {"us-east-2", "915447279597", "840043622174"},      {"us-gov-west-1", "515509971035", "515361955729"},
    {"us-west-1", "685455198987", "952348334681"},      {"us-west-2", "895741380848", "759209512951"},
};

constexpr std::string_view kUsage = R"(usage: vigil image-uri --region REGION [--custom]

Prints the ECR URI of SageMaker Debugger's built-in rule image (sagemaker-debugger-rules), or with
--custom of the custom rule evaluator image (sagemaker-debugger-rule-evaluator), for a region.

options:
  --region REGION   an AWS region, e.g. us-west-2
  --custom          the custom rule evaluator image
  --list            list every known region
  -h, --help        show this help
)";

}  // namespace

int run_image_uri(const std::vector<std::string>& args) {
  std::string region;
  bool custom = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-h" || args[i] == "--help") {
      std::fputs(kUsage.data(), stdout);
      return kExitOk;
    } else if (args[i] == "--custom") {
      custom = true;
    } else if (args[i] == "--list") {
      for (const auto& r : kRegions) std::printf("%.*s\n", int(r.region.size()), r.region.data());
      return kExitOk;
    } else if (args[i] == "--region" && i + 1 < args.size()) {
      region = args[++i];
    } else {
      std::fprintf(stderr, "vigil image-uri: unexpected argument '%s'\n\n%s", args[i].c_str(), kUsage.data());
      return kExitUsage;
    }
  }
  if (region.empty()) {
    std::fputs(kUsage.data(), stderr);
    return kExitUsage;
  }
  for (const auto& r : kRegions) {
    if (r.region != region) continue;
    const std::string_view account = custom ? r.custom_account : r.builtin_account;
    if (account.empty()) {
      std::fprintf(stderr, "vigil image-uri: no custom rule evaluator image is published for %s\n", region.c_str());
      return kExitFailure;
    }
    const std::string_view domain = region.starts_with("cn-") ? "amazonaws.com.cn" : "amazonaws.com";
    std::printf("%.*s.dkr.ecr.%s.%.*s/%s:latest\n", int(account.size()), account.data(), region.c_str(),
                int(domain.size()), domain.data(), custom ? "sagemaker-debugger-rule-evaluator" : "sagemaker-debugger-rules");
    return kExitOk;
  }
  std::fprintf(stderr, "vigil image-uri: unknown region '%s' (vigil image-uri --list shows the known ones)\n",
               region.c_str());
  return kExitUsage;
}

}  // namespace vigil::cli
