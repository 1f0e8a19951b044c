// The GGUF parser behind GgufFile::open and from_bytes. Every length and count
// is checked against the bytes left before use, so hostile input ends in a
// ModelLoadError, never an out-of-bounds read or a huge allocation.
#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "engine/gguf/gguf_file.h"

namespace tc::gguf {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader assumes a little-endian host");

// Smallest encodings, used to bound counts by the bytes left: a metadata entry
// is key length + key + type + a 1-byte value; a tensor info is name length +
// name + n_dims + one dimension + dtype + offset.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

// Bytes taken at least by one array element of `type`.
uint64_t min_value_bytes(ValueType type) {
  switch (type) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::BOOL:
      return 1;
    case ValueType::UINT16:
    case ValueType::INT16:
      return 2;
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::FLOAT32:
      return 4;
    case ValueType::STRING:
      return 8;
    case ValueType::ARRAY:
      return 4 + 8;
    case ValueType::UINT64:
    case ValueType::INT64:
    case ValueType::FLOAT64:
      return 8;
  }
  return 1;
}

// ggml's names for type ids Thermocline does not support, for clearer errors.
std::string_view ggml_type_name(uint32_t id) {
  static constexpr std::string_view kNames[] = {
      "f32",     "f16",     "q4_0",    "q4_1",    "q4_2",     "q4_3",    "q5_0",
      "q5_1",    "q8_0",    "q8_1",    "q2_K",    "q3_K",     "q4_K",    "q5_K",
      "q6_K",    "q8_K",    "iq2_xxs", "iq2_xs",  "iq3_xxs",  "iq1_s",   "iq4_nl",
      "iq3_s",   "iq2_s",   "iq4_xs",  "i8",      "i16",      "i32",     "i64",
      "f64",     "iq1_m",   "bf16",    "q4_0_4_4", "q4_0_4_8", "q4_0_8_8", "tq1_0",
      "tq2_0"};
  return id < std::size(kNames) ? kNames[id] : std::string_view{};
}

std::string supported_dtypes() {
  std::string out;
  for (uint32_t id = 0; id < 64; ++id) {
    if (auto t = kernels::dtype_from_id(id)) {
      if (!out.empty()) out += ", ";
      out += kernels::dtype_name(*t);
    }
  }
  return out;
}

std::string shape_of(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(ne[i]);
  }
  return s + "]";
}

enum class ItemKind { kNone, kKey, kTensor };

// A cursor over the file's bytes that throws ModelLoadError about the item
// being read (a key, a tensor, or the framing when neither is known yet).
class Reader {
 public:
  Reader(const std::byte* base, uint64_t size, const std::string& file)
      : base_(base), size_(size), file_(file) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  void set_item(ItemKind kind, std::string name) {
    kind_ = kind;
    item_ = std::move(name);
  }

  [[noreturn]] void fail(const std::string& problem) const {
    switch (kind_) {
      case ItemKind::kKey: throw ModelLoadError::for_key(file_, item_, problem);
      case ItemKind::kTensor: throw ModelLoadError::for_tensor(file_, item_, problem);
      case ItemKind::kNone: break;
    }
    throw ModelLoadError(file_, "", problem);
  }

  void need(uint64_t n, std::string_view what) const {
    if (n > remaining()) {
      fail("truncated file: " + std::string(what) + " at offset " + std::to_string(pos_) +
           " needs " + std::to_string(n) + " bytes, but the file ends at " +
           std::to_string(size_));
    }
  }

  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(std::string_view what) {
    const uint64_t at = pos_;
    const auto len = read<uint64_t>(std::string(what) + " length");
    if (len > remaining()) {
      fail(std::string(what) + " length " + std::to_string(len) + " at offset " +
           std::to_string(at) + " runs past the end of the file (" + std::to_string(remaining()) +
           " bytes left; file size " + std::to_string(size_) + ")");
    }
    std::string s(reinterpret_cast<const char*>(base_ + pos_), static_cast<size_t>(len));
    pos_ += len;
    return s;
  }

