// Checkpoint I/O: safetensors round trips bitwise, atomic writes leave nothing
// half-written, every kind of damaged file is one ConfigError naming the file, config.json follows
// GPT-2's keys, and load_model accepts what transformers writes but nothing that does not fit.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/errors.h"
#include "model/checkpoint.h"
#include "io/file_io.h"
#include "io/json_text.h"
#include "model/params.h"
#include "model/safetensors.h"

using namespace optimus;
using model::DType;
using model::SafeTensor;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

// A fresh directory under the system's temp directory, removed with everything in it at the end.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("optimus_test_checkpoint_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

std::string read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_raw(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A safetensors file by hand: the 8-byte little-endian length, the header, the data.
std::string raw_safetensors(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

// The message of the core::ConfigError that `f` throws (any other outcome fails the test); checks
// that it is one line and contains each of `words`.
void require_config_error(const std::function<void()>& f, const std::vector<std::string>& words) {
  std::string message;
  try {
    f();
  } catch (const core::ConfigError& e) {
    message = e.what();
  }
  INFO("message: " << message);
  REQUIRE(!message.empty());
  CHECK(message.find('\n') == std::string::npos);
  for (const std::string& w : words) CHECK_THAT(message, Contains(w));
}

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// A small model whose every element is distinct, so a misplaced tensor cannot go unnoticed.
model::GPTConfig small_config() {
  model::GPTConfig c;
  c.n_layer = 2, c.n_embd = 8, c.n_head = 2, c.n_positions = 4, c.vocab_size = 10;
  return c;
}

model::CanonicalParams distinct_params(const model::GPTConfig& c) {
  model::CanonicalParams params;
  for (const model::ParamInfo& info : model::canonical_parameters(c)) {
    std::vector<float> v(static_cast<size_t>(info.shape.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(info.index) + 0.001f * static_cast<float>(i);
    params.push_back(std::move(v));
  }
  return params;
}

std::vector<SafeTensor> canonical_tensors(const model::GPTConfig& c, const model::CanonicalParams& params) {
  std::vector<SafeTensor> tensors;
  const auto infos = model::canonical_parameters(c);
  for (size_t k = 0; k < infos.size(); ++k) {
    tensors.push_back(SafeTensor::from_floats(infos[k].name, infos[k].shape, params[k].data()));
  }
  return tensors;
}

// A checkpoint directory with a hand-made tensor list, to test what load_model accepts.
void write_checkpoint(const std::string& dir, const model::GPTConfig& c, const std::vector<SafeTensor>& tensors) {
  fs::create_directories(dir);
  write_raw((fs::path(dir) / "config.json").string(), model::config_to_json(c));
  model::write_safetensors((fs::path(dir) / "model.safetensors").string(), tensors);
}

}  // namespace

// ---- safetensors ---------------------------------------------------------------------------------

TEST_CASE("safetensors: F32 and I32 tensors and metadata round-trip bitwise", "[checkpoint]") {
  TempDir dir;
  const std::vector<float> f = {0.0f,
                                -0.0f,
                                std::numeric_limits<float>::infinity(),
                                -1.5f,
                                from_bits(0x7fc12345u) /* NaN with a payload */,
                                1e-45f /* denormal */,
                                3.25f,
                                1e30f};
  const std::vector<int32_t> i = {std::numeric_limits<int32_t>::min(), -1, 0, 7, 42,
                                  std::numeric_limits<int32_t>::max()};
  const int32_t step = 1234;
  const model::Metadata meta = {{"step", "12"}, {"note", "h\u00e9llo \"quoted\"\nsecond line"}};
  const std::string path = dir / "t.safetensors";
  model::write_safetensors(
      path,
      {SafeTensor::from_floats("weights", {2, 4}, f.data()), SafeTensor::from_ints("tokens", {3, 2}, i.data()),
       SafeTensor::from_ints("step", core::Shape{}, &step), SafeTensor::from_floats("empty", {0, 5}, nullptr)},
      meta);

  const model::SafeTensorFile file = model::read_safetensors(path);
  REQUIRE(file.tensors.size() == 4);
  CHECK(file.path == path);
  CHECK(file.metadata == meta);
  CHECK(file.tensors[0].name == "weights");  // in the order of their data, which is the order written
  CHECK(file.tensors[1].name == "tokens");
  CHECK(file.tensors[2].name == "step");
  CHECK(file.tensors[3].name == "empty");
  CHECK(file.tensors[0].dtype == DType::f32);
  CHECK(file.tensors[1].dtype == DType::i32);
  CHECK(file.tensors[0].shape == core::Shape{2, 4});
  CHECK(file.tensors[1].shape == core::Shape{3, 2});
  CHECK(file.tensors[2].shape == core::Shape{});
  CHECK(file.tensors[3].shape == core::Shape{0, 5});
  const std::vector<float> f_back = file.tensors[0].floats();
  REQUIRE(f_back.size() == f.size());
  CHECK(std::memcmp(f_back.data(), f.data(), f.size() * sizeof(float)) == 0);
  CHECK(file.tensors[1].ints() == i);
  CHECK(file.tensors[2].ints() == std::vector<int32_t>{step});
  CHECK(file.tensors[3].floats().empty());
  CHECK(file.find("tokens") == &file.tensors[1]);
  CHECK(file.find("nothing") == nullptr);
  CHECK_THROWS_AS(file.tensors[1].floats(), std::logic_error);
}

TEST_CASE("safetensors: the header is JSON padded with spaces to 8 bytes, then the data in order", "[checkpoint]") {
  TempDir dir;
  const std::vector<float> a = {1.0f, 2.0f, 3.0f};
  const int32_t b = -5;
  const std::string path = dir / "t.safetensors";
  model::write_safetensors(path, {SafeTensor::from_floats("a", {3}, a.data()), SafeTensor::from_ints("b", {1}, &b)});

  const std::string raw = read_raw(path);
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  CHECK(n % 8 == 0);
  REQUIRE(raw.size() == 8 + n + 16);
  const std::string header = raw.substr(8, n);
  CHECK(header.front() == '{');
  CHECK(header.find_last_not_of(' ') == header.find_last_of('}'));
  const auto j = nlohmann::json::parse(header);
  CHECK(j["a"]["dtype"] == "F32");
  CHECK(j["a"]["shape"] == nlohmann::json::array({3}));
  CHECK(j["a"]["data_offsets"] == nlohmann::json::array({0, 12}));
  CHECK(j["b"]["dtype"] == "I32");
  CHECK(j["b"]["data_offsets"] == nlohmann::json::array({12, 16}));
  CHECK_FALSE(j.contains("__metadata__"));  // only written when there is some
  CHECK(std::memcmp(raw.data() + 8 + n, a.data(), 12) == 0);
  CHECK(std::memcmp(raw.data() + 8 + n + 12, &b, 4) == 0);
}

TEST_CASE("safetensors: the writer's bytes are compact JSON, the metadata first, then each tensor in order",
          "[checkpoint]") {
  // Written out by hand from the format (and what this writer has always written, byte for byte):
  // no spaces, keys escaped as JSON with UTF-8 kept, the metadata sorted by key, each entry's keys
  // dtype, shape, data_offsets, then spaces to a multiple of 8 bytes.
  TempDir dir;
  const std::vector<float> a = {1.0f, 2.0f, 3.0f};
  const int32_t b = -5;
  const std::string path = dir / "t.safetensors";
  model::write_safetensors(path,
                           {SafeTensor::from_floats("a", {3}, a.data()), SafeTensor::from_ints("b", core::Shape{}, &b),
                            SafeTensor::from_floats("c\u00e9", {0, 5}, nullptr)},
                           {{"step", "12"}, {"note", "say \"hi\""}});
  const std::string expected_header = R"({"__metadata__":{"note":"say \"hi\"","step":"12"},)"
                                      R"("a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                                      R"("b":{"dtype":"I32","shape":[],"data_offsets":[12,16]},)"
                                      "\"c\u00e9\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[16,16]}}";
  const std::string padding((8 - expected_header.size() % 8) % 8, ' ');
  std::string data(16, '\0');
  std::memcpy(data.data(), a.data(), 12);
  std::memcpy(data.data() + 12, &b, 4);
  CHECK(read_raw(path) == raw_safetensors(expected_header + padding, data));
}

TEST_CASE("safetensors: an atomic write leaves no temporary file behind", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir / "t.safetensors";
  const float x = 1.0f, y = 2.0f;
  model::write_safetensors(path, {SafeTensor::from_floats("x", {1}, &x)});
  model::write_safetensors(path, {SafeTensor::from_floats("y", {1}, &y)});  // replaces the old file
  CHECK(dir.entries() == std::vector<std::string>{"t.safetensors"});
  CHECK(model::read_safetensors(path).tensors.at(0).name == "y");
}

TEST_CASE("safetensors: a failed write throws and leaves the old file as it was", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir / "old.safetensors";
  const float x = 1.0f;
  model::write_safetensors(path, {SafeTensor::from_floats("x", {1}, &x)});
  const std::string old_bytes = read_raw(path);

  SECTION("the content writer fails midway") {
    CHECK_THROWS_AS(io::write_atomically(path,
                                            [](std::FILE* f) {
                                              std::fputs("partial", f);
                                              throw std::runtime_error("disk on fire");
                                            }),
                    std::runtime_error);
  }
  SECTION("the tensors are invalid (bytes do not match the shape)") {
    SafeTensor bad = SafeTensor::from_floats("x", {1}, &x);
    bad.shape = {2};
    CHECK_THROWS_AS(model::write_safetensors(path, {bad}), std::invalid_argument);
  }
  SECTION("the directory cannot hold the file (its parent is a regular file)") {
    // As root, chmod does not stop a write; a path under a regular file fails for everyone.
    const std::string under_file = dir / "old.safetensors/inner.safetensors";
    require_config_error([&] { model::write_safetensors(under_file, {SafeTensor::from_floats("x", {1}, &x)}); },
                         {"inner.safetensors", "cannot create"});
  }
  SECTION("the rename fails (the target is a directory)") {
    const std::string target = dir / "target";
    fs::create_directories(fs::path(target) / "keep");
    require_config_error([&] { model::write_safetensors(target, {SafeTensor::from_floats("x", {1}, &x)}); },
                         {"target", "cannot rename"});
    CHECK(fs::is_directory(fs::path(target) / "keep"));
    fs::remove_all(target);
  }
  CHECK(read_raw(path) == old_bytes);
  CHECK(dir.entries() == std::vector<std::string>{"old.safetensors"});  // no temporary file left
}

TEST_CASE("safetensors: a damaged file is a ConfigError naming the file and the fault", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir / "bad.safetensors";
  const std::vector<float> v = {1, 2, 3, 4, 5, 6};
  const std::string good_path = dir / "good.safetensors";
  model::write_safetensors(good_path, {SafeTensor::from_floats("a", {2, 3}, v.data())}, {{"k", "v"}});
  const std::string good = read_raw(good_path);
  const std::string data12(12, '\0');
  auto expect = [&](const std::string& bytes, const std::vector<std::string>& words) {
    write_raw(path, bytes);
    std::vector<std::string> all = words;
    all.push_back(path);
    require_config_error([&] { model::read_safetensors(path); }, all);
  };

  SECTION("missing") {
    require_config_error([&] { model::read_safetensors(dir / "none.safetensors"); },
                         {"none.safetensors", "does not exist"});
  }
  SECTION("a directory") {
    fs::create_directories(fs::path(dir / "d.safetensors"));
    require_config_error([&] { model::read_safetensors(dir / "d.safetensors"); },
                         {"d.safetensors", "not a regular file"});
  }
  SECTION("shorter than 8 bytes") {
    expect("abc", {"too short"});
  }
  SECTION("shorter than its header") {
    expect(raw_safetensors("{}", "").substr(0, 8) + "{", {"shorter than its header"});
  }
  SECTION("header bytes flipped: not JSON") {
    std::string broken = good;
    broken[8 + 3] = '\x01';
    broken[8 + 4] = '#';
    expect(broken, {"not valid JSON"});
  }
  SECTION("header not an object") {
    expect(raw_safetensors("[1, 2, 3]       ", ""), {"not an object"});
  }
  SECTION("an entry without data_offsets") {
    expect(raw_safetensors(R"({"a": {"dtype": "F32", "shape": [1]}})", "xxxx"), {"\"a\"", "data_offsets"});
  }
  SECTION("an entry without a shape list of non-negative integers") {
    expect(raw_safetensors(R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", "xxxx"),
           {"\"a\"", "shape"});
  }
  SECTION("an unknown dtype") {
    expect(raw_safetensors(R"({"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}})", "xxxx"),
           {"BF16", "does not support"});
  }
  SECTION("a shape whose elements do not fill its byte range") {
    expect(raw_safetensors(R"({"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})", data12 + "12345678"),
           {"shape [2, 3] (6 elements = 24 bytes of F32)", "span 20 bytes"});
  }
  SECTION("a shape too large to count") {
    expect(raw_safetensors(R"({"a": {"dtype": "I32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})", ""),
           {"shape [4294967296, 4294967296]", "span 0 bytes"});
  }
  SECTION("offsets out of order") {
    expect(raw_safetensors(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", data12),
           {"out of order"});
  }
  SECTION("overlapping offsets") {
    expect(raw_safetensors(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                           R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                           data12),
           {"overlaps", "\"b\""});
  }
  SECTION("a gap between tensors") {
    expect(raw_safetensors(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                           R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                           data12),
           {"gap of 4 bytes", "\"b\""});
  }
  SECTION("data not starting at offset 0") {
    expect(raw_safetensors(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", std::string(8, '\0')),
           {"gap of 4 bytes", "start of the data"});
  }
  SECTION("offsets past the end of the file") {
    expect(raw_safetensors(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", data12),
           {"truncated", "promises 16 bytes", "has 12"});
  }
  SECTION("a truncated copy of a good file") {
    expect(good.substr(0, good.size() - 5), {"truncated", "promises 24 bytes", "has 19"});
  }
  SECTION("trailing garbage after a good file") {
    expect(good + "garbage", {"7 bytes of trailing data"});
  }
  SECTION("metadata that is not an object of strings") {
    expect(raw_safetensors(R"({"__metadata__": {"step": 3}})", ""), {"__metadata__"});
  }
  SECTION("a key twice in one object") {
    expect(raw_safetensors(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                           R"( "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                           std::string(8, '\0')),
           {"has the key \"a\" twice in one object"});
  }
  SECTION("a number past a double") {
    expect(raw_safetensors(R"({"a": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}})", "xxxx"),
           {"holds a number out of range"});
  }
  SECTION("a bad entry before broken JSON: the JSON is what is named, as when it was parsed whole first") {
    expect(raw_safetensors(R"({"a": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 4]}, "b": [)", "xxxx"),
           {"not valid JSON"});
  }
}

TEST_CASE("safetensors: a long shape or name from a file is cut in the message", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir / "long.safetensors";
  std::string dims = "1";
  for (int k = 1; k < 1000000; ++k) dims += ",1";
  write_raw(path, raw_safetensors(R"({"a": {"dtype": "F32", "shape": [)" + dims + R"(], "data_offsets": [0, 8]}})",
                                  std::string(8, '\0')));
  std::string message;
  try {
    model::read_safetensors(path);
  } catch (const core::ConfigError& e) {
    message = e.what();
  }
  CHECK_THAT(message, Contains("has shape [1, 1, 1, … (1000000 dims)] (1 elements = 4 bytes of F32)"));
  CHECK(message.size() < 400);

  const std::string name(1000000, 'x');
  write_raw(path,
            raw_safetensors(R"({")" + name + R"(": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 4]}})", "xxxx"));
  message.clear();
  try {
    model::read_safetensors(path);
  } catch (const core::ConfigError& e) {
    message = e.what();
  }
  CHECK_THAT(message, Contains("tensor \"" + std::string(79, 'x') + "... in"));  // the quote and 79 of its letters
  CHECK_THAT(message, Contains("has dtype \"BF16\""));
  CHECK(message.size() < 400);
}

TEST_CASE("safetensors: require checks a tensor's presence, dtype and shape", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir / "state.safetensors";
  const int32_t step = 9;
  model::write_safetensors(path, {SafeTensor::from_ints("step", core::Shape{}, &step)});
  const model::SafeTensorFile file = model::read_safetensors(path);
  CHECK(file.require("step", DType::i32, core::Shape{}).ints() == std::vector<int32_t>{9});
  require_config_error([&] { file.require("cursor", DType::i32, core::Shape{}); }, {path, "no tensor cursor"});
  require_config_error([&] { file.require("step", DType::f32, core::Shape{}); }, {path, "I32 []", "F32 []"});
  require_config_error([&] { file.require("step", DType::i32, core::Shape{1}); }, {path, "I32 [1]"});
}

// Run by its own ctest entry with a timeout (tests/CMakeLists.txt): the header was one ordered JSON
// document, whose keys are searched at each insertion, so reading 100 000 entries took 27 s here and
// a million would take about 45 minutes; writing was quadratic the same way.
TEST_CASE("safetensors: a million header entries are written and read in linear time, past 2^20 refused",
          "[.][checkpoint][slow][many-entries]") {
  TempDir dir;
  const std::string path = dir / "many.safetensors";
  const auto none = [](size_t) -> const void* { return nullptr; };  // every tensor is empty
  std::vector<model::TensorHeader> tensors;
  model::Metadata metadata;
  for (int k = 0; k < 500000; ++k) {
    tensors.push_back({"empty." + std::to_string(k), DType::f32, {0}});
    metadata["key." + std::to_string(k)] = "";
  }
  model::write_safetensors(path, tensors, none, metadata);
  {
    const model::MappedSafeTensors file(path);
    CHECK(file.tensors().size() == 500000);
    CHECK(file.metadata().size() == 500000);
    REQUIRE(file.find("empty.499999") != nullptr);
    CHECK(file.find("empty.499999")->shape == core::Shape{0});
    CHECK(file.find("empty.500000") == nullptr);
  }
  for (int k = 500000; k < (1 << 20) - 500000 + 1; ++k) metadata["key." + std::to_string(k)] = "";
  model::write_safetensors(path, tensors, none, metadata);  // 2^20 + 1 entries, one past the cap
  require_config_error([&] { model::MappedSafeTensors file(path); },
                       {path, "has more than 1048576 entries in its header"});
}

// As above, for parse_json (config.json, --config, hardware profiles, up to 1 MiB each): nlohmann's
// own parser of ordered objects took 19 s of CPU here for these 150 000 keys (2.2 MB).
TEST_CASE("json: an object of 150 000 keys is parsed in linear time, in order, a repeated key refused",
          "[.][checkpoint][slow][many-keys]") {
  std::string text = "{";
  for (int k = 0; k < 150000; ++k) text += (k ? ",\"" : "\"") + std::to_string(k) + "\":" + std::to_string(k);
  const nlohmann::ordered_json v = io::parse_json(text + "}", "the test's JSON");
  REQUIRE(v.size() == 150000);
  CHECK(v.begin().key() == "0");
  CHECK(std::prev(v.end()).key() == "149999");
  CHECK(v["77777"] == 77777);
  require_config_error([&] { io::parse_json(text + ",\"77777\":0}", "the test's JSON"); },
                       {"the test's JSON has the key \"77777\" twice in one object"});
}

// ---- config.json ---------------------------------------------------------------------------------

TEST_CASE("config.json: a GPTConfig round-trips through GPT-2's keys", "[checkpoint]") {
  model::GPTConfig c;
  c.n_layer = 3, c.n_embd = 48, c.n_head = 6, c.n_positions = 32, c.vocab_size = 50;
  c.dropout = 0.1f, c.layer_norm_epsilon = 1e-6f;
  const std::string text = model::config_to_json(c);
  const auto j = nlohmann::json::parse(text);
  CHECK(j["architectures"] == nlohmann::json::array({"GPT2LMHeadModel"}));
  CHECK(j["model_type"] == "gpt2");
  CHECK(j["n_embd"] == 48);
  CHECK(j["n_layer"] == 3);
  CHECK(j["n_head"] == 6);
  CHECK(j["n_positions"] == 32);
  CHECK(j["n_ctx"] == 32);
  CHECK(j["vocab_size"] == 50);
  CHECK(j["activation_function"] == "gelu_new");
  CHECK(j["tie_word_embeddings"] == true);
  CHECK(j["bos_token_id"] == 49);
  CHECK(j["eos_token_id"] == 49);
  CHECK(j["torch_dtype"] == "float32");
  CHECK(j["attn_pdrop"] == 0.1);  // written as 0.1, not as the float's 0.10000000149011612
  CHECK(j["resid_pdrop"] == 0.1);
  CHECK(j["embd_pdrop"] == 0.1);
  CHECK(j["layer_norm_epsilon"] == 1e-6);

  const model::GPTConfig back = model::config_from_json(text, "config.json");
  CHECK(back.n_layer == c.n_layer);
  CHECK(back.n_embd == c.n_embd);
  CHECK(back.n_head == c.n_head);
  CHECK(back.n_positions == c.n_positions);
  CHECK(back.vocab_size == c.vocab_size);
  CHECK(back.dropout == c.dropout);
  CHECK(back.layer_norm_epsilon == c.layer_norm_epsilon);
}

TEST_CASE("config.json: the published GPT-2 config is read, its extra keys ignored", "[checkpoint]") {
  const std::string hf = R"({"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
    "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256,
    "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024,
    "n_embd": 768, "n_head": 12, "n_inner": null, "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1,
    "reorder_and_upcast_attn": false, "scale_attn_by_inverse_layer_idx": false, "scale_attn_weights": true,
    "summary_activation": null, "summary_type": "cls_index", "task_specific_params": {"text-generation":
    {"do_sample": true, "max_length": 50}}, "vocab_size": 50257})";
  const model::GPTConfig c = model::config_from_json(hf, "gpt2/config.json");
  CHECK(c.n_layer == 12);
  CHECK(c.n_embd == 768);
  CHECK(c.n_head == 12);
  CHECK(c.n_positions == 1024);
  CHECK(c.vocab_size == 50257);
  CHECK(c.dropout == 0.1f);
  CHECK(c.layer_norm_epsilon == 1e-5f);
}

