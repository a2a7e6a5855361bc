#include "trial/trial.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <span>
#include <thread>
#include <unordered_map>
#include <unordered_set>
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
  uint32_t worker = 0;  // Trial::State::worker_names
  std::optional<Location> value;
  std::optional<std::vector<int64_t>> shape;
  std::vector<SavedReductionLocation> reductions;
};

using StepKey = std::pair<Mode, int64_t>;  // (mode, mode step)

// Mode as an index of the per-mode tables (Train, Eval, Predict, Global).
constexpr size_t mode_slot(Mode m) { return size_t(m) - 1; }
constexpr size_t kModeSlots = 4;

// One worker's entry of a tensor at one mode step.
struct StepEntry {
  int64_t mode_step;
  WorkerStep saved;
};

// A tensor's steps: per mode, entries sorted by mode step, a step's workers next to each other in
// the order they were indexed. Index files come in step order, so entries are appended; a late one
// (a worker behind the others) is inserted in its place.
struct TensorRecord {
  std::string name;
  uint8_t modes = 0;  // bit (1 << slot) for every non-GLOBAL mode the tensor was saved in
  int64_t last_listed_step = std::numeric_limits<int64_t>::min();  // last GlobalStep::tensors it joined
  std::array<std::vector<StepEntry>, kModeSlots> steps;
};

// std::lower_bound by step over a range sorted by step, trying first the place the step would have
// if the range's steps were evenly spread (steps saved at a regular interval, by a fixed number of
// workers): that guess is usually right, where a binary search's probes miss the cache in a long
// job's tables, and the evaluator looks steps up a dozen times per step.
template <class It, class StepOf>
It step_lower_bound(It begin, It end, int64_t step, StepOf step_of) {
  if (begin == end || step <= step_of(*begin)) return begin;
  const int64_t first = step_of(*begin), last = step_of(*std::prev(end));
  if (step > last) return end;
  const auto n = std::distance(begin, end);
  It it = begin + std::min<ptrdiff_t>(ptrdiff_t(double(step - first) / double(last - first) * double(n - 1)), n - 1);
  // On the step, or just past it: back to its first entry (begin's step is below `step`, so the
  // walk stops before begin). Anywhere else: the binary search.
  if (step_of(*it) == step || (it != begin && step_of(*std::prev(it)) == step)) {
    while (step_of(*std::prev(it)) == step) --it;
    return it;
  }
  return std::lower_bound(begin, end, step, [&](const auto& e, int64_t s) { return step_of(e) < s; });
}

// The entries of one mode step in a tensor's table (empty when it has none).
std::span<const StepEntry> entries_at(const std::vector<StepEntry>& table, int64_t mode_step) {
  auto lo = step_lower_bound(table.begin(), table.end(), mode_step, [](const StepEntry& e) { return e.mode_step; });
  auto hi = lo;
  while (hi != table.end() && hi->mode_step == mode_step) ++hi;
  return {lo, hi};
}

// One global step: what every index file of that step registered.
struct GlobalStep {
  int64_t step;
  StepKey key{Mode::Global, 0};          // (mode, mode step) of the first index file with tensors
  std::vector<uint32_t> workers;         // distinct worker ids; empty until a file with tensors came
  std::vector<uint32_t> tensors;         // tensor ids, as registered (a late worker may repeat one)
  std::vector<uint32_t> event_files;     // distinct EventFileCache ids
};