  ValueType read_type(std::string_view what) {
    const auto id = read<uint32_t>(what);
    if (id >= kValueTypeCount) {
      fail("unknown " + std::string(what) + " " + std::to_string(id) + " at offset " +
           std::to_string(pos_ - 4) + "; expected 0..12 (u8 .. f64)");
    }
    return static_cast<ValueType>(id);
  }

  // A value of `type`; `depth` is the number of arrays enclosing it.
  Value read_value(ValueType type, int depth) {
    switch (type) {
      case ValueType::UINT8: return Value(read<uint8_t>("u8 value"));
      case ValueType::INT8: return Value(read<int8_t>("i8 value"));
      case ValueType::UINT16: return Value(read<uint16_t>("u16 value"));
      case ValueType::INT16: return Value(read<int16_t>("i16 value"));
      case ValueType::UINT32: return Value(read<uint32_t>("u32 value"));
      case ValueType::INT32: return Value(read<int32_t>("i32 value"));
      case ValueType::FLOAT32: return Value(read<float>("f32 value"));
      case ValueType::UINT64: return Value(read<uint64_t>("u64 value"));
      case ValueType::INT64: return Value(read<int64_t>("i64 value"));
      case ValueType::FLOAT64: return Value(read<double>("f64 value"));
      case ValueType::BOOL: {
        const auto b = read<uint8_t>("bool value");
        if (b > 1) {
          fail("bool value at offset " + std::to_string(pos_ - 1) + " is " + std::to_string(b) +
               "; expected 0 or 1");
        }
        return Value(b == 1);
      }
      case ValueType::STRING: return Value(read_string("string"));
      case ValueType::ARRAY: return read_array(depth + 1);
    }
    fail("unknown value type");
  }

 private:
  Value read_array(int depth) {
    if (depth > kMaxArrayDepth) {
      fail("arrays nested " + std::to_string(depth) + " deep at offset " + std::to_string(pos_) +
           "; expected at most " + std::to_string(kMaxArrayDepth) + " levels of nesting");
    }
    const ValueType elem_type = read_type("array element type");
    const uint64_t at = pos_;
    const auto count = read<uint64_t>("array length");
    const uint64_t min_bytes = min_value_bytes(elem_type);
    if (count > remaining() / min_bytes) {
      fail("array of " + std::to_string(count) + " " + std::string(value_type_name(elem_type)) +
           " at offset " + std::to_string(at) + " runs past the end of the file (each element " +
           "takes at least " + std::to_string(min_bytes) + " bytes; " +
           std::to_string(remaining()) + " bytes left)");
    }
    Value::Array items;
    items.reserve(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i) items.push_back(read_value(elem_type, depth));
    return Value::array(elem_type, std::move(items));
  }

  const std::byte* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& file_;
  ItemKind kind_ = ItemKind::kNone;
  std::string item_;
};

void check_magic(Reader& r, const std::byte* base, Magic& magic) {
  r.need(4, "the magic");
  const std::string_view m(reinterpret_cast<const char*>(base), 4);
  if (m == "GGUF") {
    magic = Magic::GGUF;
  } else if (m == "PWRI") {
    magic = Magic::PWRI;
  } else if (m == "lmgg" || m == "fmgg" || m == "tjgg") {
    r.fail("this is a legacy GGML/GGJT model file (magic '" + std::string(m) +
           "'); expected a GGUF file (magic 'GGUF'): convert it with llama.cpp first");
  } else {
    r.fail("bad magic '" + printable(m) + "'; expected 'GGUF' (or 'PWRI' for PowerInfer)");
  }
  r.read<uint32_t>("the magic");
}