TEST_CASE("config.json: a config we cannot run is one clear sentence", "[checkpoint]") {
  const std::string where = "runs/x/config.json";
  const nlohmann::json good = nlohmann::json::parse(model::config_to_json(small_config()));
  auto expect = [&](nlohmann::json j, const std::vector<std::string>& words) {
    std::vector<std::string> all = words;
    all.push_back(where);
    require_config_error([&] { model::config_from_json(j.dump(), where); }, all);
  };
  SECTION("not JSON") {
    require_config_error([&] { model::config_from_json("{\"n_embd\": ", where); }, {where, "not valid JSON"});
  }
  SECTION("a missing key") {
    nlohmann::json j = good;
    j.erase("n_head");
    expect(j, {"no \"n_head\""});
  }
  SECTION("a key of the wrong type") {
    nlohmann::json j = good;
    j["n_embd"] = "256";
    expect(j, {"\"n_embd\": \"256\"", "not an integer"});
  }
  SECTION("no model_type") {
    nlohmann::json j = good;
    j.erase("model_type");
    expect(j, {"model_type", "gpt2"});
  }
  SECTION("another model_type") {
    nlohmann::json j = good;
    j["model_type"] = "llama";
    expect(j, {"\"llama\"", "only GPT-2"});
  }
  SECTION("another activation") {
    nlohmann::json j = good;
    j["activation_function"] = "relu";
    expect(j, {"\"relu\"", "gelu_new"});
  }
  SECTION("untied embeddings") {
    nlohmann::json j = good;
    j["tie_word_embeddings"] = false;
    expect(j, {"untied LM head is not supported"});
  }
  SECTION("another MLP width") {
    nlohmann::json j = good;
    j["n_inner"] = 100;
    expect(j, {"n_inner", "100"});
  }
  SECTION("attention scores not scaled by 1/sqrt(head size)") {
    nlohmann::json j = good;
    j["scale_attn_weights"] = false;
    expect(j, {"\"scale_attn_weights\": false", "1/sqrt(head size)"});
  }
  SECTION("attention scores scaled by the layer index") {
    nlohmann::json j = good;
    j["scale_attn_by_inverse_layer_idx"] = true;
    expect(j, {"\"scale_attn_by_inverse_layer_idx\": true", "layer index"});
  }
  SECTION("n_embd not divisible by n_head: validate()'s message") {
    nlohmann::json j = good;
    j["n_embd"] = 10;
    j["n_head"] = 4;
    expect(j, {"does not describe a valid model", "the embedding width 10 is not divisible by the number of heads 4"});
  }
  SECTION("a missing file") {
    require_config_error([&] { model::read_config("/nonexistent/optimus/config.json"); },
                         {"/nonexistent/optimus/config.json", "does not exist"});
  }
}

