// TrialWriter: smdebug's hook-side file layout (format spec §1, §3.6, §3.9-§3.11, §4, §6).
#include "writer/trial_writer.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "common/file_read.h"
#include "common/os.h"
#include "common/published_file.h"
#include "format/event_proto.h"
#include "format/index_json.h"
#include "format/tfrecord.h"
#include "format/trial_layout.h"
#include "trial/reductions.h"
#include "trial/tensor_value.h"
#include "writer/scalar_encoding.h"

namespace vigil::writer {

namespace fs = std::filesystem;

namespace {


// "smdebug/reductions/[abs_]<op>/<base>" with every ":<digits>" dropped (non-TF frameworks, §3.10).
std::string reduction_tensor_name(std::string_view base, std::string_view op, bool abs) {
  std::string out = fmt::format("smdebug/reductions/{}{}/", abs ? "abs_" : "", op);
  for (size_t i = 0; i < base.size();) {
    if (base[i] == ':' && i + 1 < base.size() && base[i + 1] >= '0' && base[i + 1] <= '9') {
      i += 2;
      while (i < base.size() && base[i] >= '0' && base[i] <= '9') ++i;
    } else {
      out += base[i++];
    }
  }
  return out;
}

// The writer's failures to write (its few reads use Error::io).
[[nodiscard]] Error io_error(const fs::path& path, int err) { return Error::io_write(path.string(), std::strerror(err)); }
[[nodiscard]] Error io_error(const fs::path& path, const std::error_code& ec) { return Error::io_write(path.string(), ec.message()); }

[[nodiscard]] Result<void> make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(io_error(dir, ec));
  return {};
}

// A file of the trial published through "<final>.tmp" (§1.6), its folder created first.
[[nodiscard]] Result<PublishedFile> create_published(const fs::path& final_path) {
  if (auto made = make_dirs(final_path.parent_path()); !made) return fail(made.error());
  fs::path tmp = final_path;
  tmp += format::kTmpSuffix;
  return PublishedFile::create(final_path, std::move(tmp));
}

[[nodiscard]] Result<void> write_file(const fs::path& path, std::string_view content) {
  if (auto made = make_dirs(path.parent_path()); !made) return fail(made.error());
  fs::path tmp = path;
  tmp += format::kTmpSuffix;
  return publish_file(path, tmp, content);
}

// Element count of a shape; nullopt for negative dims or overflow.
std::optional<uint64_t> element_count(std::span<const int64_t> shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) return std::nullopt;
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

// Checks that `data` is self-consistent and returns its element count.
[[nodiscard]] Result<uint64_t> validate(std::string_view name, const TensorData& data) {
  auto count = element_count(data.shape);
  if (!count) return fail(Error::invalid_argument(fmt::format("tensor {}: invalid shape", name)));
  if (data.dtype == ElementType::String) {
    // smdebug's reader accepts only 1-d string tensors (§3.7).
    if (data.shape.size() != 1)
      return fail(Error::invalid_argument(fmt::format("tensor {}: string tensors must be 1-d", name)));
    if (data.strings.size() != *count)
      return fail(Error::invalid_argument(
          fmt::format("tensor {}: {} strings for shape of {} elements", name, data.strings.size(), *count)));
    return *count;
  }
  const size_t item = format::element_type_info(data.dtype).item_size;
  if (*count > std::numeric_limits<uint64_t>::max() / item || data.bytes.size() != *count * item)
    return fail(Error::invalid_argument(fmt::format("tensor {}: {} bytes do not match shape of {} elements of {} bytes",
                                                    name, data.bytes.size(), *count, item)));
  return *count;
}

}  // namespace

struct TrialWriter::State {
  // The records and index of the open step; the event file is streamed to its .tmp.
  struct OpenStep {
    int64_t global_step = 0;
    format::StepIndex index;
    std::optional<PublishedFile> events;
    uint64_t events_size = 0;
    // After a failed write the event file's contents no longer match the index: the step is dropped.
    std::optional<Error> failed;
    bool empty() const { return index.tensor_payload.empty() && index.shape_payload.empty(); }
  };

  fs::path out_dir;
  WriterOptions options;
  // save_tensor()'s policy, saving every collection; it also numbers the steps (§4).
  CapturePolicy policy;
  Mode mode = Mode::Global;
  std::optional<OpenStep> step;
  std::optional<int64_t> last_written_step;
  bool saved_any = false;
  bool collections_written = false;
  bool builtins_installed = false;
  bool closed = false;

