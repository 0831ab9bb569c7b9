#pragma once
// Writing Terraform (HCL) deterministically, formatted as `terraform fmt` would: emitters build a
// tree of blocks, attributes and values, and `format` is the only place that knows the syntax.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainc::hcl {

/// An expression on the right of `=`, built with the factories below so literals are always escaped.
class Value {
 public:
  enum class Kind { string, ref, templ, number, boolean, list, map };

  Kind kind() const { return kind_; }
  /// The literal text (string), the expression (ref) or nothing.
  const std::string& text() const { return text_; }
  std::int64_t as_number() const { return number_; }
  bool as_bool() const { return number_ != 0; }
  /// Elements of a list, or the parts of a template (string and ref values).
  const std::vector<Value>& items() const { return items_; }
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }

  friend Value str(std::string s);
  friend Value ref(std::string expr);
  friend Value templ(std::vector<Value> parts);
  friend Value number(std::int64_t n);
  friend Value boolean(bool b);
  friend Value list(std::vector<Value> items);
  friend Value map(std::vector<std::pair<std::string, Value>> entries);

 private:
  Kind kind_ = Kind::string;
  std::string text_;
  std::int64_t number_ = 0;
  std::vector<Value> items_;
  std::vector<std::pair<std::string, Value>> entries_;
};

/// A quoted string literal; `${` and `%{` are escaped so the text is never interpolated.
Value str(std::string s);
/// An expression written as is: `var.zone`, `google_container_cluster.main.id`, `string`.
Value ref(std::string expr);
/// A quoted template: string parts are literal text, ref parts become `${...}`.
Value templ(std::vector<Value> parts);
Value number(std::int64_t n);
Value boolean(bool b);
/// A tuple `[a, b]`; on one line when every element is a scalar.
Value list(std::vector<Value> items);
/// An object `{ key = value }`, one entry per line, keys in the given order.
Value map(std::vector<std::pair<std::string, Value>> entries);

struct Block;

/// The inside of a block (or a whole file): attributes, nested blocks and comments, in order.
class Body {
 public:
  Body() = default;
  Body(Body&&) = default;
  Body& operator=(Body&&) = default;
  ~Body();

  /// Adds `name = value`; setting one name twice in a body is a bug and throws.
  Body& set(const std::string& name, Value value);
  /// Appends a nested block and returns it for filling in.
  Block& block(std::string type, std::vector<std::string> labels = {});
  /// A `# text` line (one per line of `text`) before the next attribute or block.
  Body& comment(std::string_view text);

  struct Item;
  const std::vector<Item>& items() const { return items_; }

 private:
  std::vector<Item> items_;
};

struct Block : Body {
  std::string type;
  std::vector<std::string> labels;
};

struct Body::Item {
  enum class Kind { attribute, block, comment } kind;
  std::string name;  ///< attribute name, or the comment's text
  Value value;
  std::unique_ptr<Block> block;
};

/// The file's text: `header` lines as leading `# ` comments, a blank line, then the body.
std::string format(const Body& file, std::string_view header = {});

/// A quoted HCL string literal for `s`.
std::string quote(std::string_view s);

/// True when `s` is a valid HCL identifier (a letter or '_', then letters, digits, '_' or '-').
bool is_identifier(std::string_view s);

/// A resource label for a user name, by Terraform convention: "8x-a100" -> "_8x_a100".
std::string identifier(std::string_view name);

}  // namespace trainc::hcl
