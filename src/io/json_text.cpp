// Parsing JSON with a depth limit and unique keys, from its stream of events (io/json_text.h).
#include "io/json_text.h"

#include <unordered_set>
#include <vector>

#include "core/errors.h"

namespace optimus::io {

using json = nlohmann::ordered_json;

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

// `s` cut to `max_chars` with "...".
std::string cut(const std::string& s, size_t max_chars) {
  return s.size() > max_chars ? s.substr(0, max_chars) + "..." : s;
}

// The events of a text, passed on to `inner` once checked: a key twice in one object, a parse error
// or a number out of range is the ConfigError parse_json promises. The keys of each open object are
// kept in a hash set, so checking them is linear in the text.
class CheckedEvents : public nlohmann::json_sax<json> {
 public:
  CheckedEvents(nlohmann::json_sax<json>& inner, const std::string& where, const std::string& fix)
      : inner_(inner), where_(where), fix_(fix) {}

  bool null() override { return inner_.null(); }
  bool boolean(bool v) override { return inner_.boolean(v); }
  bool number_integer(number_integer_t v) override { return inner_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) override { return inner_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) override { return inner_.number_float(v, s); }
  bool string(string_t& v) override { return inner_.string(v); }
  bool binary(binary_t& v) override { return inner_.binary(v); }
  bool start_object(std::size_t n) override {
    keys_.emplace_back();
    return inner_.start_object(n);
  }
  bool key(string_t& k) override {
    if (!keys_.back().insert(k).second) {
      throw core::ConfigError(where_ + " has the key " + json_excerpt(k) + " twice in one object; " + fix_);
    }
    return inner_.key(k);
  }
  bool end_object() override {
    keys_.pop_back();
    return inner_.end_object();
  }
  bool start_array(std::size_t n) override { return inner_.start_array(n); }
  bool end_array() override { return inner_.end_array(); }
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& e) override {
    if (e.id / 100 == 4) {  // nlohmann's out_of_range: a number past a double
      throw core::ConfigError(where_ + " holds a number out of range (" + cut(e.what(), 100) + "); " + fix_);
    }
    throw core::ConfigError(where_ + " is not valid JSON (parse error near byte " + std::to_string(byte) + "); " +
                            fix_);
  }

 private:
  nlohmann::json_sax<json>& inner_;
  const std::string& where_;
  const std::string& fix_;
  std::vector<std::unordered_set<std::string>> keys_;  // the keys seen in each open object, innermost last
};

}  // namespace

void parse_json_events(const std::string& text, const std::string& where, const std::string& fix,
                       nlohmann::json_sax<json>& events) {
  if (nesting_depth(text) > kMaxJsonDepth) {
    throw core::ConfigError(where + " nests arrays or objects deeper than " + std::to_string(kMaxJsonDepth) +
                            " levels; " + fix);
  }
  CheckedEvents checked(events, where, fix);
  json::sax_parse(text, &checked);
}

nlohmann::ordered_json parse_json(const std::string& text, const std::string& where, const std::string& fix) {
  JsonBuilder builder;
  parse_json_events(text, where, fix, builder);
  return builder.take();
}

// ---- JsonBuilder ----------------------------------------------------------------------------------

json JsonBuilder::take() {
  json out = std::move(value_);
  value_ = json();
  open_.clear();
  complete_ = false;
  return out;
}

json* JsonBuilder::add(json v) {
  if (open_.empty()) {
    value_ = std::move(v);
    complete_ = !value_.is_structured();
    return &value_;
  }
  json& parent = *open_.back();  // its storage stays put while a child is open: no sibling is added
  if (parent.is_array()) {
    auto& array = parent.get_ref<json::array_t&>();
    array.push_back(std::move(v));
    return &array.back();
  }
  auto& object = parent.get_ref<json::object_t&>();  // a vector of pairs, in the order read
  object.emplace_back(std::move(key_), std::move(v));
  return &object.back().second;
}

bool JsonBuilder::null() {
  add(nullptr);
  return true;
}
bool JsonBuilder::boolean(bool v) {
  add(v);
  return true;
}
bool JsonBuilder::number_integer(number_integer_t v) {
  add(v);
  return true;
}
bool JsonBuilder::number_unsigned(number_unsigned_t v) {
  add(v);
  return true;
}
bool JsonBuilder::number_float(number_float_t v, const string_t&) {
  add(v);
  return true;
}
bool JsonBuilder::string(string_t& v) {
  add(std::move(v));
  return true;
}
bool JsonBuilder::binary(binary_t& v) {
  add(json::binary(std::move(v)));
  return true;
}
bool JsonBuilder::start_object(std::size_t) {
  open_.push_back(add(json::object()));
  return true;
}
bool JsonBuilder::key(string_t& k) {
  key_ = std::move(k);
  return true;
}
bool JsonBuilder::end_object() {
  open_.pop_back();
  complete_ = open_.empty();
  return true;
}
bool JsonBuilder::start_array(std::size_t) {
  open_.push_back(add(json::array()));
  return true;
}
bool JsonBuilder::end_array() {
  open_.pop_back();
  complete_ = open_.empty();
  return true;
}

// ---- writing and excerpts ------------------------------------------------------------------------

std::string json_excerpt(const nlohmann::ordered_json& v, size_t max_chars) {
  return cut(v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace), max_chars);
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
