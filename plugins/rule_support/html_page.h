// The body of a report page (CreateXgboostReport's, ProfilerReport's): sections in order, each with
// an id its table of contents links to, and every text escaped.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "svg.h"

namespace vigil::builtin {

class HtmlPage {
 public:
  void open_section(const std::string& id, const std::string& title) {
    toc_ += fmt::format("<li><a href=\"#{}\">{}</a></li>\n", id, svg::html_escape(title));
    body_ += fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n", id, svg::html_escape(title));
  }
  void close_section() { body_ += "</section>\n"; }
  // Markup as it is (charts, already escaped fragments).
  void add(const std::string& html) { body_ += html; }
  void heading(const std::string& text) { body_ += "<h3>" + svg::html_escape(text) + "</h3>\n"; }
  void paragraph(const std::string& text) { body_ += "<p>" + svg::html_escape(text) + "</p>\n"; }
  // A note in place of absent content: <p class="css_class">label: why</p>.
  void note(const std::string& css_class, const std::string& label, const std::string& why) {
    body_ += "<p class=\"" + css_class + "\">" + svg::html_escape(label) + ": " + svg::html_escape(why) + "</p>\n";
  }
  void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
             const std::string& css_class = "data") {
    body_ += "<table class=\"" + css_class + "\">\n<thead><tr>";
    for (const auto& h : header) body_ += "<th>" + svg::html_escape(h) + "</th>";
    body_ += "</tr></thead>\n<tbody>\n";
    for (const auto& row : rows) {
      body_ += "<tr>";
      for (const auto& cell : row) body_ += "<td>" + svg::html_escape(cell) + "</td>";
      body_ += "</tr>\n";
    }
    body_ += "</tbody>\n</table>\n";
  }
  const std::string& toc() const { return toc_; }
  const std::string& body() const { return body_; }

 private:
  std::string toc_, body_;
};

}  // namespace vigil::builtin
