// Parsing JSON with a depth limit and unique keys (io/json_text.h).
#include "io/json_text.h"

#include <set>
#include <vector>

#include "core/errors.h"

namespace optimus::io {

namespace {

// The deepest nesting of arrays and objects in `text`, counting brackets outside strings.
int nesting_depth(const std::string& text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t k = 0; k < text.size(); ++k) {
    const char c = text[k];
    if (in_string) {
      if (c == '\\')
        ++k;  // skip the escaped character
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

nlohmann::ordered_json parse_json(const std::string& text, const std::string& where, const std::string& fix) {
  using json = nlohmann::ordered_json;
  if (nesting_depth(text) > kMaxJsonDepth) {
    throw core::ConfigError(where + " nests arrays or objects deeper than " + std::to_string(kMaxJsonDepth) +
                            " levels; " + fix);
  }
  std::vector<std::set<std::string>> keys(kMaxJsonDepth + 2);  // the keys seen in the open object at each depth
  const json::parser_callback_t unique_keys = [&](int depth, json::parse_event_t event, json& parsed) {
    const auto d = static_cast<size_t>(depth);
    if (event == json::parse_event_t::object_start && d + 1 < keys.size()) keys[d + 1].clear();
    if (event == json::parse_event_t::key && d < keys.size() && !keys[d].insert(parsed.get<std::string>()).second) {
      throw core::ConfigError(where + " has the key " + json_excerpt(parsed) + " twice in one object; " + fix);
    }
    return true;
  };
  try {
    return json::parse(text, unique_keys);
  } catch (const json::parse_error& e) {
    throw core::ConfigError(where + " is not valid JSON (parse error near byte " + std::to_string(e.byte) + "); " +
                            fix);
  } catch (const json::out_of_range& e) {
    throw core::ConfigError(where + " holds a number out of range (" + std::string(e.what()) + "); " + fix);
  }
}

std::string json_excerpt(const nlohmann::ordered_json& v, size_t max_chars) {
  std::string s = v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return s.size() > max_chars ? s.substr(0, max_chars) + "..." : s;
}

std::string one_line(const nlohmann::ordered_json& v) {
  const std::string compact = v.dump();
  std::string out;
  bool in_string = false, escaped = false;
  for (char ch : compact) {
    out += ch;
    if (in_string) {  // a backslash escapes the next character, a quote among them
      if (escaped) {
        escaped = false;
      } else if (ch == '\\') {
        escaped = true;
      } else if (ch == '"') {
        in_string = false;
      }
      continue;
    }
    if (ch == '"') in_string = true;
    if (ch == ':' || ch == ',') out += ' ';
  }
  return out;
}

}  // namespace optimus::io
