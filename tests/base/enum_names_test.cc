// One table names an enum's values both ways: NameOf and ValueOf agree row by
// row, a value no row holds gets the caller's fallback, and NameList is what
// error messages print.
#include "base/enum_names.h"

#include <gtest/gtest.h>

namespace stet {
namespace {

enum class Color { kRed, kGreen, kBlue, kUnnamed };
constexpr EnumName<Color> kColors[] = {
    {Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kBlue, "blue"}};

TEST(EnumNames, NameAndValueReadTheSameRows) {
  for (const EnumName<Color>& row : kColors) {
    EXPECT_STREQ(NameOf(kColors, row.value, "?"), row.name);
    ASSERT_TRUE(ValueOf(kColors, row.name).has_value());
    EXPECT_EQ(*ValueOf(kColors, row.name), row.value);
  }
}

TEST(EnumNames, UnknownValuesAndNames) {
  EXPECT_STREQ(NameOf(kColors, Color::kUnnamed, "none"), "none");
  EXPECT_FALSE(ValueOf(kColors, "Red").has_value());  // names are case-sensitive
  EXPECT_FALSE(ValueOf(kColors, "").has_value());
  EXPECT_FALSE(ValueOf(kColors, "red ").has_value());
}

TEST(EnumNames, NameListForMessages) {
  EXPECT_EQ(NameList(kColors), "red, green or blue");
  EXPECT_EQ(NameList(kColors, " and "), "red, green and blue");
  constexpr EnumName<Color> kOne[] = {{Color::kRed, "red"}};
  EXPECT_EQ(NameList(kOne), "red");
}

TEST(EnumNames, ConstexprLookup) {
  static_assert(ValueOf(kColors, "blue") == Color::kBlue);
  static_assert(NameOf(kColors, Color::kGreen, "?")[0] == 'g');
}

}  // namespace
}  // namespace stet
