// The names of an enum's values as one table of rows: printing (NameOf),
// parsing (ValueOf) and the list an error message offers (NameList) read the
// same rows, so a value is spelled one way everywhere it is named.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace stet {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

// The name of `value`, or `unknown` when no row holds it.
template <typename E, size_t N>
constexpr const char* NameOf(const EnumName<E> (&table)[N], E value, const char* unknown) {
  for (const EnumName<E>& row : table) {
    if (row.value == value) return row.name;
  }
  return unknown;
}

// The value the first row named `name` holds; nullopt when no row names it.
template <typename E, size_t N>
constexpr std::optional<E> ValueOf(const EnumName<E> (&table)[N], std::string_view name) {
  for (const EnumName<E>& row : table) {
    if (name == row.name) return row.value;
  }
  return std::nullopt;
}

// "a, b or c": every name in table order, for messages that say what was expected.
template <typename E, size_t N>
std::string NameList(const EnumName<E> (&table)[N], const char* last = " or ") {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? last : ", ";
    out += table[i].name;
  }
  return out;
}

}  // namespace stet
