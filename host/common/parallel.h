// Work items run side by side on a bounded number of threads: the calls that wait on an object
// store's round trips (index files, a step's ranged reads) made several at once.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <system_error>
#include <thread>
#include <vector>

#include "common/os.h"

namespace vigil {

// Calls fn(i) for every i in [0, count), on at most `max_threads` threads (the caller's among them),
// each taking the next item when it is done with one; returns when every call has returned. fn must
// not throw. When no thread can be started, the caller does all the work.
template <class Fn>
void for_each_in_parallel(size_t count, size_t max_threads, Fn&& fn) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < count;) fn(i);
  };
  const size_t threads = std::min(count, std::max<size_t>(max_threads, 1));
  std::vector<std::jthread> helpers;
  helpers.reserve(threads > 0 ? threads - 1 : 0);
  for (size_t t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back([&] {
        os::block_sigpipe_on_this_thread();
        work();
      });
    } catch (const std::system_error&) {
      break;  // no more threads now: those started and the caller share the work
    }
  }
  work();
}  // the helpers are joined here

}  // namespace vigil
