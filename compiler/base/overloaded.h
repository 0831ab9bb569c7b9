#pragma once
// Dispatch on a closed sum (std::variant) with one lambda per alternative. A pass that forgets an
// alternative does not compile: `match` has no generic fallback unless the caller writes one.
#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace trainc {

/// The lambdas' call operators as one overload set.
template <class... Fs>
struct overloaded : Fs... {
  using Fs::operator()...;
};

/// std::visit(overloaded{fs...}, v): `match(step.run, [](const Torchrun&) {...}, ...)`.
template <class Variant, class... Fs>
decltype(auto) match(Variant&& v, Fs&&... fs) {
  return std::visit(overloaded<std::decay_t<Fs>...>{std::forward<Fs>(fs)...}, std::forward<Variant>(v));
}

}  // namespace trainc

namespace trainc {

/// The alternatives' names (each alternative's static `kName`), in declaration order.
template <class Variant>
struct alternative_names;
template <class... Ts>
struct alternative_names<std::variant<Ts...>> {
  static constexpr std::array<std::string_view, sizeof...(Ts)> value{Ts::kName...};
};

/// Builds the alternative whose kName is `name` with the handler taking std::type_identity<T>;
/// one handler per alternative, or it does not compile. `name` must be one of the names.
template <class Variant, class... Fs>
Variant make_alternative(std::string_view name, Fs&&... fs) {
  overloaded<std::decay_t<Fs>...> handlers{std::forward<Fs>(fs)...};
  return [&]<class... Ts>(std::variant<Ts...>*) {
    std::optional<Variant> out;
    ((name == Ts::kName && !out ? (void)out.emplace(handlers(std::type_identity<Ts>{})) : void()), ...);
    if (!out) throw std::logic_error("no alternative named " + std::string(name));
    return std::move(*out);
  }(static_cast<Variant*>(nullptr));
}

}  // namespace trainc
