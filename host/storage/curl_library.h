// libcurl, loaded at run time (dlopen) by the first HTTP request (an S3 client, a rule action's
// webhook): a process that reads local trials only (the CLI, the evaluator, the Python module) then
// starts without mapping it and the ~28 libraries it needs (TLS, Kerberos, LDAP, SSH...), which took
// 3.3 of its 5.6 ms start (docs/performance.md, "Process start"). Its headers still give the types
// and constants.
#pragma once

#include <curl/curl.h>

#include "common/error.h"

namespace vigil::storage {

// The functions Vigil calls, each of libcurl's own type.
struct CurlLibrary {
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_perform) easy_perform = nullptr;
  decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&::curl_easy_reset) easy_reset = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  decltype(&::curl_slist_append) slist_append = nullptr;
  decltype(&::curl_slist_free_all) slist_free_all = nullptr;
  decltype(&::curl_url) url = nullptr;
  decltype(&::curl_url_set) url_set = nullptr;
  decltype(&::curl_url_get) url_get = nullptr;
  decltype(&::curl_url_cleanup) url_cleanup = nullptr;
  decltype(&::curl_free) free = nullptr;
};

// libcurl.so.4, loaded and initialised (curl_global_init) once for the process and kept loaded;
// NotSupported naming why when it cannot be (the same error at every call). Thread-safe.
[[nodiscard]] Result<const CurlLibrary*> curl_library();

}  // namespace vigil::storage
