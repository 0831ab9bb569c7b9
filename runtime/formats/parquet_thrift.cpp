#include "formats/parquet_thrift.h"

namespace trainrt::thrift {

void Writer::varint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<uint8_t>(v));
}

void Writer::field_header(int16_t id, Type type) {
  const int delta = id - last_ids_.back();
  if (delta > 0 && delta <= 15) {
    out_.push_back(static_cast<uint8_t>((delta << 4) | type));
  } else {
    out_.push_back(type);
    varint(zigzag(id));
  }
  last_ids_.back() = id;
}

void Writer::field_i32(int16_t id, int32_t v) {
  field_header(id, kI32);
  varint(zigzag(v));
}

void Writer::field_i64(int16_t id, int64_t v) {
  field_header(id, kI64);
  varint(zigzag(v));
}

void Writer::field_binary(int16_t id, std::string_view v) {
  field_header(id, kBinary);
  element_binary(v);
}

void Writer::element_binary(std::string_view v) {
  varint(v.size());
  out_.insert(out_.end(), v.begin(), v.end());
}

void Writer::begin_struct_field(int16_t id) {
  field_header(id, kStruct);
  last_ids_.push_back(0);
}

void Writer::begin_list_field(int16_t id, Type element, uint32_t size) {
  field_header(id, kList);
  if (size < 15) {
    out_.push_back(static_cast<uint8_t>((size << 4) | element));
  } else {
    out_.push_back(static_cast<uint8_t>(0xf0 | element));
    varint(size);
  }
}

void Writer::begin_struct_element() { last_ids_.push_back(0); }

void Writer::end_struct() {
  out_.push_back(kStop);
  if (last_ids_.size() > 1) last_ids_.pop_back();
}

uint8_t Reader::byte() {
  if (!ok_ || p_ >= end_) {
    ok_ = false;
    return 0;
  }
  return *p_++;
}

uint64_t Reader::varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const uint8_t b = byte();
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return ok_ ? v : 0;
  }
  ok_ = false;
  return 0;
}

bool Reader::next_field(int16_t& id, Type& type) {
  const uint8_t b = byte();
  if (!ok_ || b == kStop) return false;
  type = static_cast<Type>(b & 0x0f);
  const int delta = b >> 4;
  id = delta != 0 ? static_cast<int16_t>(last_ids_.back() + delta) : static_cast<int16_t>(unzigzag(varint()));
  last_ids_.back() = id;
  if (type > kStruct) ok_ = false;
  return ok_;
}

void Reader::end_struct() {
  if (last_ids_.size() > 1) last_ids_.pop_back();
}

std::string Reader::read_binary() {
  const uint64_t n = varint();
  if (!ok_ || n > static_cast<uint64_t>(end_ - p_)) {
    ok_ = false;
    return {};
  }
  std::string s(reinterpret_cast<const char*>(p_), n);
  p_ += n;
  return s;
}

void Reader::read_list(Type& element, uint32_t& size) {
  const uint8_t b = byte();
  element = static_cast<Type>(b & 0x0f);
  size = b >> 4;
  if (size == 15) {
    const uint64_t n = varint();
    if (n > static_cast<uint64_t>(end_ - p_)) ok_ = false;  // each element takes at least a byte
    size = ok_ ? static_cast<uint32_t>(n) : 0;
  }
}

void Reader::skip(Type type, int depth) {
  if (depth > 32) {
    ok_ = false;
    return;
  }
  switch (type) {
    case kTrue:
    case kFalse:
      return;  // the value lives in the field header
    case kByte:
      byte();
      return;
    case kI16:
    case kI32:
    case kI64:
      varint();
      return;
    case kDouble:
      for (int i = 0; i < 8; ++i) byte();
      return;
    case kBinary:
      read_binary();
      return;
    case kList:
    case kSet: {
      Type element;
      uint32_t size;
      read_list(element, size);
      for (uint32_t i = 0; ok_ && i < size; ++i) {
        if (element == kTrue || element == kFalse) byte();  // list booleans take a byte each
        else skip(element, depth + 1);
      }
      return;
    }
    case kMap: {
      const uint64_t size = varint();
      if (size == 0) return;
      const uint8_t kv = byte();
      // Each entry takes at least a byte (booleans in containers take a byte each), so a count
      // larger than what is left is corrupt; without that, a map of booleans skipped without reading
      // could run for 2^64 entries (found by the parquet_reader fuzzer).
      const auto key = static_cast<Type>(kv >> 4), value = static_cast<Type>(kv & 0x0f);
      if (size > static_cast<uint64_t>(end_ - p_)) {
        ok_ = false;
        return;
      }
      const auto element = [&](Type t) {
        if (t == kTrue || t == kFalse) byte();
        else skip(t, depth + 1);
      };
      for (uint64_t i = 0; ok_ && i < size; ++i) {
        element(key);
        element(value);
      }
      return;
    }
    case kStruct: {
      begin_struct();
      int16_t id;
      Type t;
      while (next_field(id, t)) skip(t, depth + 1);
      end_struct();
      return;
    }
    default:
      ok_ = false;
  }
}

}  // namespace trainrt::thrift
