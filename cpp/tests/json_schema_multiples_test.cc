// The number arithmetic of the native front end's multipleOf (frontends/json_schema/multiples.h): the exact step,
// the text Python writes for a number (rule names), the lcm of two decimals, and where the constructions stop.
// Their grammars are compared with the Python front end's text by tests/test_json_schema_native.py.
#include "frontends/json_schema/multiples.h"

#include <gtest/gtest.h>

#include <string>

#include "frontends/json_schema/keywords.h"

namespace xg::json_schema {
namespace {

Decimal D(const std::string& literal) {
  std::optional<Decimal> d = Decimal::Parse(literal);
  EXPECT_TRUE(d) << literal;
  return d.value_or(Decimal{});
}

TEST(JsonSchemaMultiplesTest, StepIsTheDecimalAsNumeratorOverAPowerOfTen) {
  EXPECT_EQ(StepOf(D("2.50")).p, 25);
  EXPECT_EQ(StepOf(D("2.50")).d, 1);
  EXPECT_EQ(StepOf(D("1e-5")).p, 1);
  EXPECT_EQ(StepOf(D("1e-5")).d, 5);
  EXPECT_EQ(StepOf(D("300")).p, 300);
  EXPECT_EQ(StepOf(D("300")).d, 0);
  // The integers that are multiples of 2.5 are the multiples of 5; of 0.75, of 3; of 0.01, all of them.
  EXPECT_EQ(IntegerStep(StepOf(D("2.5"))), 5);
  EXPECT_EQ(IntegerStep(StepOf(D("0.75"))), 3);
  EXPECT_EQ(IntegerStep(StepOf(D("0.01"))), 1);
  EXPECT_EQ(IntegerStep(StepOf(D("12"))), 12);
}

TEST(JsonSchemaMultiplesTest, NumberTextIsPythonsStrOfWhatItsJsonModuleReads) {
  EXPECT_EQ(PythonNumberText("7"), "7");          // an int
  EXPECT_EQ(PythonNumberText("1.0"), "1.0");      // a float's repr
  EXPECT_EQ(PythonNumberText("2.50"), "2.5");
  EXPECT_EQ(PythonNumberText("1E2"), "100.0");
  EXPECT_EQ(PythonNumberText("3e3"), "3000.0");
  EXPECT_EQ(PythonNumberText("12e-1"), "1.2");
  EXPECT_EQ(PythonNumberText("0.0001"), "0.0001");  // fixed notation down to 1e-4
  EXPECT_EQ(PythonNumberText("1e-05"), "1e-05");    // then scientific, two exponent digits
  EXPECT_EQ(PythonNumberText("1.5e-7"), "1.5e-07");
  EXPECT_EQ(PythonNumberText("1e16"), "1e+16");     // and from 1e16 up
  EXPECT_EQ(PythonNumberText("12345678901234.5"), "12345678901234.5");
  EXPECT_EQ(PythonNumberText("123456789012345.6"), std::nullopt);  // beyond 15 digits: not read exactly
}

TEST(JsonSchemaMultiplesTest, LcmOfDecimalsIsExactAndAnIntegerWhenIntegral) {
  EXPECT_EQ(DecimalLcm(D("2.5"), D("4")), "20");
  EXPECT_EQ(DecimalLcm(D("0.75"), D("2.0")), "6");
  EXPECT_EQ(DecimalLcm(D("2.0"), D("2.0")), "2");  // Python merges 2.0 with 2.0 into the int 2
  EXPECT_EQ(DecimalLcm(D("0.1"), D("0.25")), "0.5");
  EXPECT_EQ(DecimalLcm(D("0.3"), D("0.02")), "0.3");
  EXPECT_EQ(DecimalLcm(D("0.001"), D("0.0004")), "0.002");
  EXPECT_EQ(DecimalLcm(D("1.5"), D("1.5")), "1.5");
  EXPECT_EQ(DecimalLcm(D("0.1234567"), D("0.7654321")), "944977.2114007");
  EXPECT_EQ(DecimalLcm(D("0.000000000000007"), D("12345678901")), "86419752307");
  // More than 15 significant digits (13548070.123626141, no float's repr): not written.
  EXPECT_EQ(DecimalLcm(D("0.123456789"), D("0.987654321")), std::nullopt);
}

TEST(JsonSchemaMultiplesTest, ConstructionsPastTheRuleLimitStopBeforeBuilding) {
  RuleTable rules("", "\",\"", "\":\"", "\"\"", true);
  EXPECT_THROW(MultipleOf(kMaxMultipleOfRules + 1, &rules, MultipleSign::kAny, false), NotHandled);
  EXPECT_THROW(MultipleOfAtLeast(1000, 123456, &rules), NotHandled);  // 1000 x (2 x 6 + 2) rules
  EXPECT_THROW(DecimalMultipleOf(5000, 1, &rules, MultipleSign::kAny), NotHandled);
  EXPECT_THROW(ScaledMultiples(4000, 0, 0, 1000000, &rules), NotHandled);
  EXPECT_EQ(rules.size(), 0u);  // nothing was defined
  // Within the limit: one rule per remainder, the empty alternative where it is 0.
  EXPECT_EQ(MultipleOf(3, &rules, MultipleSign::kNonNegative, false),
            "( \"0\" | \"1\" mod3_r1 | \"2\" mod3_r2 | \"3\" mod3_r0 | \"4\" mod3_r1 | \"5\" mod3_r2 | \"6\" mod3_r0 | "
            "\"7\" mod3_r1 | \"8\" mod3_r2 | \"9\" mod3_r0 )");
  EXPECT_EQ(IntegerMultiples(5, 3, 17, &rules, false), "(\"5\" | \"10\" | \"15\")");
  EXPECT_THROW(IntegerMultiples(5, 6, 9, &rules, false), Unsatisfiable);
}

}  // namespace
}  // namespace xg::json_schema
