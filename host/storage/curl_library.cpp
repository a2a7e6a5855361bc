#include "storage/curl_library.h"

#include <dlfcn.h>

#include <fmt/format.h>

#include <type_traits>

namespace vigil::storage {

namespace {

constexpr const char* kLibrary = "libcurl.so.4";  // the soname of libcurl 7 and 8

Result<const CurlLibrary*> load() {
  void* handle = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    return fail(Error::not_supported(
        fmt::format("cannot load {} (S3 and webhooks need libcurl): {}", kLibrary, why ? why : "unknown error")));
  }
  static CurlLibrary lib;  // filled once: curl_library() calls this once
  const char* missing = nullptr;
  auto resolve = [&](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(::dlsym(handle, name));
    if (!slot && !missing) missing = name;
  };
  resolve(lib.easy_init, "curl_easy_init");
  resolve(lib.easy_setopt, "curl_easy_setopt");
  resolve(lib.easy_perform, "curl_easy_perform");
  resolve(lib.easy_getinfo, "curl_easy_getinfo");
  resolve(lib.easy_reset, "curl_easy_reset");
  resolve(lib.easy_cleanup, "curl_easy_cleanup");
  resolve(lib.easy_strerror, "curl_easy_strerror");
  resolve(lib.slist_append, "curl_slist_append");
  resolve(lib.slist_free_all, "curl_slist_free_all");
  resolve(lib.url, "curl_url");
  resolve(lib.url_set, "curl_url_set");
  resolve(lib.url_get, "curl_url_get");
  resolve(lib.url_cleanup, "curl_url_cleanup");
  resolve(lib.free, "curl_free");
  decltype(&::curl_global_init) global_init = nullptr;
  resolve(global_init, "curl_global_init");
  if (missing) {
    ::dlclose(handle);
    return fail(Error::not_supported(fmt::format("{} lacks {} (libcurl 7.62 or later is needed)", kLibrary, missing)));
  }
  if (const CURLcode code = global_init(CURL_GLOBAL_DEFAULT); code != CURLE_OK) {
    const std::string why = lib.easy_strerror(code);
    ::dlclose(handle);
    return fail(Error::not_supported(fmt::format("curl_global_init failed: {}", why)));
  }
  return &lib;  // never unloaded: handles and connections may live until the process ends
}

}  // namespace

Result<const CurlLibrary*> curl_library() {
  static const Result<const CurlLibrary*> loaded = load();  // once, thread-safe (a function's static)
  return loaded;
}

}  // namespace vigil::storage