  int64_t global_step() const { return policy.global_step(); }
  int64_t mode_step() const { return policy.mode_step(); }

  // smdebug PyTorch's collections, first, unless the caller configured its own (see WriterOptions).
  void ensure_collections() {
    if (builtins_installed) return;
    builtins_installed = true;
    if (!options.builtin_collections && policy.has_collections()) return;
    for (auto& b : pytorch_builtin_collections()) (void)policy.add_collection(std::move(b));  // valid regexes
  }

  double now() const {
    if (options.clock) return options.clock();
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }

  [[nodiscard]] Result<void> require_step() const {
    if (closed) return fail(Error::invalid_argument("the writer is closed"));
    if (!step) return fail(Error::invalid_argument("no step is open: call begin_step() first"));
    if (step->failed) return fail(*step->failed);
    return {};
  }

  // Appends one tensor event as a record: framing and encoded fields around the tensor's content,
  // which is written from the caller's buffer (no copy of large tensors).
  [[nodiscard]] Result<void> append_event(const std::string& tag, const format::EncodedTensorEvent& event) {
    auto& s = *step;
    const std::string rel = format::event_file_relpath(s.global_step, options.worker);
    if (!s.events) {
      auto f = create_published(out_dir / rel);
      if (!f) return fail(f.error());
      s.events.emplace(std::move(*f));
    }
    auto header = format::record_header(event.size());
    auto footer = format::magic_footer();
    auto part = [](const void* p, size_t n) { return iovec{const_cast<void*>(p), n}; };
    iovec parts[] = {part(header.data(), header.size()), part(event.before.data(), event.before.size()),
                     part(event.content.data(), event.content.size()), part(event.after.data(), event.after.size()),
                     part(footer.data(), footer.size())};
    if (auto w = s.events->write_parts(parts); !w) {
      s.failed = w.error();
      return w;
    }
    const uint64_t record_size = event.size() + format::kRecordOverhead;
    s.index.tensor_payload.push_back({tag, s.events_size, record_size});
    s.events_size += record_size;
    s.index.event_file_name = rel;
    return {};
  }

  [[nodiscard]] Result<void> write_tensor(const std::string& name, const TensorData& data,
                                         std::optional<double> wall_time = std::nullopt) {
    if (auto r = require_step(); !r) return r;
    auto count = validate(name, data);
    if (!count) return fail(count.error());
    if (*count == 0) return {};  // smdebug never writes zero-size arrays (§3.6)
    format::TensorEventSpec spec;
    spec.wall_time = wall_time ? *wall_time : now();
    spec.step = step->global_step;
    spec.tag = name;
    spec.shape = data.shape;
    if (data.dtype == ElementType::String) {
      spec.dtype = 0;
      spec.strings = data.strings;
    } else {
      spec.dtype = static_cast<int32_t>(format::element_type_info(data.dtype).data_type);
      spec.tensor_content = {reinterpret_cast<const uint8_t*>(data.bytes.data()), data.bytes.size()};
    }
    spec.mode = mode;
    spec.mode_step = mode_step();
    return append_event(name, format::encode_tensor_event_pieces(spec));
  }

  [[nodiscard]] Result<void> end_step() {
    if (!step) return {};
    OpenStep s = std::move(*step);
    step.reset();
    if (s.failed) return fail(*s.failed);  // s's destructor removes the .tmp
    if (s.empty()) return {};
    // The event file is final before the index that points into it appears (§1.6).
    if (s.events) {
      if (auto p = s.events->publish(); !p) return p;
    }
    auto index = write_file(out_dir / format::index_file_relpath(s.global_step, options.worker),
                            format::serialize_index_json(s.index));
    if (!index) return index;
    last_written_step = s.global_step;
    saved_any = true;
    return {};
  }

  [[nodiscard]] Result<void> write_collections() {
    ensure_collections();
    const format::CollectionsFile file = policy.collections_file(options.num_workers);
    auto w = write_file(out_dir / format::collections_file_relpath(options.worker),
                        format::serialize_collections_json(file));
    if (w) collections_written = true;
    return w;
  }

  // Ends the open step and, once a step has been saved, publishes the collections (§1.4).
  [[nodiscard]] Result<void> finish_previous_step() {
    if (auto e = end_step(); !e) return e;
    if (saved_any && !collections_written && options.write_collections) return write_collections();
    return {};
  }