// ---- whole checkpoints ---------------------------------------------------------------------------

TEST_CASE("checkpoint: save_model then load_model gives back the config, every tensor and the metadata",
          "[checkpoint]") {
  TempDir dir;
  model::GPTConfig c = small_config();
  c.dropout = 0.25f;
  const model::CanonicalParams params = distinct_params(c);
  const std::string ckpt = dir / "ckpt";  // created by save_model
  model::save_model(ckpt, c, params, {{"step", "3"}});
  CHECK(fs::exists(fs::path(ckpt) / "config.json"));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(ckpt)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"config.json", "model.safetensors"});  // no temporary files

  const model::SafeTensorFile file = model::read_safetensors(ckpt + "/model.safetensors");
  const auto infos = model::canonical_parameters(c);
  REQUIRE(file.tensors.size() == infos.size());
  for (size_t k = 0; k < infos.size(); ++k) CHECK(file.tensors[k].name == infos[k].name);  // canonical order

  const model::LoadedModel m = model::load_model(ckpt);
  CHECK(m.config.n_layer == c.n_layer);
  CHECK(m.config.n_embd == c.n_embd);
  CHECK(m.config.n_head == c.n_head);
  CHECK(m.config.n_positions == c.n_positions);
  CHECK(m.config.vocab_size == c.vocab_size);
  CHECK(m.config.dropout == c.dropout);
  CHECK(m.config.layer_norm_epsilon == c.layer_norm_epsilon);
  CHECK(m.params == params);
  CHECK(m.metadata.at("step") == "3");
  CHECK(m.metadata.at("format") == "pt");  // transformers needs it

  model::GPTConfig no_dropout = c;
  no_dropout.dropout = 0.0f;  // dropout is a training setting: a run may change it
  CHECK(model::load_model_matching(ckpt, no_dropout) == params);
}

