#include "storage/s3_xml.h"

#include <fmt/format.h>

#include <charconv>

namespace vigil::storage {
namespace {

std::string xml_unescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const size_t end = text[i] == '&' ? text.find(';', i) : std::string_view::npos;
    if (end == std::string_view::npos) {
      out += text[i];
      continue;
    }
    const std::string_view entity = text.substr(i + 1, end - i - 1);
    if (entity == "amp") out += '&';
    else if (entity == "lt") out += '<';
    else if (entity == "gt") out += '>';
    else if (entity == "quot") out += '"';
    else if (entity == "apos") out += '\'';
    else if (entity.starts_with('#')) {
      const bool hex = entity.size() > 1 && (entity[1] == 'x' || entity[1] == 'X');
      const std::string_view digits = entity.substr(hex ? 2 : 1);
      uint32_t cp = 0;
      const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      if (ec != std::errc() || p != digits.data() + digits.size() || cp > 0x10FFFF) {
        out += text[i];
        continue;
      }
      // UTF-8, as the keys are.
      if (cp < 0x80) out += char(cp);
      else if (cp < 0x800) out += {char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
      else if (cp < 0x10000) out += {char(0xE0 | (cp >> 12)), char(0x80 | ((cp >> 6) & 0x3F)), char(0x80 | (cp & 0x3F))};
      else
        out += {char(0xF0 | (cp >> 18)), char(0x80 | ((cp >> 12) & 0x3F)), char(0x80 | ((cp >> 6) & 0x3F)),
                char(0x80 | (cp & 0x3F))};
    } else {
      out += text[i];
      continue;
    }
    i = end;
  }
  return out;
}

}  // namespace

std::optional<std::string> xml_text(std::string_view xml, std::string_view tag) {
  const std::string open = fmt::format("<{}>", tag), close = fmt::format("</{}>", tag);
  const size_t start = xml.find(open);
  if (start == std::string_view::npos) return std::nullopt;
  const size_t end = xml.find(close, start + open.size());
  if (end == std::string_view::npos) return std::nullopt;
  return xml_unescape(xml.substr(start + open.size(), end - start - open.size()));
}

Result<S3ListingPage> parse_list_objects_v2(std::string_view xml) {
  if (xml.find("<ListBucketResult") == std::string_view::npos)
    return fail(Error::invalid_argument("the answer is not a ListObjectsV2 result"));
  S3ListingPage page;
  for (size_t at = xml.find("<Contents>"); at != std::string_view::npos; at = xml.find("<Contents>", at + 1)) {
    const size_t end = xml.find("</Contents>", at);
    if (end == std::string_view::npos) return fail(Error::invalid_argument("the listing is cut short"));
    const std::string_view entry = xml.substr(at, end - at);
    auto key = xml_text(entry, "Key");
    const std::string size_text = xml_text(entry, "Size").value_or("");
    uint64_t size = 0;
    const auto [p, ec] = std::from_chars(size_text.data(), size_text.data() + size_text.size(), size);
    if (!key || size_text.empty() || ec != std::errc() || p != size_text.data() + size_text.size())
      return fail(Error::invalid_argument("a listed object has no Key or Size"));
    page.objects.push_back({std::move(*key), size, xml_text(entry, "ETag").value_or("")});
  }
  page.truncated = xml_text(xml, "IsTruncated").value_or("false") == "true";
  page.next_token = xml_text(xml, "NextContinuationToken").value_or("");
  return page;
}

}  // namespace vigil::storage
