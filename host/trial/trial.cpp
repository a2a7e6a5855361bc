#include "trial/trial.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <thread>
#include <utility>

#include "common/search_regex.h"
#include "format/event_proto.h"
#include "format/index_json.h"
#include "format/sagemaker_container.h"
#include "format/tfrecord.h"
#include "format/trial_layout.h"
#include "trial/element_access.h"
#include "trial/event_file_cache.h"
#include "trial/record_reader.h"
#include "trial/shard_assembly.h"
#include "trial/trial_watcher.h"
#include "storage/object_store.h"

namespace vigil {

namespace fs = std::filesystem;

TrialOptions trial_options_from_env(TrialOptions base) {
  if (const char* w = std::getenv(std::string(format::sagemaker::kIncompleteStepWaitWindowVariable).c_str())) {
    char* end = nullptr;
    long long v = std::strtoll(w, &end, 10);
    if (end && *end == '\0' && v > 0) base.incomplete_step_wait_window = v;
  }
  if (const char* d = std::getenv(std::string(format::sagemaker::kTrainingEndDelayRefreshVariable).c_str())) {
    char* end = nullptr;
    double v = std::strtod(d, &end);
    if (end && *end == '\0' && v >= 0) base.end_refresh_delay = std::chrono::milliseconds(int64_t(v * 1000));
  }
  return base;
}

namespace {

using Location = RecordLocation;

struct SavedReductionLocation {
  ReductionOp op;
  bool abs;
  Location where;
};

// What one worker saved of one tensor at one step.
struct WorkerStep {
  std::string worker;
  std::optional<Location> value;
  std::optional<std::vector<int64_t>> shape;
  std::vector<SavedReductionLocation> reductions;
};

using StepKey = std::pair<Mode, int64_t>;  // (mode, mode step)

struct TensorRecord {
  std::map<StepKey, std::vector<WorkerStep>> steps;  // workers in the order they were indexed
};

constexpr std::string_view kReductionPrefix = "smdebug/reductions/";

void sleep_unless_stopped(std::chrono::milliseconds pause, const std::stop_token& stop) {
  std::mutex mu;
  std::condition_variable_any woken;
  std::unique_lock lock(mu);
  woken.wait_for(lock, stop, pause, [] { return false; });
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

struct Trial::State {
  explicit State(std::shared_ptr<const storage::ObjectStore> store) : path(store->location()), store(std::move(store)) {}

  fs::path path;  // the location as the caller named it (a folder, or "s3://bucket/prefix")
  std::shared_ptr<const storage::ObjectStore> store;  // every file the trial reads is read through it
  EventFileCache event_files{*store};
  RecordReader records{event_files};
  std::string name;
  TrialOptions options;

  std::mutex mu;  // guards everything below
  std::map<std::string, TensorRecord, std::less<>> tensors;
  std::map<Mode, std::map<int64_t, int64_t>> mode_to_global;
  std::map<int64_t, StepKey> global_to_mode;
  std::map<int64_t, std::set<std::string_view>> global_step_to_tensors;  // views of the keys of `tensors`
  std::map<Mode, std::set<std::string_view>> mode_to_tensors;
  std::map<int64_t, std::set<std::string>> workers_for_global_step;
  std::map<int64_t, std::set<uint32_t>> event_files_of_step;  // global step -> event files (ids)
  std::set<std::string> read_index_files;
  std::map<std::string, int64_t> newest_read_step;  // worker (as in index names) -> newest step read
  int64_t last_complete_step = -1;
  bool loaded_all_steps = false;
  bool end_marker_seen = false;
  int refresh_holds = 0;
  // A local trial's: created by open when it waits for the collection files, else by the first
  // wait_for_steps.
  std::unique_ptr<TrialWatcher> watcher;
  bool assume_ended = false;

  // Sharded tensors' layouts (format/shard_layout.h), by worker: read again once new index files
  // were read since (a worker describes its shards as it first saves them).
  std::map<std::string, format::ShardPlacement, std::less<>> placements_of(std::string_view tensor) const;
  Result<void> load_shard_layouts_locked();
  std::map<std::string, format::WorkerShardLayout> shard_layouts;
  size_t shard_layouts_read_at = SIZE_MAX;  // read_index_files.size() then

  // Fixed after open().
  int64_t num_workers = 1;
  std::set<std::string> worker_set;
  std::vector<format::CollectionConfig> collections;

  // A marker that cannot be looked up (the store failing) counts as absent: the trial then stays
  // open, and the listing that follows reports the fault.
  bool marker_exists() const {
    auto exists = store->exists(format::kEndOfTrainingMarker);
    return exists && *exists;
  }

  // ---- index loading (caller holds mu) ----
  // Where a listing of index/ may start: after every name of the steps each worker has already been
  // read up to (each worker publishes its steps in order), so that a refresh lists only new index
  // files and one with nothing new costs one request of an object store. Empty until every worker
  // has been seen.
  std::string index_listing_start() const;
  struct IndexListing {
    std::vector<std::string> files;  // "index/<step9>/<name>", sorted
    bool end_marker = false;         // the end marker was there before index/ was listed
  };
  // The index files not yet known, and whether the end marker was there before index/ was listed.
  // Once every worker has been seen, one listing of the whole trial after the steps already read
  // does both (the marker sorts after index/, and a folder's own files are listed before its
  // subfolders are read), so a refresh with nothing new is one request of an object store.
  Result<IndexListing> list_index_files() const;
  // Loads the new index files of `first`; with `first.end_marker`, nothing is being published and
  // that one listing is exact.
  Result<void> load_new_index_files(IndexListing first);
  Result<void> register_index(const format::StepIndex& index, int64_t global_step, const std::string& worker,
                              const std::string& file);
  Result<void> refresh_locked();
  bool step_complete(int64_t g) const {
    auto it = workers_for_global_step.find(g);
    return loaded_all_steps || last_complete_step >= g ||
           (it != workers_for_global_step.end() && int64_t(it->second.size()) >= num_workers);
  }
  std::vector<int64_t> steps_locked(Mode mode, bool show_incomplete) const;
  // The first step >= `step` of steps_locked(mode, show_incomplete), found in the step maps.
  std::optional<int64_t> step_at_or_after_locked(int64_t step, Mode mode, bool show_incomplete) const;
  std::optional<int64_t> to_global(Mode mode, int64_t step) const {
    if (mode == Mode::Global) return step;
    auto m = mode_to_global.find(mode);
    if (m == mode_to_global.end()) return std::nullopt;
    auto it = m->second.find(step);
    if (it == m->second.end()) return std::nullopt;
    return it->second;
  }
  StepState has_passed_step_locked(int64_t step, Mode mode) const;
  const std::vector<WorkerStep>* lookup(const TensorRecord& rec, int64_t step, Mode mode) const;
  Result<WorkerStep> locate(std::string_view name, int64_t step, Mode mode, std::optional<std::string_view> worker);

};

// ---------------------------------------------------------------------------------------------
// Loading

Result<void> Trial::State::register_index(const format::StepIndex& index, int64_t g, const std::string& worker,
                                          const std::string& file) {
  if (index.mode_step < 0)
    return fail(Error::invalid_argument(fmt::format("negative mode step {} in {}", index.mode_step, file)));
  std::optional<uint32_t> file_id;
  if (index.event_file_name) {
    file_id = event_files.intern(*index.event_file_name);
  }
  const StepKey key{index.mode, index.mode_step};
  if (file_id) event_files_of_step[g].insert(*file_id);

  // The step is registered with its first tensor (an index without tensors registers nothing).
  std::set<std::string_view>* step_tensors = nullptr;
  std::set<std::string_view>* mode_tensors = nullptr;
  auto entry_for = [&](std::string_view tensor_name) -> WorkerStep& {
    if (!step_tensors) {
      if (index.mode != Mode::Global) mode_to_global[index.mode].try_emplace(index.mode_step, g);
      global_to_mode.try_emplace(g, key);
      auto& ws = workers_for_global_step[g];
      ws.insert(worker);
      if (int64_t(ws.size()) >= num_workers && g > last_complete_step) last_complete_step = g;
      step_tensors = &global_step_to_tensors[g];
      if (index.mode != Mode::Global) mode_tensors = &mode_to_tensors[index.mode];
    }
    auto rec = tensors.find(tensor_name);
    if (rec == tensors.end()) rec = tensors.emplace(std::string(tensor_name), TensorRecord{}).first;
    // Views of the map's keys, which never move.
    step_tensors->insert(rec->first);
    if (mode_tensors) mode_tensors->insert(rec->first);
    auto& workers = rec->second.steps[key];
    auto w = std::find_if(workers.begin(), workers.end(), [&](const WorkerStep& s) { return s.worker == worker; });
    if (w == workers.end()) {
      workers.push_back(WorkerStep{.worker = worker});
      w = workers.end() - 1;
    }
    return *w;
  };

  for (const auto& t : index.tensor_payload) {
    Location where{.file = file_id.value_or(0), .start = t.start_idx, .length = t.length};
    std::string_view name = t.tensorname;
    if (auto pos = name.find(kReductionPrefix); pos != std::string_view::npos) {
      std::string_view rest = name.substr(pos + kReductionPrefix.size());
      auto slash = rest.find('/');
      if (slash == std::string_view::npos)
        return fail(Error::index_reader(fmt::format("malformed reduction name '{}' in {}", name, file), file));
      std::string_view token = rest.substr(0, slash);
      std::string_view base = rest.substr(slash + 1);
      bool abs = false;
      if (auto a = token.find("abs_"); a != std::string_view::npos) {
        abs = true;
        token = token.substr(a + 4);
      }
      auto op = parse_reduction_name(token);
      if (!op)
        return fail(Error::index_reader(fmt::format("unknown reduction '{}' in {}", token, file), file));
      entry_for(base).reductions.push_back({*op, abs, where});
    } else {
      entry_for(t.tensorname).value = where;
    }
  }
  // Vigil keeps both a value and a shape saved for the same step (smdebug keeps only the shape).
  for (const auto& s : index.shape_payload) entry_for(s.tensorname).shape = s.shape;
  return {};
}

std::string Trial::State::index_listing_start() const {
  if (int64_t(newest_read_step.size()) < num_workers || newest_read_step.empty()) return {};
  int64_t newest_of_all = std::numeric_limits<int64_t>::max();
  for (const auto& [worker, step] : newest_read_step) newest_of_all = std::min(newest_of_all, step);
  if (newest_of_all < 0 || newest_of_all == std::numeric_limits<int64_t>::max()) return {};
  // Sorts after every index name of steps <= newest_of_all and before every one of the next step.
  const int64_t next = newest_of_all + 1;
  return fmt::format("index/{:09d}/{:012d}", next / 1000, next);
}

Result<Trial::State::IndexListing> Trial::State::list_index_files() const {
  IndexListing out;
  const std::string start = index_listing_start();
  if (start.empty()) out.end_marker = marker_exists();
  auto listed = start.empty() ? store->list("index/") : store->list("", start);
  if (!listed) return fail(listed.error());
  for (auto& object : *listed) {
    const std::string& rel = object.relpath;
    if (rel == format::kEndOfTrainingMarker) out.end_marker = true;
    // index/<step9>/<name>.json (or .csv): one folder level, as smdebug reads it.
    if (!rel.starts_with("index/")) continue;
    const size_t folder_end = rel.find('/', 6);
    if (folder_end == std::string::npos || rel.find('/', folder_end + 1) != std::string::npos) continue;
    const std::string_view name = std::string_view(rel).substr(folder_end + 1);
    if ((ends_with(name, ".json") || ends_with(name, ".csv")) && name.size() > 5) out.files.push_back(std::move(object.relpath));
  }
  return out;
}

Result<void> Trial::State::load_new_index_files(IndexListing first) {
  // A listing is no snapshot: a file published while the folders are read may be missed while one
  // published after it is seen (ext4 returns a large folder in hash order over several getdents
  // calls; index/<step9>/ folders are read one after the other), and a step seen without the
  // one before it would make that one look skipped. A file present for the whole of a listing is
  // always in it, and each worker publishes its steps in order, so a second listing, begun after
  // a first one that found something new, holds every step of a worker up to the newest step the
  // first found for it. Only those are taken now; later ones come with the next refresh. Once the
  // end marker is there, nothing is being published and the first listing is taken whole.
  // Not even "present for the whole listing" holds while ext4 turns a growing folder from a linear
  // list into a hashed tree (at about 700 index files): a listing that spans the change can miss
  // old files. The change happens once per folder, so at most one of the two listings spans it,
  // and the union of both is taken.
  const bool writers_done = first.end_marker;
  std::map<std::string, int64_t> newest_in_first;  // worker -> step
  bool found_new = false;
  for (const auto& rel : first.files) {
    found_new = found_new || !read_index_files.contains(rel);
    if (writers_done) continue;
    if (auto parsed = format::parse_step_file_name(rel)) {
      auto [it, inserted] = newest_in_first.try_emplace(parsed->worker, parsed->global_step);
      if (!inserted) it->second = std::max(it->second, parsed->global_step);
    }
  }
  std::vector<std::string> listed = std::move(first.files);
  if (found_new && !writers_done) {
    auto second = list_index_files();
    if (!second) return fail(second.error());
    listed.insert(listed.end(), second->files.begin(), second->files.end());
    std::sort(listed.begin(), listed.end());
    listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
  }
  for (const auto& rel : listed) {
    if (read_index_files.contains(rel)) continue;
    auto parsed = format::parse_step_file_name(rel);
    if (!parsed) return fail(Error::index_reader("Invalid File Found: " + store->describe(rel), store->describe(rel)));
    auto newest = newest_in_first.find(parsed->worker);
    if (!writers_done && (newest == newest_in_first.end() || parsed->global_step > newest->second)) continue;
    auto taken = [&] {
      read_index_files.insert(rel);
      auto [newest, inserted] = newest_read_step.try_emplace(parsed->worker, parsed->global_step);
      if (!inserted) newest->second = std::max(newest->second, parsed->global_step);
    };
    if ((options.range_begin && parsed->global_step < *options.range_begin) ||
        (options.range_end && parsed->global_step >= *options.range_end)) {
      taken();
      continue;
    }
    const std::string full = store->describe(rel);
    auto text = store->read(rel);
    if (!text) {
      // A file that vanished between listing and reading was a writer's rename race; retry later.
      if (auto exists = store->exists(rel); exists && !*exists) continue;
      return fail(text.error());
    }
    auto index = format::parse_index_json(*text, full);
    if (!index) return fail(index.error());
    if (auto r = register_index(*index, parsed->global_step, parsed->worker, full); !r) return r;
    taken();
  }
  // smdebug §5.3 (b): far-behind incomplete steps are declared complete.
  const int64_t window = options.incomplete_step_wait_window;
  if (int64_t(workers_for_global_step.size()) - (last_complete_step + 1) > window)
    last_complete_step += window / 2;
  return {};
}

Result<void> Trial::State::refresh_locked() {
  if (loaded_all_steps || refresh_holds > 0) return {};
  auto first = list_index_files();
  if (!first) return fail(first.error());
  const bool marker = first->end_marker;
  const bool ended = assume_ended || marker;
  if (auto r = load_new_index_files(std::move(*first)); !r) return r;
  if (ended) {
    if (options.end_refresh_delay.count() > 0) std::this_thread::sleep_for(options.end_refresh_delay);
    auto last = list_index_files();
    if (!last) return fail(last.error());
    last->end_marker = last->end_marker || marker;
    if (auto r = load_new_index_files(std::move(*last)); !r) return r;
    loaded_all_steps = true;
    end_marker_seen = true;
    if (!workers_for_global_step.empty())
      last_complete_step = std::max(last_complete_step, workers_for_global_step.rbegin()->first);
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Step logic (caller holds mu)

std::vector<int64_t> Trial::State::steps_locked(Mode mode, bool show_incomplete) const {
  std::vector<int64_t> out;
  if (mode == Mode::Global) {
    for (const auto& [g, workers] : workers_for_global_step)
      if (show_incomplete || step_complete(g)) out.push_back(g);
    return out;
  }
  auto m = mode_to_global.find(mode);
  if (m == mode_to_global.end()) return out;
  for (const auto& [s, g] : m->second)
    if (show_incomplete || step_complete(g)) out.push_back(s);
  return out;
}

std::optional<int64_t> Trial::State::step_at_or_after_locked(int64_t step, Mode mode, bool show_incomplete) const {
  if (mode == Mode::Global) {
    for (auto it = workers_for_global_step.lower_bound(step); it != workers_for_global_step.end(); ++it)
      if (show_incomplete || step_complete(it->first)) return it->first;
    return std::nullopt;
  }
  auto m = mode_to_global.find(mode);
  if (m == mode_to_global.end()) return std::nullopt;
  for (auto it = m->second.lower_bound(step); it != m->second.end(); ++it)
    if (show_incomplete || step_complete(it->second)) return it->first;
  return std::nullopt;
}

StepState Trial::State::has_passed_step_locked(int64_t step, Mode mode) const {
  // Called for every step a reader waits for: a lookup, not a list of every step.
  if (const auto at = step_at_or_after_locked(step, mode, true)) {
    const int64_t g = to_global(mode, *at).value_or(*at);
    if (*at > step) return last_complete_step >= g ? StepState::Unavailable : StepState::NotYetAvailable;
    auto ws = workers_for_global_step.find(g);
    if (ws != workers_for_global_step.end() && int64_t(ws->second.size()) >= num_workers) return StepState::Available;
    if (loaded_all_steps || g <= last_complete_step) return StepState::Available;
    return StepState::NotYetAvailable;
  }
  return loaded_all_steps ? StepState::Unavailable : StepState::NotYetAvailable;
}

const std::vector<WorkerStep>* Trial::State::lookup(const TensorRecord& rec, int64_t step, Mode mode) const {
  if (mode == Mode::Global) {
    if (auto it = rec.steps.find({Mode::Global, step}); it != rec.steps.end()) return &it->second;
    auto gm = global_to_mode.find(step);
    if (gm == global_to_mode.end()) return nullptr;
    auto it = rec.steps.find(gm->second);
    return it == rec.steps.end() ? nullptr : &it->second;
  }
  auto it = rec.steps.find({mode, step});
  return it == rec.steps.end() ? nullptr : &it->second;
}

Result<void> Trial::State::load_shard_layouts_locked() {
  if (shard_layouts_read_at == read_index_files.size()) return {};
  // One worker holds whole tensors: no request to look for layouts (an object store counts them).
  if (num_workers < 2) {
    shard_layouts_read_at = read_index_files.size();
    return {};
  }
  auto exists = store->folder_exists(format::kShardLayoutFolder);
  if (!exists) return fail(exists.error());
  std::map<std::string, format::WorkerShardLayout> layouts;
  if (*exists) {
    auto listed = store->list(format::kShardLayoutFolder);
    if (!listed) return fail(listed.error());
    for (const auto& info : *listed) {
      if (!info.relpath.ends_with(".json")) continue;
      auto text = store->read(info.relpath);
      if (!text) return fail(text.error());
      auto layout = format::parse_shard_layout(*text, store->describe(info.relpath));
      if (!layout) return fail(layout.error());
      layouts[layout->worker] = std::move(*layout);
    }
  }
  shard_layouts = std::move(layouts);
  shard_layouts_read_at = read_index_files.size();
  return {};
}

std::map<std::string, format::ShardPlacement, std::less<>> Trial::State::placements_of(std::string_view tensor) const {
  std::map<std::string, format::ShardPlacement, std::less<>> out;
  for (const auto& [worker, layout] : shard_layouts)
    if (auto it = layout.tensors.find(tensor); it != layout.tensors.end()) out.emplace(worker, it->second);
  return out;
}

// smdebug's Tensor._step: the worker's record of the tensor at a step, or the exception smdebug raises.
Result<WorkerStep> Trial::State::locate(std::string_view name, int64_t step, Mode mode,
                                        std::optional<std::string_view> worker) {
  std::lock_guard lock(mu);
  auto rec = tensors.find(name);
  if (rec == tensors.end()) {
    if (auto r = refresh_locked(); !r) return fail(r.error());
    rec = tensors.find(name);
    if (rec == tensors.end()) return fail(Error::tensor_unavailable(std::string(name)));
  }
  auto pick = [&](const std::vector<WorkerStep>& workers) -> Result<WorkerStep> {
    if (worker) {
      for (const auto& w : workers)
        if (w.worker == *worker) return w;
      return fail(Error::invalid_worker(std::string(*worker)));
    }
    return *std::min_element(workers.begin(), workers.end(),
                             [](const WorkerStep& a, const WorkerStep& b) { return a.worker < b.worker; });
  };
  if (const auto* found = lookup(rec->second, step, mode)) return pick(*found);
  if (auto r = refresh_locked(); !r) return fail(r.error());
  switch (has_passed_step_locked(step, mode)) {
    case StepState::Available:
      if (const auto* found = lookup(rec->second, step, mode)) return pick(*found);
      return fail(Error::tensor_unavailable_for_step(std::string(name), step, mode, false));
    case StepState::Unavailable: return fail(Error::step_unavailable(step, mode));
    case StepState::NotYetAvailable: break;
  }
  if (loaded_all_steps) {
    auto all = steps_locked(mode, true);
    return fail(Error::no_more_data(step, mode, all.empty() ? -1 : all.back()));
  }
  return fail(Error::step_not_yet_available(step, mode));
}

// ---------------------------------------------------------------------------------------------
// Opening

Trial::Trial(std::unique_ptr<State> state) : state_(std::move(state)) {}
Trial::~Trial() = default;

Result<std::shared_ptr<Trial>> Trial::open(const std::string& location, TrialOptions options) {
  auto store = storage::open_object_store(location);
  if (!store) return fail(store.error());
  return open(std::move(*store), options);
}

Result<std::shared_ptr<Trial>> Trial::open(std::shared_ptr<const storage::ObjectStore> store, TrialOptions options) {
  auto state = std::make_unique<State>(std::move(store));
  const fs::path& path = state->path;
  state->name = path.filename().empty() ? path.parent_path().filename().string() : path.filename().string();
  state->options = options;

  // §5.2: wait for the collection files; the first one (sorted) defines collections and num_workers.
  // time_point::max() = no deadline.
  const auto deadline = options.collections_timeout ? std::chrono::steady_clock::now() + *options.collections_timeout
                                                    : std::chrono::steady_clock::time_point::max();
  auto list_collection_files = [&]() -> Result<std::vector<std::string>> {
    auto listed = state->store->list("collections/");
    if (!listed) return fail(listed.error());
    std::vector<std::string> files;  // relative to the trial root, sorted
    for (auto& object : *listed)
      if (ends_with(object.relpath, "collections.json")) files.push_back(std::move(object.relpath));
    return files;
  };
  std::vector<std::string> files;
  bool parsed_first = false;
  while (true) {
    const bool event_driven = state->watcher && state->watcher->event_driven() && state->watcher->watching_root();
    const uint64_t seen = state->watcher ? state->watcher->generation() : 0;
    auto listed = list_collection_files();
    if (!listed) return fail(listed.error());
    files = std::move(*listed);
    if (!files.empty() && !parsed_first) {
      auto text = state->store->read(files.front());
      if (!text) return fail(text.error());
      auto parsed = format::parse_collections_json(*text, state->store->describe(files.front()));
      if (!parsed) return fail(parsed.error());
      state->collections = std::move(parsed->collections);
      state->num_workers = std::max<int64_t>(1, parsed->num_workers);
      parsed_first = true;
    }
    if (parsed_first && int64_t(files.size()) >= state->num_workers) break;
    if (state->marker_exists()) return fail(Error::missing_collection_files());
    if (std::chrono::steady_clock::now() >= deadline) {
      Error e{.code = ErrorCode::Timeout,
              .message = fmt::format("{}: found {} of {} collection files in collections/ (is this an smdebug trial?)",
                                     state->store->location(), files.size(), parsed_first ? state->num_workers : 1)};
      e.file = path.string();
      return fail(std::move(e));
    }
    // A local trial is watched while its collection files are awaited (a new file ends the wait at
    // once), then listed again; the watcher serves wait_for_steps later. Polling remains while the
    // trial folder does not exist, and for object stores.
    if (!state->watcher && state->store->is_local()) {
      state->watcher = std::make_unique<TrialWatcher>(path);
      continue;
    }
    auto wait = event_driven ? std::chrono::milliseconds(1000) : options.poll_interval;
    if (deadline != std::chrono::steady_clock::time_point::max())
      wait = std::max(std::chrono::milliseconds(1),
                      std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())));
    if (state->watcher)
      state->watcher->wait_for_change(seen, wait, {});
    else
      std::this_thread::sleep_for(wait);
  }
  for (const auto& f : files)
    if (auto w = format::parse_collections_file_name(fs::path(f).filename().string())) state->worker_set.insert(*w);

  // The constructor's one refresh_data() (without the end-of-training logic).
  {
    std::lock_guard lock(state->mu);
    auto listing = state->list_index_files();
    if (!listing) return fail(listing.error());
    if (auto r = state->load_new_index_files(std::move(*listing)); !r) return fail(r.error());
  }
  return std::shared_ptr<Trial>(new Trial(std::move(state)));
}

const fs::path& Trial::path() const { return state_->path; }
bool Trial::is_local() const { return state_->store->is_local(); }
const storage::ObjectStore& Trial::store() const { return *state_->store; }
const std::string& Trial::name() const { return state_->name; }

Result<void> Trial::refresh() {
  std::lock_guard lock(state_->mu);
  return state_->refresh_locked();
}

void Trial::hold_refresh() {
  std::lock_guard lock(state_->mu);
  ++state_->refresh_holds;
}

void Trial::release_refresh() {
  std::lock_guard lock(state_->mu);
  if (state_->refresh_holds > 0) --state_->refresh_holds;
}

void Trial::assume_training_ended() {
  std::lock_guard lock(state_->mu);
  state_->assume_ended = true;
}

// ---------------------------------------------------------------------------------------------
// Trial-level queries

Result<std::vector<std::string>> Trial::tensor_names(const TensorNameQuery& q) {
  if (!q.regex.empty() && q.collection)
    return fail(Error::invalid_argument("Only one of `regex` or `collection` can be passed to this method"));
  std::vector<std::string> candidates;
  {
    std::lock_guard lock(state_->mu);
    if (auto r = state_->refresh_locked(); !r) return fail(r.error());
    auto& s = *state_;
    if (!q.step) {
      if (q.mode == Mode::Global) {
        for (const auto& [name, rec] : s.tensors) candidates.push_back(name);
      } else if (auto it = s.mode_to_tensors.find(q.mode); it != s.mode_to_tensors.end()) {
        candidates.assign(it->second.begin(), it->second.end());
      }
    } else if (auto g = s.to_global(q.mode, *q.step)) {
      if (auto it = s.global_step_to_tensors.find(*g); it != s.global_step_to_tensors.end())
        candidates.assign(it->second.begin(), it->second.end());
    }
  }
  if (q.regex.empty() && !q.collection) return candidates;

  std::vector<std::regex> patterns;
  if (q.collection) {
    const auto* c = collection(*q.collection);
    if (!c) return std::vector<std::string>{};
    std::vector<std::string> out;
    for (const auto& p : c->include_regex) {
      auto re = compile_search_regex(p);
      if (!re) return fail(re.error());
      patterns.push_back(std::move(*re));
    }
    for (const auto& name : candidates) {
      bool member = std::find(c->tensor_names.begin(), c->tensor_names.end(), name) != c->tensor_names.end() ||
                    std::any_of(patterns.begin(), patterns.end(), [&](const std::regex& re) {
                      return regex_search_bounded(name, re);
                    });
      if (member) out.push_back(name);
    }
    return out;
  }
  for (const auto& p : q.regex) {
    auto re = compile_search_regex(p);
    if (!re) return fail(re.error());
    patterns.push_back(std::move(*re));
  }
  std::vector<std::string> out;
  for (const auto& name : candidates)
    if (std::any_of(patterns.begin(), patterns.end(), [&](const std::regex& re) { return regex_search_bounded(name, re); }))
      out.push_back(name);
  return out;
}

bool Trial::has_tensor(std::string_view name) {
  std::lock_guard lock(state_->mu);
  if (state_->tensors.contains(name)) return true;
  if (!state_->refresh_locked()) return false;
  return state_->tensors.contains(name);
}

Result<Tensor> Trial::tensor(std::string_view name) {
  if (!has_tensor(name)) return fail(Error::tensor_unavailable(std::string(name)));
  return Tensor(shared_from_this(), std::string(name));
}

Result<std::vector<int64_t>> Trial::steps(Mode mode, bool show_incomplete_steps) {
  std::lock_guard lock(state_->mu);
  if (auto r = state_->refresh_locked(); !r) return fail(r.error());
  return state_->steps_locked(mode, show_incomplete_steps);
}

Result<std::optional<int64_t>> Trial::next_step(int64_t after, Mode mode, bool show_incomplete_steps) {
  std::lock_guard lock(state_->mu);
  if (auto r = state_->refresh_locked(); !r) return fail(r.error());
  if (after == std::numeric_limits<int64_t>::max()) return std::optional<int64_t>{};
  return state_->step_at_or_after_locked(after + 1, mode, show_incomplete_steps);
}

std::vector<Mode> Trial::modes() {
  std::lock_guard lock(state_->mu);
  std::vector<Mode> out;
  for (const auto& [m, steps] : state_->mode_to_global) out.push_back(m);
  return out;
}

std::optional<std::pair<Mode, int64_t>> Trial::mode_modestep(int64_t global_step) {
  std::lock_guard lock(state_->mu);
  auto it = state_->global_to_mode.find(global_step);
  if (it == state_->global_to_mode.end()) {
    if (!state_->refresh_locked()) return std::nullopt;
    it = state_->global_to_mode.find(global_step);
    if (it == state_->global_to_mode.end()) return std::nullopt;
  }
  return it->second;
}

std::optional<int64_t> Trial::global_step(Mode mode, int64_t mode_step) {
  std::lock_guard lock(state_->mu);
  if (auto g = state_->to_global(mode, mode_step)) return g;
  if (!state_->refresh_locked()) return std::nullopt;
  return state_->to_global(mode, mode_step);
}

Result<std::vector<std::string>> Trial::workers() {
  std::lock_guard lock(state_->mu);
  if (auto r = state_->refresh_locked(); !r) return fail(r.error());
  return std::vector<std::string>(state_->worker_set.begin(), state_->worker_set.end());
}

const std::vector<format::CollectionConfig>& Trial::collections() const { return state_->collections; }

const format::CollectionConfig* Trial::collection(std::string_view name) const {
  for (const auto& c : state_->collections)
    if (c.name == name) return &c;
  return nullptr;
}

Result<StepState> Trial::has_passed_step(int64_t step, Mode mode) {
  std::lock_guard lock(state_->mu);
  if (auto r = state_->refresh_locked(); !r) return fail(r.error());
  return state_->has_passed_step_locked(step, mode);
}

Result<void> Trial::wait_for_steps(const std::vector<int64_t>& steps, Mode mode, std::stop_token stop,
                                   std::optional<std::chrono::milliseconds> timeout) {
  const auto deadline =
      timeout ? std::chrono::steady_clock::now() + *timeout : std::chrono::steady_clock::time_point::max();
  // Watch a local trial before looking at it, so no change between a look and the wait is missed.
  // An object store has no change notification: it is listed again after a pause that doubles while
  // nothing new appears, up to max_listing_interval, so following an idle job costs few requests.
  TrialWatcher* watcher = nullptr;
  if (state_->store->is_local()) {
    std::lock_guard lock(state_->mu);
    if (!state_->watcher) state_->watcher = std::make_unique<TrialWatcher>(state_->path);
    watcher = state_->watcher.get();
  }
  auto listing_pause = state_->options.poll_interval;
  size_t files_known = 0;
  for (int64_t step : steps) {
    while (true) {
      StepState state;
      std::vector<int64_t> all;
      bool all_loaded;
      const uint64_t seen = watcher ? watcher->generation() : 0;
      {
        std::lock_guard lock(state_->mu);
        if (auto r = state_->refresh_locked(); !r) return fail(r.error());
        if (state_->read_index_files.size() != files_known) {
          files_known = state_->read_index_files.size();
          listing_pause = state_->options.poll_interval;
        }
        state = state_->has_passed_step_locked(step, mode);
        all_loaded = state_->loaded_all_steps;
        if (state == StepState::Unavailable && all_loaded) all = state_->steps_locked(mode, true);
      }
      if (state == StepState::Available) break;
      if (state == StepState::Unavailable) {
        if (!all_loaded) return fail(Error::step_unavailable(step, mode));
        const int64_t last = all.empty() ? -1 : all.back();
        if (step < last) return fail(Error::step_unavailable(step, mode));
        return fail(Error::no_more_data(step, mode, last));
      }
      if (stop.stop_requested())
        return fail(Error{.code = ErrorCode::Cancelled, .message = "wait_for_steps cancelled"});
      if (std::chrono::steady_clock::now() >= deadline)
        return fail(Error{.code = ErrorCode::Timeout,
                          .message = fmt::format("timed out waiting for step {} of mode {}", step, mode_name(mode)),
                          .step = step,
                          .mode = mode});
      // Event driven with inotify; the poll interval only bounds the wait as a fallback.
      auto wait = !watcher                 ? listing_pause
                  : watcher->event_driven() ? std::chrono::milliseconds(1000)
                                            : state_->options.poll_interval;
      if (timeout) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        wait = std::max(std::chrono::milliseconds(1), std::min(wait, left));
      }
      if (watcher) {
        watcher->wait_for_change(seen, wait, stop);
      } else {
        sleep_unless_stopped(wait, stop);
        listing_pause = std::min(listing_pause * 2, std::max(state_->options.poll_interval, state_->options.max_listing_interval));
      }
    }
  }
  return {};
}

int64_t Trial::last_complete_step() {
  std::lock_guard lock(state_->mu);
  return state_->last_complete_step;
}

bool Trial::loaded_all_steps() {
  std::lock_guard lock(state_->mu);
  return state_->loaded_all_steps;
}

bool Trial::training_ended() {
  {
    std::lock_guard lock(state_->mu);
    // Once a refresh has seen the marker it is not looked up again: over S3 each look is a HEAD, and
    // rules ask at every step (StalledTrainingRule).
    if (state_->assume_ended || state_->end_marker_seen) return true;
  }
  return state_->marker_exists();
}

int64_t Trial::num_workers() const { return state_->num_workers; }

// ---------------------------------------------------------------------------------------------
// Tensor-level queries

Result<std::vector<int64_t>> Trial::tensor_steps(std::string_view name, Mode mode, bool show_incomplete_steps) {
  std::lock_guard lock(state_->mu);
  auto& s = *state_;
  if (auto r = s.refresh_locked(); !r) return fail(r.error());
  auto rec = s.tensors.find(name);
  if (rec == s.tensors.end()) return fail(Error::tensor_unavailable(std::string(name)));
  // A vector sorted once, not a set: inspect lists the steps of every tensor in every mode.
  std::vector<int64_t> out;
  out.reserve(rec->second.steps.size());
  for (const auto& [key, workers] : rec->second.steps) {
    auto [m, ms] = key;
    if (mode != Mode::Global && m != mode) continue;
    auto g = s.to_global(m, ms);
    if (!g) continue;
    if (!show_incomplete_steps && !s.step_complete(*g)) continue;
    out.push_back(mode == Mode::Global ? *g : ms);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<std::optional<std::map<std::string, format::ShardPlacement, std::less<>>>> Trial::sharded(std::string_view name) {
  std::lock_guard lock(state_->mu);
  if (auto loaded = state_->load_shard_layouts_locked(); !loaded) return fail(loaded.error());
  auto placements = state_->placements_of(name);
  if (placements.empty()) return std::nullopt;
  return placements;
}

Result<TensorValue> Trial::value(std::string_view name, int64_t step, Mode mode,
                                 std::optional<std::string_view> worker) {
  auto ws = state_->locate(name, step, mode, worker);
  if (!ws) return fail(ws.error());
  if (!worker) {
    // A sharded tensor, asked for without a worker: the whole tensor, from every worker's shard.
    auto placements = sharded(name);
    if (!placements) return fail(placements.error());
    if (*placements) {
      auto workers = tensor_workers(name, step, mode);
      if (!workers) return fail(workers.error());
      std::vector<Shard> shards;
      for (const auto& w : *workers) {
        auto it = (*placements)->find(w);
        if (it == (*placements)->end())
          return fail(Error::corrupt(state_->path.string(), 0,
                                     fmt::format("{} saved {} without its shard layout (shards/)", w, name)));
        auto v = value(name, step, mode, std::string_view(w));
        if (!v) return fail(v.error());
        shards.push_back({std::move(*v), it->second});
      }
      return assemble_shards(name, shards);
    }
  }
  if (!ws->value)
    return fail(Error::tensor_unavailable_for_step(std::string(name), step, mode, !ws->reductions.empty()));
  return state_->records.read(*ws->value);
}

Result<ReductionValue> Trial::reduction_value(std::string_view name, int64_t step, std::string_view reduction,
                                              bool abs, Mode mode, std::optional<std::string_view> worker) {
  auto ws = state_->locate(name, step, mode, worker);
  if (!ws) return fail(ws.error());
  auto op = parse_reduction_name(reduction);
  if (!worker) {
    // A sharded tensor's reductions are the whole tensor's, never one shard's saved ones.
    auto placements = sharded(name);
    if (!placements) return fail(placements.error());
    if (*placements) {
      if (!op) return fail(Error::invalid_argument(fmt::format("Invalid reduction type {}", reduction)));
      return sharded_reduction(name, step, mode, **placements, *op, abs);
    }
  }
  if (op) {
    for (const auto& saved : ws->reductions) {
      if (saved.op != *op || saved.abs != abs) continue;
      auto v = state_->records.read(saved.where);
      if (!v) return fail(v.error());
      if (v->size() != 1 || v->is_string())
        return fail(Error::corrupt(state_->path.string(), saved.where.start, "saved reduction is not a scalar"));
      double x = 0;
      detail::for_each_as_double(*v, [&](double e) { x = e; });
      return ReductionValue{.value = x, .dtype = v->dtype(), .saved = true};
    }
  }
  if (!ws->value)
    return fail(Error::tensor_unavailable_for_step(std::string(reduction), step, mode, false));
  if (!op) return fail(Error::invalid_argument(fmt::format("Invalid reduction type {}", reduction)));
  auto v = state_->records.read(*ws->value);
  if (!v) return fail(v.error());
  return compute_reduction(*v, *op, abs);
}

Result<ReductionValue> Trial::sharded_reduction(
    std::string_view name, int64_t step, Mode mode,
    const std::map<std::string, format::ShardPlacement, std::less<>>& placements, ReductionOp op, bool abs) {
  auto workers = tensor_workers(name, step, mode);
  if (!workers) return fail(workers.error());
  const std::vector<int64_t>& global = placements.begin()->second.global_shape;
  const std::vector<int64_t> space = shard_space(placements.begin()->second);
  std::vector<ShardExtent> extents;
  std::vector<ReductionStatistics> parts;
  bool all_saved = true;
  for (const auto& w : *workers) {
    auto it = placements.find(w);
    if (it == placements.end())
      return fail(Error::corrupt(state_->path.string(), 0, fmt::format("{} saved {} without its shard layout (shards/)", w, name)));
    const format::ShardPlacement& placement = it->second;
    if (placement.global_shape != global || shard_space(placement) != space)
      return fail(Error::corrupt(state_->path.string(), 0, fmt::format("the workers disagree on the global shape of {}", name)));
    const bool layout_has_shape = placement.shape.size() == space.size();
    auto ws = state_->locate(name, step, mode, std::string_view(w));
    if (!ws) return fail(ws.error());
    if (ws->value) {
      auto v = state_->records.read(*ws->value);
      if (!v) return fail(v.error());
      if (layout_has_shape && placement.shape != v->shape())
        return fail(Error::corrupt(state_->path.string(), 0, fmt::format("{}'s shard of {} is not the shape its layout gives", w, name)));
      auto part = reduction_statistics(*v, op, abs);
      if (!part) return fail(part.error());
      extents.push_back(shard_extent(placement, v->shape()));
      parts.push_back(*part);
      all_saved = false;
      continue;
    }
    // Only reductions saved: the shard's own, merged (its element count from its shape).
    std::optional<std::vector<int64_t>> shape;
    if (layout_has_shape) shape = placement.shape;
    else if (ws->shape) shape = ws->shape;
    std::optional<ReductionStatistics> part;
    uint64_t count = 1;
    if (shape)
      for (int64_t d : *shape) count *= uint64_t(std::max<int64_t>(d, 0));
    // An empty shard (a worker holding none of the tensor) has nothing to merge, saved or not.
    if (shape && count == 0) {
      part = ReductionStatistics{.op = op, .abs = abs, .count = 0};
    } else if (shape) {
      auto saved = reduction_values(name, step, mode, std::string_view(w));
      if (!saved) return fail(saved.error());
      part = reduction_statistics_from_saved(op, abs, count, [&](ReductionOp what, bool a) -> std::optional<std::pair<double, ElementType>> {
        for (const auto& r : *saved)
          if (r.op == what && r.abs == a && r.value.size() == 1 && !r.value.is_string()) {
            double x = 0;
            detail::for_each_as_double(r.value, [&](double e) { x = e; });
            return std::pair{x, r.value.dtype()};
          }
        return std::nullopt;
      });
    }
    if (!part) return fail(Error::tensor_unavailable_for_step(std::string(reduction_name(op)), step, mode, false));
    extents.push_back(shard_extent(placement, *shape));
    parts.push_back(*part);
  }
  auto distinct = distinct_shards(name, space, extents);
  if (!distinct) return fail(distinct.error());
  ReductionStatistics whole = parts[distinct->front()];
  for (size_t k = 1; k < distinct->size(); ++k)
    if (auto merged = merge_reduction_statistics(whole, parts[(*distinct)[k]]); !merged) return fail(merged.error());
  auto result = finish_reduction(whole);
  if (result) result->saved = all_saved;
  return result;
}

Result<std::vector<SavedReduction>> Trial::reduction_values(std::string_view name, int64_t step, Mode mode,
                                                            std::optional<std::string_view> worker) {
  auto ws = state_->locate(name, step, mode, worker);
  if (!ws) return fail(ws.error());
  std::vector<SavedReduction> out;
  for (const auto& saved : ws->reductions) {
    auto v = state_->records.read(saved.where);
    if (!v) return fail(v.error());
    out.push_back({saved.op, saved.abs, std::move(*v)});
  }
  return out;
}

Result<std::vector<int64_t>> Trial::shape(std::string_view name, int64_t step, Mode mode,
                                          std::optional<std::string_view> worker) {
  auto ws = state_->locate(name, step, mode, worker);
  if (!ws) return fail(ws.error());
  if (!worker) {
    auto placements = sharded(name);
    if (!placements) return fail(placements.error());
    if (*placements) return (*placements)->begin()->second.global_shape;  // the whole tensor's
  }
  if (ws->shape) return *ws->shape;
  if (!ws->value) return fail(Error::shape_unavailable_for_step(std::string(name), step, mode));
  auto v = state_->records.read(*ws->value);
  if (!v) return fail(v.error());
  return v->shape();
}

Result<double> Trial::step_wall_time(int64_t step, Mode mode) {
  std::vector<std::string> files;  // relative to the trial root
  {
    std::lock_guard lock(state_->mu);
    auto& s = *state_;
    auto g = s.to_global(mode, step);
    if (!g || !s.workers_for_global_step.contains(*g)) {
      if (auto r = s.refresh_locked(); !r) return fail(r.error());
      g = s.to_global(mode, step);
    }
    if (!g || !s.workers_for_global_step.contains(*g)) {
      switch (s.has_passed_step_locked(step, mode)) {
        case StepState::NotYetAvailable: return fail(Error::step_not_yet_available(step, mode));
        default: return fail(Error::step_unavailable(step, mode));
      }
    }
    if (auto it = s.event_files_of_step.find(*g); it != s.event_files_of_step.end())
      for (uint32_t id : it->second) files.push_back(s.event_files.relpath(id));
  }
  if (files.empty())
    return fail(Error::not_supported(fmt::format("step {} saved no tensor records, so it has no wall time", step)));
  double latest = 0;
  for (const auto& rel : files) {
    const std::string file = state_->store->describe(rel);
    auto read = state_->store->read(rel);
    if (!read) return fail(read.error());
    const std::string& bytes = *read;
    auto records = format::split_records({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    if (!records) return fail(Error::corrupt(file, records.error().offset, records.error().reason));
    for (const auto& r : *records) {
      auto ev = format::decode_event(r.record.payload);
      if (!ev) return fail(Error::corrupt(file, r.offset, ev.error()));
      latest = std::max(latest, ev->wall_time);
    }
  }
  return latest;
}

Result<std::vector<std::string>> Trial::tensor_workers(std::string_view name, int64_t step, Mode mode) {
  std::lock_guard lock(state_->mu);
  auto rec = state_->tensors.find(name);
  if (rec == state_->tensors.end()) return fail(Error::tensor_unavailable(std::string(name)));
  const auto* found = state_->lookup(rec->second, step, mode);
  if (!found) return fail(Error::tensor_unavailable_for_step(std::string(name), step, mode, false));
  std::vector<std::string> out;
  for (const auto& w : *found) out.push_back(w.worker);
  return out;
}

}  // namespace vigil
