#include "writer/queued_writer.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <variant>

#include "common/os.h"

namespace vigil::writer {

namespace {

struct BeginOp {
  int64_t global_step, mode_step;
  Mode mode;
  bool dropped;
};
struct TensorOp {
  TensorRequest request;
  ElementType dtype;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
  std::vector<std::string> strings;
  uint64_t cost;
};
struct EndOp {};
struct CollectionsOp {
  std::string json;
};
using Op = std::variant<BeginOp, TensorOp, EndOp, CollectionsOp>;

// The one value a dropped step holds: a 1-element float64 1.
TensorOp marker_op() {
  const double one = 1;
  TensorOp op{TensorRequest{std::string(kDroppedStepTensor)}, ElementType::Float64, {1}, {}, {}, 0};
  op.bytes.resize(sizeof one);
  std::memcpy(op.bytes.data(), &one, sizeof one);
  return op;
}

}  // namespace

struct QueuedWriter::State {
  QueuedWriterOptions options;
  std::unique_ptr<TrialWriter> writer;

  mutable std::mutex mu;
  std::condition_variable wake;  // the writer thread: work or stop
  std::deque<Op> queue;
  bool stopping = false;
  std::optional<Error> first_error;
  QueueStats stats;
  bool step_dropped = false;  // the caller's current step (training thread side)
  int64_t step_global = -1;
  std::thread thread;

  // Bytes queued since the writer thread was last woken (training thread side).
  uint64_t unannounced_bytes = 0;

  // The writer thread is woken when a step ends, for collections, and every kWakeBytes within a step,
  // not at every value: a wake per value cost the training thread a futex call and the writer thread
  // a context switch per tensor (~90 per step of the hook bench), on the cores training runs on.
  // Within a step the writer starts on a large step early, so its values drain while more are queued.
  static constexpr uint64_t kWakeBytes = uint64_t(4) << 20;

  void push(Op op, uint64_t cost, bool wake_now) {
    {
      std::lock_guard lock(mu);
      stats.queued_bytes += cost;
      stats.peak_queued_bytes = std::max(stats.peak_queued_bytes, stats.queued_bytes);
      queue.push_back(std::move(op));
    }
    unannounced_bytes += cost;
    if (wake_now || unannounced_bytes >= kWakeBytes) {
      unannounced_bytes = 0;
      wake.notify_one();
    }
  }

  [[nodiscard]] Result<void> apply_tensor(const TensorOp& t) {
    TensorData data{t.dtype, t.shape, t.bytes, t.strings};
    const auto& rq = t.request;
    if (rq.save_shape)
      if (auto r = writer->write_shape(rq.name, t.shape); !r) return r;
    if (auto r = writer->write_reductions(rq.name, data, rq.reductions); !r) return r;
    if (rq.save_raw)
      return rq.wall_time ? writer->write_tensor(rq.name, data, *rq.wall_time) : writer->write_tensor(rq.name, data);
    return {};
  }

  [[nodiscard]] Result<void> apply(Op& op) {
    if (auto* b = std::get_if<BeginOp>(&op)) {
      if (auto r = writer->begin_step_at(b->global_step, b->mode, b->mode_step); !r) return r;
      if (b->dropped) {
        TensorOp marker = marker_op();
        return apply_tensor(marker);
      }
      return {};
    }
    if (auto* t = std::get_if<TensorOp>(&op)) return apply_tensor(*t);
    if (std::holds_alternative<EndOp>(op)) {
      auto r = writer->end_step();
      if (r) {
        std::lock_guard lock(mu);
        ++stats.written_steps;
      }
      return r;
    }
    return writer->publish_collections(std::get<CollectionsOp>(op).json);
  }