  // resume(): takes over what this worker left in out_dir (see trial_writer.h). Only files whose
  // names are exactly the ones this writer would produce for options.worker are touched, so other
  // workers' files (and their shared folders, which they may be creating files in) are left alone.
  [[nodiscard]] Result<void> adopt_published_files() {
    const std::string& worker = options.worker;
    auto list_dir = [](const fs::path& dir, std::vector<fs::path>& out) -> Result<void> {
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) return {};
      for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
        out.push_back(it->path());
      if (ec) return fail(Error::io(dir.string(), ec.message()));
      return {};
    };
    auto remove_file = [](const fs::path& file) -> Result<void> {
      std::error_code ec;
      fs::remove(file, ec);
      if (ec) return fail(io_error(file, ec));
      return {};
    };
    // The step in `rel` if it names this worker's file exactly as `relpath_of(step)` would.
    auto own_step = [&](const std::string& rel, auto relpath_of) -> std::optional<int64_t> {
      auto parsed = format::parse_step_file_name(rel);
      if (!parsed || relpath_of(parsed->global_step, worker) != rel) return std::nullopt;
      return parsed->global_step;
    };
    auto relative = [&](const fs::path& file) { return file.lexically_relative(out_dir).generic_string(); };
    const std::string tmp_suffix(format::kTmpSuffix);
    auto without_tmp = [&](const std::string& rel) -> std::optional<std::string> {
      if (!rel.ends_with(tmp_suffix)) return std::nullopt;
      return rel.substr(0, rel.size() - tmp_suffix.size());
    };

    std::vector<fs::path> step_dirs, files;
    if (auto r = list_dir(out_dir / "index", step_dirs); !r) return r;
    for (const auto& d : step_dirs)
      if (auto r = list_dir(d, files); !r) return r;
    std::set<int64_t> published;
    int64_t last_step = -1;
    std::optional<format::StepIndex> last_index;
    for (const auto& file : files) {
      const std::string rel = relative(file);
      if (auto unfinished = without_tmp(rel)) {
        if (own_step(*unfinished, format::index_file_relpath))
          if (auto r = remove_file(file); !r) return r;
        continue;
      }
      auto step = own_step(rel, format::index_file_relpath);
      if (!step) continue;
      auto text = read_whole_file(file);
      if (!text) return fail(text.error());
      auto index = format::parse_index_json(*text, file.string());
      if (!index) return fail(index.error());
      published.insert(*step);
      policy.set_mode_step(index->mode, std::max(policy.mode_step(index->mode), index->mode_step));
      if (*step > last_step) {
        last_step = *step;
        last_index = std::move(*index);
      }
    }

    step_dirs.clear();
    files.clear();
    if (auto r = list_dir(out_dir / "events", step_dirs); !r) return r;
    for (const auto& d : step_dirs)
      if (auto r = list_dir(d, files); !r) return r;
    for (const auto& file : files) {
      const std::string rel = relative(file);
      const auto unfinished = without_tmp(rel);
      auto step = own_step(unfinished.value_or(rel), format::event_file_relpath);
      // Readers reach event files only through an index, so one no index names was never visible.
      if (step && (unfinished || !published.contains(*step)))
        if (auto r = remove_file(file); !r) return r;
    }

    const fs::path collections_file = out_dir / format::collections_file_relpath(worker);
    fs::path collections_tmp = collections_file;
    collections_tmp += format::kTmpSuffix;
    if (auto r = remove_file(collections_tmp); !r) return r;
    std::error_code ec;
    collections_written = fs::exists(collections_file, ec);
    if (ec) return fail(Error::io(collections_file.string(), ec.message()));

    if (last_index) {
      last_written_step = last_step;
      mode = last_index->mode;
      policy.set_mode(mode);
      policy.set_step(last_step, policy.mode_step());
    }
    return {};
  }

  // The marker is empty, so it cannot be seen half written: created in place, not through a .tmp
  // file, which every worker of a multi-worker run would share (and race to rename).
  // A trial folder removed while the run went on is made again for it, as smdebug's close does.
  [[nodiscard]] Result<void> write_end_marker() {
    const fs::path marker = out_dir / format::kEndOfTrainingMarker;
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec) return fail(Error::io(out_dir.string(), ec.message()));
    if (!os::UniqueFd(::open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666))) return fail(io_error(marker, errno));
    return {};
  }

  [[nodiscard]] Result<void> close(bool end_marker) {
    if (closed) return {};
    closed = true;
    // Keep going after a failure so that as much as possible is published; report the first.
    Result<void> result = end_step();
    if (!collections_written && options.write_collections) {
      auto c = write_collections();
      if (result && !c) result = c;
    }
    if (end_marker) {
      auto m = write_end_marker();
      if (result && !m) result = m;
    }
    return result;
  }
};

