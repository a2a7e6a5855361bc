// CheckInputImages (builtin-rules.md §2.18): per-channel means of the input images, accumulated over
// every step seen; judged once `threshold_samples` images have been seen.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "data_rules.h"

namespace vigil::builtin::data {

CheckInputImages::CheckInputImages(sdk::RuleContext ctx)
    : Rule(std::move(ctx)),
      threshold_mean_(params().get_double("threshold_mean")),
      threshold_samples_(params().get_int("threshold_samples")),
      regex_(params().get_string("regex")),
      channel_(params().get_int("channel")) {}

sdk::Result<bool> CheckInputImages::invoke_at_step(vigil_step step) {
  VIGIL_TRY(auto names, base_trial().tensor_names({.step = step, .regex = {regex_}}));
  std::sort(names.begin(), names.end());
  std::vector<std::string> read;
  for (const std::string& name : names) {
    auto workers = read_workers(base_trial(), name, step);
    if (!workers) {
      if (workers.error().is_skip()) continue;
      return sdk::fail(std::move(workers).error());
    }
    Stream& stream = streams_[name];
    for (const WorkerValue& w : *workers) {
      const auto ndim = static_cast<int64_t>(w.shape.size());
      const int64_t axis = channel_ < 0 ? channel_ + ndim : channel_;
      // Axis 0 is the batch: the channel axis must be another one.
      if (axis < 1 || axis >= ndim)
        return sdk::fail(sdk::Error::invalid_argument(fmt::format(
            "step {}, worker {}: {} has shape ({}); channel={} is not one of its non-batch axes", step, w.worker,
            name, fmt::join(w.shape, ", "), channel_)));
      const auto channels = static_cast<size_t>(w.shape[static_cast<size_t>(axis)]);
      size_t inner = 1;
      for (size_t d = static_cast<size_t>(axis) + 1; d < w.shape.size(); ++d) inner *= static_cast<size_t>(w.shape[d]);
      if (stream.sums.empty() && stream.samples == 0) {
        stream.sums.assign(channels, 0.0);
        stream.counts.assign(channels, 0);
      }
      if (stream.sums.size() != channels)
        return sdk::fail(sdk::Error::invalid_argument(
            fmt::format("step {}, worker {}: {} has {} channels on axis {}, earlier steps had {}", step, w.worker, name,
                        channels, axis, stream.sums.size())));
      if (channels == 0 || inner == 0) continue;
      for (size_t k = 0; k < w.values.size(); ++k) {
        const size_t c = (k / inner) % channels;
        stream.sums[c] += w.values[k];
        ++stream.counts[c];
      }
      stream.samples += w.shape[0];
    }
    read.push_back(name);
  }
  if (read.empty()) return sdk::fail(sdk::Error::tensor_unavailable_for_step(regex_, step));

  bool fired = false, judged = false;
  for (const std::string& name : read) {
    const Stream& stream = streams_[name];
    if (stream.samples < threshold_samples_) continue;  // not enough images yet: no verdict
    judged = true;
    std::vector<double> means(stream.sums.size());
    std::vector<size_t> violating;
    for (size_t c = 0; c < means.size(); ++c) {
      means[c] = stream.sums[c] / static_cast<double>(stream.counts[c]);  // 0/0 = NaN: never fires
      if (std::fabs(means[c]) > threshold_mean_) violating.push_back(c);
    }
    if (violating.empty()) continue;
    std::string means_json = "[";
    for (size_t c = 0; c < means.size(); ++c) means_json += (c ? "," : "") + sdk::json_number(means[c]);
    means_json += "]";
    VIGIL_TRY_VOID(report_evidence(sdk::JsonObject()
                                       .add("tensor", name)
                                       .add("samples_seen", stream.samples)
                                       .add("channel_axis", channel_)
                                       .add_raw("channel_means", means_json)
                                       .add_raw("channels_above_threshold", fmt::format("[{}]", fmt::join(violating, ",")))
                                       .add("threshold_mean", threshold_mean_)
                                       .add("threshold_samples", threshold_samples_)
                                       .str()));
    log(VIGIL_LOG_INFO, "step {}: {} over {} images: channel means [{}], |mean| > {} in {} channel(s)", step, name,
        stream.samples, fmt::join(means, ", "), threshold_mean_, violating.size());
    fired = true;
  }
  if (!judged) not_judged(fmt::format("fewer than the {} images it needs", threshold_samples_));
  return fired;
}

}  // namespace vigil::builtin::data
