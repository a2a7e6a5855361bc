#include "rewrite_with_writer.h"

#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "format/collections_json.h"
#include "format/event_proto.h"
#include "format/index_json.h"
#include "format/tfrecord.h"
#include "format/trial_layout.h"
#include "test_support.h"
#include "writer/trial_writer.h"

namespace conf {

namespace fs = std::filesystem;
using namespace vigil;

namespace {

struct IndexFile {
  int64_t step;
  fs::path path;
};

}  // namespace

std::string rewrite_with_writer(const fs::path& source, const fs::path& destination) {
  // Workers and their collection files.
  std::map<std::string, fs::path> collection_files;
  for (const auto& e : fs::recursive_directory_iterator(source / "collections"))
    if (e.is_regular_file())
      if (auto w = format::parse_collections_file_name(e.path().filename().string())) collection_files[*w] = e.path();
  // Index files per worker, in step order.
  std::map<std::string, std::vector<IndexFile>> index_files;
  for (const auto& e : fs::recursive_directory_iterator(source / "index"))
    if (e.is_regular_file())
      if (auto parsed = format::parse_step_file_name(("index/x/" + e.path().filename().string())))
        index_files[parsed->worker].push_back({parsed->global_step, e.path()});

  for (auto& [worker, files] : index_files) {
    std::sort(files.begin(), files.end(), [](const IndexFile& a, const IndexFile& b) { return a.step < b.step; });
    auto cfile = collection_files.find(worker);
    if (cfile == collection_files.end()) return "no collections file for worker " + worker;
    auto collections = format::parse_collections_json(vigil::test::read_file_if_present(cfile->second), cfile->second.string());
    if (!collections) return collections.error().message;

    double wall_time = 0;
    writer::WriterOptions options;
    options.worker = worker;
    options.num_workers = collections->num_workers;
    options.write_end_marker = false;
    options.builtin_collections = false;
    options.clock = [&wall_time] { return wall_time; };
    auto w = writer::TrialWriter::create(destination, options);
    if (!w) return w.error().message;
    for (auto& c : collections->collections)
      if (auto r = (*w)->add_collection(c); !r) return r.error().message;

    for (const auto& f : files) {
      auto index = format::parse_index_json(vigil::test::read_file_if_present(f.path), f.path.string());
      if (!index) return index.error().message;
      if (auto r = (*w)->begin_step_at(f.step, index->mode, index->mode_step); !r) return r.error().message;
      std::string events;
      if (index->event_file_name) events = vigil::test::read_file_if_present(source / *index->event_file_name);
      for (const auto& entry : index->tensor_payload) {
        if (entry.start_idx + entry.length > events.size()) return "index entry past the event file in " + f.path.string();
        auto rec = format::parse_record({reinterpret_cast<const uint8_t*>(events.data()) + entry.start_idx, entry.length});
        if (!rec) return rec.error();
        auto ev = format::decode_event(rec->payload);
        if (!ev) return ev.error();
        const auto& proto = ev->values.at(0).tensor;
        writer::TensorData data;
        data.shape = proto.shape;
        std::vector<std::string> strings(proto.string_val.begin(), proto.string_val.end());
        if (proto.dtype == 0) {
          data.dtype = format::ElementType::String;
          data.strings = strings;
        } else {
          auto type = format::element_type_of(proto.dtype);
          if (!type) return "unsupported dtype " + std::to_string(proto.dtype);
          data.dtype = *type;
          data.bytes = std::as_bytes(proto.tensor_content);
        }
        wall_time = ev->wall_time;
        if (auto r = (*w)->write_tensor(entry.tensorname, data); !r) return entry.tensorname + ": " + r.error().message;
      }
      for (const auto& shape : index->shape_payload)
        if (auto r = (*w)->write_shape(shape.tensorname, shape.shape); !r) return r.error().message;
      if (auto r = (*w)->end_step(); !r) return r.error().message;
    }
    if (auto r = (*w)->close(); !r) return r.error().message;
  }
  if (fs::exists(source / format::kEndOfTrainingMarker))
    std::ofstream(destination / format::kEndOfTrainingMarker).close();
  return {};
}

}  // namespace conf