TrialWriter::TrialWriter(std::unique_ptr<State> state) : state_(std::move(state)) {}

TrialWriter::~TrialWriter() {
  if (state_) (void)state_->close(/*end_marker=*/false);
}

Result<std::unique_ptr<TrialWriter>> TrialWriter::create(const fs::path& out_dir, WriterOptions options) {
  if (out_dir.empty()) return fail(Error::invalid_argument("out_dir is empty"));
  if (options.worker.empty()) return fail(Error::invalid_argument("worker name is empty"));
  if (options.num_workers < 1) return fail(Error::invalid_argument("num_workers must be at least 1"));

  // smdebug refuses to write into a finished trial (SMDebugRuntimeError, §1.6).
  const fs::path marker = out_dir / format::kEndOfTrainingMarker;
  std::error_code ec;
  if (fs::exists(marker, ec))
    return fail(Error::internal(fmt::format(
        "The path:{} already exists and training has ended ({} found). Please provide a directory path "
        "that does not already exist",
        out_dir.string(), format::kEndOfTrainingMarker)));
  if (ec && ec != std::errc::no_such_file_or_directory) return fail(Error::io(marker.string(), ec.message()));
  if (auto made = make_dirs(out_dir); !made) return fail(made.error());

  auto policy = CapturePolicy::create({}, {"all"}, {.save_config = options.save_config});
  if (!policy) return fail(policy.error());
  auto state = std::make_unique<State>();
  state->out_dir = out_dir;
  state->options = std::move(options);
  state->policy = std::move(*policy);
  return std::unique_ptr<TrialWriter>(new TrialWriter(std::move(state)));
}

Result<std::unique_ptr<TrialWriter>> TrialWriter::resume(const fs::path& out_dir, WriterOptions options) {
  auto writer = create(out_dir, std::move(options));
  if (!writer) return writer;
  if (auto adopted = (*writer)->state_->adopt_published_files(); !adopted) {
    (*writer)->state_->closed = true;  // nothing of this writer's may be published now
    return fail(adopted.error());
  }
  return writer;
}

Result<void> TrialWriter::add_collection(format::CollectionConfig collection) {
  auto& s = *state_;
  if (s.options.builtin_collections) s.ensure_collections();
  return s.policy.add_collection(std::move(collection));
}

Result<void> TrialWriter::begin_step(Mode mode) {
  auto& s = *state_;
  if (s.closed) return fail(Error::invalid_argument("the writer is closed"));
  if (!mode_from_int(static_cast<int64_t>(mode))) return fail(Error::invalid_argument("invalid mode"));
  if (auto r = s.finish_previous_step(); !r) return r;
  s.mode = mode;
  s.policy.set_mode(mode);
  s.policy.begin_step();
  s.step.emplace();
  s.step->global_step = s.global_step();
  s.step->index.mode = s.mode;
  s.step->index.mode_step = s.mode_step();
  return {};
}

Result<void> TrialWriter::begin_step_at(int64_t global_step, Mode mode, int64_t mode_step) {
  auto& s = *state_;
  if (s.closed) return fail(Error::invalid_argument("the writer is closed"));
  if (!mode_from_int(static_cast<int64_t>(mode))) return fail(Error::invalid_argument("invalid mode"));
  if (global_step < 0 || mode_step < 0)
    return fail(Error::invalid_argument(fmt::format("steps must not be negative (global {}, mode {})", global_step, mode_step)));
  // Steps only move forward: counting the open step's pending files, nothing may be overwritten.
  std::optional<int64_t> floor = s.last_written_step;
  if (s.step && !s.step->empty()) floor = std::max(floor.value_or(-1), s.step->global_step);
  if (floor && global_step <= *floor)
    return fail(Error::invalid_argument(
        fmt::format("global step {} is not after the last written step {}", global_step, *floor)));
  if (auto r = s.finish_previous_step(); !r) return r;
  s.mode = mode;
  s.policy.set_mode(mode);
  s.policy.set_step(global_step, mode_step);
  s.step.emplace();
  s.step->global_step = global_step;
  s.step->index.mode = mode;
  s.step->index.mode_step = mode_step;
  return {};
}

Result<void> TrialWriter::end_step() { return state_->end_step(); }

Result<void> TrialWriter::close() { return state_->close(state_->options.write_end_marker); }
Result<void> TrialWriter::close_with_marker(bool end_marker) {
  return state_->close(end_marker && state_->options.write_end_marker);
}