TEST_CASE("checkpoint: load_model accepts what transformers writes", "[checkpoint]") {
  TempDir dir;
  const model::GPTConfig c = small_config();
  const model::CanonicalParams params = distinct_params(c);
  std::vector<SafeTensor> tensors = canonical_tensors(c, params);
  const std::string ckpt = dir / "ckpt";

  SECTION("a tied lm_head.weight equal to wte") {
    tensors.push_back(SafeTensor::from_floats("lm_head.weight", {10, 8}, params[0].data()));
  }
  SECTION("names without the transformer. prefix (a GPT2Model)") {
    for (SafeTensor& t : tensors) t.name = t.name.substr(std::strlen("transformer."));
  }
  SECTION("old transformers' causal-mask buffers") {
    const std::vector<float> mask(16, 1.0f);
    for (int l = 0; l < c.n_layer; ++l) {
      const std::string h = "transformer.h." + std::to_string(l) + ".attn.";
      tensors.push_back(SafeTensor::from_floats(h + "bias", {1, 1, 4, 4}, mask.data()));
      tensors.push_back(SafeTensor::from_floats(h + "masked_bias", core::Shape{}, mask.data()));
    }
  }
  write_checkpoint(ckpt, c, tensors);
  CHECK(model::load_model(ckpt).params == params);
}

