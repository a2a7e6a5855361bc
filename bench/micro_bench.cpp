// Google Benchmark micro-benchmarks of the read path's pieces. Throughputs are bytes of input per
// second (Google Benchmark prints them as bytes_per_second).
//   vigil_micro_bench [--benchmark_filter=REGEX] [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "format/crc32c.h"
#include "format/event_proto.h"
#include "format/index_json.h"
#include "format/tfrecord.h"
#include "trial/reductions.h"
#include "trial/tensor_value.h"

namespace {

using namespace vigil;

std::vector<uint8_t> random_bytes(size_t n) {
  std::vector<uint8_t> out(n);
  std::mt19937_64 rng(1);
  for (auto& b : out) b = uint8_t(rng());
  return out;
}

std::vector<float> random_floats(size_t n) {
  std::vector<float> out(n);
  std::mt19937_64 rng(2);
  std::normal_distribution<float> dist;
  for (auto& v : out) v = dist(rng);
  return out;
}

void BM_Crc32cHardware(benchmark::State& state) {
  if (!format::crc32c_hardware_available()) {
    state.SkipWithError("no SSE4.2 CRC32 instruction on this CPU");
    return;
  }
  const auto data = random_bytes(size_t(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(format::crc32c_hardware(data.data(), data.size()));
  state.SetBytesProcessed(int64_t(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Crc32cHardware)->Arg(64)->Arg(4 << 10)->Arg(4 << 20);

void BM_Crc32cPortable(benchmark::State& state) {
  const auto data = random_bytes(size_t(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(format::crc32c_portable(data.data(), data.size()));
  state.SetBytesProcessed(int64_t(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Crc32cPortable)->Arg(64)->Arg(4 << 10)->Arg(4 << 20);

// One float32 tensor event as smdebug writes it, framed as a record.
std::string tensor_record(size_t elements, format::Footer footer) {
  const auto values = random_floats(elements);
  const std::vector<int64_t> shape{int64_t(elements)};
  format::TensorEventSpec spec{.wall_time = 1.5e9,
                               .step = 7,
                               .tag = "gradient/layer1.weight",
                               .dtype = 1,
                               .shape = shape,
                               .tensor_content = {reinterpret_cast<const uint8_t*>(values.data()), elements * 4},
                               .mode = Mode::Train,
                               .mode_step = 7};
  const std::string event = format::encode_tensor_event(spec);
  std::string record;
  format::append_record(record, {reinterpret_cast<const uint8_t*>(event.data()), event.size()}, footer);
  return record;
}

// Record framing: smdebug's constant footer (length CRC only) and a real payload CRC.
void BM_ParseRecord(benchmark::State& state) {
  const auto footer = state.range(1) ? format::Footer::PayloadCrc : format::Footer::Magic;
  const std::string record = tensor_record(size_t(state.range(0)), footer);
  const std::span<const uint8_t> bytes{reinterpret_cast<const uint8_t*>(record.data()), record.size()};
  for (auto _ : state) benchmark::DoNotOptimize(format::parse_record(bytes));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(record.size()));
  state.SetLabel(state.range(1) ? "payload crc" : "smdebug footer");
}
BENCHMARK(BM_ParseRecord)->Args({1024, 0})->Args({1 << 20, 0})->Args({1024, 1})->Args({1 << 20, 1});

// Event + TensorProto decoding and the zero-copy value (no element copy when aligned).
void BM_DecodeTensor(benchmark::State& state) {
  const std::string record = tensor_record(size_t(state.range(0)), format::Footer::Magic);
  auto buffer = std::make_shared<AlignedBuffer>(record.size());
  std::memcpy(buffer->data(), record.data(), record.size());
  const std::span<const uint8_t> bytes{reinterpret_cast<const uint8_t*>(buffer->data()), record.size()};
  for (auto _ : state) {
    auto r = format::parse_record(bytes);
    auto event = format::decode_event(r->payload);
    auto value = decode_tensor_value(event->values.front().tensor, buffer, "bench", 0);
    benchmark::DoNotOptimize(value);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(record.size()));
}
BENCHMARK(BM_DecodeTensor)->Arg(16)->Arg(1024)->Arg(1 << 20);

// An index file of one step with `tensors` entries, as smdebug writes it.
void BM_ParseIndex(benchmark::State& state) {
  format::StepIndex index{.mode = Mode::Train, .mode_step = 12, .event_file_name = "events/000000000012/000000000012_worker_0.tfevents"};
  for (int64_t i = 0; i < state.range(0); ++i)
    index.tensor_payload.push_back({.tensorname = fmt::format("gradient/layer{}.weight", i),
                                    .start_idx = uint64_t(i) * 4200,
                                    .length = 4200});
  const std::string text = format::serialize_index_json(index);
  for (auto _ : state) benchmark::DoNotOptimize(format::parse_index_json(text, "bench.json"));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
}
BENCHMARK(BM_ParseIndex)->Arg(10)->Arg(100)->Arg(1000);

// Reductions over a float32 tensor (numpy semantics: float32 results, pairwise sums).
void BM_Reduction(benchmark::State& state) {
  const auto values = random_floats(size_t(state.range(0)));
  const auto op = static_cast<ReductionOp>(state.range(1));
  const bool abs = state.range(2) != 0;
  const TensorValue value = TensorValue::copy_of(ElementType::Float32, {state.range(0)}, std::as_bytes(std::span(values)));
  for (auto _ : state) benchmark::DoNotOptimize(compute_reduction(value, op, abs));
  state.SetBytesProcessed(int64_t(state.iterations()) * state.range(0) * 4);
  state.SetLabel(fmt::format("{}{}", abs ? "abs " : "", reduction_name(op)));
}
BENCHMARK(BM_Reduction)
    ->Args({1 << 20, int(ReductionOp::Mean), 1})
    ->Args({1 << 20, int(ReductionOp::Mean), 0})
    ->Args({1 << 20, int(ReductionOp::Max), 0})
    ->Args({1 << 20, int(ReductionOp::Std), 0})
    ->Args({1 << 20, int(ReductionOp::L2), 0})
    ->Args({1024, int(ReductionOp::Mean), 1});

}  // namespace

BENCHMARK_MAIN();
