// Amounts of money as the tables print them: 3 significant digits below 1,000, whole units with
// thousands separated from 1,000 on, so that two costs to train 0.2% apart do not read alike.
#include <gtest/gtest.h>

#include "report/text_table.hpp"

namespace stepcast::report::detail {
namespace {
namespace money_format_test {  // this file's own names: test files are compiled several to a unit

TEST(MoneyFormat, SmallAmountsKeepThreeDigitsLargeOnesEveryUnit) {
  EXPECT_EQ(format_amount(0.5234), "0.523");
  EXPECT_EQ(format_amount(2.5), "2.50");
  EXPECT_EQ(format_amount(999.4), "999");
  EXPECT_EQ(format_amount(1000), "1,000");
  EXPECT_EQ(format_amount(11405494.3), "11,405,494");
  EXPECT_EQ(format_amount(11425878), "11,425,878");  // was "11400000" like the one above
  EXPECT_EQ(format_amount(-12345.6), "-12,346");
  EXPECT_EQ(format_money(11405494.3, "USD"), "11,405,494 USD");
  EXPECT_EQ(format_money(2.5, ""), "2.50");
}

}  // namespace money_format_test
}  // namespace
}  // namespace stepcast::report::detail