TEST_CASE("checkpoint: load_model rejects a checkpoint that does not fit its config", "[checkpoint]") {
  TempDir dir;
  const model::GPTConfig c = small_config();
  const model::CanonicalParams params = distinct_params(c);
  std::vector<SafeTensor> tensors = canonical_tensors(c, params);
  const std::string ckpt = dir / "ckpt";
  const std::string weights = ckpt + "/model.safetensors";
  auto expect = [&](const std::vector<std::string>& words) {
    write_checkpoint(ckpt, c, tensors);
    std::vector<std::string> all = words;
    all.push_back(weights);
    require_config_error([&] { model::load_model(ckpt); }, all);
  };
  auto find = [&](const std::string& name) {
    return std::find_if(tensors.begin(), tensors.end(), [&](const SafeTensor& t) { return t.name == name; });
  };

  SECTION("a missing tensor") {
    tensors.erase(find("transformer.h.1.mlp.c_fc.bias"));
    expect({"missing", "transformer.h.1.mlp.c_fc.bias [32]"});
  }
  SECTION("a wrong shape") {
    const std::vector<float> w(8 * 16, 0.5f);
    *find("transformer.h.0.attn.c_attn.weight") =
        SafeTensor::from_floats("transformer.h.0.attn.c_attn.weight", {8, 16}, w.data());
    expect({"transformer.h.0.attn.c_attn.weight", "has shape [8, 16]", "expects [8, 24]"});
  }
  SECTION("an I32 tensor") {
    const std::vector<int32_t> w(8, 1);
    *find("transformer.ln_f.bias") = SafeTensor::from_ints("transformer.ln_f.bias", {8}, w.data());
    expect({"transformer.ln_f.bias", "I32", "F32 is expected"});
  }
  SECTION("an extra unknown tensor") {
    const std::vector<float> w(8, 1.0f);
    tensors.push_back(SafeTensor::from_floats("transformer.h.0.attn.rotary.weight", {8}, w.data()));
    expect({"unexpected tensor", "transformer.h.0.attn.rotary.weight", "[8]"});
  }
  SECTION("an untied LM head") {
    std::vector<float> head = params[0];
    head[3] += 1.0f;
    tensors.push_back(SafeTensor::from_floats("lm_head.weight", {10, 8}, head.data()));
    expect({"lm_head.weight", "untied LM head is not supported"});
  }
  SECTION("a tensor both with and without the prefix") {
    tensors.push_back(SafeTensor::from_floats("wpe.weight", {4, 8}, params[1].data()));
    expect({"transformer.wpe.weight twice"});
  }
  SECTION("no model.safetensors") {
    write_checkpoint(ckpt, c, tensors);
    fs::remove(weights);
    require_config_error([&] { model::load_model(ckpt); }, {weights, "does not exist"});
  }
  SECTION("no directory") {
    require_config_error([&] { model::load_model(dir / "nowhere"); }, {"nowhere", "does not exist"});
  }
}

