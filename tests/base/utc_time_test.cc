// IsoUtcMillis / NowIso8601: the timestamp format records and logs carry.
#include "base/utc_time.h"

#include <gtest/gtest.h>

namespace stet {
namespace {

TEST(UtcTime, IsoUtcMillis) {
  using std::chrono::milliseconds;
  using std::chrono::system_clock;
  EXPECT_EQ(IsoUtcMillis(system_clock::time_point(milliseconds(0))), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(IsoUtcMillis(system_clock::time_point(milliseconds(1721995200250))),
            "2024-07-26T12:00:00.250Z");
  EXPECT_EQ(IsoUtcMillis(system_clock::time_point(milliseconds(1709251199999))),
            "2024-02-29T23:59:59.999Z");
  EXPECT_EQ(NowIso8601().size(), 24u);
}

}  // namespace
}  // namespace stet