// Hashing std::string keys, looked up by string_view without a copy.
struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using NameIds = std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>>;

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
  // Tensors by id; names interned once (tensor_ids), so registering an index entry is one hash
  // lookup and appends to flat vectors, not a node per entry in maps keyed by strings.
  std::vector<TensorRecord> tensors;
  NameIds tensor_ids;
  std::vector<uint32_t> sorted_tensors;  // ids by name; rebuilt when a tensor was added since
  bool sorted_tensors_stale = false;
  std::vector<std::string> worker_names;  // worker ids (as in index file names), interned
  NameIds worker_ids;
  std::vector<GlobalStep> global_steps;  // sorted by step
  size_t registered_steps = 0;           // global steps with at least one worker
  // Per non-GLOBAL mode: (mode step, global step) sorted by mode step; the first one indexed wins.
  std::array<std::vector<std::pair<int64_t, int64_t>>, kModeSlots> mode_to_global;
  // tensor_names' filters (a collection, or a list of regexes) by query, each with its patterns
  // compiled and its answer per tensor id (-1: not decided yet).
  struct NameFilter {
    std::vector<std::regex> patterns;
    std::vector<int8_t> member;
  };
  std::unordered_map<std::string, NameFilter> name_filters;
  std::unordered_set<std::string> read_index_files;
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
  // The global step's entry, or nullptr.
  const GlobalStep* global_entry(int64_t g) const {
    auto it = step_lower_bound(global_steps.begin(), global_steps.end(), g, [](const GlobalStep& e) { return e.step; });
    return it != global_steps.end() && it->step == g ? &*it : nullptr;
  }
  // The global step's entry, made when missing (in its place: usually at the end).
  GlobalStep& global_entry_for(int64_t g) {
    if (global_steps.empty() || global_steps.back().step < g) return global_steps.emplace_back(GlobalStep{.step = g});
    auto it = std::lower_bound(global_steps.begin(), global_steps.end(), g,
                               [](const GlobalStep& e, int64_t s) { return e.step < s; });
    if (it != global_steps.end() && it->step == g) return *it;
    return *global_steps.insert(it, GlobalStep{.step = g});
  }
  // Whether a global step was registered (an index file of it listed tensors).
  bool registered(int64_t g) const {
    const GlobalStep* e = global_entry(g);
    return e && !e->workers.empty();
  }
  bool step_complete(int64_t g) const {
    if (loaded_all_steps || last_complete_step >= g) return true;
    const GlobalStep* e = global_entry(g);
    return e && int64_t(e->workers.size()) >= num_workers;
  }
  std::vector<int64_t> steps_locked(Mode mode, bool show_incomplete) const;
  // The first step >= `step` of steps_locked(mode, show_incomplete), found in the step tables.
  std::optional<int64_t> step_at_or_after_locked(int64_t step, Mode mode, bool show_incomplete) const;
  std::optional<int64_t> to_global(Mode mode, int64_t step) const {
    if (mode == Mode::Global) return step;
    const auto& table = mode_to_global[mode_slot(mode)];
    auto it = std::lower_bound(table.begin(), table.end(), step,
                               [](const std::pair<int64_t, int64_t>& e, int64_t s) { return e.first < s; });
    if (it == table.end() || it->first != step) return std::nullopt;
    return it->second;
  }
  // (mode, mode step) of a registered global step.
  std::optional<StepKey> to_mode(int64_t g) const {
    const GlobalStep* e = global_entry(g);
    if (!e || e->workers.empty()) return std::nullopt;
    return e->key;
  }
  StepState has_passed_step_locked(int64_t step, Mode mode) const;
  const TensorRecord* find_tensor(std::string_view name) const {
    auto it = tensor_ids.find(name);
    return it == tensor_ids.end() ? nullptr : &tensors[it->second];
  }
  uint32_t intern_worker(std::string_view worker) {
    if (auto it = worker_ids.find(worker); it != worker_ids.end()) return it->second;
    const auto id = uint32_t(worker_names.size());
    worker_names.emplace_back(worker);
    worker_ids.emplace(std::string(worker), id);
    return id;
  }
  // Tensor ids sorted by name (tensor_names lists in that order).
  const std::vector<uint32_t>& tensors_by_name() {
    if (sorted_tensors_stale) {
      sorted_tensors.resize(tensors.size());
      for (uint32_t i = 0; i < sorted_tensors.size(); ++i) sorted_tensors[i] = i;
      std::sort(sorted_tensors.begin(), sorted_tensors.end(),
                [&](uint32_t a, uint32_t b) { return tensors[a].name < tensors[b].name; });
      sorted_tensors_stale = false;
    }
    return sorted_tensors;
  }
  // The tensor's entries at a step: every worker's, in the order they were indexed.
  std::span<const StepEntry> lookup(const TensorRecord& rec, int64_t step, Mode mode) const;
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
  const uint32_t worker_id = intern_worker(worker);
  const size_t slot = mode_slot(index.mode);
  if (file_id) {
    auto& files = global_entry_for(g).event_files;
    if (std::find(files.begin(), files.end(), *file_id) == files.end()) files.push_back(*file_id);
  }

  // The step is registered with its first tensor (an index without tensors registers nothing).
  GlobalStep* step = nullptr;
  bool worker_seen_at_step = false;  // this worker's entries of the step may exist already
  auto entry_for = [&](std::string_view tensor_name) -> WorkerStep& {
    if (!step) {
      if (index.mode != Mode::Global) {
        auto& table = mode_to_global[slot];
        if (table.empty() || table.back().first < index.mode_step) {
          table.emplace_back(index.mode_step, g);
        } else {
          auto it = std::lower_bound(table.begin(), table.end(), index.mode_step,
                                     [](const std::pair<int64_t, int64_t>& e, int64_t s) { return e.first < s; });
          if (it == table.end() || it->first != index.mode_step) table.insert(it, {index.mode_step, g});
        }
      }
      step = &global_entry_for(g);
      if (step->workers.empty()) {
        step->key = key;
        ++registered_steps;
      }
      worker_seen_at_step =
          std::find(step->workers.begin(), step->workers.end(), worker_id) != step->workers.end();
      if (!worker_seen_at_step) step->workers.push_back(worker_id);
      if (int64_t(step->workers.size()) >= num_workers && g > last_complete_step) last_complete_step = g;
    }
    auto id_it = tensor_ids.find(tensor_name);
    if (id_it == tensor_ids.end()) {
      id_it = tensor_ids.emplace(std::string(tensor_name), uint32_t(tensors.size())).first;
      tensors.push_back(TensorRecord{.name = id_it->first});
      sorted_tensors_stale = true;
    }
    const uint32_t id = id_it->second;
    TensorRecord& rec = tensors[id];
    if (rec.last_listed_step != g) {
      step->tensors.push_back(id);
      rec.last_listed_step = g;
    }
    if (index.mode != Mode::Global) rec.modes |= uint8_t(1u << slot);
    auto& table = rec.steps[slot];
    // This step's entries: at the end for an index file in step order, else found in place. Only a
    // worker already seen at this step before this index file can have an entry anywhere among the
    // step's; a new worker's entry is the step's last one once made (this file may name the tensor
    // again, for its reductions), so the step's other workers are not walked: a walk per tensor made
    // registering a step O(workers^2).
    auto at = table.end();
    if (!table.empty() && table.back().mode_step >= index.mode_step) {
      if (worker_seen_at_step) {
        at = std::lower_bound(table.begin(), table.end(), index.mode_step,
                              [](const StepEntry& e, int64_t s) { return e.mode_step < s; });
        for (; at != table.end() && at->mode_step == index.mode_step; ++at)
          if (at->saved.worker == worker_id) return at->saved;
      } else {
        // The end when the step is the table's last (index files in step order): a binary search of
        // a table of many workers' steps misses the cache at each probe.
        at = table.back().mode_step == index.mode_step
                 ? table.end()
                 : std::upper_bound(table.begin(), table.end(), index.mode_step,
                                    [](int64_t s, const StepEntry& e) { return s < e.mode_step; });
        if (at != table.begin()) {
          auto last = std::prev(at);
          if (last->mode_step == index.mode_step && last->saved.worker == worker_id) return last->saved;
        }
      }
    }
    return table.insert(at, StepEntry{.mode_step = index.mode_step, .saved = WorkerStep{.worker = worker_id}})->saved;
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
  // The files to take, in order; those to read are then read a batch at a time (an object store's
  // GETs side by side, bounded: ObjectStore::read_many; a batch bounds the index text held at once)
  // and registered in that order.
  struct NewFile {
    const std::string* rel;
    format::StepFileName parsed;
    bool read;  // false: outside the range asked for, taken without reading it
  };
  std::vector<NewFile> new_files;
  for (const auto& rel : listed) {
    if (read_index_files.contains(rel)) continue;
    auto parsed = format::parse_step_file_name(rel);
    if (!parsed) return fail(Error::index_reader("Invalid File Found: " + store->describe(rel), store->describe(rel)));
    auto newest = newest_in_first.find(parsed->worker);
    if (!writers_done && (newest == newest_in_first.end() || parsed->global_step > newest->second)) continue;
    const bool outside = (options.range_begin && parsed->global_step < *options.range_begin) ||
                         (options.range_end && parsed->global_step >= *options.range_end);
    new_files.push_back({&rel, std::move(*parsed), !outside});
  }
  // Room for the new files at once (a trial's first listing: all of them) rather than rehashing as
  // the tables fill; geometric, for a live trial's refreshes that add a few at a time.
  if (const size_t wanted = read_index_files.size() + new_files.size();
      wanted > read_index_files.bucket_count() * read_index_files.max_load_factor())
    read_index_files.reserve(std::max(wanted, 2 * read_index_files.size()));
  event_files.reserve_more(new_files.size());
  constexpr size_t kIndexFilesPerBatch = 1024;
  for (size_t begin = 0; begin < new_files.size(); begin += kIndexFilesPerBatch) {
    const std::span<const NewFile> batch(new_files.data() + begin, std::min(kIndexFilesPerBatch, new_files.size() - begin));
    std::vector<std::string> to_read;
    for (const auto& file : batch)
      if (file.read) to_read.push_back(*file.rel);
    auto texts = store->read_many(to_read);
    size_t next_text = 0;
    for (const auto& file : batch) {
      const std::string& rel = *file.rel;
      auto taken = [&] {
        read_index_files.insert(rel);
        auto [newest, inserted] = newest_read_step.try_emplace(file.parsed.worker, file.parsed.global_step);
        if (!inserted) newest->second = std::max(newest->second, file.parsed.global_step);
      };
      if (!file.read) {
        taken();
        continue;
      }
      const std::string full = store->describe(rel);
      auto& text = texts[next_text++];
      if (!text) {
        // A file that vanished between listing and reading was a writer's rename race; retry later.
        if (auto exists = store->exists(rel); exists && !*exists) continue;
        return fail(text.error());
      }
      auto index = format::parse_index_json(*text, full);
      if (!index) return fail(index.error());
      if (auto r = register_index(*index, file.parsed.global_step, file.parsed.worker, full); !r) return r;
      taken();
    }
  }
  // smdebug §5.3 (b): far-behind incomplete steps are declared complete.
  const int64_t window = options.incomplete_step_wait_window;
  if (int64_t(registered_steps) - (last_complete_step + 1) > window)
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
    for (auto it = global_steps.rbegin(); it != global_steps.rend(); ++it)
      if (!it->workers.empty()) {
        last_complete_step = std::max(last_complete_step, it->step);
        break;
      }
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Step logic (caller holds mu)

std::vector<int64_t> Trial::State::steps_locked(Mode mode, bool show_incomplete) const {
  std::vector<int64_t> out;
  if (mode == Mode::Global) {
    out.reserve(registered_steps);
    for (const auto& e : global_steps)
      if (!e.workers.empty() && (show_incomplete || step_complete(e.step))) out.push_back(e.step);
    return out;
  }
  const auto& table = mode_to_global[mode_slot(mode)];
  out.reserve(table.size());
  for (const auto& [s, g] : table)
    if (show_incomplete || step_complete(g)) out.push_back(s);
  return out;
}

std::optional<int64_t> Trial::State::step_at_or_after_locked(int64_t step, Mode mode, bool show_incomplete) const {
  if (mode == Mode::Global) {
    auto it = std::lower_bound(global_steps.begin(), global_steps.end(), step,
                               [](const GlobalStep& e, int64_t s) { return e.step < s; });
    for (; it != global_steps.end(); ++it)
      if (!it->workers.empty() && (show_incomplete || step_complete(it->step))) return it->step;
    return std::nullopt;
  }
  const auto& table = mode_to_global[mode_slot(mode)];
  auto it = std::lower_bound(table.begin(), table.end(), step,
                             [](const std::pair<int64_t, int64_t>& e, int64_t s) { return e.first < s; });
  for (; it != table.end(); ++it)
    if (show_incomplete || step_complete(it->second)) return it->first;
  return std::nullopt;
}

StepState Trial::State::has_passed_step_locked(int64_t step, Mode mode) const {
  // Called for every step a reader waits for: a lookup, not a list of every step.
  if (const auto at = step_at_or_after_locked(step, mode, true)) {
    const int64_t g = to_global(mode, *at).value_or(*at);
    if (*at > step) return last_complete_step >= g ? StepState::Unavailable : StepState::NotYetAvailable;
    const GlobalStep* e = global_entry(g);
    if (e && int64_t(e->workers.size()) >= num_workers) return StepState::Available;
    if (loaded_all_steps || g <= last_complete_step) return StepState::Available;
    return StepState::NotYetAvailable;
  }
  return loaded_all_steps ? StepState::Unavailable : StepState::NotYetAvailable;
}

std::span<const StepEntry> Trial::State::lookup(const TensorRecord& rec, int64_t step, Mode mode) const {
  if (mode == Mode::Global) {
    if (auto found = entries_at(rec.steps[mode_slot(Mode::Global)], step); !found.empty()) return found;
    const auto key = to_mode(step);
    if (!key) return {};
    return entries_at(rec.steps[mode_slot(key->first)], key->second);
  }
  return entries_at(rec.steps[mode_slot(mode)], step);
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
  const TensorRecord* rec = find_tensor(name);
  if (!rec) {
    if (auto r = refresh_locked(); !r) return fail(r.error());
    rec = find_tensor(name);
    if (!rec) return fail(Error::tensor_unavailable(std::string(name)));
  }
  auto pick = [&](std::span<const StepEntry> entries) -> Result<WorkerStep> {
    if (worker) {  // compared by id: a name compared per entry made a step of W workers O(W^2) to read
      if (auto id = worker_ids.find(*worker); id != worker_ids.end())
        for (const auto& e : entries)
          if (e.saved.worker == id->second) return e.saved;
      return fail(Error::invalid_worker(std::string(*worker)));
    }
    return std::min_element(entries.begin(), entries.end(), [&](const StepEntry& a, const StepEntry& b) {
             return worker_names[a.saved.worker] < worker_names[b.saved.worker];
           })->saved;
  };
  // A refresh may add tensors (moving the records): look the tensor up again after one.
  if (auto found = lookup(*rec, step, mode); !found.empty()) return pick(found);
  if (auto r = refresh_locked(); !r) return fail(r.error());
  rec = find_tensor(name);
  switch (has_passed_step_locked(step, mode)) {
    case StepState::Available:
      if (auto found = lookup(*rec, step, mode); !found.empty()) return pick(found);
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
      state->event_files.keep_open_at_least(2 * size_t(state->num_workers));  // this step's and the next's
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
  const format::CollectionConfig* c = nullptr;
  if (q.collection) {
    c = collection(*q.collection);
    if (!c) return std::vector<std::string>{};
  }
  std::lock_guard lock(state_->mu);
  if (auto r = state_->refresh_locked(); !r) return fail(r.error());
  auto& s = *state_;
  std::vector<uint32_t> candidates;  // tensor ids, in name order once sort_by_name has run
  auto sort_by_name = [&](std::vector<uint32_t>& ids) {
    std::sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) { return s.tensors[a].name < s.tensors[b].name; });
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  };
  bool by_step = false;  // candidates are a step's, in registration order: sorted once filtered
  if (!q.step) {
    const uint8_t bit = q.mode == Mode::Global ? 0 : uint8_t(1u << mode_slot(q.mode));
    for (uint32_t id : s.tensors_by_name())
      if (!bit || (s.tensors[id].modes & bit)) candidates.push_back(id);
  } else if (auto g = s.to_global(q.mode, *q.step)) {
    if (const GlobalStep* e = s.global_entry(*g)) {
      candidates = e->tensors;
      by_step = true;
    }
  }
  std::vector<std::string> out;
  if (q.regex.empty() && !c) {
    if (by_step) sort_by_name(candidates);
    out.reserve(candidates.size());
    for (uint32_t id : candidates) out.push_back(s.tensors[id].name);
    return out;
  }
  // Whether a tensor matches a collection or a list of regexes never changes: each is decided once
  // per tensor, with patterns compiled once, and kept (rules ask at every step).
  std::string key = c ? "c\n" + c->name : "r";
  for (const auto& p : q.regex) key.append("\n").append(p);
  auto filter = s.name_filters.find(key);
  if (filter == s.name_filters.end()) {
    State::NameFilter made;
    for (const auto& p : c ? c->include_regex : q.regex) {
      auto re = compile_search_regex(p);
      if (!re) return fail(re.error());
      made.patterns.push_back(std::move(*re));
    }
    filter = s.name_filters.emplace(std::move(key), std::move(made)).first;
  }
  State::NameFilter& f = filter->second;
  if (f.member.size() < s.tensors.size()) f.member.resize(s.tensors.size(), -1);
  // Filtered in place, then (a step's) sorted: the members only, not every tensor of the step.
  std::erase_if(candidates, [&](uint32_t id) {
    int8_t& m = f.member[id];
    if (m < 0) {
      const std::string& name = s.tensors[id].name;
      const bool listed = c && std::find(c->tensor_names.begin(), c->tensor_names.end(), name) != c->tensor_names.end();
      m = listed || std::any_of(f.patterns.begin(), f.patterns.end(),
                                [&](const std::regex& re) { return regex_search_bounded(name, re); });
    }
    return m == 0;
  });
  if (by_step) sort_by_name(candidates);
  out.reserve(candidates.size());
  for (uint32_t id : candidates) out.push_back(s.tensors[id].name);
  return out;
}

