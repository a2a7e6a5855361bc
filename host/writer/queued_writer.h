// A TrialWriter served by a thread of its own, for training hooks: the training thread only copies
// each value once into a bounded queue and goes on; the writer thread computes the reductions
// (host/trial/reductions.h), encodes and writes. Nothing here blocks the caller on I/O or throws.
//
// Budget: a step whose values would take the queue past `max_queue_bytes` is dropped whole (its
// values are not queued); a dropped step is still published, with the one scalar
// "vigil/dropped_step" = 1, so readers and rules see that the step was there and why it is empty.
//
// Faults: the first error of the writer thread (a full disk, an unwritable folder) stops it; later
// calls are no-ops, and `error()` gives that first error so the hook can log it once and step aside.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/mode.h"
#include "writer/trial_writer.h"

namespace vigil::writer {

inline constexpr std::string_view kDroppedStepTensor = "vigil/dropped_step";

struct QueuedWriterOptions {
  WriterOptions writer;
  uint64_t max_queue_bytes = uint64_t(256) << 20;
  bool resume = false;  // continue a trial this worker left (TrialWriter::resume)
};

// What to write of one value: the shape (shape_payload), reductions, the raw value.
struct TensorRequest {
  std::string name;
  bool save_shape = false;
  std::vector<format::ReductionSpec> reductions;  // written as 0-d values, in this order
  bool save_raw = true;
  std::optional<double> wall_time;  // of the raw value's event; unset: when it is written
};

struct QueueStats {
  uint64_t queued_bytes = 0;     // now
  uint64_t peak_queued_bytes = 0;
  uint64_t written_steps = 0;
  std::vector<int64_t> dropped_steps;  // global steps
};

class QueuedWriter {
 public:
  [[nodiscard]] static Result<std::unique_ptr<QueuedWriter>> create(const std::filesystem::path& out_dir,
                                                                    QueuedWriterOptions options);
  ~QueuedWriter();  // close(false) if close() was not called

  // Starts a step. `expected_bytes` is what the caller means to queue in it (0 if unknown): a step
  // that does not fit the budget is dropped now; write() in a dropped step does nothing. Returns
  // false when the step is dropped.
  bool begin_step(int64_t global_step, Mode mode, int64_t mode_step, uint64_t expected_bytes = 0);
  // Copies `data` (numeric bytes or strings) into the queue. A step goes over budget here too when
  // `expected_bytes` was low: the rest of the step is then dropped.
  void write(const TensorRequest& request, const TensorData& data);
  void end_step();
  // Queued: publishes `json` as this worker's collections file (TrialWriter::publish_collections).
  void publish_collections(std::string json);
  // Waits until everything queued is written, then closes the trial (end marker when asked).
  // Returns the first error of the writer thread, if any.
  [[nodiscard]] Result<void> close(bool end_marker);

  // The first error of the writer thread (it stopped there), if any.
  [[nodiscard]] std::optional<Error> error() const;
  [[nodiscard]] QueueStats stats() const;

 private:
  struct State;
  explicit QueuedWriter(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace vigil::writer