  void run() {
    os::block_sigpipe_on_this_thread();
    os::name_this_thread("vigil-writer");
    std::unique_lock lock(mu);
    while (true) {
      wake.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty()) break;  // stopping and drained
      Op op = std::move(queue.front());
      queue.pop_front();
      const uint64_t cost = std::holds_alternative<TensorOp>(op) ? std::get<TensorOp>(op).cost : 0;
      const bool failed = first_error.has_value();
      lock.unlock();
      Result<void> r;
      if (!failed) r = apply(op);
      lock.lock();
      stats.queued_bytes -= cost;
      if (!r && !first_error) first_error = r.error();
    }
  }
};

QueuedWriter::QueuedWriter(std::unique_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<QueuedWriter>> QueuedWriter::create(const std::filesystem::path& out_dir,
                                                           QueuedWriterOptions options) {
  auto w = options.resume ? TrialWriter::resume(out_dir, options.writer) : TrialWriter::create(out_dir, options.writer);
  if (!w) return fail(w.error());
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  state->writer = std::move(*w);
  State* s = state.get();
  try {
    state->thread = std::thread([s] { s->run(); });
  } catch (const std::system_error& e) {
    return fail(Error::internal(std::string("cannot start the writer thread: ") + e.what()));
  }
  return std::unique_ptr<QueuedWriter>(new QueuedWriter(std::move(state)));
}

QueuedWriter::~QueuedWriter() {
  if (state_ && state_->thread.joinable()) (void)close(false);
}

bool QueuedWriter::begin_step(int64_t global_step, Mode mode, int64_t mode_step, uint64_t expected_bytes) {
  auto& s = *state_;
  bool dropped;
  {
    std::lock_guard lock(s.mu);
    dropped = s.stats.queued_bytes + expected_bytes > s.options.max_queue_bytes;
    if (dropped) s.stats.dropped_steps.push_back(global_step);
  }
  s.step_dropped = dropped;
  s.step_global = global_step;
  s.push(BeginOp{global_step, mode_step, mode, dropped}, 0, false);
  return !dropped;
}

void QueuedWriter::write(const TensorRequest& request, const TensorData& data) {
  auto& s = *state_;
  if (s.step_dropped) return;
  const uint64_t cost = data.bytes.size() + 64 * data.strings.size() + request.name.size();
  {
    std::lock_guard lock(s.mu);
    if (s.first_error) return;
    if (s.stats.queued_bytes + cost > s.options.max_queue_bytes) {
      // Over budget in the middle of the step: what is queued of it stays, the rest is dropped, and
      // the step says so.
      s.step_dropped = true;
      s.stats.dropped_steps.push_back(s.step_global);
    }
  }
  if (s.step_dropped) {
    s.push(marker_op(), 0, false);
    return;
  }
  TensorOp op{request, data.dtype, data.shape, {}, {}, cost};
  op.bytes.assign(data.bytes.begin(), data.bytes.end());
  op.strings.assign(data.strings.begin(), data.strings.end());
  s.push(std::move(op), cost, false);
}

void QueuedWriter::end_step() {
  state_->push(EndOp{}, 0, true);
  state_->step_dropped = false;
}

void QueuedWriter::publish_collections(std::string json) { state_->push(CollectionsOp{std::move(json)}, 0, true); }

Result<void> QueuedWriter::close(bool end_marker) {
  auto& s = *state_;
  if (!s.thread.joinable()) return s.first_error ? Result<void>(fail(*s.first_error)) : Result<void>{};
  {
    std::lock_guard lock(s.mu);
    s.stopping = true;
  }
  s.wake.notify_one();
  s.thread.join();
  Result<void> closed;
  if (!s.first_error) closed = s.writer->close_with_marker(end_marker);
  if (!closed && !s.first_error) s.first_error = closed.error();
  if (s.first_error) return fail(*s.first_error);
  return {};
}

std::optional<Error> QueuedWriter::error() const {
  std::lock_guard lock(state_->mu);
  return state_->first_error;
}

QueueStats QueuedWriter::stats() const {
  std::lock_guard lock(state_->mu);
  return state_->stats;
}

}  // namespace vigil::writer