void check_version(Reader& r, uint32_t version) {
  if (version == 2 || version == 3) return;
  if (version == 1) {
    r.fail("GGUF version 1 is not supported (it has 32-bit counts); expected version 2 or 3, "
           "re-convert the model with a current llama.cpp");
  }
  const uint32_t swapped = __builtin_bswap32(version);
  if (swapped >= 1 && swapped <= 3) {
    r.fail("version field reads " + std::to_string(version) + ", which is version " +
           std::to_string(swapped) +
           " byte-swapped: this is a big-endian GGUF file; only little-endian files are "
           "supported (expected version 2 or 3)");
  }
  r.fail("unsupported GGUF version " + std::to_string(version) + "; expected 2 or 3");
}

uint64_t read_alignment(const Value& v, Reader& r) {
  uint64_t a = 0;
  if (!v.is_integer() || !v.to_u64(a) || v.type() == ValueType::INT8 ||
      v.type() == ValueType::INT16 || v.type() == ValueType::INT32 ||
      v.type() == ValueType::INT64) {
    r.fail("has type " + std::string(value_type_name(v.type())) +
           ", expected an unsigned integer (u32)");
  }
  if (a > std::numeric_limits<uint32_t>::max()) {
    r.fail("alignment " + std::to_string(a) + " does not fit u32; expected a power of two");
  }
  if (a == 0 || !std::has_single_bit(a)) {
    r.fail("alignment " + std::to_string(a) + " is not a power of two; expected a non-zero " +
           "power of two (default " + std::to_string(kDefaultAlignment) + ")");
  }
  return a;
}

}  // namespace