bool TrialWriter::should_save(std::string_view name) const {
  auto& s = *state_;  // the policy records the names it is asked about
  if (!s.step || s.closed) return false;
  s.ensure_collections();
  return !s.policy.plan(name, {}, true, "default").empty();
}

Result<void> TrialWriter::save_tensor(std::string_view name_view, const TensorData& data,
                                      std::span<const std::string> collections) {
  auto& s = *state_;
  if (auto r = s.require_step(); !r) return r;
  const std::string name(name_view);
  auto count = validate(name, data);
  if (!count) return fail(count.error());
  s.ensure_collections();
  const CapturePlan plan = s.policy.plan(name, collections, true, "default");
  if (plan.empty()) return {};
  if (*count == 0) return {};  // smdebug lists the name but writes nothing for zero-size arrays
  if (plan.save_shape) {
    if (auto r = write_shape(name, data.shape); !r) return r;
  }
  if (auto r = write_reductions(name, data, plan.reductions); !r) return r;
  if (plan.save_raw) return s.write_tensor(name, data);
  return {};
}

Result<void> TrialWriter::write_reductions(std::string_view name, const TensorData& data,
                                           std::span<const format::ReductionSpec> reductions) {
  if (reductions.empty() || data.dtype == ElementType::String) return {};
  // Nothing for a zero-size array, as for its value (§3.6): it has no min or max to give.
  if (std::find(data.shape.begin(), data.shape.end(), 0) != data.shape.end()) return {};
  // Views the caller's bytes when they are aligned for the element type; copies otherwise.
  const size_t item = format::element_type_info(data.dtype).item_size;
  const bool aligned = reinterpret_cast<uintptr_t>(data.bytes.data()) % item == 0;
  const TensorValue value = aligned ? TensorValue::numeric(data.dtype, data.shape, data.bytes, nullptr)
                                    : TensorValue::copy_of(data.dtype, data.shape, data.bytes);
  for (const auto& r : reductions) {
    auto op = parse_reduction_name(r.op);
    if (!op) return fail(Error::invalid_argument(fmt::format("unknown reduction {}", r.op)));
    auto rv = compute_reduction(value, *op, r.abs);
    if (!rv) return fail(rv.error());
    auto bytes = scalar_bytes(rv->dtype, rv->value);
    if (!bytes) return fail(bytes.error());
    // Stored 0-d, like the reductions the PyTorch hook computes with torch (§3.10).
    TensorData out{rv->dtype, {}, *bytes, {}};
    if (auto w = write_reduction(name, r.op, r.abs, out); !w) return w;
  }
  return {};
}

Result<void> TrialWriter::write_tensor(std::string_view name, const TensorData& data) {
  return state_->write_tensor(std::string(name), data);
}
Result<void> TrialWriter::write_tensor(std::string_view name, const TensorData& data, double wall_time) {
  return state_->write_tensor(std::string(name), data, wall_time);
}

Result<void> TrialWriter::write_reduction(std::string_view name, std::string_view op, bool abs,
                                          const TensorData& value) {
  if (std::ranges::find(kReductionOps, op) == std::end(kReductionOps))
    return fail(Error::invalid_argument(fmt::format("unknown reduction {}", op)));
  return state_->write_tensor(reduction_tensor_name(name, op, abs), value);
}

Result<void> TrialWriter::write_shape(std::string_view name, std::span<const int64_t> shape) {
  auto& s = *state_;
  if (auto r = s.require_step(); !r) return r;
  if (!element_count(shape)) return fail(Error::invalid_argument(fmt::format("tensor {}: invalid shape", name)));
  s.step->index.shape_payload.push_back({std::string(name), std::string(name), {shape.begin(), shape.end()}});
  return {};
}

Result<void> TrialWriter::publish_collections(std::string_view json) {
  auto w = write_file(state_->out_dir / format::collections_file_relpath(state_->options.worker), json);
  if (w) state_->collections_written = true;
  return w;
}

Result<void> TrialWriter::save_scalar(std::string_view name, double value) {
  const std::array<int64_t, 1> shape{1};
  TensorData data{ElementType::Float64, {shape.begin(), shape.end()}, std::as_bytes(std::span(&value, 1)), {}};
  return state_->write_tensor(fmt::format("scalar/{}", name), data);
}

int64_t TrialWriter::global_step() const { return state_->global_step(); }
Mode TrialWriter::mode() const { return state_->mode; }
int64_t TrialWriter::mode_step() const { return state_->mode_step(); }
const fs::path& TrialWriter::out_dir() const { return state_->out_dir; }

}  // namespace vigil::writer
