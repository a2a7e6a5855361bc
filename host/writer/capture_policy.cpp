// CapturePolicy: smdebug's hook policy (format spec §4, §6.1, §6.2).
#include "writer/capture_policy.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include <fmt/format.h>

#include "common/search_regex.h"

namespace vigil::writer {

namespace {

template <size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::ranges::find(names, name) != std::end(names);
}

size_t mode_index(Mode m) { return static_cast<size_t>(m) - 1; }

bool is_norm(std::string_view op) { return op == "l1" || op == "l2"; }

// smdebug's write order within a collection: plain, norms, abs plain, abs norms.
int reduction_group(const format::ReductionSpec& r) { return (r.abs ? 2 : 0) + (is_norm(r.op) ? 1 : 0); }

}  // namespace

std::vector<format::CollectionConfig> pytorch_builtin_collections() {
  std::vector<format::CollectionConfig> out;
  for (const auto& b : kPyTorchCollections) {
    format::CollectionConfig c{.name = std::string(b.name), .save_histogram = b.save_histogram};
    if (!b.regex.empty()) c.include_regex.emplace_back(b.regex);
    out.push_back(std::move(c));
  }
  return out;
}

Result<CapturePolicy> CapturePolicy::create(std::vector<format::CollectionConfig> collections,
                                            std::vector<std::string> include, CaptureDefaults defaults,
                                            int64_t init_step) {
  for (const auto& sc : defaults.save_config)
    if (sc.save_interval <= 0) return fail(Error::invalid_argument("save_interval must be positive"));
  CapturePolicy p;
  p.include_ = std::move(include);
  p.defaults_ = std::move(defaults);
  p.init_step_ = p.global_step_ = init_step;
  p.mode_steps_.fill(init_step);
  for (auto& c : collections)
    if (auto added = p.add_collection(std::move(c)); !added) return fail(added.error());
  return p;
}

Result<CapturePolicy::Collection> CapturePolicy::complete(format::CollectionConfig config) const {
  if (config.name.empty()) return fail(Error::invalid_argument("collection name is empty"));
  Collection c;
  for (const auto& pattern : config.include_regex) {
    auto re = compile_search_regex(pattern);
    if (!re) return fail(Error::invalid_argument(fmt::format("collection {}: include_regex: {}", config.name, re.error().message)));
    c.regexes.push_back(std::move(*re));
  }
  if (listed(kScalarCollections, config.name) || listed(kSummaryCollections, config.name))
    config.save_histogram = false;
  if (listed(kScalarCollections, config.name) || listed(kSummaryCollections, config.name))
    config.reduction_config = format::ReductionConfig{.save_raw_tensor = true};
  else if (!config.reduction_config)
    config.reduction_config = defaults_.reduction_config;
  for (const auto& r : config.reduction_config->reductions)
    if (!listed(kReductionOps, r.op))
      return fail(Error::invalid_argument(fmt::format("collection {}: unknown reduction {}", config.name, r.op)));
  std::ranges::stable_sort(config.reduction_config->reductions, {}, reduction_group);
  if (!config.save_config) config.save_config.emplace();
  for (Mode m : kAllModes) {
    auto& mode_config = (*config.save_config)[mode_index(m)];
    if (!mode_config) mode_config = defaults_.save_config[mode_index(m)];
    if (mode_config->save_interval <= 0)
      return fail(Error::invalid_argument(fmt::format("collection {}: save_interval must be positive", config.name)));
  }
  c.names.insert(config.tensor_names.begin(), config.tensor_names.end());
  c.config = std::move(config);
  return c;
}

Result<void> CapturePolicy::add_collection(format::CollectionConfig collection) {
  auto c = complete(std::move(collection));
  if (!c) return fail(c.error());
  auto same = std::ranges::find(collections_, c->config.name, [](const Collection& x) { return x.config.name; });
  if (same != collections_.end()) {
    c->names.insert(same->names.begin(), same->names.end());
    *same = std::move(*c);
  } else {
    collections_.push_back(std::move(*c));
  }
  holders_.clear();
  due_.reset();
  return {};
}

bool CapturePolicy::includes(std::string_view collection) const {
  return std::ranges::find(include_, collection) != include_.end() || std::ranges::find(include_, "all") != include_.end();
}

void CapturePolicy::set_mode(Mode mode) {
  mode_ = mode;
  due_.reset();
}

void CapturePolicy::begin_step() {
  ++global_step_;
  if (mode_ != Mode::Global) ++mode_steps_[mode_index(mode_)];
  mode_steps_[mode_index(Mode::Global)] = global_step_;
  due_.reset();
}

