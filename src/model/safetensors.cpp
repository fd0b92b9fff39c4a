// The safetensors reader and writer. The writer lays tensors out back to back in the order given,
// taking each tensor's bytes only when it reaches it; the reader trusts nothing: every offset, shape
// and length in the header is checked against the file before the file is mapped and a byte of
// data is used.
#include "model/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unordered_set>

#include "core/errors.h"
#include "io/file_io.h"
#include "io/json_text.h"
#include "io/mapped_file.h"

namespace optimus::model {

using core::ConfigError;
using json = nlohmann::ordered_json;  // ordered: the header lists tensors in the order of their data

// The format is little-endian; we copy bytes as they are, which is right on every machine we target.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian machine");

namespace {

constexpr uint64_t kElementBytes = 4;                      // both F32 and I32
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;  // the reference reader's limit too
// Entries (tensors and metadata pairs) a header may hold: GPT-3's 175B model has about 1 200 tensors, our
// training state of a 10 000-block model 240 010; a 100 MiB header of our names holds about a million.
constexpr uint64_t kMaxHeaderEntries = uint64_t{1} << 20;

std::string num(uint64_t v) {
  return std::to_string(v);
}

// A name taken from a file, quoted and escaped so a damaged header cannot break the message's line,
// and cut so a long one cannot make it long (a tensor's name is under 80 characters).
std::string quote_name(const std::string& s) {
  return io::json_excerpt(s, 80);
}

const std::string kUseAnother = "; the file is damaged or not a safetensors file — use another checkpoint";

struct Entry {
  std::string name;
  DType dtype = DType::f32;
  core::Shape shape;
  uint64_t begin = 0, end = 0;
};

bool is_count(const json& v) {
  return v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
}

// One header entry {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, checked on its own.
Entry parse_entry(const std::string& where, const std::string& name, const json& v) {
  const std::string tensor = "tensor " + quote_name(name) + " in " + where;
  if (!v.is_object()) throw ConfigError(tensor + " is described by " + v.type_name() + ", not an object" + kUseAnother);
  Entry e;
  e.name = name;
  if (!v.contains("dtype") || !v["dtype"].is_string()) {
    throw ConfigError(tensor + " has no \"dtype\" string in its header entry" + kUseAnother);
  }
  const std::string dtype = v["dtype"].get<std::string>();
  if (dtype == "F32") {
    e.dtype = DType::f32;
  } else if (dtype == "I32") {
    e.dtype = DType::i32;
  } else {
    throw ConfigError(tensor + " has dtype " + quote_name(dtype) +
                      ", which this reader does not support (only F32 and I32); save the model in float32");
  }
  if (!v.contains("shape") || !v["shape"].is_array() || !std::all_of(v["shape"].begin(), v["shape"].end(), is_count)) {
    throw ConfigError(tensor + " has no \"shape\" list of non-negative integers in its header entry" + kUseAnother);
  }
  for (const json& d : v["shape"]) e.shape.dims.push_back(d.get<int64_t>());
  const json* offsets = v.contains("data_offsets") ? &v["data_offsets"] : nullptr;
  if (offsets == nullptr || !offsets->is_array() || offsets->size() != 2 || !is_count((*offsets)[0]) ||
      !is_count((*offsets)[1])) {
    throw ConfigError(tensor + " has no \"data_offsets\" pair [begin, end] of non-negative integers" + kUseAnother);
  }
  e.begin = (*offsets)[0].get<uint64_t>();
  e.end = (*offsets)[1].get<uint64_t>();
  if (e.end < e.begin) {
    throw ConfigError(tensor + " has data_offsets [" + num(e.begin) + ", " + num(e.end) +
                      "] out of order (the end comes before the begin)" + kUseAnother);
  }
  // numel × 4 must equal the byte range. The dims come from the file, so guard the product against
  // overflow: a count past 2^64 / 4 bytes cannot match any range.
  const uint64_t span = e.end - e.begin;
  const bool has_zero = std::find(e.shape.dims.begin(), e.shape.dims.end(), 0) != e.shape.dims.end();
  uint64_t count = has_zero ? 0 : 1;
  bool countable = true;
  for (int64_t d : e.shape.dims) {
    if (has_zero) break;
    const auto ud = static_cast<uint64_t>(d);
    if (count > std::numeric_limits<uint64_t>::max() / kElementBytes / ud) {
      countable = false;
      break;
    }
    count *= ud;
  }
  if (!countable || count * kElementBytes != span) {
    const std::string needs =
        countable ? num(count) + " elements = " + num(count * kElementBytes) + " bytes" : "too many elements to count";
    throw ConfigError(tensor + " has shape " + e.shape.str() + " (" + needs + " of " + dtype +
                      ") but its data_offsets [" + num(e.begin) + ", " + num(e.end) + "] span " + num(span) + " bytes" +
                      kUseAnother);
  }
  return e;
}

Metadata parse_metadata(const std::string& where, const json& v) {
  Metadata m;
  const std::string bad = "the \"__metadata__\" of " + where + " is not an object of strings" + kUseAnother;
  if (!v.is_object()) throw ConfigError(bad);
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string()) throw ConfigError(bad);
    m[key] = value.get<std::string>();
  }
  return m;
}

}  // namespace

