import assert from "node:assert/strict";
import { CelError, compileCel } from "../../api/cel.ts";

const run = (src: string, self: unknown) => compileCel(src)(new Map([["self", self]]));

Deno.test("cel: has() tests presence; selecting an absent field is an error", () => {
  assert.equal(run("has(self.a) && self.a == 1", { a: 1 }), true);
  assert.equal(run("has(self.a.b)", { a: {} }), false);
  assert.throws(() => run("self.a == 1", {}), CelError);
});

Deno.test("cel: && and || are decided by either side, errors or not", () => {
  assert.equal(run("self.missing == 1 || true", {}), true);
  assert.equal(run("false && self.missing == 1", {}), false);
  assert.equal(run("self.missing == 1 && false", {}), false);
  assert.throws(() => run("self.missing == 1 && true", {}), CelError);
});

Deno.test("cel: macros over lists and map keys, size, string and the ternary", () => {
  const list = [{ n: "a" }, { n: "b" }, { n: "a" }];
  assert.equal(run("self.all(c, self.exists_one(d, d.n == c.n))", list), false);
  assert.equal(run("self.filter(c, c.n == 'a').size() == 2", list), true);
  assert.equal(run("self.all(k, !k.startsWith('x/')) && 'y' in self", { "y": 1, "z/": 2 }), true);
  assert.equal(run("size(string(self.n - 1)) + 1", { n: 1000 }), 4);
  assert.equal(run("self.n > 2 ? 'big' : 'small'", { n: 3 }), "big");
  assert.equal(run("self.matches('^[a-z]+$')", "abc"), true);
});

Deno.test("cel: JSON integers are int64, other numbers double", () => {
  assert.equal(run("string(self - 1)", 100000), "99999");
  assert.equal(run("self.n / 2", { n: 7 }), 3);
  assert.equal(run("self > 1", 1.5), true);
  assert.throws(() => run("self * 2", 2 ** 62), CelError);
  // Beyond int64 Go decodes a double; an int has no `- double` overload.
  assert.equal(run("self - 1.0", 2 ** 63), 2 ** 63);
  assert.throws(() => run("self - 1.0", 2 ** 62), CelError);
});

Deno.test("cel: what the library cannot evaluate is refused when compiled", () => {
  // The API server's Kubernetes libraries, an undeclared variable, a syntax error.
  assert.throws(() => compileCel("quantity(self).isGreaterThan(quantity('1Gi'))"), CelError);
  assert.throws(() => compileCel("self.isSorted()"), CelError);
  assert.throws(() => compileCel("other == 1"), CelError);
  assert.throws(() => compileCel("self.a +"), CelError);
});