TEST_CASE("checkpoint: load_model_matching names the key that differs and both values", "[checkpoint]") {
  TempDir dir;
  const model::GPTConfig c = small_config();
  const std::string ckpt = dir / "ckpt";
  model::save_model(ckpt, c, distinct_params(c));
  model::GPTConfig expected = c;
  SECTION("n_embd") {
    expected.n_embd = 12;
    require_config_error([&] { model::load_model_matching(ckpt, expected); }, {ckpt, "n_embd = 8", "expects 12"});
  }
  SECTION("layer_norm_epsilon") {
    expected.layer_norm_epsilon = 1e-6f;
    require_config_error([&] { model::load_model_matching(ckpt, expected); },
                         {"layer_norm_epsilon = 1e-05", "expects 1e-06"});
  }
}

TEST_CASE("checkpoint: save_model refuses tensors that are not the model's canonical ones", "[checkpoint]") {
  TempDir dir;
  const model::GPTConfig c = small_config();
  model::CanonicalParams params = distinct_params(c);
  params.pop_back();
  CHECK_THROWS_AS(model::save_model(dir / "a", c, params), std::invalid_argument);
  params = distinct_params(c);
  params[2].push_back(0.0f);
  CHECK_THROWS_AS(model::save_model(dir / "b", c, params), std::invalid_argument);
  CHECK_FALSE(fs::exists(fs::path(dir / "b") / "model.safetensors"));
}