const char* dtype_name(DType dtype) {
  return dtype == DType::f32 ? "F32" : "I32";
}

SafeTensor SafeTensor::from_floats(std::string name, core::Shape shape, const float* data) {
  SafeTensor t{std::move(name), DType::f32, std::move(shape), {}};
  t.bytes.resize(static_cast<size_t>(t.shape.numel()) * sizeof(float));
  if (!t.bytes.empty()) std::memcpy(t.bytes.data(), data, t.bytes.size());
  return t;
}

SafeTensor SafeTensor::from_ints(std::string name, core::Shape shape, const int32_t* data) {
  SafeTensor t{std::move(name), DType::i32, std::move(shape), {}};
  t.bytes.resize(static_cast<size_t>(t.shape.numel()) * sizeof(int32_t));
  if (!t.bytes.empty()) std::memcpy(t.bytes.data(), data, t.bytes.size());
  return t;
}

std::vector<float> SafeTensor::floats() const {
  if (dtype != DType::f32) throw std::logic_error("SafeTensor::floats: tensor " + name + " is " + dtype_name(dtype));
  std::vector<float> v(bytes.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

std::vector<int32_t> SafeTensor::ints() const {
  if (dtype != DType::i32) throw std::logic_error("SafeTensor::ints: tensor " + name + " is " + dtype_name(dtype));
  std::vector<int32_t> v(bytes.size() / sizeof(int32_t));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

namespace {

// The tensor called `name` (a SafeTensor), or nullptr.
const SafeTensor* find_tensor(const std::vector<SafeTensor>& tensors, const std::string& name) {
  const auto it = std::find_if(tensors.begin(), tensors.end(), [&](const SafeTensor& t) { return t.name == name; });
  return it == tensors.end() ? nullptr : &*it;
}

// `it`, the tensor of file `path` called `name` (a SafeTensor or a MappedTensor), checked to be there
// and to have `dtype` and `shape`; a ConfigError naming the tensor, the file, what was expected and
// what was found otherwise.
template <class Tensor>
const Tensor& require_tensor(const Tensor* it, const std::string& path, const std::string& name, DType dtype,
                             const core::Shape& shape) {
  if (it == nullptr) {
    throw ConfigError("checkpoint file " + path + " has no tensor " + name +
                      "; it was saved by another program or for another model — use a matching checkpoint");
  }
  if (it->dtype != dtype || !(it->shape == shape)) {
    throw ConfigError("tensor " + name + " in checkpoint file " + path + " is " + dtype_name(it->dtype) + " " +
                      it->shape.str() + " but " + dtype_name(dtype) + " " + shape.str() +
                      " is expected; the checkpoint was saved for another model — use a matching checkpoint");
  }
  return *it;
}

}  // namespace

const SafeTensor* SafeTensorFile::find(const std::string& name) const {
  return find_tensor(tensors, name);
}

const SafeTensor& SafeTensorFile::require(const std::string& name, DType dtype, const core::Shape& shape) const {
  return require_tensor(find(name), path, name, dtype, shape);
}

void write_safetensors(const std::string& path, const std::vector<TensorHeader>& tensors,
                       const std::function<const void*(size_t k)>& bytes_of, const Metadata& metadata) {
  std::unordered_set<std::string> names;
  for (const TensorHeader& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !names.insert(t.name).second) {
      throw std::invalid_argument("write_safetensors: tensor name '" + t.name + "' is empty, reserved or repeated");
    }
    for (int64_t d : t.shape.dims) {
      if (d < 0) throw std::invalid_argument("write_safetensors: tensor " + t.name + " has shape " + t.shape.str());
    }
  }
  // The header's text, {"__metadata__":{…},"name":{"dtype":…,"shape":…,"data_offsets":[begin,end]},…}, an
  // entry at a time: the bytes of one JSON object dumped whole, without building one (an ordered_json
  // object searches its keys at each insertion, quadratic in the tensors).
  std::string text = "{";
  auto add_entry = [&](const std::string& key, const json& value) {
    if (text.size() > 1) text += ',';
    text += json(key).dump() + ':' + value.dump();
  };
  if (!metadata.empty()) add_entry("__metadata__", metadata);
  uint64_t offset = 0;
  for (const TensorHeader& t : tensors) {
    const uint64_t end = offset + static_cast<uint64_t>(t.shape.numel()) * kElementBytes;
    add_entry(t.name,
              {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape.dims}, {"data_offsets", json::array({offset, end})}});
    offset = end;
  }
  text += '}';
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned, as the reference pads
  const uint64_t n = text.size();
  unsigned char length[8];
  std::memcpy(length, &n, 8);  // little-endian u64
  io::write_atomically(path, [&](std::FILE* f) {
    io::write_bytes(f, length, 8, path);
    io::write_bytes(f, text.data(), text.size(), path);
    for (size_t k = 0; k < tensors.size(); ++k) {
      io::write_bytes(f, bytes_of(k), static_cast<size_t>(tensors[k].shape.numel()) * kElementBytes, path);
    }
  });
}

void write_safetensors(const std::string& path, const std::vector<SafeTensor>& tensors, const Metadata& metadata) {
  std::vector<TensorHeader> headers;
  for (const SafeTensor& t : tensors) {
    const bool valid_shape = std::all_of(t.shape.dims.begin(), t.shape.dims.end(), [](int64_t d) { return d >= 0; });
    if (valid_shape && t.bytes.size() != static_cast<size_t>(t.shape.numel()) * kElementBytes) {
      throw std::invalid_argument("write_safetensors: tensor " + t.name + " of shape " + t.shape.str() + " holds " +
                                  std::to_string(t.bytes.size()) + " bytes");
    }
    headers.push_back({t.name, t.dtype, t.shape});
  }
  write_safetensors(
      path, headers, [&](size_t k) { return static_cast<const void*>(tensors[k].bytes.data()); }, metadata);
}

namespace {

// The data ranges of `entries`, sorted here, must tile [0, data_size) exactly: no overlap, no gap,
// nothing missing, nothing after the last tensor. Returns the bytes they cover.
uint64_t require_tiled(const std::string& where, std::vector<Entry>& entries, uint64_t data_size) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t covered = 0;
  for (size_t k = 0; k < entries.size(); ++k) {
    const Entry& e = entries[k];
    const std::string before = k == 0 ? "the start of the data" : "tensor " + quote_name(entries[k - 1].name);
    if (e.begin < covered) {
      throw ConfigError(where + " is damaged: the data of tensor " + quote_name(e.name) + " (bytes " + num(e.begin) +
                        " to " + num(e.end) + ") overlaps " + before + " (which ends at byte " + num(covered) +
                        ") — use another checkpoint");
    }
    if (e.begin > covered) {
      throw ConfigError(where + " is damaged: it leaves a gap of " + num(e.begin - covered) + " bytes between " +
                        before + " and tensor " + quote_name(e.name) + " — use another checkpoint");
    }
    covered = e.end;
  }
  if (covered > data_size) {
    throw ConfigError(where + " is truncated: its header promises " + num(covered) +
                      " bytes of tensor data but the file has " + num(data_size) +
                      "; it was probably cut short while copying — use another checkpoint");
  }
  if (covered < data_size) {
    throw ConfigError(where + " has " + num(data_size - covered) +
                      " bytes of trailing data after its last tensor (its header accounts for " + num(covered) +
                      " bytes of tensor data); the file is damaged — use another checkpoint");
  }

  return covered;
}

}  // namespace