void GgufFile::parse(UnsupportedDtypes unsupported) {
  Reader r(base_, size_, path_);
  if (size_ == 0) r.fail("file is empty (0 bytes); expected a GGUF file starting with 'GGUF'");
  check_magic(r, base_, magic_);
  version_ = r.read<uint32_t>("the version");
  check_version(r, version_);

  const auto n_tensors = r.read<uint64_t>("the tensor count");
  const auto n_kv = r.read<uint64_t>("the metadata entry count");
  if (n_kv > r.remaining() / kMinKvBytes) {
    r.fail("metadata entry count " + std::to_string(n_kv) + " is impossible: the " +
           std::to_string(r.remaining()) + " bytes left hold at most " +
           std::to_string(r.remaining() / kMinKvBytes) + " entries");
  }
  if (n_tensors > (r.remaining() - n_kv * kMinKvBytes) / kMinTensorInfoBytes) {
    r.fail("tensor count " + std::to_string(n_tensors) + " is impossible: the " +
           std::to_string(r.remaining()) + " bytes left hold at most " +
           std::to_string((r.remaining() - n_kv * kMinKvBytes) / kMinTensorInfoBytes) +
           " tensor infos after " + std::to_string(n_kv) + " metadata entries");
  }

  metadata_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    r.set_item(ItemKind::kNone, "");
    std::string key = r.read_string("key of metadata entry " + std::to_string(i));
    r.set_item(ItemKind::kKey, key);
    if (auto it = metadata_index_.find(key); it != metadata_index_.end()) {
      r.fail("duplicate metadata key: entries " + std::to_string(it->second) + " and " +
             std::to_string(i) + " have the same key; expected unique keys");
    }
    const ValueType type = r.read_type("value type");
    Value value = r.read_value(type, 0);
    metadata_index_.emplace(key, metadata_.size());
    metadata_.emplace_back(std::move(key), std::move(value));
  }

  alignment_ = kDefaultAlignment;
  if (const Value* a = find("general.alignment")) {
    r.set_item(ItemKind::kKey, "general.alignment");
    alignment_ = read_alignment(*a, r);
  }

  const std::string supported = supported_dtypes();
  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    r.set_item(ItemKind::kNone, "");
    TensorInfo info;
    info.name = r.read_string("name of tensor info " + std::to_string(i));
    r.set_item(ItemKind::kTensor, info.name);
    if (auto it = tensor_index_.find(info.name); it != tensor_index_.end()) {
      r.fail("duplicate tensor name: tensor infos " + std::to_string(it->second) + " and " +
             std::to_string(i) + " have the same name; expected unique names");
    }
    for (const auto& u : unsupported_) {
      if (u.name == info.name) r.fail("duplicate tensor name; expected unique names");
    }
    const auto n_dims = r.read<uint32_t>("n_dims");
    if (n_dims == 0 || n_dims > static_cast<uint32_t>(kMaxDims)) {
      r.fail("has " + std::to_string(n_dims) + " dimensions; expected 1 to " +
             std::to_string(kMaxDims));
    }
    int64_t n_elements = 1;
    bool overflow = false;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const auto ne = r.read<int64_t>("ne[" + std::to_string(d) + "]");
      if (ne < 0) {
        r.fail("dimension ne[" + std::to_string(d) + "] is " + std::to_string(ne) +
               "; expected >= 0");
      }
      info.ne.push_back(ne);
      overflow = overflow || __builtin_mul_overflow(n_elements, ne, &n_elements);
    }
    const auto type_id = r.read<uint32_t>("dtype id");
    const auto dtype = kernels::dtype_from_id(type_id);
    if (!dtype) {
      const std::string_view known = ggml_type_name(type_id);
      std::string problem = known.empty() ? "unknown dtype id " + std::to_string(type_id)
                                          : "dtype " + std::string(known) + " (ggml type id " +
                                                std::to_string(type_id) + ") is not supported";
      if (unsupported == UnsupportedDtypes::kReject) r.fail(problem + "; expected one of " + supported);
      r.read<uint64_t>("data offset");
      unsupported_.push_back({std::move(info.name), type_id, std::string(known), std::move(info.ne), std::move(problem)});
      continue;
    }
    info.dtype = *dtype;
    info.offset = r.read<uint64_t>("data offset");

    if (overflow) {
      r.fail("element count of shape " + shape_of(info.ne) + " overflows int64");
    }
    const auto& traits = kernels::dtype_traits(info.dtype);
    if (info.ne[0] % traits.block_size != 0) {
      r.fail("row length ne[0] = " + std::to_string(info.ne[0]) + " is not a multiple of the " +
             std::string(traits.name) + " block size " + std::to_string(traits.block_size));
    }
    // n_elements fits int64, so the block count times the block bytes is
    // the only product that can overflow.
    const auto n_blocks = static_cast<uint64_t>(n_elements / traits.block_size);
    if (__builtin_mul_overflow(n_blocks, static_cast<uint64_t>(traits.block_bytes),
                               &info.n_bytes)) {
      r.fail("byte size of shape " + shape_of(info.ne) + " (" + std::string(traits.name) +
             ") overflows 64 bits");
    }
    if (info.offset % alignment_ != 0) {
      r.fail("data offset " + std::to_string(info.offset) + " is not a multiple of the " +
             "alignment " + std::to_string(alignment_) + "; expected an aligned offset");
    }
    tensor_index_.emplace(info.name, tensors_.size());
    tensors_.push_back(std::move(info));
  }

  // alignment_ <= 2^32 and pos <= size_, so this cannot overflow.
  const uint64_t header_end = r.pos();
  data_offset_ = (header_end + alignment_ - 1) / alignment_ * alignment_;
  if (tensors_.empty()) return;
  if (data_offset_ > size_) {
    r.set_item(ItemKind::kNone, "");
    r.fail("truncated file: the tensor data section starts at offset " +
           std::to_string(data_offset_) + " (header end " + std::to_string(header_end) +
           " padded to the alignment " + std::to_string(alignment_) + "), past the end of the " +
           "file (size " + std::to_string(size_) + ")");
  }
  const uint64_t data_size = size_ - data_offset_;
  for (const auto& t : tensors_) {
    if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
      r.set_item(ItemKind::kTensor, t.name);
      r.fail("offset " + std::to_string(t.offset) + " + " + std::to_string(t.n_bytes) +
             " bytes runs past the end of the file (data section of " +
             std::to_string(data_size) + " bytes at file offset " + std::to_string(data_offset_) +
             "; file size " + std::to_string(size_) + ")");
    }
  }
}

}  // namespace tc::gguf
