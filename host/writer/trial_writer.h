// The hook side: writes trials byte-compatible with smdebug (format spec §1, §2, §3, §6).
//
// One TrialWriter is one worker of a training job. Steps are written one at a time: begin_step(),
// any number of save_*() calls, end_step(). Each file is written as "<name>.tmp" and renamed when
// complete, so a reader never sees a partial file: the event file first, then the step's index.
// The collections file is written at the start of the step after the first saved step (or at
// close), and close() writes the end-of-training marker.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/mode.h"
#include "format/collections_json.h"
#include "format/dtype.h"
#include "writer/capture_policy.h"

namespace vigil::writer {

using format::ElementType;

struct WriterOptions {
  std::string worker = "worker_0";
  int64_t num_workers = 1;  // written as _meta.num_workers
  // Hook-level save configuration per mode (TRAIN, EVAL, PREDICT, GLOBAL), the default for every
  // collection without its own (§6.1).
  std::array<format::SaveConfigMode, 4> save_config{};
  bool write_end_marker = true;  // close() writes training_job_end.ts
  // save_tensor()'s collections (a CapturePolicy saving every collection): smdebug PyTorch's six
  // (default, weights, biases, gradients, losses, all) as its hook has them; add_collection() then
  // replaces or adds. Off: only what is added (plus "default" for names no collection claims), e.g.
  // to reproduce another writer's file order.
  bool builtin_collections = true;
  // Off: the caller owns the collections file and publishes it with publish_collections() (a hook
  // that keeps smdebug's Collection objects in Python); the writer never writes one itself.
  bool write_collections = true;
  // Event wall_time source (seconds since the epoch); tests pin it for byte-exact output.
  std::function<double()> clock;
};

// What to save: a numeric array (raw little-endian bytes, C order) or strings.
struct TensorData {
  ElementType dtype = ElementType::Float32;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;        // numeric
  std::span<const std::string> strings;    // ElementType::String
};

class TrialWriter {
 public:
  // Refuses (Internal, smdebug's SMDebugRuntimeError) a directory that already holds the end marker.
  [[nodiscard]] static Result<std::unique_ptr<TrialWriter>> create(const std::filesystem::path& out_dir, WriterOptions options = {});
  // Continues the trial this worker (options.worker) was writing when its process died or stopped
  // without close(); on a directory without files of this worker it is create(). What the worker
  // published (event files that an index of it names, its index files, its collections file) is
  // kept and never written again. Its unfinished files are removed: leftover "<name>.tmp" files and
  // event files no index of it names (a step killed between its two renames). The step counters
  // continue from its last published step: begin_step() gives the next global step, and each
  // mode's step follows the largest published one of that mode (steps begun but never published,
  // e.g. ones the save configuration skipped, are numbered again; begin_step_at() sets any later
  // step). The collections file, if the worker had not published it yet, is written as create()'s
  // would be, after the first step this writer saves. Refused like create() once the end marker
  // exists; IndexReader/Io errors for a published index of this worker that cannot be read.
  [[nodiscard]] static Result<std::unique_ptr<TrialWriter>> resume(const std::filesystem::path& out_dir, WriterOptions options = {});
  ~TrialWriter();  // closes without the end marker if close() was not called

  // Collections decide what save_tensor() writes for a name (raw / reductions / shape, §6.2), by the
  // capture core (capture_policy.h). A tensor in no configured collection goes to "default".
  // Re-adding a name replaces its configuration. InvalidArgument for a regex std::regex cannot
  // compile or an unknown reduction.
  [[nodiscard]] Result<void> add_collection(format::CollectionConfig collection);

  // Starts a step like smdebug's hook: the global step increments, and so does the mode step of
  // `mode` (both start at 0). Ends the previous step if it is still open.
  [[nodiscard]] Result<void> begin_step(Mode mode = Mode::Global);
  // Starts an explicitly numbered step (resuming a trial, other workers' numbering).
  [[nodiscard]] Result<void> begin_step_at(int64_t global_step, Mode mode, int64_t mode_step);
  // Publishes the open step: event file, then index. A step where nothing was saved writes nothing.
  [[nodiscard]] Result<void> end_step();
  // end_step(), the collections file if not yet written, then the end marker.
  [[nodiscard]] Result<void> close();
  // close(), with the end marker only when `end_marker` (and options.write_end_marker).
  [[nodiscard]] Result<void> close_with_marker(bool end_marker);

  // Whether the save configuration of `name`'s collections selects the current step.
  bool should_save(std::string_view name) const;
  // Saves as the collections configure: raw value, reductions, shape; skipped if !should_save.
  [[nodiscard]] Result<void> save_tensor(std::string_view name, const TensorData& data,
                           std::span<const std::string> collections = {});
  // Low-level writes at the current step, unconditionally.
  [[nodiscard]] Result<void> write_tensor(std::string_view name, const TensorData& data);
  // With the event's wall time given (seconds since the epoch), e.g. smdebug's save_scalar(timestamp=).
  [[nodiscard]] Result<void> write_tensor(std::string_view name, const TensorData& data, double wall_time);
  [[nodiscard]] Result<void> write_reduction(std::string_view name, std::string_view op, bool abs, const TensorData& value);
  // Computes each reduction of `data` with the host's reductions and writes it (0-d, numpy's dtype).
  [[nodiscard]] Result<void> write_reductions(std::string_view name, const TensorData& data,
                                std::span<const format::ReductionSpec> reductions);
  [[nodiscard]] Result<void> write_shape(std::string_view name, std::span<const int64_t> shape);
  // Publishes `json` (a collections file, smdebug-format §1.4) as this worker's collections file.
  [[nodiscard]] Result<void> publish_collections(std::string_view json);
  // hook.save_scalar: a 1-element float64 array named "scalar/<name>".
  [[nodiscard]] Result<void> save_scalar(std::string_view name, double value);

  // The current step's numbers; -1 before the first step.
  int64_t global_step() const;
  Mode mode() const;
  int64_t mode_step() const;
  const std::filesystem::path& out_dir() const;

 private:
  struct State;
  explicit TrialWriter(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace vigil::writer