void CapturePolicy::set_step(int64_t global_step, int64_t mode_step) {
  global_step_ = global_step;
  mode_steps_[mode_index(mode_)] = mode_step;
  if (mode_ != Mode::Global) mode_steps_[mode_index(Mode::Global)] = global_step;
  due_.reset();
}

void CapturePolicy::set_mode_step(Mode mode, int64_t mode_step) {
  mode_steps_[mode_index(mode)] = mode_step;
  due_.reset();
}

bool CapturePolicy::due(const Collection& c) const {
  if ((mode_ == Mode::Eval || mode_ == Mode::Predict) &&
      (c.config.name == "gradients" || c.config.name == "optimizer_variables"))
    return false;
  return (*c.config.save_config)[mode_index(mode_)]->should_save_step(mode_step());
}

const std::vector<std::string>& CapturePolicy::due_collections() {
  if (!due_) {
    due_.emplace();
    for (const auto& c : collections_)
      if (includes(c.config.name) && due(c)) due_->push_back(c.config.name);
    std::ranges::sort(*due_);
  }
  return *due_;
}

size_t CapturePolicy::find_or_create(std::string_view name) {
  for (size_t i = 0; i < collections_.size(); ++i)
    if (collections_[i].config.name == name) return i;
  // A name only a caller gives (save_tensor's collections): the defaults, as smdebug's get(create=True).
  auto c = complete(format::CollectionConfig{.name = std::string(name)});
  collections_.push_back(std::move(*c));  // cannot fail: no regex, the defaults were checked
  holders_.clear();
  return collections_.size() - 1;
}

const std::vector<size_t>& CapturePolicy::holders(const std::string& name) {
  auto it = holders_.find(name);
  if (it != holders_.end()) return it->second;
  std::vector<size_t> found;
  for (size_t i = 0; i < collections_.size(); ++i) {
    auto& c = collections_[i];
    if (!includes(c.config.name)) continue;
    if (c.names.contains(name) || std::ranges::any_of(c.regexes, [&](const std::regex& r) { return regex_search_bounded(name, r); })) {
      c.names.insert(name);
      found.push_back(i);
    }
  }
  return holders_.emplace(name, std::move(found)).first->second;
}

CapturePlan CapturePolicy::plan(std::string_view name_view, std::span<const std::string> explicit_collections,
                                bool check_due, std::string_view fallback) {
  const std::string name(name_view);
  std::vector<size_t> members;
  for (const auto& e : explicit_collections) members.push_back(find_or_create(e));
  for (size_t i : holders(name))
    if (std::ranges::find(members, i) == members.end()) members.push_back(i);
  if (members.empty() && !fallback.empty()) members.push_back(find_or_create(fallback));
  for (size_t i : members) collections_[i].names.insert(name);

  std::vector<const Collection*> chosen;
  for (size_t i : members)
    if (!check_due || due(collections_[i])) chosen.push_back(&collections_[i]);
  std::ranges::sort(chosen, {}, [](const Collection* c) { return c->config.name; });

  CapturePlan out;
  for (const Collection* c : chosen) {
    const auto& rc = *c->config.reduction_config;
    out.collections.push_back(c->config.name);
    out.save_raw = out.save_raw || rc.save_raw_tensor;
    out.save_shape = out.save_shape || rc.save_shape;
    for (const auto& r : rc.reductions)
      if (std::ranges::find(out.reductions, r) == out.reductions.end()) out.reductions.push_back(r);
    if (!out.histogram_collection && c->config.save_histogram) out.histogram_collection = c->config.name;
    out.scalar_summary = out.scalar_summary || listed(kScalarCollections, c->config.name);
  }
  return out;
}

bool CapturePolicy::join(std::string_view name, std::span<const std::string> collections) {
  bool raw = false;
  for (const auto& collection : collections) {
    const size_t known = collections_.size();
    const size_t i = find_or_create(collection);
    auto& c = collections_[i];
    c.names.insert(std::string(name));
    // A collection made here has no configuration of its own yet: its value is written raw.
    raw = raw || i >= known || c.config.reduction_config->save_raw_tensor;
  }
  holders_.erase(std::string(name));
  return raw;
}

format::CollectionsFile CapturePolicy::collections_file(int64_t num_workers) const {
  format::CollectionsFile file;
  file.num_workers = num_workers;
  for (const auto& c : collections_) {
    format::CollectionConfig out = c.config;
    out.tensor_names.assign(c.names.begin(), c.names.end());
    file.collections.push_back(std::move(out));
  }
  return file;
}

}  // namespace vigil::writer
