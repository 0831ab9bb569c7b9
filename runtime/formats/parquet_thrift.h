#pragma once
// The Thrift compact protocol, as much of it as Parquet's footer and page headers need
// (https://github.com/apache/thrift/blob/master/doc/specs/thrift-compact-protocol.md).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainrt::thrift {

/// Compact protocol type codes (field headers and list headers).
enum Type : uint8_t {
  kStop = 0,
  kTrue = 1,
  kFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

/// Appends compact-protocol values to a byte vector; structs nest with begin_struct/end_struct.
class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}

  void field_i32(int16_t id, int32_t v);
  void field_i64(int16_t id, int64_t v);
  void field_binary(int16_t id, std::string_view v);
  /// A struct-valued field; close it with end_struct().
  void begin_struct_field(int16_t id);
  /// A list-valued field; then write `size` elements with the element writers below.
  void begin_list_field(int16_t id, Type element, uint32_t size);
  void element_i32(int32_t v) { varint(zigzag(v)); }
  void element_binary(std::string_view v);
  /// A struct element of a list; close it with end_struct().
  void begin_struct_element();
  /// Writes the stop byte of the innermost struct (also of the top-level one).
  void end_struct();

 private:
  void field_header(int16_t id, Type type);
  void varint(uint64_t v);
  static uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }

  std::vector<uint8_t>& out_;
  std::vector<int16_t> last_ids_{0};
};

/// Reads compact-protocol values from a buffer; every read fails (ok() false) past the end or on
/// malformed input, and from then on returns zeros.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}

  bool ok() const { return ok_; }
  size_t position(const uint8_t* base) const { return static_cast<size_t>(p_ - base); }

  /// The next field header of the current struct; false at its stop byte.
  bool next_field(int16_t& id, Type& type);
  void begin_struct() { last_ids_.push_back(0); }
  void end_struct();
  int32_t read_i32() { return static_cast<int32_t>(unzigzag(varint())); }
  int64_t read_i64() { return unzigzag(varint()); }
  bool read_bool(Type field_type) { return field_type == kTrue; }
  uint8_t read_byte() { return byte(); }
  std::string read_binary();
  /// A list header: element type and size.
  void read_list(Type& element, uint32_t& size);
  /// Skips a value of this type (a whole struct or list included).
  void skip(Type type, int depth = 0);

 private:
  uint64_t varint();
  uint8_t byte();
  static int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
  std::vector<int16_t> last_ids_{0};
};

}  // namespace trainrt::thrift