namespace {

// What a file's header says, every promise checked against the file: its tensors in the order of
// their data (offsets from `data_begin`), its metadata, and the file's size.
struct Header {
  std::vector<Entry> entries;
  Metadata metadata;
  uint64_t data_begin = 0, size = 0;
};

// The header's events as they are read (io::parse_json_events): each value under a top-level key is
// built alone (io::JsonBuilder), checked as a tensor's entry or as the metadata when it ends, and
// dropped, so the header is never one document and reading it is linear in its size. The first fault
// is kept until the whole text has parsed, so a file whose JSON is broken anywhere is refused for
// that, as when the header was parsed whole before its entries were checked.
class HeaderEvents : public nlohmann::json_sax<json> {
 public:
  explicit HeaderEvents(const std::string& where) : where_(where) {}

  /// The entries and metadata read, once the text has parsed; the first fault found otherwise.
  void finish(Header& out) {
    if (root_type_ != "object") {
      throw ConfigError(where_ + " has a header that is a JSON " + root_type_ + ", not an object" + kUseAnother);
    }
    if (fault_) std::rethrow_exception(fault_);
    out.entries = std::move(entries_);
    out.metadata = std::move(metadata_);
  }

  bool null() override {
    return on("null", 0, [](io::JsonBuilder& b) { b.null(); });
  }
  bool boolean(bool v) override {
    return on("boolean", 0, [&](io::JsonBuilder& b) { b.boolean(v); });
  }
  bool number_integer(number_integer_t v) override {
    return on("number", 0, [&](io::JsonBuilder& b) { b.number_integer(v); });
  }
  bool number_unsigned(number_unsigned_t v) override {
    return on("number", 0, [&](io::JsonBuilder& b) { b.number_unsigned(v); });
  }
  bool number_float(number_float_t v, const string_t& s) override {
    return on("number", 0, [&](io::JsonBuilder& b) { b.number_float(v, s); });
  }
  bool string(string_t& v) override {
    return on("string", 0, [&](io::JsonBuilder& b) { b.string(v); });
  }
  bool binary(binary_t& v) override {
    return on("binary", 0, [&](io::JsonBuilder& b) { b.binary(v); });
  }
  bool start_object(std::size_t n) override {
    return on("object", +1, [&](io::JsonBuilder& b) { b.start_object(n); });
  }
  bool end_object() override {
    return on("object", -1, [](io::JsonBuilder& b) { b.end_object(); });
  }
  bool start_array(std::size_t n) override {
    return on("array", +1, [&](io::JsonBuilder& b) { b.start_array(n); });
  }
  bool end_array() override {
    return on("array", -1, [](io::JsonBuilder& b) { b.end_array(); });
  }
  bool key(string_t& k) override {
    const bool tensor = depth_ == 1 && k != "__metadata__", pair = depth_ == 2 && key_ == "__metadata__";
    if (tensor || pair) {
      if (++entries_seen_ > kMaxHeaderEntries) {
        throw ConfigError(where_ + " has more than " + num(kMaxHeaderEntries) +
                          " entries in its header, far more than any model has tensors" + kUseAnother);
      }
    }
    if (depth_ == 1) {
      key_ = k;
    } else if (building()) {
      value_.key(k);
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  // Whether the events now belong to a top-level value being built.
  bool building() const { return root_type_ == "object" && depth_ >= 1 && !fault_; }

  // One event of kind `type` that opens (+1), closes (-1) or is (0) a value: the root's kind is
  // noted, a top-level value's events go to the builder, and a finished value is checked.
  template <class Event>
  bool on(const char* type, int opens, Event&& event) {
    if (opens < 0) --depth_;
    if (depth_ == 0 && opens >= 0) {
      root_type_ = type;
    } else if (building()) {
      event(value_);
      if (value_.complete()) check(value_.take());
    }
    if (opens > 0) ++depth_;
    return true;
  }

  void check(const json& value) {
    try {
      if (key_ == "__metadata__") {
        metadata_ = parse_metadata(where_, value);
      } else {
        entries_.push_back(parse_entry(where_, key_, value));
      }
    } catch (const ConfigError&) {
      fault_ = std::current_exception();
    }
  }

  const std::string& where_;
  std::string root_type_;      // "object" for a header
  int depth_ = 0;              // arrays and objects open
  std::string key_;            // the top-level key whose value is being read
  uint64_t entries_seen_ = 0;  // tensors and metadata pairs
  io::JsonBuilder value_;
  std::vector<Entry> entries_;
  Metadata metadata_;
  std::exception_ptr fault_;  // the first entry (or metadata) that failed its check
};

// Reads and checks the 8-byte length and the header; reads none of the data.
Header read_header(const std::string& path) {
  const std::string where = "checkpoint file " + path;
  const uintmax_t size = io::regular_file_size(path, "checkpoint file");
  if (size < 8) {
    throw ConfigError(where + " is " + num(size) +
                      " bytes long, too short to hold even the 8-byte header length; it is empty or was cut short — "
                      "use another checkpoint");
  }
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  if (!in.read(reinterpret_cast<char*>(&n), 8)) throw ConfigError("cannot read " + where + "; check its permissions");
  const uint64_t after_length = size - 8;
  if (n > after_length) {
    throw ConfigError(where + " is shorter than its header: the header length says " + num(n) + " bytes but only " +
                      num(after_length) +
                      " follow; it was cut short or is not a safetensors file — use another "
                      "checkpoint");
  }
  if (n > kMaxHeaderBytes) {
    throw ConfigError(where + " has a header of " + num(n) + " bytes, more than the " + num(kMaxHeaderBytes) +
                      " any checkpoint needs; it is not a safetensors file — use another checkpoint");
  }
  std::string header_text(n, '\0');
  if (!in.read(header_text.data(), static_cast<std::streamsize>(n))) {
    throw ConfigError("cannot read " + where + "; check the file system");
  }
  HeaderEvents events(where);
  io::parse_json_events(header_text, where + "'s header",
                        "the file is damaged or not a safetensors file — use another checkpoint", events);
  Header out;
  events.finish(out);
  require_tiled(where, out.entries, after_length - n);
  out.data_begin = 8 + n;
  out.size = size;
  return out;
}

}  // namespace

MappedSafeTensors::MappedSafeTensors(const std::string& path) : path_(path) {
  Header header = read_header(path);
  file_ = io::MappedFile(path, header.size, "checkpoint file");
  metadata_ = std::move(header.metadata);
  for (Entry& e : header.entries) {
    position_.emplace(e.name, tensors_.size());
    tensors_.push_back(
        {std::move(e.name), e.dtype, std::move(e.shape), file_.data() + header.data_begin + e.begin, e.end - e.begin});
  }
}

const MappedTensor* MappedSafeTensors::find(const std::string& name) const {
  const auto it = position_.find(name);
  return it == position_.end() ? nullptr : &tensors_[it->second];
}

const MappedTensor& MappedSafeTensors::require(const std::string& name, DType dtype, const core::Shape& shape) const {
  return require_tensor(find(name), path_, name, dtype, shape);
}

void MappedSafeTensors::release(const MappedTensor& t) const {
  file_.release(static_cast<size_t>(t.data - file_.data()), static_cast<size_t>(t.bytes));
}

const float* floats_of(const MappedTensor& t, std::vector<float>& copy) {
  if (t.dtype != DType::f32) throw std::logic_error("floats_of: tensor " + t.name + " is " + dtype_name(t.dtype));
  if (reinterpret_cast<uintptr_t>(t.data) % alignof(float) == 0) return reinterpret_cast<const float*>(t.data);
  copy.resize(static_cast<size_t>(t.bytes / sizeof(float)));
  if (t.bytes > 0) std::memcpy(copy.data(), t.data, static_cast<size_t>(t.bytes));
  return copy.data();
}

SafeTensorFile read_safetensors(const std::string& path) {
  const MappedSafeTensors mapped(path);
  SafeTensorFile out;
  out.path = path;
  out.metadata = mapped.metadata();
  for (const MappedTensor& t : mapped.tensors()) {
    out.tensors.push_back({t.name, t.dtype, t.shape, std::vector<unsigned char>(t.data, t.data + t.bytes)});
  }
  return out;
}

}  // namespace optimus::model
