// Writes ProfilerReport's page for the test sample (profiler_report_sample.h) to the file given, and
// prints the number of charts it must show, for tests/support/check_html_in_browser.py.
#include <cstdio>
#include <fstream>

#include "profiler_report_sample.h"
#include "report_html.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT.html\n", argv[0]);
    return 2;
  }
  std::ofstream out(argv[1], std::ios::binary);
  out << vigil::profiler_rules::render_profiler_report_html(vigil::test::sample_report_data());
  out.close();
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  std::printf("%d\n", vigil::test::kSampleCharts);
  return 0;
}
