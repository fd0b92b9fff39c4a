// JSON text as this project reads it (config.json, the safetensors header, the trainer's --config)
// and writes its result lines (metrics.jsonl, the benchmark's lines). Read: parsed with limits, so a hostile or broken
// file is one sentence, never a crash — nesting deeper than kMaxJsonDepth is refused before parsing (printing or
// freeing such a value recurses), and a key given twice in an object is refused (JSON leaves it undefined; nlohmann
// keeps the last one). Reading is linear in the text: nlohmann's own parser searches an ordered object's keys at
// each insertion, quadratic in its keys, so the text goes through its stream of events (SAX) instead.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace optimus::io {

inline constexpr int kMaxJsonDepth = 32;

/// Parses `text`; throws core::ConfigError "<where> is not valid JSON (…); <fix>", "<where> nests
/// deeper than …" or "<where> has the key "k" twice".
nlohmann::ordered_json parse_json(const std::string& text, const std::string& where, const std::string& fix = "fix it");

/// The same checks and sentences, the text's values handed to `events` as they are read (nlohmann's
/// SAX interface) instead of made into a document: a reader that wants a value at a time (the
/// safetensors header, one tensor's entry at a time) takes it from here. `events` sees no key twice
/// in one object; its parse_error is never called (a fault is the ConfigError above).
void parse_json_events(const std::string& text, const std::string& where, const std::string& fix,
                       nlohmann::json_sax<nlohmann::ordered_json>& events);

/// Makes one JSON value from its events, in time linear in its size: an object's keys are appended
/// in the order read, unsearched (parse_json_events has refused a key given twice).
class JsonBuilder : public nlohmann::json_sax<nlohmann::ordered_json> {
 public:
  using json = nlohmann::ordered_json;
  /// True once a whole value has been given; take() hands it over and starts afresh.
  bool complete() const { return complete_; }
  json take();

  bool null() override;
  bool boolean(bool v) override;
  bool number_integer(number_integer_t v) override;
  bool number_unsigned(number_unsigned_t v) override;
  bool number_float(number_float_t v, const string_t&) override;
  bool string(string_t& v) override;
  bool binary(binary_t& v) override;
  bool start_object(std::size_t) override;
  bool key(string_t& k) override;
  bool end_object() override;
  bool start_array(std::size_t) override;
  bool end_array() override;
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  json* add(json v);  // v into the innermost open container (or as the value), where it now lies

  json value_;
  std::vector<json*> open_;  // the containers being filled, innermost last
  std::string key_;          // the key of the next value of the innermost open object
  bool complete_ = false;
};

/// `v` on one line as the project's result lines are written: a space after every ':' and ',' that
/// separates (none inside strings), e.g. {"step": 4, "train_loss": 5.25}.
std::string one_line(const nlohmann::ordered_json& v);

/// A value for a message: its JSON text, cut to `max_chars` with "..." (a 50 MB value stays short).
std::string json_excerpt(const nlohmann::ordered_json& v, size_t max_chars = 40);

}  // namespace optimus::io
