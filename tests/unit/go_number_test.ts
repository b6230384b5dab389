import assert from "node:assert/strict";
import { goFloatText, isInt64 } from "../../api/go_number.ts";

Deno.test("go number: integers within int64 are int64, the rest float64", () => {
  assert.equal(isInt64(-(2 ** 63)), true);
  assert.equal(isInt64(2 ** 63 - 1024), true);
  assert.equal(isInt64(2 ** 63), false);
  assert.equal(isInt64(1e20), false);
  assert.equal(isInt64(1.5), false);
});

Deno.test("go number: a float64 printed as Go's %v prints it", () => {
  assert.equal(goFloatText(1e20), "1e+20");
  assert.equal(goFloatText(1234567), "1.234567e+06");
  assert.equal(goFloatText(123456.5), "123456.5");
  assert.equal(goFloatText(1.5), "1.5");
  assert.equal(goFloatText(0.0001), "0.0001");
  assert.equal(goFloatText(0.00001), "1e-05");
  assert.equal(goFloatText(-2.5e-7), "-2.5e-07");
});
