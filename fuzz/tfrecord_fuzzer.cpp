// TFRecord framing (host/format/tfrecord.*): the input is a whole event file.
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "format/tfrecord.h"
#include "fuzz_check.h"

using namespace vigil::format;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);

  // One record at the start: its payload must lie inside the given bytes.
  if (auto record = parse_record(bytes)) {
    FUZZ_CHECK(record->record_size() <= size);
    FUZZ_CHECK(record->payload.data() == data + 12);
  }

  // A whole file: the records must tile it exactly, and re-framing each payload with the footer
  // it was read with must give back the same bytes.
  auto records = split_records(bytes);
  if (!records) {
    FUZZ_CHECK(records.error().offset < size);
    FUZZ_CHECK(!records.error().reason.empty());
    return 0;
  }
  uint64_t expected_offset = 0;
  for (const auto& [offset, record] : *records) {
    FUZZ_CHECK(offset == expected_offset);
    std::string reframed;
    append_record(reframed, record.payload, record.footer);
    FUZZ_CHECK(reframed.size() == record.record_size());
    FUZZ_CHECK(std::memcmp(reframed.data(), data + offset, reframed.size()) == 0);
    expected_offset += record.record_size();
  }
  FUZZ_CHECK(expected_offset == size);
  return 0;
}