bool Trial::has_tensor(std::string_view name) {
  std::lock_guard lock(state_->mu);
  if (state_->find_tensor(name)) return true;
  if (!state_->refresh_locked()) return false;
  return state_->find_tensor(name) != nullptr;
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
  for (Mode m : {Mode::Train, Mode::Eval, Mode::Predict})
    if (!state_->mode_to_global[mode_slot(m)].empty()) out.push_back(m);
  return out;
}

std::optional<std::pair<Mode, int64_t>> Trial::mode_modestep(int64_t global_step) {
  std::lock_guard lock(state_->mu);
  if (auto key = state_->to_mode(global_step)) return key;
  if (!state_->refresh_locked()) return std::nullopt;
  return state_->to_mode(global_step);
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
  // A local trial is watched from its first wait on, and looked at again once watched, so no change
  // between a look and the wait is missed; a trial whose steps are all there is never watched (an
  // inotify instance costs its process ~15 ms at exit: the kernel's close waits for a grace period).
  // An object store has no change notification: it is listed again after a pause that doubles while
  // nothing new appears, up to max_listing_interval, so following an idle job costs few requests.
  TrialWatcher* watcher = nullptr;
  if (state_->store->is_local()) {
    std::lock_guard lock(state_->mu);
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
      if (!watcher && state_->store->is_local()) {
        std::lock_guard lock(state_->mu);
        if (!state_->watcher) state_->watcher = std::make_unique<TrialWatcher>(state_->path);
        watcher = state_->watcher.get();
        continue;  // looked at again, watched
      }
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
  const TensorRecord* rec = s.find_tensor(name);
  if (!rec) return fail(Error::tensor_unavailable(std::string(name)));
  // Each mode's entries are in mode-step order, and so are its global steps (a mode's steps are
  // numbered as they are saved): the answer is built in order, sorted only when modes interleave.
  std::vector<int64_t> out;
  for (Mode m : kAllModes) {
    if (mode != Mode::Global && m != mode) continue;
    const auto& table = rec->steps[mode_slot(m)];
    for (size_t i = 0; i < table.size(); ++i) {
      const int64_t ms = table[i].mode_step;
      if (i > 0 && table[i - 1].mode_step == ms) continue;  // another worker's entry of the step
      auto g = s.to_global(m, ms);
      if (!g) continue;
      if (!show_incomplete_steps && !s.step_complete(*g)) continue;
      out.push_back(mode == Mode::Global ? *g : ms);
    }
  }
  if (!std::is_sorted(out.begin(), out.end())) std::sort(out.begin(), out.end());
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
    if (!g || !s.registered(*g)) {
      if (auto r = s.refresh_locked(); !r) return fail(r.error());
      g = s.to_global(mode, step);
    }
    if (!g || !s.registered(*g)) {
      switch (s.has_passed_step_locked(step, mode)) {
        case StepState::NotYetAvailable: return fail(Error::step_not_yet_available(step, mode));
        default: return fail(Error::step_unavailable(step, mode));
      }
    }
    std::vector<uint32_t> ids = s.global_entry(*g)->event_files;
    std::sort(ids.begin(), ids.end());  // in id order, as the set held them
    for (uint32_t id : ids) files.push_back(s.event_files.relpath(id));
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
  const TensorRecord* rec = state_->find_tensor(name);
  if (!rec) return fail(Error::tensor_unavailable(std::string(name)));
  const auto found = state_->lookup(*rec, step, mode);
  if (found.empty()) return fail(Error::tensor_unavailable_for_step(std::string(name), step, mode, false));
  std::vector<std::string> out;
  out.reserve(found.size());
  for (const auto& e : found) out.push_back(state_->worker_names[e.saved.worker]);
  return out;
}

}  // namespace vigil
